// The tensor-core GEMM template (backend/cuda/cuda_gemm_template.h) on the GPU machine (skipped elsewhere
// with "SKIPPED: ..."): every default config, bf16 and f16, B as [K,N] and [N,K], every epilogue form,
// at sizes that are 1 in each dimension, that divide no tile (77x130x45), strided As (one taking the
// element loads, one the 16-byte copies with a partial last K piece), and BERT's products at M = 128; A holds NaN, +Inf and -Inf in its first rows.
// On sm_90a the wgmma kernel's configs likewise, at sizes the TMA can read. Each
// output against an fp64 product of the same rounded inputs, within the output type's epsilon times the
// value plus a K-scaled fp32 accumulation bound; NaN and Inf exactly where the reference has them.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>

#include "backend/cuda/cuda_gemm_template.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_runtime.h"
#include "backend/cuda/device_probe.h"
#include "kiln/errors.h"
#include "kiln/tensor.h"

namespace kiln::backend::cuda {
namespace {

const GemmTemplateEpilogue kEpilogues[] = {
    {}, {true}, {true, GemmActivation::gelu}, {true, GemmActivation::relu},
    {false, GemmActivation::none, true}, {true, GemmActivation::gelu, true}};

struct Size {
  int64_t m, n, k;
  int64_t lda_pad = 0;  // A's row stride is k + lda_pad
};

float widen(DType t, uint16_t w) { return t == DType::bf16 ? bf16_to_float(w) : half_to_float(w); }
uint16_t narrow(DType t, float x) { return t == DType::bf16 ? float_to_bf16(x) : float_to_half(x); }

// Host inputs (already rounded to the dtype) and the fp64 product with its magnitude bound.
struct Problem {
  Size size;
  std::vector<uint16_t> a, b_kn, b_nk, residual;  // a [m, lda]
  std::vector<float> bias;
  std::vector<double> product, magnitude;  // [m, n]: sum a b, sum |a b|
};

Problem make_problem(DType t, const Size& s, uint64_t seed) {
  Problem p{s, {}, {}, {}, {}, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  const int64_t lda = s.k + s.lda_pad;
  p.a.assign(size_t(s.m * lda), narrow(t, std::numeric_limits<float>::quiet_NaN()));  // padding is never read
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.k; ++j) p.a[size_t(i * lda + j)] = narrow(t, normal(rng));
  if (s.m >= 3) {  // a NaN row, a +Inf row, a -Inf row
    p.a[size_t(0 * lda + s.k / 2)] = narrow(t, std::numeric_limits<float>::quiet_NaN());
    p.a[size_t(1 * lda + s.k / 3)] = narrow(t, std::numeric_limits<float>::infinity());
    p.a[size_t(2 * lda + s.k - 1)] = narrow(t, -std::numeric_limits<float>::infinity());
  }
  p.b_kn.resize(size_t(s.k * s.n));
  p.b_nk.resize(size_t(s.k * s.n));
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t j = 0; j < s.n; ++j) {
      const uint16_t w = narrow(t, normal(rng));
      p.b_kn[size_t(k * s.n + j)] = w;
      p.b_nk[size_t(j * s.k + k)] = w;
    }
  for (int64_t j = 0; j < s.n; ++j) p.bias.push_back(0.5f * normal(rng));
  for (int64_t e = 0; e < s.m * s.n; ++e) p.residual.push_back(narrow(t, normal(rng)));
  p.product.assign(size_t(s.m * s.n), 0.0);
  p.magnitude.assign(size_t(s.m * s.n), 0.0);
  std::vector<double> arow(size_t(s.k));
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t k = 0; k < s.k; ++k) arow[size_t(k)] = widen(t, p.a[size_t(i * lda + k)]);
    for (int64_t k = 0; k < s.k; ++k) {
      const double av = arow[size_t(k)];
      const uint16_t* brow = &p.b_kn[size_t(k * s.n)];
      double* out = &p.product[size_t(i * s.n)];
      double* mag = &p.magnitude[size_t(i * s.n)];
      for (int64_t j = 0; j < s.n; ++j) {
        const double x = av * widen(t, brow[j]);
        out[j] += x;
        mag[j] += std::fabs(x);
      }
    }
  }
  return p;
}

std::string name_of(const GemmTemplateSpec& s) {
  return fmt::format("{} {} B{} {}", gemm_config_name(s.config), dtype_name(s.dtype), s.trans_b ? "[N,K]" : "[K,N]",
                     gemm_epilogue_name(s.epilogue));
}

class CudaGemmTemplate : public ::testing::Test {
 protected:
  void SetUp() override {
    const DeviceProbe probe = probe_devices();
    if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
    runtime_ = std::make_unique<CudaRuntime>(0, Options{});
    modules_ = std::make_unique<ModuleCache>(*runtime_, Options{});
  }

  // Every spec's kernel, compiled in one parallel batch.
  void compile(const std::vector<GemmTemplateSpec>& specs) {
    std::vector<CudaUnit> units;
    for (const GemmTemplateSpec& s : specs) units.push_back(gemm_template_unit(s));
    const CubinBatch batch = compile_cubins(units, compile_arch(runtime_->info()), Options{});
    for (size_t i = 0; i < units.size(); ++i) modules_->add(units[i].name, batch.cubins[i]);
    for (const GemmTemplateSpec& s : specs)
      kernels_.emplace(name_of(s), std::make_unique<GemmTemplateKernel>(s, runtime_->context(), *modules_));
  }

  Tensor upload(DType t, const std::vector<uint16_t>& words) {
    Tensor h = Tensor::empty(t, {int64_t(words.size())});
    std::copy(words.begin(), words.end(), h.data<uint16_t>());
    return runtime_->upload(h);
  }

  // Runs `spec` on the problem and checks every output element; returns the failures (at most a few).
  int check(const GemmTemplateSpec& spec, const Problem& p, const Tensor& a, const Tensor& b_kn, const Tensor& b_nk,
            const Tensor& bias, const Tensor& residual) {
    const Size& s = p.size;
    const GemmTemplateKernel& kernel = *kernels_.at(name_of(spec));
    Tensor c = runtime_->empty(spec.dtype, {s.m, s.n});
    std::shared_ptr<void> ws = runtime_->allocate(int64_t(std::max<size_t>(kernel.workspace_bytes(s.m, s.n), 16)));
    GemmTemplateArgs args;
    args.a = device_ptr(a);
    args.b = device_ptr(spec.trans_b ? b_nk : b_kn);
    args.c = device_ptr(c);
    args.bias = spec.epilogue.bias ? device_ptr(bias) : 0;
    args.residual = spec.epilogue.residual ? device_ptr(residual) : 0;
    args.workspace = reinterpret_cast<CUdeviceptr>(ws.get());
    args.workspace_bytes = kernel.workspace_bytes(s.m, s.n);
    args.m = s.m, args.n = s.n, args.k = s.k;
    args.lda = s.k + s.lda_pad, args.ldb = spec.trans_b ? s.k : s.n, args.ldc = s.n, args.ldr = s.n;
    kernel.launch(runtime_->cuda_stream(), args);
    const Tensor got = runtime_->download(c);
    runtime_->synchronize();
    const double eps = spec.dtype == DType::bf16 ? 0x1p-8 : 0x1p-11;
    int failures = 0;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        const size_t e = size_t(i * s.n + j);
        double pre = p.product[e], mag = p.magnitude[e];
        if (spec.epilogue.bias) pre += p.bias[size_t(j)], mag += std::fabs(p.bias[size_t(j)]);
        double want = pre;
        if (spec.epilogue.activation == GemmActivation::gelu) want = 0.5 * pre * (1.0 + std::erf(pre / std::sqrt(2.0)));
        if (spec.epilogue.activation == GemmActivation::relu) want = pre < 0 ? 0.0 : pre;
        if (spec.epilogue.residual) want += widen(spec.dtype, p.residual[e]);
        const double y = widen(spec.dtype, got.data<uint16_t>()[e]);
        // Output rounding, fp32 accumulation (and tensor-core truncation) over K, GELU's fp32 erff.
        const double tol = eps * std::fabs(want) + 4.0 * std::sqrt(double(s.k)) * 0x1p-24 * mag * 1.2 +
                           1e-6 * (1.0 + std::fabs(pre));
        const bool ok = std::isnan(want) ? std::isnan(y)
                        : std::isinf(want) ? y == want
                                           : std::isfinite(y) && std::fabs(y - want) <= tol;
        if (!ok && failures++ < 3)
          ADD_FAILURE() << name_of(spec) << " at " << s.m << "x" << s.n << "x" << s.k << " (lda pad " << s.lda_pad
                        << "): C[" << i << "," << j << "] = " << y << ", reference " << want << " (tol " << tol << ")";
      }
    return failures;
  }

  // Every spec (compiled) on a fresh problem of each size, in bf16 and f16: no spec may fail.
  void expect_every_spec_matches(const std::vector<GemmTemplateSpec>& specs, const std::vector<Size>& sizes,
                                 uint64_t salt) {
    for (DType t : {DType::bf16, DType::f16})
      for (const Size& s : sizes) {
        const Problem p = make_problem(t, s, uint64_t(s.m * 1000003 + s.n * 1009 + s.k) + salt);
        const Tensor a = upload(t, p.a), b_kn = upload(t, p.b_kn), b_nk = upload(t, p.b_nk), res = upload(t, p.residual);
        const Tensor bias = runtime_->upload(Tensor::from_vector<float>(DType::f32, {s.n}, p.bias));
        int failing_specs = 0;
        for (const GemmTemplateSpec& spec : specs)
          if (spec.dtype == t && check(spec, p, a, b_kn, b_nk, bias, res) > 0) ++failing_specs;
        EXPECT_EQ(failing_specs, 0) << dtype_name(t) << " " << s.m << "x" << s.n << "x" << s.k;
      }
  }

  std::unique_ptr<CudaRuntime> runtime_;
  std::unique_ptr<ModuleCache> modules_;
  std::map<std::string, std::unique_ptr<GemmTemplateKernel>> kernels_;
};

TEST_F(CudaGemmTemplate, EveryConfigMatchesAnFp64Reference) {
  std::vector<GemmTemplateSpec> specs;
  for (const GemmTemplateConfig& c : default_gemm_template_configs())
    for (DType t : {DType::bf16, DType::f16})
      for (bool trans_b : {false, true})
        for (const GemmTemplateEpilogue& e : kEpilogues) specs.push_back({t, trans_b, e, c});
  compile(specs);
  const std::vector<Size> sizes = {{1, 1, 1},        {1, 130, 45},     {77, 1, 45},     {77, 130, 1},
                                   {77, 130, 45},    {64, 136, 72, 3}, {50, 200, 45, 3}, {128, 768, 768},
                                   {128, 3072, 768}, {128, 768, 3072}};
  expect_every_spec_matches(specs, sizes, 0);
}

// The Hopper kernel (sm_90a only): every config, bf16 and f16, every epilogue, at sizes the TMA can read
// (16-byte rows) that divide no tile, a size-1 M and N, long K past the ring of stages, and more
// tiles than SMs so that persistent blocks walk several (and their stage ring wraps across tiles).
TEST_F(CudaGemmTemplate, EveryHopperConfigMatchesAnFp64Reference) {
  if (compile_arch(runtime_->info()) != "sm_90a") GTEST_SKIP() << "SKIPPED: the wgmma kernel needs sm_90a";
  std::vector<GemmTemplateSpec> specs;
  for (const GemmTemplateConfig& c : hopper_gemm_template_configs())
    for (DType t : {DType::bf16, DType::f16})
      for (const GemmTemplateEpilogue& e : kEpilogues) specs.push_back({t, true, e, c});
  compile(specs);
  const std::vector<Size> sizes = {{1, 1, 8},        {1, 130, 72},      {77, 1, 72},       {77, 130, 8},
                                   {77, 130, 200},    {64, 136, 72, 8},  {200, 264, 1000},  {1000, 2050, 136},
                                   {128, 768, 768},   {128, 3072, 768},  {128, 768, 3072}};
  expect_every_spec_matches(specs, sizes, 7);
}

// The TMA needs 16-byte rows: an A whose row stride is odd is refused by accepts() (its caller takes
// mma_sync), and launching it anyway is an InternalError, not a wrong answer.
TEST_F(CudaGemmTemplate, TheHopperKernelRefusesRowsTheTmaCannotRead) {
  if (compile_arch(runtime_->info()) != "sm_90a") GTEST_SKIP() << "SKIPPED: the wgmma kernel needs sm_90a";
  const GemmTemplateSpec spec{DType::bf16, true, {}, hopper_gemm_template_configs().front()};
  compile({spec});
  const GemmTemplateKernel& kernel = *kernels_.at(name_of(spec));
  const Tensor a = runtime_->empty(DType::bf16, {64 * 77}), b = runtime_->empty(DType::bf16, {64 * 72}),
               c = runtime_->empty(DType::bf16, {64 * 64});
  GemmTemplateArgs x;
  x.a = device_ptr(a), x.b = device_ptr(b), x.c = device_ptr(c);
  x.m = 64, x.n = 64, x.k = 72, x.lda = 77, x.ldb = 72, x.ldc = 64;
  EXPECT_FALSE(kernel.accepts(x));
  EXPECT_THROW(kernel.launch(runtime_->cuda_stream(), x), InternalError);
  x.lda = 72;
  EXPECT_TRUE(kernel.accepts(x));
  x.a += 2;  // 2-byte aligned
  EXPECT_FALSE(kernel.accepts(x));
}

// M changes per call without recompiling: one kernel, three row counts.
TEST_F(CudaGemmTemplate, RowsAreARunTimeSize) {
  const GemmTemplateSpec spec{DType::bf16, true, {true, GemmActivation::gelu}, choose_gemm_template_config(128, 768, 768, 132)};
  compile({spec});
  for (int64_t m : {1, 128, 333}) {
    const Problem p = make_problem(DType::bf16, {m, 768, 768}, uint64_t(m));
    const Tensor a = upload(DType::bf16, p.a), b_kn = upload(DType::bf16, p.b_kn), b_nk = upload(DType::bf16, p.b_nk),
                 res = upload(DType::bf16, p.residual);
    const Tensor bias = runtime_->upload(Tensor::from_vector<float>(DType::f32, {768}, p.bias));
    EXPECT_EQ(check(spec, p, a, b_kn, b_nk, bias, res), 0) << "m " << m;
  }
  if (compile_arch(runtime_->info()) != "sm_90a") return;
  // The persistent wgmma kernel computes its tile count from each call's M too.
  GemmTemplateSpec hopper{DType::bf16, true, {true, GemmActivation::gelu}, hopper_gemm_template_configs().front()};
  ASSERT_TRUE(hopper.config.persistent);
  compile({hopper});
  for (int64_t m : {1, 128, 3333}) {
    const Problem p = make_problem(DType::bf16, {m, 768, 768}, uint64_t(m) + 5);
    const Tensor a = upload(DType::bf16, p.a), b_kn = upload(DType::bf16, p.b_kn), b_nk = upload(DType::bf16, p.b_nk),
                 res = upload(DType::bf16, p.residual);
    const Tensor bias = runtime_->upload(Tensor::from_vector<float>(DType::f32, {768}, p.bias));
    EXPECT_EQ(check(hopper, p, a, b_kn, b_nk, bias, res), 0) << "wgmma, m " << m;
  }
}

}  // namespace
}  // namespace kiln::backend::cuda
