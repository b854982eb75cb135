// Shared helpers for the GEMM template tests: one private kernel cache per process (removed at exit),
// random operands with optional NaN/Inf, and the fp64 reference with its error bound.
#pragma once
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

#include "kiln/options.h"
#include "common/temp_dir.h"
#include "templates/gemm/cpu/gemm_kernel.h"

namespace kiln::templates::gemm::testing {

namespace fs = std::filesystem;

// A fresh folder under the system temp dir holding this process's kernel cache.
class TempCache : public ::kiln::test_common::TempDir {
 public:
  TempCache() : ::kiln::test_common::TempDir("kiln-gemm-test") {}
  Options options() const {
    Options o;
    o.cache_dir = (root() / "cache").string();
    o.compile_jobs = 2;
    return o;
  }
};

inline const TempCache& shared_cache() {
  static TempCache cache;
  return cache;
}

inline std::vector<GemmKernel> compile(const std::vector<GemmSpec>& specs) {
  return GemmKernel::compile(specs, shared_cache().options());
}

// Uniform values in [-1, 1]; `special` of them replaced by NaN, +Inf or -Inf.
inline std::vector<float> random_values(size_t n, uint32_t seed, size_t special = 0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  const float specials[] = {NAN, INFINITY, -INFINITY};
  for (size_t i = 0; i < special && n > 0; ++i) v[rng() % n] = specials[i % 3];
  return v;
}

// The operands of one run, laid out as the problem says for a run-time M.
struct Operands {
  std::vector<float> a, b, bias;
  std::vector<std::vector<float>> extra;
};

inline int64_t stride_or_dense(int64_t stride, int64_t dense) { return stride == kDenseStride ? dense : stride; }

// Element counts each operand needs for M rows.
inline size_t a_floats(const GemmProblem& p, int64_t M) {
  return static_cast<size_t>(stride_or_dense(p.batch_stride_a, M * p.k) * (p.batch - 1) + M * p.k);
}
inline size_t b_floats(const GemmProblem& p) {
  return static_cast<size_t>(stride_or_dense(p.batch_stride_b, p.k * p.n) * (p.batch - 1) + p.k * p.n);
}
inline size_t c_floats(const GemmProblem& p, int64_t M) {
  return static_cast<size_t>(stride_or_dense(p.batch_stride_c, M * p.n) * (p.batch - 1) + M * p.n);
}
inline size_t bias_floats(const GemmProblem& p, int64_t M) {
  if (p.bias == GemmProblem::Bias::row) return static_cast<size_t>(p.n);
  if (p.bias == GemmProblem::Bias::full)
    return static_cast<size_t>(stride_or_dense(p.batch_stride_bias, M * p.n) * (p.batch - 1) + M * p.n);
  return 0;
}

// The epilogue body's meaning in double: (v, b, m, n, extra inputs) -> result.
using RefEpilogue = std::function<double(double, int64_t, int64_t, int64_t, const Operands&)>;

struct Reference {
  std::vector<double> value, bound;  // per element of C: exact result, allowed |error|
};

// fp64 loops. The bound: 1e-6 * (K + 4) * (|alpha| sum_k |a||b| + |beta bias|) plus 4e-6 |value| for the
// epilogue's own rounding (the body's math functions are within a few ulp).
inline Reference reference(const GemmProblem& p, int64_t M, const Operands& x, const RefEpilogue& epi) {
  Reference r;
  const size_t cn = c_floats(p, M);
  r.value.assign(cn, 0.0);
  r.bound.assign(cn, 0.0);
  const int64_t sa = stride_or_dense(p.batch_stride_a, M * p.k), sb = stride_or_dense(p.batch_stride_b, p.k * p.n);
  const int64_t sc = stride_or_dense(p.batch_stride_c, M * p.n), sbias = stride_or_dense(p.batch_stride_bias, M * p.n);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < p.n; ++n) {
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < p.k; ++k) {
          double av = x.a[static_cast<size_t>(b * sa + (p.trans_a ? k * M + m : m * p.k + k))];
          double bv = x.b[static_cast<size_t>(b * sb + (p.trans_b ? n * p.k + k : k * p.n + n))];
          acc += av * bv;
          mag += std::fabs(av * bv);
        }
        double bias = 0;
        if (p.bias == GemmProblem::Bias::row) bias = x.bias[static_cast<size_t>(n)];
        if (p.bias == GemmProblem::Bias::full) bias = x.bias[static_cast<size_t>(b * sbias + m * p.n + n)];
        double v = double(p.alpha) * acc + (p.bias == GemmProblem::Bias::none ? 0.0 : double(p.beta) * bias);
        double scale = std::fabs(double(p.alpha)) * mag + std::fabs(double(p.beta) * bias);
        if (epi) v = epi(v, b, m, n, x);
        const size_t at = static_cast<size_t>(b * sc + m * p.n + n);
        r.value[at] = v;
        r.bound[at] = 1e-6 * double(p.k + 4) * scale + 4e-6 * std::fabs(v) + 1e-30;
      }
  return r;
}

// Checks every element of C (NaN only where NaN is expected, infinities exactly); returns the failures.
inline int check_against(const std::vector<float>& got, const Reference& want, const std::string& what) {
  int failures = 0;
  for (size_t i = 0; i < want.value.size(); ++i) {
    const double g = got[i], w = want.value[i];
    bool ok = std::isnan(w) ? std::isnan(g) : std::isinf(w) ? g == w : std::fabs(g - w) <= want.bound[i];
    if (!ok && ++failures <= 5) ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w;
  }
  return failures;
}

}  // namespace kiln::templates::gemm::testing
