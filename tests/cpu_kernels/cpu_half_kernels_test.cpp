// The CPU emitters' f16 and bf16 kernels against the fp64 reference, on the kernel cases the CUDA
// emitters answer to (tests/kernel_cases): every half pointwise case and every half row case, emitted
// as C++, compiled with the flags kiln uses and run on their inputs (NaN, +-Inf, subnormals, the
// largest finite values, fully masked rows, a row of -inf, width 1, sizes that divide no lane count),
// with a guard after the output that no kernel may write. The row cases run under the default options
// and under options that split every row into parts and use few lanes, so that each code path of the
// row emitter meets the half types.
#include <gtest/gtest.h>

#include <algorithm>
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
