// AVX-512 f32 kernels (intrinsics; the file's functions are compiled for AVX-512F and only reached
// after a run-time CPU check). Tails use masked loads/stores, so no element outside [0, n) is touched.
//
// exp: Cephes-style. n = round(x * log2(e)), r = x - n*ln2 (ln2 split in two so n*C1 is exact),
// exp(r) by a degree-7 polynomial on |r| <= ln2/2, then scalef(p, n) = p * 2^n, which rounds once and
// gives inf / subnormals / 0 at the ends of the range. x is clamped to [-104, 88.8] first (beyond those
// exp is 0 or inf in f32); the clamp passes NaN through, so exp(NaN) = NaN, exp(-inf) = 0,
// exp(+inf) = inf. Measured against double exp over every 97th float in [-104, 88.8] (23 million
// points, test F32Kernels.ExpAccuracy): at most 1 ulp for normal results, at most 0.74 * 2^-149 for
// subnormal ones. Sleef is not used: it is not linked into kiln_ops in this tree.
#include <cstdint>

// GCC 12's AVX-512 headers trip -Wuninitialized on their own _mm512_undefined_ps(); the warning is
// reported at the header's lines, so silencing it around the include covers exactly those.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "ops/reduction/f32_kernels.h"

namespace kiln {

#pragma GCC push_options
#pragma GCC target("avx512f")

namespace {

inline __mmask16 tail_mask(int64_t rest) { return static_cast<__mmask16>((1u << rest) - 1u); }

inline __m512 exp512(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-104.0f), hi = _mm512_set1_ps(88.8f);
  // MAXPS/MINPS return their second operand when either is NaN: the clamp keeps NaN.
  x = _mm512_min_ps(hi, _mm512_max_ps(lo, x));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

inline __mmask16 is_nan(__m512 v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q); }

float row_sum(const float* x, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
  }
  for (; i + 16 <= n; i += 16) a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
  if (i < n) a1 = _mm512_add_ps(a1, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

template <bool kMax>
inline __m512 extreme(__m512 a, __m512 v) { return kMax ? _mm512_max_ps(a, v) : _mm512_min_ps(a, v); }

// Max/min of a row: NaN lanes are tracked in a mask (MAXPS alone would drop them).
template <bool kMax>
float row_extreme(const float* x, int64_t n) {
  const __m512 init = _mm512_set1_ps(kMax ? -__builtin_inff() : __builtin_inff());
  __m512 a0 = init, a1 = init;
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
    nan |= is_nan(v0) | is_nan(v1);
    a0 = extreme<kMax>(a0, v0);
    a1 = extreme<kMax>(a1, v1);
  }
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    nan |= is_nan(v);
    a0 = extreme<kMax>(a0, v);
  }
  if (i < n) {
    __mmask16 m = tail_mask(n - i);
    __m512 v = _mm512_mask_loadu_ps(init, m, x + i);
    nan |= is_nan(v);
    a1 = extreme<kMax>(a1, v);
  }
  if (nan) return __builtin_nanf("");
  return kMax ? _mm512_reduce_max_ps(_mm512_max_ps(a0, a1)) : _mm512_reduce_min_ps(_mm512_min_ps(a0, a1));
}

float row_max(const float* x, int64_t n) { return row_extreme<true>(x, n); }
float row_min(const float* x, int64_t n) { return row_extreme<false>(x, n); }

float row_exp_sum(const float* x, float* y, int64_t n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512 a0 = _mm512_setzero_ps(), a1 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 e0 = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), s));
    __m512 e1 = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), s));
    if (y) {
      _mm512_storeu_ps(y + i, e0);
      _mm512_storeu_ps(y + i + 16, e1);
    }
    a0 = _mm512_add_ps(a0, e0);
    a1 = _mm512_add_ps(a1, e1);
  }
  for (; i + 16 <= n; i += 16) {
    __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), s));
    if (y) _mm512_storeu_ps(y + i, e);
    a0 = _mm512_add_ps(a0, e);
  }
  if (i < n) {
    __mmask16 m = tail_mask(n - i);
    __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s));
    if (y) _mm512_mask_storeu_ps(y + i, m, e);
    a1 = _mm512_mask_add_ps(a1, m, a1, e);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

// Applies f to every 16-lane block of [0, n) with a masked tail: f(offset, mask).
template <class F>
inline void for_blocks(int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) f(i, static_cast<__mmask16>(0xFFFF));
  if (i < n) f(i, tail_mask(n - i));
}

void row_scale(float* y, int64_t n, float s) {
  const __m512 vs = _mm512_set1_ps(s);
  for_blocks(n, [&](int64_t i, __mmask16 m) {
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), vs));
  });
}

void row_sub2(const float* x, float* y, int64_t n, float a, float b) {
  const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
  for_blocks(n, [&](int64_t i, __mmask16 m) {
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_sub_ps(_mm512_sub_ps(v, va), vb));
  });
}

void row_affine(const float* x, float* y, int64_t n, float sub, float mul, float add) {
  const __m512 vs = _mm512_set1_ps(sub), vm = _mm512_set1_ps(mul), va = _mm512_set1_ps(add);
  for_blocks(n, [&](int64_t i, __mmask16 m) {
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(_mm512_sub_ps(v, vs), vm, va));
  });
}

void layernorm_row(const float* x, float* y, int64_t n, const float* scale, const float* bias, float eps,
                   float* mean_out, float* inv_out) {
  float mean = row_sum(x, n) / static_cast<float>(n);
  const __m512 vmean = _mm512_set1_ps(mean);
  // Second pass over the (cache-resident) row: the variance of the deviations, not E[x^2] - mean^2.
  __m512 q0 = _mm512_setzero_ps(), q1 = q0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + i), vmean);
    __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vmean);
    q0 = _mm512_fmadd_ps(d0, d0, q0);
    q1 = _mm512_fmadd_ps(d1, d1, q1);
  }
  for_blocks(n - i, [&](int64_t j, __mmask16 m) {
    __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, x + i + j), vmean);
    q0 = _mm512_fmadd_ps(d, d, q0);
  });
  float var = _mm512_reduce_add_ps(_mm512_add_ps(q0, q1)) / static_cast<float>(n);
  float inv = 1.0f / __builtin_sqrtf(var + eps);
  const __m512 vinv = _mm512_set1_ps(inv);
  for_blocks(n, [&](int64_t j, __mmask16 m) {
    __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), vmean), vinv);
    __m512 sc = _mm512_maskz_loadu_ps(m, scale + j);
    __m512 r = bias ? _mm512_fmadd_ps(v, sc, _mm512_maskz_loadu_ps(m, bias + j)) : _mm512_mul_ps(v, sc);
    _mm512_mask_storeu_ps(y + j, m, r);
  });
  *mean_out = mean;
  *inv_out = inv;
}

void col_add(float* acc, const float* x, int64_t n) {
  for_blocks(n, [&](int64_t i, __mmask16 m) {
    __m512 a = _mm512_maskz_loadu_ps(m, acc + i);
    _mm512_mask_storeu_ps(acc + i, m, _mm512_add_ps(a, _mm512_maskz_loadu_ps(m, x + i)));
  });
}

template <bool kMax>
void col_extreme(float* acc, const float* x, int64_t n) {
  for_blocks(n, [&](int64_t i, __mmask16 m) {
    __m512 a = _mm512_maskz_loadu_ps(m, acc + i), v = _mm512_maskz_loadu_ps(m, x + i);
    // (v, a): a NaN accumulator is returned as is; a NaN v is put back by the masked move.
    __m512 r = kMax ? _mm512_max_ps(v, a) : _mm512_min_ps(v, a);
    r = _mm512_mask_mov_ps(r, is_nan(v), v);
    _mm512_mask_storeu_ps(acc + i, m, r);
  });
}
void col_max(float* acc, const float* x, int64_t n) { col_extreme<true>(acc, x, n); }
void col_min(float* acc, const float* x, int64_t n) { col_extreme<false>(acc, x, n); }

void col_exp_sum(const float* x, const float* shift, float* y, float* sum, int64_t n) {
  for_blocks(n, [&](int64_t i, __mmask16 m) {
    __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, shift + i)));
    if (y) _mm512_mask_storeu_ps(y + i, m, e);
    _mm512_mask_storeu_ps(sum + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, sum + i), e));
  });
}

void col_mul(float* y, const float* s, int64_t n) {
  for_blocks(n, [&](int64_t i, __mmask16 m) {
    __m512 v = _mm512_maskz_loadu_ps(m, y + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, s + i)));
  });
}

void col_sub2(const float* x, const float* a, const float* b, float* y, int64_t n) {
  for_blocks(n, [&](int64_t i, __mmask16 m) {
    __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, a + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_sub_ps(v, _mm512_maskz_loadu_ps(m, b + i)));
  });
}

void exp_array(const float* x, float* y, int64_t n) {
  for_blocks(n, [&](int64_t i, __mmask16 m) {
    _mm512_mask_storeu_ps(y + i, m, exp512(_mm512_maskz_loadu_ps(m, x + i)));
  });
}

}  // namespace

#pragma GCC pop_options

const F32Kernels* f32_kernels_avx512() {
  static const F32Kernels k{"avx512", row_sum,  row_max,     row_min,  row_exp_sum, row_scale,
                            row_sub2, row_affine, layernorm_row, col_add, col_max,     col_min,
                            col_exp_sum, col_mul, col_sub2,    exp_array};
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported ? &k : nullptr;
}

}  // namespace kiln
