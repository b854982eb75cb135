// Portable f32 kernels: plain loops (the compiler vectorises the elementwise ones for the baseline
// ISA) and std::exp. Used on CPUs without AVX-512F, and in tests as a second opinion.
#include <cmath>
#include <limits>

#include "ops/reduction/f32_kernels.h"

namespace kiln {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// NaN-sticky max/min: a NaN in either operand wins (numpy's maximum/minimum).
inline float max_nan(float acc, float x) { return (x > acc || x != x) ? x : acc; }
inline float min_nan(float acc, float x) { return (x < acc || x != x) ? x : acc; }

// Rows longer than this are summed as two halves (pairwise), so the rounding error grows with log(n),
// not n: a running sum over 50265 softmax terms or a million-element ReduceSum is off by ~1e-5 otherwise.
constexpr int64_t kPairwiseBlock = 1024;

float row_sum(const float* x, int64_t n) {
  if (n > kPairwiseBlock) {
    const int64_t half = n / 2 / 8 * 8;
    return row_sum(x, half) + row_sum(x + half, n - half);
  }
  // Eight partial sums: better rounding than one running sum, and the compiler can vectorise them.
  float part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) part[j] += x[i + j];
  float s = 0;
  for (; i < n; ++i) s += x[i];
  for (int j = 0; j < 8; ++j) s += part[j];
  return s;
}

float row_max(const float* x, int64_t n) {
  float m = -kInf;
  for (int64_t i = 0; i < n; ++i) m = max_nan(m, x[i]);
  return m;
}

float row_min(const float* x, int64_t n) {
  float m = kInf;
  for (int64_t i = 0; i < n; ++i) m = min_nan(m, x[i]);
  return m;
}

float row_exp_sum(const float* x, float* y, int64_t n, float shift) {
  if (n > kPairwiseBlock) {
    const int64_t half = n / 2 / 8 * 8;
    return row_exp_sum(x, y, half, shift) + row_exp_sum(x + half, y ? y + half : nullptr, n - half, shift);
  }
  float part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      const float e = std::exp(x[i + j] - shift);
      if (y) y[i + j] = e;
      part[j] += e;
    }
  float s = 0;
  for (; i < n; ++i) {
    const float e = std::exp(x[i] - shift);
    if (y) y[i] = e;
    s += e;
  }
  for (int j = 0; j < 8; ++j) s += part[j];
  return s;
}

void row_scale(float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

void row_sub2(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - a) - b;
}

void row_affine(const float* x, float* y, int64_t n, float sub, float mul, float add) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - sub) * mul + add;
}

void layernorm_row(const float* x, float* y, int64_t n, const float* scale, const float* bias, float eps,
                   float* mean_out, float* inv_out) {
  // Scalar anyway, so accumulate in double.
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  float mean = static_cast<float>(s / static_cast<double>(n));
  double q = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(x[i]) - mean;
    q += d * d;
  }
  float var = static_cast<float>(q / static_cast<double>(n));
  float inv = 1.0f / std::sqrt(var + eps);
  for (int64_t i = 0; i < n; ++i) {
    float v = (x[i] - mean) * inv * scale[i];
    y[i] = bias ? v + bias[i] : v;
  }
  *mean_out = mean;
  *inv_out = inv;
}

void col_add(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}
void col_max(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = max_nan(acc[i], x[i]);
}
void col_min(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = min_nan(acc[i], x[i]);
}
void col_exp_sum(const float* x, const float* shift, float* y, float* sum, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float e = std::exp(x[i] - shift[i]);
    if (y) y[i] = e;
    sum[i] += e;
  }
}
void col_mul(float* y, const float* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= s[i];
}
void col_sub2(const float* x, const float* a, const float* b, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - a[i]) - b[i];
}
void exp_array(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

}  // namespace

const F32Kernels& f32_kernels_generic() {
  static const F32Kernels k{"generic", row_sum,  row_max,     row_min,  row_exp_sum, row_scale,
                            row_sub2,  row_affine, layernorm_row, col_add, col_max,     col_min,
                            col_exp_sum, col_mul, col_sub2,    exp_array};
  return k;
}

const F32Kernels& f32_kernels() {
  static const F32Kernels* best = [] {
    const F32Kernels* k = f32_kernels_avx512();
    return k ? k : &f32_kernels_generic();
  }();
  return *best;
}

}  // namespace kiln
