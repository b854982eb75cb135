// The CPU emitters' f16 and bf16 kernels against the fp64 reference, on the kernel cases the CUDA
// emitters answer to (tests/kernel_cases): every half pointwise case and every half row case, emitted
// as C++, compiled with the flags kiln uses and run on their inputs (NaN, +-Inf, subnormals, the
// largest finite values, fully masked rows, a row of -inf, width 1, sizes that divide no lane count),
// with a guard after the output that no kernel may write. The row cases run under the default options
// and under options that split every row into parts and use few lanes, so that each code path of the
// row emitter meets the half types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <iostream>

#include "codegen/cpu/compile_kernels.h"
#include "codegen/cpu/emit_pointwise.h"
#include "codegen/cpu/emit_row.h"
#include "common/temp_dir.h"
#include "kiln/options.h"
#include "pointwise_cases.h"
#include "row_cases.h"

namespace kiln::backend::cuda::testing {
namespace {

using codegen::cpu::CompiledKernel;
using codegen::cpu::KernelSource;

bool has_half(const loops::TensorDesc& out, const std::vector<loops::TensorDesc>& ins) {
  return is_half(out.dtype) || std::any_of(ins.begin(), ins.end(), [](const loops::TensorDesc& d) { return is_half(d.dtype); });
}

// One call of a compiled entry point on the inputs, into an output followed by kGuardBytes of kGuard.
KernelRun run_entry(const CompiledKernel& kernel, const std::string& name, const std::vector<Tensor>& inputs,
                    const std::vector<int64_t>& symbols, DType dtype, const std::vector<int64_t>& shape) {
  KernelRun run{Tensor::empty(dtype, shape)};
  std::vector<unsigned char> output(run.output.nbytes() + kGuardBytes, kGuard);
  std::vector<const void*> pointers;
  for (const Tensor& t : inputs) pointers.push_back(t.raw());
  auto* entry = reinterpret_cast<void (*)(const void* const*, void*, const int64_t*)>(kernel.entry(name));
  entry(pointers.data(), output.data(), symbols.data());
  std::memcpy(run.output.raw(), output.data(), run.output.nbytes());
  run.guard_intact = std::all_of(output.begin() + static_cast<ptrdiff_t>(run.output.nbytes()), output.end(),
                                 [](unsigned char b) { return b == kGuard; });
  return run;
}

Options cache_options(const test_common::TempDir& dir) {
  Options o;
  o.cache_dir = (dir.root() / "cache").string();
  o.compile_jobs = 2;
  return o;
}

TEST(CpuHalfKernels, PointwiseCasesMatchTheFp64Reference) {
  test_common::TempDir dir("kiln-cpu-half");
  std::vector<PointwiseCase> cases;
  std::vector<BuiltCase> built;
  std::vector<KernelSource> sources;
  for (const PointwiseCase& c : half_pointwise_cases()) {
    BuiltCase b = build_case(c);
    if (!has_half(b.group.kernel.output, b.group.kernel.inputs)) continue;
    sources.push_back(codegen::cpu::emit_pointwise_cpp(b.group.kernel).source);
    cases.push_back(c);
    built.push_back(std::move(b));
  }
  ASSERT_GE(cases.size(), 10u) << "the half cases went missing";
  const std::vector<CompiledKernel> compiled = codegen::cpu::compile_kernels(sources, cache_options(dir));
  for (size_t i = 0; i < cases.size(); ++i) {
    PointwiseCase c = cases[i];
    // kiln's vector exp / log / tanh / erf stand where CUDA's functions were bounded: 2 f32 ulps more
    // wherever a math function is involved, 2 * 2^-13 of a half ulp (as the CUDA host emulation allows).
    if (c.tolerance.kind == Tolerance::Kind::ulps && c.tolerance.ulps > 0.5 + 0.5 * 0x1p-13) c.tolerance.ulps += 2 * 0x1p-13;
    const std::string& name = sources[i].name;
    const CaseReport report = run_case(
        c, built[i], [](int64_t n) { return n > 0 ? int64_t{1} : int64_t{0}; }, {1, 31, 4099},
        [&](const std::vector<Tensor>& inputs, const std::vector<int64_t>& symbols, DType dtype,
            const std::vector<int64_t>& shape, int64_t) {
          return run_entry(compiled[i], name, inputs, symbols, dtype, shape);
        });
    for (const std::string& failure : report.failures) ADD_FAILURE() << "CPU: " << failure;
    std::cout << c.name << " on the CPU: " << c.tolerance.why << "; " << report.summary() << "\n";
  }
}

// A generated Cast kernel of n elements from `from` to `to`, compiled.
CompiledKernel cast_kernel(const std::string& name, DType from, DType to, int64_t n, const test_common::TempDir& dir) {
  loops::PointwiseKernel k;
  k.name = name;
  k.inputs = {{from, {loops::Expr(n)}}};
  k.output = {to, {loops::Expr(n)}};
  k.body = loops::cast(to, loops::load_broadcast(k, 0));
  return std::move(codegen::cpu::compile_kernels({codegen::cpu::emit_pointwise_cpp(k).source}, cache_options(dir))[0]);
}

uint32_t bits(float f) { return __builtin_bit_cast(uint32_t, f); }

// The generated kernels' conversions give the bits of kiln's host conversions (ir/tensor.cpp): every
// f16 and bf16 pattern widened; narrowed, every half value, the midpoints between neighbours (ties to
// even), one float ulp either side of them, the overflow threshold's neighbourhood, subnormal floats,
// infinities and NaNs.
TEST(CpuHalfKernels, ConversionsGiveTheHostConversionsBits) {
  test_common::TempDir dir("kiln-cpu-half-casts");
  std::vector<uint16_t> patterns(65536);
  for (uint32_t i = 0; i < 65536; ++i) patterns[i] = static_cast<uint16_t>(i);
  for (DType half : {DType::f16, DType::bf16}) {
    const bool f16 = half == DType::f16;
    auto widen = [f16](uint16_t h) { return f16 ? half_to_float(h) : bf16_to_float(h); };
    auto narrow = [f16](float f) { return f16 ? float_to_half(f) : float_to_bf16(f); };
    const std::string t(dtype_name(half));
    Tensor in = Tensor::empty(half, {65536});
    std::memcpy(in.raw(), patterns.data(), in.nbytes());
    const CompiledKernel up = cast_kernel("widen_" + t, half, DType::f32, 65536, dir);
    std::vector<float> wide(65536);
    const std::vector<const void*> up_in = {in.raw()};
    reinterpret_cast<void (*)(const void* const*, void*, const int64_t*)>(up.entry("widen_" + t))(up_in.data(), wide.data(), nullptr);
    int wrong = 0;
    for (uint32_t i = 0; i < 65536; ++i) wrong += bits(wide[i]) != bits(widen(patterns[i]));
    EXPECT_EQ(wrong, 0) << t << " patterns widened differently from half_to_float / bf16_to_float";

    std::vector<float> probes;
    for (uint32_t i = 0; i < 65536; ++i) {
      const float a = widen(static_cast<uint16_t>(i)), b = widen(static_cast<uint16_t>(i + 1));
      probes.push_back(a);
      if (std::isfinite(a) && std::isfinite(b) && std::signbit(a) == std::signbit(b) && (i & 0x7fffu) != 0x7fffu) {
        const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);  // exact in f32
        probes.insert(probes.end(), {mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)});
      }
    }
    for (float f : {65504.0f, 65519.99f, 65520.0f, 65536.0f, 3.3895314e38f, 1e-45f, 1e-40f, 5.9604645e-8f, 2.9802322e-8f,
                    2.9802326e-8f, INFINITY, -INFINITY, NAN, -NAN})
      probes.insert(probes.end(), {f, -f});
    const int64_t n = static_cast<int64_t>(probes.size());
    const CompiledKernel down = cast_kernel("narrow_" + t, DType::f32, half, n, dir);
    std::vector<uint16_t> narrowed(static_cast<size_t>(n));
    const std::vector<const void*> down_in = {probes.data()};
    reinterpret_cast<void (*)(const void* const*, void*, const int64_t*)>(down.entry("narrow_" + t))(down_in.data(), narrowed.data(), nullptr);
    wrong = 0;
    std::string first;
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t want = narrow(probes[size_t(i)]);
      if (narrowed[size_t(i)] != want && wrong++ == 0)
        first = fmt::format("{:a} -> {:#06x}, want {:#06x}", probes[size_t(i)], narrowed[size_t(i)], want);
    }
    EXPECT_EQ(wrong, 0) << t << ": " << n << " floats narrowed, first difference " << first;
  }
}

struct CpuRowVariant {
  const char* label;
  codegen::cpu::RowEmitOptions options;
};

TEST(CpuHalfKernels, RowCasesMatchTheFp64Reference) {
  test_common::TempDir dir("kiln-cpu-half-rows");
  const std::vector<CpuRowVariant> variants = {
      {"default", {}},
      // Every row split into parts of 24 columns (a split path with a partial last part) on 32-byte lanes.
      {"split", {.parallel_threshold = 0, .split_min_cols = 2, .split_part_cols = 24, .accumulator_bytes = 32,
                 .short_row_cols = 8, .short_row_accumulator_bytes = 16}},
  };
  struct Item {
    const RowCase* c;
    BuiltRowCase built;
    const CpuRowVariant* variant;
  };
  std::vector<Item> items;
  std::vector<KernelSource> sources;
  for (const RowCase& c : row_cases()) {
    BuiltRowCase b = build_row_case(c);
    if (!has_half(b.group.kernel.output, b.group.kernel.inputs)) continue;
    for (const CpuRowVariant& v : variants) {
      BuiltRowCase named = b;
      named.group.kernel.name = c.name + "_" + v.label;
      sources.push_back(codegen::cpu::emit_row_cpp(named.group.kernel, v.options).source);
      items.push_back({&c, std::move(named), &v});
    }
  }
  ASSERT_GE(items.size(), 20u) << "the half row cases went missing";
  const std::vector<CompiledKernel> compiled = codegen::cpu::compile_kernels(sources, cache_options(dir));
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    // The tolerance's reduction tree: its width is the fewest lanes the variant gives a row (each lane
    // sums every lanes-th column; the split variant's parts then add up in order, a narrower tree still).
    const codegen::cpu::RowEmitOptions& o = it.variant->options;
    const int lanes = static_cast<int>(std::min(o.accumulator_bytes, o.short_row_accumulator_bytes) / 4);
    const int width = o.split_min_cols <= 2 ? static_cast<int>(std::min<int64_t>(lanes, o.split_part_cols / 2)) : lanes;
    const RowOrder order{width, [](int64_t rows, int64_t) { return rows; }, fmt::format("rows, {}", it.variant->label)};
    const std::string& name = sources[i].name;
    const RowReport report =
        run_row_case(*it.c, it.built, order, it.c->sizes,
                     [&](const std::vector<Tensor>& inputs, const std::vector<int64_t>& symbols, int64_t, int64_t,
                         DType dtype, const std::vector<int64_t>& shape, int64_t) {
                       return run_entry(compiled[i], name, inputs, symbols, dtype, shape);
                     });
    for (const std::string& failure : report.failures) ADD_FAILURE() << "CPU " << it.variant->label << ": " << failure;
    std::cout << name << " on the CPU: " << report.summary() << "\n";
  }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
