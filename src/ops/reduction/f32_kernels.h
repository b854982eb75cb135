// Vectorised f32 building blocks of the eager reduction family (softmax, layernorm, reductions,
// batchnorm). Two implementations behind one table: AVX-512 intrinsics (chosen when the CPU has
// AVX-512F) and portable scalar loops. Both keep IEEE semantics: NaN propagates, +-Inf are exact.
#pragma once
#include <cstdint>

namespace kiln {

struct F32Kernels {
  const char* name;
  // Reductions of one contiguous row. max/min return NaN when any element is NaN (numpy semantics);
  // an empty row gives the identity (0, -inf, +inf).
  float (*row_sum)(const float* x, int64_t n);
  float (*row_max)(const float* x, int64_t n);
  float (*row_min)(const float* x, int64_t n);
  // y[i] = exp(x[i] - shift) (not stored when y is null); returns the sum of those exps.
  float (*row_exp_sum)(const float* x, float* y, int64_t n, float shift);
  // y[i] *= s.
  void (*row_scale)(float* y, int64_t n, float s);
  // y[i] = (x[i] - a) - b (LogSoftmax: a = row max, b = log of the sum of exps).
  void (*row_sub2)(const float* x, float* y, int64_t n, float a, float b);
  // y[i] = (x[i] - sub) * mul + add (BatchNormalization on one channel plane).
  void (*row_affine)(const float* x, float* y, int64_t n, float sub, float mul, float add);
  // LayerNorm of one row: two-pass mean and variance, y = (x - mean) * inv_std * scale (+ bias).
  // bias may be null. Writes the row's mean and 1/sqrt(var + eps) to *mean / *inv_std.
  void (*layernorm_row)(const float* x, float* y, int64_t n, const float* scale, const float* bias,
                        float eps, float* mean, float* inv_std);

  // Column steps for reducing a non-last axis: n contiguous elements of one reduced row at a time.
  void (*col_add)(float* acc, const float* x, int64_t n);  // acc += x
  void (*col_max)(float* acc, const float* x, int64_t n);  // acc = max(acc, x), NaN sticky
  void (*col_min)(float* acc, const float* x, int64_t n);  // acc = min(acc, x), NaN sticky
  // e = exp(x - shift); y = e unless y is null; sum += e.
  void (*col_exp_sum)(const float* x, const float* shift, float* y, float* sum, int64_t n);
  void (*col_mul)(float* y, const float* s, int64_t n);  // y *= s
  // y = (x - a) - b, elementwise over the three arrays.
  void (*col_sub2)(const float* x, const float* a, const float* b, float* y, int64_t n);

  // y = exp(x), the same exp the kernels above use (exposed so tests can measure its error).
  void (*exp)(const float* x, float* y, int64_t n);
};

// The best implementation for the running CPU (decided once).
const F32Kernels& f32_kernels();
// The portable implementation (scalar loops, std::exp).
const F32Kernels& f32_kernels_generic();
// The AVX-512 implementation, or nullptr when this CPU lacks AVX-512F.
const F32Kernels* f32_kernels_avx512();

}  // namespace kiln
