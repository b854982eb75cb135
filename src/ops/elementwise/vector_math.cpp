#include "ops/elementwise/vector_math.h"

#include <dlfcn.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace kiln::elementwise {
namespace {

// Sleef is loaded at run time (dlopen) rather than linked: kiln_ops does not link libsleef, and a
// missing library must only cost speed (the scalar libm path), never the build. When it is linked,
// dlopen simply returns the already-loaded copy.
using Fn16 = __m512 (*)(__m512);
using Fn8 = __m256 (*)(__m256);

struct SleefTable {
  Fn16 f16[4] = {};  // indexed by VecFn
  Fn8 f8[4] = {};
  bool avx512 = false;
  bool avx2 = false;
};

const SleefTable& sleef() {
  static const SleefTable table = [] {
    SleefTable t;
    void* lib = dlopen("libsleef.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libsleef.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return t;
    const char* names16[4] = {"Sleef_expf16_u10", "Sleef_logf16_u10", "Sleef_erff16_u10", "Sleef_tanhf16_u10"};
    const char* names8[4] = {"Sleef_expf8_u10", "Sleef_logf8_u10", "Sleef_erff8_u10", "Sleef_tanhf8_u10"};
    bool all16 = true, all8 = true;
    for (int i = 0; i < 4; ++i) {
      void* p16 = dlsym(lib, names16[i]);
      void* p8 = dlsym(lib, names8[i]);
      all16 = all16 && p16;
      all8 = all8 && p8;
      // POSIX guarantees data and function pointers convert; memcpy keeps -Wpedantic quiet.
      std::memcpy(&t.f16[i], &p16, sizeof p16);
      std::memcpy(&t.f8[i], &p8, sizeof p8);
    }
    __builtin_cpu_init();
    t.avx512 = all16 && __builtin_cpu_supports("avx512f");
    t.avx2 = all8 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return t;
  }();
  return table;
}

float scalar_fn(VecFn fn, float x) {
  switch (fn) {
    case VecFn::exp: return std::exp(x);
    case VecFn::log: return std::log(x);
    case VecFn::erf: return std::erf(x);
    case VecFn::tanh: return std::tanh(x);
  }
  return x;
}

__attribute__((target("avx512f"))) void run_avx512(Fn16 f, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
  if (i < n) {  // masked tail: inactive lanes read as 0 and are not stored
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

// sigmoid(x) = (x < 0 ? e : 1) / (1 + e) with e = exp(-|x|): e never overflows, so large negative x
// give the (subnormal) value instead of 1 / Inf = 0. NaN stays NaN; +-Inf give 1 and 0.
inline float sigmoid1(float x) {
  float e = std::exp(-std::fabs(x));
  return (x < 0 ? e : 1.0f) / (1.0f + e);
}

__attribute__((target("avx512f"))) inline __m512 sigmoid16(Fn16 exp16, __m512 v) {
  const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
  __m512 e = exp16(_mm512_sub_ps(zero, _mm512_abs_ps(v)));
  __m512 num = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), one, e);
  return _mm512_div_ps(num, _mm512_add_ps(one, e));
}

__attribute__((target("avx512f"))) void sigmoid_avx512(Fn16 exp16, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, sigmoid16(exp16, _mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, sigmoid16(exp16, _mm512_maskz_loadu_ps(m, x + i)));
  }
}

__attribute__((target("avx2,fma"))) void run_avx2(Fn8 f, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {  // tail through a zero-padded buffer
    alignas(32) float buf[8] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm256_store_ps(buf, f(_mm256_load_ps(buf)));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(float));
  }
}

__attribute__((target("avx2,fma"))) inline __m256 sigmoid8(Fn8 exp8, __m256 v) {
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  __m256 minus_abs = _mm256_or_ps(v, _mm256_set1_ps(-0.0f));  // sets the sign bit: -|v|
  __m256 e = exp8(minus_abs);
  __m256 num = _mm256_blendv_ps(one, e, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
  return _mm256_div_ps(num, _mm256_add_ps(one, e));
}

__attribute__((target("avx2,fma"))) void sigmoid_avx2(Fn8 exp8, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, sigmoid8(exp8, _mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float buf[8] = {};
    std::memcpy(buf, x + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm256_store_ps(buf, sigmoid8(exp8, _mm256_load_ps(buf)));
    std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(float));
  }
}

// The zero-masking form (all lanes active) sidesteps GCC 12's false -Wmaybe-uninitialized on
// _mm512_sqrt_ps; the result is the same.
__attribute__((target("avx512f"))) void sqrt_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_maskz_sqrt_ps(0xffff, _mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, _mm512_maskz_sqrt_ps(m, _mm512_maskz_loadu_ps(m, x + i)));
  }
}

__attribute__((target("avx"))) void sqrt_avx(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = std::sqrt(x[i]);
}

}  // namespace

void vector_sqrt_f32(const float* x, float* y, int64_t n) {
  static const int level = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx") ? 1 : 0;
  }();
  if (level == 2) return sqrt_avx512(x, y, n);
  if (level == 1) return sqrt_avx(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
}

void vector_math_f32(VecFn fn, const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const SleefTable& s = sleef();
  int k = static_cast<int>(fn);
  if (s.avx512) return run_avx512(s.f16[k], x, y, n);
  if (s.avx2) return run_avx2(s.f8[k], x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = scalar_fn(fn, x[i]);
}

void vector_sigmoid_f32(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  const SleefTable& s = sleef();
  int k = static_cast<int>(VecFn::exp);
  if (s.avx512) return sigmoid_avx512(s.f16[k], x, y, n);
  if (s.avx2) return sigmoid_avx2(s.f8[k], x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = sigmoid1(x[i]);
}

bool vector_math_f32_on(VecBackend backend, std::optional<VecFn> fn, const float* x, float* y, int64_t n) {
  const SleefTable& s = sleef();
  int k = static_cast<int>(fn.value_or(VecFn::exp));
  switch (backend) {
    case VecBackend::avx512:
      if (!s.avx512) return false;
      fn ? run_avx512(s.f16[k], x, y, n) : sigmoid_avx512(s.f16[k], x, y, n);
      return true;
    case VecBackend::avx2:
      if (!s.avx2) return false;
      fn ? run_avx2(s.f8[k], x, y, n) : sigmoid_avx2(s.f8[k], x, y, n);
      return true;
    case VecBackend::scalar:
      for (int64_t i = 0; i < n; ++i) y[i] = fn ? scalar_fn(*fn, x[i]) : sigmoid1(x[i]);
      return true;
  }
  return false;
}

const char* vector_math_backend() {
  const SleefTable& s = sleef();
  return s.avx512 ? "avx512" : s.avx2 ? "avx2" : "scalar";
}

}  // namespace kiln::elementwise
