// LayerNorm folded into the Hopper GEMM template (GemmTemplateEpilogue::row_norm) on the GPU machine
// (skipped elsewhere with "SKIPPED: ..."): C = epilogue(standardise(A) B^T) and y = LayerNorm(A) against
// an fp64 reference, for every wgmma config without split-K, with BERT's Q/K/V and FFN1 shapes, sizes
// that divide no tile (a K tail the row statistics must not count), size-1 M and N, and more tiles than
// SMs (persistent walks). A's rows: NaN, +Inf and -Inf rows, a constant row (variance 0), rows whose
// mean is far from 0 against their spread (up to 100 standard deviations: the fold's weak case), the rest
// at random offsets and scales.
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
#include "kiln/tensor.h"

namespace kiln::backend::cuda {
namespace {

constexpr float kEps = 1e-5f;  // BERT's LayerNorm epsilon: a constant row's rstd is 316

struct Problem {
  int64_t m, n, k;
  std::vector<uint16_t> a, b, residual;  // a [m, k], b [n, k] (gamma already folded in, as the caller does)
  std::vector<float> bias, colsum, gamma, beta;
  std::vector<double> xhat;                // [m, k]: (a - mean) / sqrt(var + eps), fp64
  std::vector<double> product, magnitude;  // [m, n]: sum xhat b; rstd (sum |a b| + |mean| sum |b|)
  std::vector<double> row_scale;           // [m]: max |a| rstd, the scale of fp32 statistics' error
  std::vector<double> b_sum;               // [n]: sum |b|
};

Problem make_problem(int64_t m, int64_t n, int64_t k, uint64_t seed) {
  Problem p{m, n, k, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  p.a.resize(size_t(m * k));
  for (int64_t i = 0; i < m; ++i) {
    const float scale = std::exp2(4.0f * uniform(rng));
    const float offset = i == 4 ? 100.0f * scale : i == 5 ? -30.0f * scale : 4.0f * scale * uniform(rng);
    for (int64_t j = 0; j < k; ++j) {
      float x = offset + scale * normal(rng);
      if (i == 3) x = 1.75f;  // constant
      p.a[size_t(i * k + j)] = float_to_bf16(x);
    }
  }
  if (m >= 3 && k >= 1) {
    p.a[size_t(0 * k + k / 2)] = float_to_bf16(nan);
    p.a[size_t(1 * k + k / 3)] = float_to_bf16(inf);
    p.a[size_t(2 * k + k - 1)] = float_to_bf16(-inf);
  }
  for (int64_t e = 0; e < n * k; ++e) p.b.push_back(float_to_bf16(normal(rng) / std::sqrt(float(k))));
  for (int64_t j = 0; j < n; ++j) {
    p.bias.push_back(0.5f * normal(rng));
    double s = 0;
    for (int64_t kk = 0; kk < k; ++kk) s += bf16_to_float(p.b[size_t(j * k + kk)]);
    p.colsum.push_back(float(s));
    double sa = 0;
    for (int64_t kk = 0; kk < k; ++kk) sa += std::fabs(bf16_to_float(p.b[size_t(j * k + kk)]));
    p.b_sum.push_back(sa);
  }
  for (int64_t j = 0; j < k; ++j) p.gamma.push_back(1.0f + 0.5f * normal(rng)), p.beta.push_back(0.5f * normal(rng));
  for (int64_t e = 0; e < m * n; ++e) p.residual.push_back(float_to_bf16(normal(rng)));

  p.xhat.assign(size_t(m * k), 0.0);
  p.product.assign(size_t(m * n), 0.0);
  p.magnitude.assign(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < k; ++j) mean += bf16_to_float(p.a[size_t(i * k + j)]);
    mean /= double(k);
    for (int64_t j = 0; j < k; ++j) var += std::pow(bf16_to_float(p.a[size_t(i * k + j)]) - mean, 2);
    var /= double(k);
    const double rstd = 1.0 / std::sqrt(var + double(kEps));
    double largest = 0;
    for (int64_t j = 0; j < k; ++j) largest = std::max(largest, std::fabs(double(bf16_to_float(p.a[size_t(i * k + j)]))));
    p.row_scale.push_back(largest * rstd);
    for (int64_t j = 0; j < k; ++j) p.xhat[size_t(i * k + j)] = (bf16_to_float(p.a[size_t(i * k + j)]) - mean) * rstd;
    for (int64_t c = 0; c < n; ++c) {
      double s = 0, mag = 0, bsum = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double b = bf16_to_float(p.b[size_t(c * k + j)]);
        s += p.xhat[size_t(i * k + j)] * b;
        mag += std::fabs(double(bf16_to_float(p.a[size_t(i * k + j)])) * b);
        bsum += std::fabs(b);
      }
      p.product[size_t(i * n + c)] = s;
      // The kernel sums x b in fp32 before subtracting mean colsum: its error scales with both terms.
      p.magnitude[size_t(i * n + c)] = rstd * (mag + std::fabs(mean) * bsum);
    }
  }
  return p;
}

class CudaGemmRowNorm : public ::testing::Test {
 protected:
  void SetUp() override {
    const DeviceProbe probe = probe_devices();
    if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
    runtime_ = std::make_unique<CudaRuntime>(0, Options{});
    if (compile_arch(runtime_->info()) != "sm_90a") GTEST_SKIP() << "SKIPPED: the wgmma kernel needs sm_90a";
    modules_ = std::make_unique<ModuleCache>(*runtime_, Options{});
  }

  std::vector<std::unique_ptr<GemmTemplateKernel>> compile(const std::vector<GemmTemplateSpec>& specs) {
    std::vector<CudaUnit> units;
    for (const GemmTemplateSpec& s : specs) units.push_back(gemm_template_unit(s));
    const CubinBatch batch = compile_cubins(units, compile_arch(runtime_->info()), Options{});
    for (size_t i = 0; i < units.size(); ++i) modules_->add(units[i].name, batch.cubins[i]);
    std::vector<std::unique_ptr<GemmTemplateKernel>> kernels;
    for (const GemmTemplateSpec& s : specs)
      kernels.push_back(std::make_unique<GemmTemplateKernel>(s, runtime_->context(), *modules_));
    return kernels;
  }

  Tensor words(const std::vector<uint16_t>& w) {
    Tensor h = Tensor::empty(DType::bf16, {int64_t(w.size())});
    std::copy(w.begin(), w.end(), h.data<uint16_t>());
    return runtime_->upload(h);
  }
  Tensor floats(const std::vector<float>& v) {
    return runtime_->upload(Tensor::from_vector<float>(DType::f32, {int64_t(v.size())}, v));
  }

  // Runs the kernel on the problem (y written when with_y) and counts the wrong elements of C and y.
  int check(const GemmTemplateKernel& kernel, const Problem& p, bool with_y) {
    const GemmTemplateSpec& spec = kernel.spec();
    const std::string what = fmt::format("{} {} at {}x{}x{}{}", gemm_config_name(spec.config),
                                         gemm_epilogue_name(spec.epilogue), p.m, p.n, p.k, with_y ? " with y" : "");
    const Tensor a = words(p.a), b = words(p.b), res = words(p.residual), bias = floats(p.bias),
                 colsum = floats(p.colsum), gamma = floats(p.gamma), beta = floats(p.beta);
    Tensor c = runtime_->empty(DType::bf16, {p.m, p.n}), y = runtime_->empty(DType::bf16, {p.m, p.k});
    GemmTemplateArgs x;
    x.a = device_ptr(a), x.b = device_ptr(b), x.c = device_ptr(c);
    x.bias = spec.epilogue.bias ? device_ptr(bias) : 0;
    x.residual = spec.epilogue.residual ? device_ptr(res) : 0;
    x.m = p.m, x.n = p.n, x.k = p.k, x.lda = p.k, x.ldb = p.k, x.ldc = p.n, x.ldr = p.n;
    x.norm_colsum = device_ptr(colsum), x.norm_eps = kEps;
    if (with_y) x.norm_gamma = device_ptr(gamma), x.norm_beta = device_ptr(beta), x.norm_y = device_ptr(y), x.ldy = p.k;
    kernel.launch(runtime_->cuda_stream(), x);
    const Tensor got = runtime_->download(c), got_y = runtime_->download(y);
    runtime_->synchronize();
    int failures = 0;
    auto expect_close = [&](const char* tensor, int64_t i, int64_t j, double got_v, double want, double tol) {
      const bool ok = std::isnan(want) ? std::isnan(got_v) : std::isfinite(got_v) && std::fabs(got_v - want) <= tol;
      if (!ok && failures++ < 3)
        ADD_FAILURE() << what << ": " << tensor << "[" << i << "," << j << "] = " << got_v << ", reference " << want
                      << " (tol " << tol << ")";
    };
    constexpr double kOut = 0x1p-8;  // bf16's rounding of the output
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        const size_t e = size_t(i * p.n + j);
        double pre = p.product[e];
        if (spec.epilogue.bias) pre += p.bias[size_t(j)];
        double want = pre;
        if (spec.epilogue.activation == GemmActivation::gelu) want = 0.5 * pre * (1.0 + std::erf(pre / std::sqrt(2.0)));
        if (spec.epilogue.residual) want += bf16_to_float(p.residual[e]);
        // Output rounding; fp32 accumulation of the un-centred product and its mean term over K; the
        // fp32 statistics (mean and rstd to a few hundred ulps of the row's largest value); GELU's erff.
        const double tol = kOut * std::fabs(want) + 4.0 * std::sqrt(double(p.k)) * 0x1p-24 * p.magnitude[e] * 1.2 +
                           0x1p-18 * (p.row_scale[size_t(i)] * p.b_sum[size_t(j)] + std::fabs(p.product[e])) +
                           1e-6 * (1.0 + std::fabs(pre));
        expect_close("C", i, j, bf16_to_float(got.data<uint16_t>()[e]), want, tol);
      }
    if (!with_y) return failures;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.k; ++j) {
        const size_t e = size_t(i * p.k + j);
        const double xhat = p.xhat[e], want = xhat * p.gamma[size_t(j)] + p.beta[size_t(j)];
        // fp32 statistics: their error relative to the row's spread grows with |mean| / std.
        const double tol = kOut * std::fabs(want) +
                           0x1p-18 * std::fabs(p.gamma[size_t(j)]) * (p.row_scale[size_t(i)] + std::fabs(xhat)) + 1e-6;
        expect_close("y", i, j, bf16_to_float(got_y.data<uint16_t>()[e]), want, tol);
      }
    return failures;
  }

  std::unique_ptr<CudaRuntime> runtime_;
  std::unique_ptr<ModuleCache> modules_;
};

TEST_F(CudaGemmRowNorm, EveryConfigMatchesAnFp64LayerNormThenProduct) {
  std::vector<GemmTemplateSpec> specs;
  for (const GemmTemplateConfig& c : hopper_gemm_template_configs()) {
    if (c.split_k != 1) continue;
    for (GemmTemplateEpilogue e : {GemmTemplateEpilogue{true}, GemmTemplateEpilogue{true, GemmActivation::gelu},
                                   GemmTemplateEpilogue{false, GemmActivation::none, true}}) {
      e.row_norm = true;
      specs.push_back({DType::bf16, true, e, c});
    }
  }
  ASSERT_FALSE(specs.empty());
  const auto kernels = compile(specs);
  struct Size {
    int64_t m, n, k;
  };
  for (const Size& s : {Size{1, 1, 8}, Size{1, 130, 72}, Size{77, 1, 200}, Size{77, 130, 200}, Size{300, 264, 136},
                        Size{128, 2304, 768}, Size{128, 3072, 768}, Size{1000, 2050, 72}}) {
    const Problem p = make_problem(s.m, s.n, s.k, uint64_t(s.m * 7919 + s.n * 31 + s.k));
    int failing = 0;
    for (size_t i = 0; i < kernels.size(); ++i) failing += check(*kernels[i], p, i % 2 == 0) > 0;
    EXPECT_EQ(failing, 0) << s.m << "x" << s.n << "x" << s.k;
  }
}

}  // namespace
}  // namespace kiln::backend::cuda
