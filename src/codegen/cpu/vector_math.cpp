#include "codegen/cpu/vector_math.h"

namespace kiln::codegen::cpu {

// The prelude is plain C++ (C++20, GCC/Clang builtins). Design rules, so that GCC vectorises a loop
// that calls these functions under `#pragma omp simd` without -ffast-math:
//  - everything is inlined (always_inline) and branch-free: every value is computed and special
//    cases are chosen by kiln_vm_select, a bitwise select (plain ternaries become branches that GCC 12
//    only if-converts with AVX-512 masking, so AVX2 loops stayed scalar);
//  - no libm calls; bit manipulation through __builtin_bit_cast on integers of the float's width
//    (uint32_t for float, uint64_t for double), with unsigned arithmetic (no signed overflow) and
//    no 64-bit arithmetic right shifts or int64<->double conversions (not vectorisable before
//    AVX-512): integers are moved in and out of doubles with the 1.5*2^52 "shift" trick;
//  - polynomials are Horner forms written as a*b+c: GCC contracts them into FMAs where the ISA has
//    them (-mfma), and the stated error bounds hold with and without contraction (both are tested).
// Coefficients are minimax fits (Remez exchange in 40-digit arithmetic); the fit errors are in the
// comments. The error bounds are measured by tests/codegen/vector_math_test.cpp (dense sweeps against
// long double libm), which asserts them; "ulp" is the spacing of the format at the exact result,
// with the subnormal spacing (2^-149, 2^-1074) below the normal range, so that in the subnormal range
// the bound is an absolute one in units of the smallest subnormal.
std::string_view vector_math_prelude() {
  return R"(#ifndef KILN_VECTOR_MATH_PRELUDE
#define KILN_VECTOR_MATH_PRELUDE
// Vectorisable math (kiln): kiln_exp, kiln_log, kiln_erf, kiln_tanh, kiln_sigmoid for float and double.
// Max error in ulp of the exact result, float and double alike (largest seen: float over all 2^32
// inputs | double over 22M samples); below the normal range 1 ulp is the smallest subnormal, so there
// the bound is absolute.
// NaN in -> NaN out for all five; FMA contraction or not, the bounds hold.
//   kiln_exp      1.5 ulp (0.99 | 0.98); exp(+inf) = +inf, exp(-inf) = 0, overflow -> +inf
//   kiln_exp_nonpos  the same for x <= 0 and NaN (only; larger x give wrong results)
//   kiln_log      1.5 ulp (0.84 | 0.82); log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf
//   kiln_erf      2 ulp   (1.50 | 1.06); erf(+-inf) = +-1, erf(-0) = -0
//   kiln_tanh     3 ulp   (2.42 | 2.47); tanh(+-inf) = +-1, tanh(-0) = -0
//   kiln_sigmoid  3 ulp   (2.40 | 2.40); sigmoid(-inf) = 0, sigmoid(+inf) = 1
#include <stdint.h>
#define KILN_VM_INLINE static inline __attribute__((always_inline))
KILN_VM_INLINE uint32_t kiln_vm_bits(float x) { return __builtin_bit_cast(uint32_t, x); }
KILN_VM_INLINE uint64_t kiln_vm_bits(double x) { return __builtin_bit_cast(uint64_t, x); }
KILN_VM_INLINE float kiln_vm_float(uint32_t b) { return __builtin_bit_cast(float, b); }
KILN_VM_INLINE double kiln_vm_double(uint64_t b) { return __builtin_bit_cast(double, b); }
KILN_VM_INLINE float kiln_vm_abs(float x) { return kiln_vm_float(kiln_vm_bits(x) & 0x7fffffffu); }
KILN_VM_INLINE double kiln_vm_abs(double x) { return kiln_vm_double(kiln_vm_bits(x) & 0x7fffffffffffffffu); }
// |r| with the sign bit of x (r must have a clear sign bit).
KILN_VM_INLINE float kiln_vm_signed_like(float r, float x) {
  return kiln_vm_float(kiln_vm_bits(r) | (kiln_vm_bits(x) & 0x80000000u));
}
KILN_VM_INLINE double kiln_vm_signed_like(double r, double x) {
  return kiln_vm_double(kiln_vm_bits(r) | (kiln_vm_bits(x) & 0x8000000000000000u));
}
// c ? a : b as bit operations: GCC 12 turns a ternary into a branch and, with -ftrapping-math (the
// default), will not speculate the floating-point work behind it (it cannot if-convert the loop
// without AVX-512 masking); branches that decide on the same condition also get jump-threaded.
KILN_VM_INLINE float kiln_vm_select(bool c, float a, float b) {
  const uint32_t m = 0u - uint32_t(c);
  return kiln_vm_float((kiln_vm_bits(a) & m) | (kiln_vm_bits(b) & ~m));
}
KILN_VM_INLINE double kiln_vm_select(bool c, double a, double b) {
  const uint64_t m = 0u - uint64_t(c);
  return kiln_vm_double((kiln_vm_bits(a) & m) | (kiln_vm_bits(b) & ~m));
}
// c0 + x*(c1 + x*(c2 + ...)), unrolled at compile time.
template <class T> KILN_VM_INLINE T kiln_vm_poly(T, T c0) { return c0; }
template <class T, class... C> KILN_VM_INLINE T kiln_vm_poly(T x, T c0, T c1, C... c) {
  return c0 + x * kiln_vm_poly(x, c1, c...);
}

// x = n*ln2 + r with n = round(x/ln2), |r| <= ln2/2 (+ a rounding hair); k is n as an integer
// (exact bits, from the shift trick). Cody-Waite: n*ln2_hi is exact for |n| < 2^15 (float), 2^24.
struct kiln_vm_reduced_f { float r, n; uint32_t k; };
struct kiln_vm_reduced_d { double r, n; uint64_t k; };
KILN_VM_INLINE kiln_vm_reduced_f kiln_vm_reduce(float x) {
  const float shift = 0x1.8p23f;
  const float kd = x * 0x1.715476p+0f + shift;
  const float n = kd - shift;
  float r = x - n * 0x1.63p-1f;
  r = r - n * -0x1.bd0106p-13f;
  return {r, n, kiln_vm_bits(kd) - kiln_vm_bits(shift)};
}
KILN_VM_INLINE kiln_vm_reduced_d kiln_vm_reduce(double x) {
  const double shift = 0x1.8p52;
  const double kd = x * 0x1.71547652b82fep+0 + shift;
  const double n = kd - shift;
  double r = x - n * 0x1.62e42ffp-1;
  r = r - n * -0x1.718432a1b0e26p-35;
  return {r, n, kiln_vm_bits(kd) - kiln_vm_bits(shift)};
}
// expm1(r) = r + r^2 P(r) on the reduced range; relative fit error 2^-31.9 (float), 2^-61.7 (double).
KILN_VM_INLINE float kiln_vm_expm1_reduced(float r) {
  return r + r * r * kiln_vm_poly(r, 0x1p-1f, 0x1.555554p-3f, 0x1.5554b2p-5f, 0x1.11118ap-7f, 0x1.6d7218p-10f,
                                  0x1.a032c4p-13f);
}
KILN_VM_INLINE double kiln_vm_expm1_reduced(double r) {
  return r + r * r * kiln_vm_poly(r, 0x1p-1, 0x1.5555555555559p-3, 0x1.555555555553fp-5, 0x1.111111110f6dp-7,
                                  0x1.6c16c16c1f0a9p-10, 0x1.a01a01afd872cp-13, 0x1.a01a017bbcb5dp-16,
                                  0x1.71ddf871fa936p-19, 0x1.27e53635db2c9p-22, 0x1.af5e8d3cd8903p-26,
                                  0x1.1ee889d568201p-29);
}

// exp: 2^n * exp(r), the power of two applied as two factors 2^(n/2) and 2^(n-n/2) (both normal), so
// that results in the subnormal range are rounded once and overflow happens exactly where it should.
// Max error 1.5 ulp, float and double, subnormal results included (largest seen 0.99 | 0.98).
KILN_VM_INLINE float kiln_vm_exp(float x) {
  x = kiln_vm_select(x < -104.0f, -104.0f, x);  // exp(-104) < 2^-150 rounds to 0; NaN passes
  x = kiln_vm_select(x > 89.0f, 89.0f, x);      // exp(89) > FLT_MAX overflows to +inf below
  const kiln_vm_reduced_f v = kiln_vm_reduce(x);
  const float p = 1.0f + kiln_vm_expm1_reduced(v.r);
  const uint32_t k1 = uint32_t(int32_t(v.k) >> 1), k2 = v.k - k1;
  return p * kiln_vm_float((k1 + 127u) << 23) * kiln_vm_float((k2 + 127u) << 23);
}
KILN_VM_INLINE double kiln_vm_exp(double x) {
  x = kiln_vm_select(x < -746.0, -746.0, x);  // exp(-746) < 2^-1075 rounds to 0
  x = kiln_vm_select(x > 710.0, 710.0, x);    // exp(710) > DBL_MAX
  const kiln_vm_reduced_d v = kiln_vm_reduce(x);
  const double p = 1.0 + kiln_vm_expm1_reduced(v.r);
  const double shift = 0x1.8p52;
  const uint64_t k1 = kiln_vm_bits(v.n * 0.5 + shift) - kiln_vm_bits(shift), k2 = v.k - k1;
  return p * kiln_vm_double((k1 + 1023u) << 52) * kiln_vm_double((k2 + 1023u) << 52);
}

// exp for x <= 0 (or NaN), where the caller has proved the range (softmax's exp(x - max(x))): no
// overflow to guard, so the power of two is one factor 2^(n + 26) (2^(n + 55) for double: p times it
// is normal for every n the clamp allows) and one 2^-26 (2^-55), which rounds a subnormal result once.
// Same bounds as kiln_exp, on fewer operations.
KILN_VM_INLINE float kiln_vm_exp_nonpos(float x) {
  x = kiln_vm_select(x < -104.0f, -104.0f, x);  // NaN passes
  const kiln_vm_reduced_f v = kiln_vm_reduce(x);
  const float p = 1.0f + kiln_vm_expm1_reduced(v.r);
  return p * kiln_vm_float((v.k + (127u + 26u)) << 23) * 0x1p-26f;
}
KILN_VM_INLINE double kiln_vm_exp_nonpos(double x) {
  x = kiln_vm_select(x < -746.0, -746.0, x);
  const kiln_vm_reduced_d v = kiln_vm_reduce(x);
  const double p = 1.0 + kiln_vm_expm1_reduced(v.r);
  return p * kiln_vm_double((v.k + (1023u + 55u)) << 52) * 0x1p-55;
}

// expm1(y) for y in [0, 40]: 2^n expm1(r) + (2^n - 1), no cancellation for small y.
KILN_VM_INLINE float kiln_vm_expm1_nonneg(float y) {
  const kiln_vm_reduced_f v = kiln_vm_reduce(y);
  const float s = kiln_vm_float((v.k + 127u) << 23);
  return s * kiln_vm_expm1_reduced(v.r) + (s - 1.0f);
}
KILN_VM_INLINE double kiln_vm_expm1_nonneg(double y) {
  const kiln_vm_reduced_d v = kiln_vm_reduce(y);
  const double s = kiln_vm_double((v.k + 1023u) << 52);
  return s * kiln_vm_expm1_reduced(v.r) + (s - 1.0);
}

// log: x = 2^k m with m in [sqrt(2)/2, sqrt(2)), f = m - 1 (exact), s = f/(2+f),
// log(1+f) = f - f^2/2 + s (f^2/2 + R(s^2)) (fdlibm's form); R's fit error 2^-30.2 (float),
// 2^-59.5 (double) relative to the result. Subnormal inputs are scaled into the normal range first.
// Max error 1.5 ulp, float and double (largest seen 0.84 | 0.82).
KILN_VM_INLINE float kiln_vm_log(float x) {
  const bool tiny = x < 0x1p-126f;
  const uint32_t ix = kiln_vm_bits(kiln_vm_select(tiny, x * 0x1p23f, x)) + (0x3f800000u - 0x3f3504f3u);
  const float k = float(int32_t(ix >> 23)) - kiln_vm_select(tiny, 127.0f + 23.0f, 127.0f);
  const float f = kiln_vm_float((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  const float s = f / (2.0f + f), z = s * s, hfsq = 0.5f * f * f;
  const float R = z * kiln_vm_poly(z, 0x1.55557ap-1f, 0x1.995ebap-2f, 0x1.31e2f2p-2f);
  float r = k * 0x1.63p-1f + (f - (hfsq - (s * (hfsq + R) + k * -0x1.bd0106p-13f)));
  r = kiln_vm_select(x < __builtin_inff(), r, x);       // +inf -> +inf, NaN -> NaN
  r = kiln_vm_select(x < 0.0f, __builtin_nanf(""), r);  // including -inf
  return kiln_vm_select(x == 0.0f, -__builtin_inff(), r);
}
KILN_VM_INLINE double kiln_vm_log(double x) {
  const bool tiny = x < 0x1p-1022;
  const uint64_t ix = kiln_vm_bits(kiln_vm_select(tiny, x * 0x1p54, x)) + (0x3ff0000000000000u - 0x3fe6a09e667f3bcdu);
  // The biased exponent field (0..2047) to a double through the shift trick.
  const double bias = kiln_vm_select(tiny, 1023.0 + 54.0, 1023.0);
  const double k = kiln_vm_double(0x4338000000000000u + (ix >> 52)) - (0x1.8p52 + bias);
  const double f = kiln_vm_double((ix & 0x000fffffffffffffu) + 0x3fe6a09e667f3bcdu) - 1.0;
  const double s = f / (2.0 + f), z = s * s, hfsq = 0.5 * f * f;
  const double R = z * kiln_vm_poly(z, 0x1.5555555555592p-1, 0x1.999999997fdb6p-2, 0x1.24924941f1341p-2,
                                    0x1.c71c52094f2a9p-3, 0x1.74663eeb9e9edp-3, 0x1.39a1ba5cd0abfp-3,
                                    0x1.2f05676308758p-3);
  double r = k * 0x1.62e42ffp-1 + (f - (hfsq - (s * (hfsq + R) + k * -0x1.718432a1b0e26p-35)));
  r = kiln_vm_select(x < __builtin_inf(), r, x);
  r = kiln_vm_select(x < 0.0, __builtin_nan(""), r);
  return kiln_vm_select(x == 0.0, -__builtin_inf(), r);
}

// erf on a = |x| (sign restored at the end, so erf(-0) = -0), float | double:
//   a < 1 | 0.84375:  a + a Q(a^2)            (fit error 2^-29.7 | 2^-56.5, relative)
//   above:            1 - exp(-a^2) G(a), G ~ erfc(a) exp(a^2) in powers of (a - mid), on [1, 4] for
//                     float, on [0.84375, 2] and [2, 6] for double (fit errors 2^-28.6 | 2^-59.9, 2^-62.0,
//                     absolute in erfc, whose relative error reaches erf scaled down by erfc/erf <= 0.3).
// Past 4 (float) / 6 (double) erf rounds to 1; a is clamped there. Max error 2 ulp, float and double
// (largest seen 1.50 | 1.06).
KILN_VM_INLINE float kiln_vm_erf(float x) {
  float a = kiln_vm_abs(x);
  a = kiln_vm_select(a > 4.0f, 4.0f, a);
  const float z = a * a;
  const float small = a + a * kiln_vm_poly(z, 0x1.06eba8p-3f, -0x1.81273ep-2f, 0x1.ce2d2p-4f, -0x1.b7fbb4p-6f,
                                           0x1.5419f4p-8f, -0x1.a485eap-11f, 0x1.4ae4ccp-14f);
  const float g = kiln_vm_poly(a - 2.5f, 0x1.afbbe6p-3f, -0x1.30816ep-4f, 0x1.983384p-6f, -0x1.0a7a46p-7f,
                               0x1.2dcb1cp-9f, -0x1.5a9e9ap-11f, 0x1.1cdacep-11f, 0x1.d7fd22p-13f, 0x1.c021dep-14f);
  const float large = 1.0f - kiln_vm_exp(-z) * g;
  return kiln_vm_signed_like(kiln_vm_select(a < 1.0f, small, large), x);
}
KILN_VM_INLINE double kiln_vm_erf(double x) {
  double a = kiln_vm_abs(x);
  a = kiln_vm_select(a > 6.0, 6.0, a);
  const double z = a * a;
  const double small =
      a + a * kiln_vm_poly(z, 0x1.06eba8214db68p-3, -0x1.812746b0379a9p-2, 0x1.ce2f21a03f51fp-4,
                           -0x1.b82ce3115b0b5p-6, 0x1.565bccd91d9eap-8, -0x1.c02da9003d282p-11,
                           0x1.f9a1bbfb8079p-14, -0x1.f4b4371d6fb8cp-17, 0x1.b848bc4310de1p-20,
                           -0x1.517f97151e06bp-23, 0x1.70b5cbdeeb7a8p-27);
  // Both intervals' polynomials, then a select (cheaper than selecting 17 coefficients).
  const double g_lo = kiln_vm_poly(
      a - 1.421875, 0x1.56e2c70875a32p-2, -0x1.68c1dc2130a6dp-3, 0x1.59a3d22374247p-4, -0x1.32be61f54ad46p-5,
      0x1.fe41e1fc63bcep-7, -0x1.91297b9b4a423p-8, 0x1.2c1330178303ap-9, -0x1.ad51ec984c81ap-11,
      0x1.26ee27c2ffdd7p-12, -0x1.8679def28d2f7p-14, 0x1.f399a38bb06ap-16, -0x1.35ac6ca8e0cf8p-17,
      0x1.74ed1b5a2f53ep-19, -0x1.b26b8af160c5ap-21, 0x1.e7397c38c55fdp-23, -0x1.2f6138e70fb7p-24,
      0x1.7c81adedd97bep-26);
  const double g_hi = kiln_vm_poly(
      a - 4.0, 0x1.18932bf0853fep-3, -0x1.09492276dded3p-5, 0x1.e9412f2acc381p-8, -0x1.b8b63672c34a9p-10,
      0x1.84583334ee7cfp-12, -0x1.4f24ce09b4fd6p-14, 0x1.1bad7097d8f0ap-16, -0x1.d816821d15f05p-19,
      0x1.770b79e69d042p-21, -0x1.566b6863fab34p-23, 0x1.b8b8ced04b043p-26, 0x1.ab8600208bbaep-29,
      0x1.7f8a03182ef11p-27, 0x1.812b6edb54386p-28, 0x1.13e2b7471de5bp-29, 0x1.a0957c88c39b7p-32,
      0x1.41390ff3808b8p-35);
  const double g = kiln_vm_select(a < 2.0, g_lo, g_hi);
  const double large = 1.0 - kiln_vm_exp(-z) * g;
  return kiln_vm_signed_like(kiln_vm_select(a < 0.84375, small, large), x);
}

// tanh(|x|) = E / (E + 2) with E = expm1(2|x|): the relative error of E is not amplified, and small
// |x| has no cancellation. |x| is clamped where tanh rounds to 1. Max error 3 ulp, float and double
// (largest seen 2.42 | 2.47).
KILN_VM_INLINE float kiln_vm_tanh(float x) {
  float a = kiln_vm_abs(x);
  a = kiln_vm_select(a > 10.0f, 10.0f, a);
  const float e = kiln_vm_expm1_nonneg(2.0f * a);
  return kiln_vm_signed_like(e / (e + 2.0f), x);
}
KILN_VM_INLINE double kiln_vm_tanh(double x) {
  double a = kiln_vm_abs(x);
  a = kiln_vm_select(a > 20.0, 20.0, a);
  const double e = kiln_vm_expm1_nonneg(2.0 * a);
  return kiln_vm_signed_like(e / (e + 2.0), x);
}

// sigmoid from e = exp(-|x|) <= 1 (never overflows): 1/(1+e) for x >= 0, e/(1+e) for x < 0.
// Max error 3 ulp, float and double, subnormal results included (largest seen 2.40 | 2.40).
KILN_VM_INLINE float kiln_vm_sigmoid(float x) {
  const float e = kiln_vm_exp(-kiln_vm_abs(x));
  return kiln_vm_select(x < 0.0f, e, 1.0f) / (1.0f + e);
}
KILN_VM_INLINE double kiln_vm_sigmoid(double x) {
  const double e = kiln_vm_exp(-kiln_vm_abs(x));
  return kiln_vm_select(x < 0.0, e, 1.0) / (1.0 + e);
}

// The names kernels call (float or double; kiln_exp<float>(x) works as well as kiln_exp(x)).
template <class T> KILN_VM_INLINE T kiln_exp(T x) { return kiln_vm_exp(x); }
template <class T> KILN_VM_INLINE T kiln_exp_nonpos(T x) { return kiln_vm_exp_nonpos(x); }
template <class T> KILN_VM_INLINE T kiln_log(T x) { return kiln_vm_log(x); }
template <class T> KILN_VM_INLINE T kiln_erf(T x) { return kiln_vm_erf(x); }
template <class T> KILN_VM_INLINE T kiln_tanh(T x) { return kiln_vm_tanh(x); }
template <class T> KILN_VM_INLINE T kiln_sigmoid(T x) { return kiln_vm_sigmoid(x); }
#endif  // KILN_VECTOR_MATH_PRELUDE
)";
}

}  // namespace kiln::codegen::cpu
