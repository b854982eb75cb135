#include "codegen/cpu/scalar_cpp.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "support/error.h"

namespace kiln::codegen::cpu {

using loops::BinaryOp;
using loops::ScalarExpr;
using loops::ScalarKind;
using loops::UnaryOp;

std::string_view scalar_prelude() {
  return R"(#include <cmath>
#include <limits>
#include <type_traits>
template <class T> static inline T kiln_max_nan(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
template <class T> static inline T kiln_min_nan(T a, T b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
template <class T> using kiln_unsigned = std::make_unsigned_t<T>;
template <class T> static inline T kiln_wrap_add(T a, T b) { return T(kiln_unsigned<T>(a) + kiln_unsigned<T>(b)); }
template <class T> static inline T kiln_wrap_sub(T a, T b) { return T(kiln_unsigned<T>(a) - kiln_unsigned<T>(b)); }
template <class T> static inline T kiln_wrap_mul(T a, T b) { return T(kiln_unsigned<T>(a) * kiln_unsigned<T>(b)); }
template <class T> static inline T kiln_wrap_neg(T a) { return T(kiln_unsigned<T>(0) - kiln_unsigned<T>(a)); }
// Truncating, like ONNX; x / 0 (undefined there) is 0 here, so that a Where branch that is computed
// but not selected cannot trap, and MIN / -1 wraps.
template <class T> static inline T kiln_int_div(T a, T b) { return b == 0 ? T(0) : b == T(-1) ? kiln_wrap_neg(a) : T(a / b); }
// Float to integer as kiln's Cast (ops/elementwise/cast.cpp): truncated, saturated at the type's
// bounds, NaN gives 0 (out of range is undefined in C++ and in ONNX).
template <class T, class F> static inline T kiln_float_to_int(F x) {
  constexpr F lo = F(std::numeric_limits<T>::min());  // -2^k, exact in F
  return (x >= lo && x < -lo) ? T(x) : x != x ? T(0) : x < lo ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
}
)";
}

namespace {
const char* half_name(DType t) { return t == DType::bf16 ? "bf16" : "f16"; }
}  // namespace

std::string_view half_prelude() {
  return R"(// f16 / bf16 words, computed in float: widened exactly, narrowed to nearest even (a NaN stays a quiet
// NaN, overflow gives infinity), with the bits of kiln's host conversions (ir/tensor.cpp). Integer
// arithmetic and selects only, no branches, so that loops of them vectorise (GCC 12 vectorises no
// _Float16 conversion); no step produces a subnormal float, so a DAZ mode cannot change a result.
static inline float kiln_bf16_to_f32(uint16_t h) { return __builtin_bit_cast(float, uint32_t(h) << 16); }
static inline uint16_t kiln_f32_to_bf16(float f) {
  const uint32_t x = __builtin_bit_cast(uint32_t, f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return uint16_t((x & 0x7fffffffu) > 0x7f800000u ? (x >> 16) | 0x40u : rounded);
}
static inline float kiln_f16_to_f32(uint16_t h16) {
  const uint32_t h = h16, e = h & 0x7c00u, body = (h & 0x7fffu) << 13;
  const uint32_t normal = body + (e == 0x7c00u ? 0x70000000u : 0x38000000u);  // rebias; infinity and NaN
  const uint32_t sub = __builtin_bit_cast(uint32_t, float(int32_t(h & 0x3ffu)) * 0x1p-24f);  // exact
  // A mask, not a select: GCC 12 does not vectorise a select between these two.
  const uint32_t is_sub = 0u - uint32_t(e == 0);  // a zero or subnormal half
  return __builtin_bit_cast(float, ((h & 0x8000u) << 16) | (sub & is_sub) | (normal & ~is_sub));
}
static inline uint16_t kiln_f32_to_f16(float f) {
  const uint32_t x = __builtin_bit_cast(uint32_t, f), a = x & 0x7fffffffu, sign = (x >> 16) & 0x8000u;
  const uint32_t normal = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;  // rebias, round to nearest even
  // |f| < 2^-14: |f| * 2^24 (exact) rounded to an integer, to nearest even.
  // (Of a smaller |f| only, so that the float-to-int conversion is always defined.)
  const float small = __builtin_bit_cast(float, a < 0x38800000u ? a : 0u);
  const uint32_t sub = uint32_t(int32_t(__builtin_rintf(small * 16777216.0f)));
  const uint32_t bits = a > 0x7f800000u ? 0x7e00u : a >= 0x477ff000u ? 0x7c00u : a >= 0x38800000u ? normal : sub;
  return uint16_t(sign | bits);
}
static inline float kiln_round_bf16(float x) { return kiln_bf16_to_f32(kiln_f32_to_bf16(x)); }
static inline float kiln_round_f16(float x) { return kiln_f16_to_f32(kiln_f32_to_f16(x)); }
// A double to float rounded to odd (towards zero, the last bit set when inexact): a later rounding to
// nearest even at 22 bits or fewer (f16, bf16) then rounds the double itself, once, as kiln's Cast
// does; through float's own rounding it could round twice.
static inline float kiln_f64_to_f32_odd(double d) {
  const float f = float(d);
  if (d != d || double(f) == d) return f;  // NaN, or exact (infinities included)
  uint32_t b = __builtin_bit_cast(uint32_t, f);
  if (std::fabs(double(f)) > std::fabs(d)) b -= 1u;  // rounded away from zero: its neighbour towards zero
  return __builtin_bit_cast(float, b | 1u);
}
)";
}

bool touches_half(const std::vector<loops::TensorDesc>& inputs, DType output, const std::vector<ScalarExpr>& roots) {
  if (is_half(output) ||
      std::any_of(inputs.begin(), inputs.end(), [](const loops::TensorDesc& d) { return is_half(d.dtype); }))
    return true;
  std::vector<const loops::ScalarNode*> stack;
  for (const ScalarExpr& r : roots) stack.push_back(r.node());
  std::set<const loops::ScalarNode*> seen;
  while (!stack.empty()) {
    const loops::ScalarNode* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (is_half(n->dtype)) return true;
    for (const ScalarExpr& o : n->ops) stack.push_back(o.node());
  }
  return false;
}

std::string c_type(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::boolean: return "bool";
    default: internal_error("generated kernels do not handle dtype {}", dtype_name(t));
  }
}

std::string storage_type(DType t) {
  if (is_half(t)) return "uint16_t";
  return t == DType::boolean ? "uint8_t" : c_type(t);
}

std::string literal(double v, DType t) {
  if (is_float(t)) {
    bool f32 = t != DType::f64;  // a half constant holds a half value, printed as a float
    if (std::isnan(v)) return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
    if (std::isinf(v)) return std::string(v < 0 ? "(-" : "(") + (f32 ? "__builtin_inff()" : "__builtin_inf()") + ")";
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
      return fmt::format("int32_t{{{}}}", static_cast<int64_t>(v));
    case DType::i64:
      if (v == -9223372036854775808.0) return "(-INT64_C(9223372036854775807) - 1)";
      return fmt::format("INT64_C({})", static_cast<int64_t>(v));
    default: internal_error("generated kernels do not handle dtype {}", dtype_name(t));
  }
}

namespace {

std::string unary_cpp(UnaryOp op, DType t, const std::string& x) {
  bool fp = is_float(t);
  switch (op) {
    case UnaryOp::Neg: return fp ? "(-" + x + ")" : fmt::format("kiln_wrap_neg({})", x);
    case UnaryOp::Abs: return fp ? "std::fabs(" + x + ")" : fmt::format("({0} < 0 ? kiln_wrap_neg({0}) : {0})", x);
    case UnaryOp::Exp: return "kiln_exp(" + x + ")";
    case UnaryOp::Log: return "kiln_log(" + x + ")";
    case UnaryOp::Sqrt: return "std::sqrt(" + x + ")";
    case UnaryOp::Reciprocal: return fmt::format("({} / {})", literal(1.0, t), x);
    // NaN < 0 is false, so NaN passes through (ONNX Relu = max(x, 0) propagates NaN).
    case UnaryOp::Relu: return fmt::format("({0} < {1} ? {1} : {0})", x, literal(0.0, t));
    case UnaryOp::Sigmoid: return "kiln_sigmoid(" + x + ")";
    case UnaryOp::Tanh: return "kiln_tanh(" + x + ")";
    case UnaryOp::Erf: return "kiln_erf(" + x + ")";
    case UnaryOp::IsNaN: return fmt::format("({0} != {0})", x);
    case UnaryOp::Not: return "(!" + x + ")";
  }
  internal_error("scalar emitter: unknown unary op");
}

// Integer arithmetic wraps (through unsigned types: signed overflow would be undefined in C++).
std::string binary_cpp(const ScalarExpr& e, const std::string& a, const std::string& b) {
  DType t = e.operands()[0].dtype();
  auto infix = [&](const char* sym) { return fmt::format("({} {} {})", a, sym, b); };
  auto integer = [&](const char* helper) { return fmt::format("{}({}, {})", helper, a, b); };
  bool fp = is_float(t);
  switch (e.binary_op()) {
    case BinaryOp::Add: return fp ? infix("+") : integer("kiln_wrap_add");
    case BinaryOp::Sub: return fp ? infix("-") : integer("kiln_wrap_sub");
    case BinaryOp::Mul: return fp ? infix("*") : integer("kiln_wrap_mul");
    case BinaryOp::Div: return fp ? infix("/") : integer("kiln_int_div");
    case BinaryOp::Pow: {
      // x^2 as x * x: both are the correctly rounded square, and the product vectorises.
      const ScalarExpr& exponent = e.operands()[1];
      if (exponent.kind() == ScalarKind::Constant && exponent.constant_value() == 2.0)
        return fmt::format("({0} * {0})", a);
      // f32 x^3 (GPT-2's tanh GELU) in double: x * x is exact there and the one rounding of the product
      // then the float rounding stay within powf's error; specials (NaN, +-inf, -0, overflow to inf,
      // subnormal results) come out as pow's. std::pow is a scalar call that stops the loop vectorising.
      if (t != DType::f64 && exponent.kind() == ScalarKind::Constant && exponent.constant_value() == 3.0)
        return fmt::format("static_cast<float>(static_cast<double>({0}) * static_cast<double>({0}) * "
                           "static_cast<double>({0}))",
                           a);
      return fmt::format("std::pow({}, {})", a, b);
    }
    case BinaryOp::Max: return fmt::format("kiln_max_nan({}, {})", a, b);
    case BinaryOp::Min: return fmt::format("kiln_min_nan({}, {})", a, b);
    case BinaryOp::Equal: return infix("==");
    case BinaryOp::Less: return infix("<");
    case BinaryOp::Greater: return infix(">");
    case BinaryOp::And: return infix("&&");
    case BinaryOp::Or: return infix("||");
  }
  internal_error("scalar emitter: unknown binary op");
}

std::string cast_cpp(DType from, DType to, const std::string& x) {
  if (is_float(from) && is_integer(to)) return fmt::format("kiln_float_to_int<{}>({})", c_type(to), x);
  // To a half type: rounded once. From f32, a half type or bool the value is exact as a float; from f64,
  // i32 and i64 through the double (exact but for an i64 beyond 2^53) rounded to odd. From a half type
  // to f32 nothing rounds.
  if (is_half(to) && from != to) {
    if (from == DType::f32 || is_half(from) || from == DType::boolean)
      return fmt::format("kiln_round_{}(static_cast<float>({}))", half_name(to), x);
    return fmt::format("kiln_round_{}(kiln_f64_to_f32_odd(static_cast<double>({})))", half_name(to), x);
  }
  return fmt::format("static_cast<{}>({})", c_type(to), x);
}

}  // namespace

std::string operation_cpp(const ScalarExpr& e, const std::vector<std::string>& a) {
  switch (e.kind()) {
    case ScalarKind::Unary: return unary_cpp(e.unary_op(), e.operands()[0].dtype(), a[0]);
    case ScalarKind::Binary: return binary_cpp(e, a[0], a[1]);
    case ScalarKind::Where: return fmt::format("({} ? {} : {})", a[0], a[1], a[2]);
    case ScalarKind::Cast: return cast_cpp(e.operands()[0].dtype(), e.dtype(), a[0]);
    case ScalarKind::Load:
    case ScalarKind::Constant: break;
  }
  internal_error("scalar emitter: {} is not an operation", loops::to_string(e));
}

std::string row_length_cpp(DType t) { return cast_cpp(DType::i64, t, "cols"); }

std::string load_cpp(int input, DType dtype, const std::string& index) {
  if (is_half(dtype)) return fmt::format("kiln_{}_to_f32(in{}[{}])", half_name(dtype), input, index);
  return dtype == DType::boolean ? fmt::format("(in{}[{}] != 0)", input, index) : fmt::format("in{}[{}]", input, index);
}

std::string store_cpp(DType dtype, const std::string& value) {
  return is_half(dtype) ? fmt::format("kiln_f32_to_{}({})", half_name(dtype), value) : value;
}

}  // namespace kiln::codegen::cpu
