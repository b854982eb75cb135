#include "codegen/cuda/scalar_cuda.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "support/error.h"

namespace kiln::codegen::cuda {

using loops::BinaryOp;
using loops::ScalarExpr;
using loops::ScalarKind;
using loops::UnaryOp;

std::string_view cuda_grid_prologue() {
  return R"(#ifndef KILN_CUDA_GRID_PROLOGUE
#define KILN_CUDA_GRID_PROLOGUE
// Every kiln kernel calls this first. Launched as a programmatic dependent (sm_90 and newer, setting
// cuda_overlap_launches), a kernel may start while the kernel before it on the stream still runs: the
// wait returns once that kernel has ended and its writes are visible (at once after a plain launch).
// Then it lets the next kernel start launching, to wait in the same way.
__device__ __forceinline__ void kiln_grid_prologue() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#endif
)";
}

std::string_view cuda_scalar_preamble() {
  static const std::string text = std::string(cuda_grid_prologue()) + R"(#ifndef KILN_CUDA_SCALAR_PREAMBLE
#define KILN_CUDA_SCALAR_PREAMBLE
// Helpers of kiln's generated CUDA kernels (no header needed; IEEE semantics, never fast math).
#define KILN_DEV __device__ __forceinline__  // inline, not static: an unused helper is no warning
// Floor division and modulo for a positive divisor ('/' and '%' truncate towards zero).
KILN_DEV long long kiln_floordiv(long long a, long long b) { long long q = a / b; return (a % b != 0 && a < 0) ? q - 1 : q; }
KILN_DEV long long kiln_mod(long long a, long long b) { long long r = a % b; return r < 0 ? r + b : r; }
KILN_DEV long long kiln_min(long long a, long long b) { return a < b ? a : b; }
KILN_DEV long long kiln_max(long long a, long long b) { return a > b ? a : b; }
KILN_DEV float kiln_nan_f32() { return __int_as_float(0x7fc00000); }
KILN_DEV float kiln_inf_f32() { return __int_as_float(0x7f800000); }
KILN_DEV double kiln_nan_f64() { return __longlong_as_double(0x7ff8000000000000LL); }
KILN_DEV double kiln_inf_f64() { return __longlong_as_double(0x7ff0000000000000LL); }
// NaN-propagating, like ONNX (fmaxf / fminf return the other operand).
template <class T> KILN_DEV T kiln_max_nan(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
template <class T> KILN_DEV T kiln_min_nan(T a, T b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
// Integer arithmetic wraps, through the unsigned types (signed overflow is undefined in C++).
KILN_DEV int kiln_wrap_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
KILN_DEV int kiln_wrap_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
KILN_DEV int kiln_wrap_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
KILN_DEV int kiln_wrap_neg(int a) { return (int)(0u - (unsigned)a); }
KILN_DEV long long kiln_wrap_add(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
KILN_DEV long long kiln_wrap_sub(long long a, long long b) { return (long long)((unsigned long long)a - (unsigned long long)b); }
KILN_DEV long long kiln_wrap_mul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
KILN_DEV long long kiln_wrap_neg(long long a) { return (long long)(0ull - (unsigned long long)a); }
// Truncating, like ONNX; x / 0 (undefined there) is 0 here, as on the CPU, and MIN / -1 wraps.
template <class T> KILN_DEV T kiln_int_div(T a, T b) { return b == 0 ? T(0) : b == T(-1) ? kiln_wrap_neg(a) : T(a / b); }
template <class T> struct kiln_int_limits;
template <> struct kiln_int_limits<int> { static constexpr int min = -2147483647 - 1, max = 2147483647; };
template <> struct kiln_int_limits<long long> {
  static constexpr long long min = -9223372036854775807LL - 1, max = 9223372036854775807LL;
};
// Float to integer as kiln's Cast and the CPU's kernels: truncated, saturated at the type's bounds, NaN
// gives 0 (out of range is undefined in C++ and in ONNX).
template <class T, class F> KILN_DEV T kiln_float_to_int(F x) {
  const F lo = F(kiln_int_limits<T>::min);  // -2^k, exact in F
  return (x >= lo && x < -lo) ? T(x) : x != x ? T(0) : x < lo ? kiln_int_limits<T>::min : kiln_int_limits<T>::max;
}
// sigmoid from e = exp(-|x|) <= 1, which never overflows: 1/(1+e) for x >= 0, e/(1+e) for x < 0.
KILN_DEV float kiln_sigmoid(float x) { const float e = expf(-fabsf(x)); return (x < 0.0f ? e : 1.0f) / (1.0f + e); }
KILN_DEV double kiln_sigmoid(double x) { const double e = exp(-fabs(x)); return (x < 0.0 ? e : 1.0) / (1.0 + e); }
// f16 / bf16 words: widened exactly, narrowed round-to-nearest-even (NaN stays a quiet NaN, overflow
// gives infinity): one PTX cvt on the device, integer arithmetic elsewhere (the host emulation of the
// tests, which checks it against kiln's host conversions; the GPU tests check the cvt path).
KILN_DEV float kiln_bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned)h << 16); }
KILN_DEV unsigned short kiln_f32_to_bf16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
#else
  unsigned x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (unsigned short)(x >> 16);
#endif
}
KILN_DEV float kiln_f16_to_f32(unsigned short h) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
  return r;
#else
  const unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (m << 13));  // infinity, NaN
  if (e != 0) return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
  const float sub = (float)m * 5.9604644775390625e-8f;  // m * 2^-24: exact
  return sign ? -sub : sub;
#endif
}
KILN_DEV unsigned short kiln_f32_to_f16(float f) {
#if defined(__CUDA_ARCH__)
  unsigned short r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
#else
  const unsigned x = __float_as_uint(f), a = x & 0x7fffffffu;
  const unsigned short sign = (unsigned short)((x >> 16) & 0x8000u);
  if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // 65520 and up round to infinity
  if (a >= 0x38800000u) {  // a normal half: rebias the exponent, round off 13 bits
    unsigned r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return (unsigned short)(sign | (r >> 13));
  }
  // Subnormal or zero: |f| * 2^24 (exact) rounded to an integer, to nearest even.
  return (unsigned short)(sign | (unsigned)rintf(__uint_as_float(a) * 16777216.0f));
#endif
}
KILN_DEV float kiln_round_bf16(float x) { return kiln_bf16_to_f32(kiln_f32_to_bf16(x)); }
KILN_DEV float kiln_round_f16(float x) { return kiln_f16_to_f32(kiln_f32_to_f16(x)); }
// A double to f32 rounded to odd (towards zero, the last bit set when inexact): a later rounding to
// nearest even at 22 bits or fewer (f16, bf16) then rounds the double itself, once, as kiln's Cast does;
// through f32's own rounding it could round twice (1 + 2^-11 + 2^-40 would become the f16 tie 1 + 2^-11).
KILN_DEV float kiln_f64_to_f32_odd(double d) {
  const float f = (float)d;
  if (d != d || (double)f == d) return f;  // NaN, or exact (infinities included)
  unsigned b = __float_as_uint(f);
  if (fabs((double)f) > fabs(d)) b -= 1u;  // rounded away from zero: its neighbour towards zero (inf: the max)
  return __uint_as_float(b | 1u);
}
#endif  // KILN_CUDA_SCALAR_PREAMBLE
)";
  return text;
}

namespace {
const char* half_name(DType t) { return t == DType::bf16 ? "bf16" : "f16"; }
}  // namespace

std::string cuda_type(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::boolean: return "bool";
    default: internal_error("generated CUDA kernels do not handle dtype {}", dtype_name(t));
  }
}

std::string cuda_storage_type(DType t) {
  if (is_half(t)) return "unsigned short";
  return t == DType::boolean ? "unsigned char" : cuda_type(t);
}

std::string cuda_store(DType t, const std::string& value) {
  return is_half(t) ? fmt::format("kiln_f32_to_{}({})", half_name(t), value) : value;
}

std::string cuda_literal(double v, DType t) {
  if (is_float(t)) {
    const bool f32 = t != DType::f64;  // half constants hold half values (loops::constant), printed as floats
    if (std::isnan(v)) return f32 ? "kiln_nan_f32()" : "kiln_nan_f64()";
    if (std::isinf(v)) return std::string(v < 0 ? "(-" : "(") + (f32 ? "kiln_inf_f32()" : "kiln_inf_f64()") + ")";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::hex);
    KILN_INTERNAL_CHECK(res.ec == std::errc(), "cannot print constant {}", v);
    std::string digits = "0x" + std::string(buf, res.ptr) + (f32 ? "f" : "");
    return std::signbit(v) ? "(-" + digits + ")" : digits;
  }
  switch (t) {
    case DType::boolean: return v != 0 ? "true" : "false";
    case DType::i32:
      if (v == -2147483648.0) return "(-2147483647 - 1)";
      return fmt::format("{}", static_cast<int64_t>(v));
    case DType::i64:
      if (v == -9223372036854775808.0) return "(-9223372036854775807LL - 1LL)";
      return fmt::format("{}LL", static_cast<int64_t>(v));
    default: internal_error("generated CUDA kernels do not handle dtype {}", dtype_name(t));
  }
}

namespace {

// CUDA's math functions by precision: expf / exp (the half types compute in float).
std::string math_call(const char* name, DType t, const std::string& x) {
  return fmt::format("{}{}({})", name, t == DType::f64 ? "" : "f", x);
}

std::string unary_cuda(UnaryOp op, DType t, const std::string& x) {
  const bool fp = is_float(t);
  switch (op) {
    case UnaryOp::Neg: return fp ? "(-" + x + ")" : fmt::format("kiln_wrap_neg({})", x);
    case UnaryOp::Abs: return fp ? math_call("fabs", t, x) : fmt::format("({0} < 0 ? kiln_wrap_neg({0}) : {0})", x);
    case UnaryOp::Exp: return math_call("exp", t, x);
    case UnaryOp::Log: return math_call("log", t, x);
    case UnaryOp::Sqrt: return math_call("sqrt", t, x);  // correctly rounded (NVRTC's default -prec-sqrt=true)
    case UnaryOp::Reciprocal: return fmt::format("({} / {})", cuda_literal(1.0, t), x);
    // NaN < 0 is false, so NaN passes through (ONNX Relu = max(x, 0) propagates NaN).
    case UnaryOp::Relu: return fmt::format("({0} < {1} ? {1} : {0})", x, cuda_literal(0.0, t));
    case UnaryOp::Sigmoid: return "kiln_sigmoid(" + x + ")";
    case UnaryOp::Tanh: return math_call("tanh", t, x);
    case UnaryOp::Erf: return math_call("erf", t, x);
    case UnaryOp::IsNaN: return fmt::format("({0} != {0})", x);
    case UnaryOp::Not: return "(!" + x + ")";
  }
  internal_error("CUDA scalar emitter: unknown unary op");
}

std::string binary_cuda(const ScalarExpr& e, const std::string& a, const std::string& b) {
  const DType t = e.operands()[0].dtype();
  const bool fp = is_float(t);
  auto infix = [&](const char* sym) { return fmt::format("({} {} {})", a, sym, b); };
  auto integer = [&](const char* helper) { return fmt::format("{}({}, {})", helper, a, b); };
  const char* mul_rn = t == DType::f64 ? "__dmul_rn" : "__fmul_rn";
  switch (e.binary_op()) {
    case BinaryOp::Add: return fp ? infix("+") : integer("kiln_wrap_add");
    case BinaryOp::Sub: return fp ? infix("-") : integer("kiln_wrap_sub");
    case BinaryOp::Mul: return fp ? fmt::format("{}({}, {})", mul_rn, a, b) : integer("kiln_wrap_mul");
    case BinaryOp::Div: return fp ? infix("/") : integer("kiln_int_div");  // IEEE (-prec-div=true)
    case BinaryOp::Pow: {
      // x^2 as x * x: both are the correctly rounded square (as on the CPU).
      const ScalarExpr& exponent = e.operands()[1];
      if (exponent.kind() == ScalarKind::Constant && exponent.constant_value() == 2.0)
        return fmt::format("{}({}, {})", mul_rn, a, a);
      // f32 x^3 (GPT-2's tanh GELU) in double, as on the CPU: x * x is exact there, and the two roundings
      // that follow stay within powf's error; the special values come out as pow's.
      if (t != DType::f64 && exponent.kind() == ScalarKind::Constant && exponent.constant_value() == 3.0)
        return fmt::format("((float)__dmul_rn(__dmul_rn((double){0}, (double){0}), (double){0}))", a);
      return fmt::format("{}({}, {})", t == DType::f64 ? "pow" : "powf", a, b);
    }
    case BinaryOp::Max: return integer("kiln_max_nan");
    case BinaryOp::Min: return integer("kiln_min_nan");
    case BinaryOp::Equal: return infix("==");
    case BinaryOp::Less: return infix("<");
    case BinaryOp::Greater: return infix(">");
    case BinaryOp::And: return infix("&&");
    case BinaryOp::Or: return infix("||");
  }
  internal_error("CUDA scalar emitter: unknown binary op");
}

std::string cast_cuda(DType from, DType to, const std::string& x) {
  const bool from_fp = is_float(from);
  if (to == DType::boolean) return from == DType::boolean ? x : fmt::format("({} != 0)", x);  // NaN is true
  if (from_fp && (to == DType::i32 || to == DType::i64))
    return fmt::format("kiln_float_to_int<{}>({})", cuda_type(to), x);
  // To a half type: rounded once. From f32, a half type or bool the value is exact as a float; from f64,
  // i32 and i64 through the double (exact but for an i64 beyond 2^53, as on the CPU) rounded to odd.
  // From a half type to f32 nothing rounds.
  if (is_half(to)) {
    if (from == to) return x;
    if (from == DType::f32 || is_half(from) || from == DType::boolean)
      return fmt::format("kiln_round_{}((float){})", half_name(to), x);
    return fmt::format("kiln_round_{}(kiln_f64_to_f32_odd((double){}))", half_name(to), x);
  }
  // Round to nearest (int to float, f64 to f32), truncation of the bits (i64 to i32), or exact.
  return fmt::format("(({}){})", cuda_type(to), x);
}

}  // namespace

std::string cuda_operation(const ScalarExpr& e, const std::vector<std::string>& a) {
  switch (e.kind()) {
    case ScalarKind::Unary: return unary_cuda(e.unary_op(), e.operands()[0].dtype(), a[0]);
    case ScalarKind::Binary: return binary_cuda(e, a[0], a[1]);
    case ScalarKind::Where: return fmt::format("({} ? {} : {})", a[0], a[1], a[2]);
    case ScalarKind::Cast: return cast_cuda(e.operands()[0].dtype(), e.dtype(), a[0]);
    case ScalarKind::Load:
    case ScalarKind::Constant: break;
  }
  internal_error("CUDA scalar emitter: {} is not an operation", loops::to_string(e));
}

std::string cuda_load(int input, DType dtype, const std::string& index) {
  if (is_half(dtype)) return fmt::format("kiln_{}_to_f32(in{}[{}])", half_name(dtype), input, index);
  return dtype == DType::boolean ? fmt::format("(in{}[{}] != 0)", input, index) : fmt::format("in{}[{}]", input, index);
}

}  // namespace kiln::codegen::cuda
