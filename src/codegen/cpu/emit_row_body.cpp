#include "codegen/cpu/emit_row_body.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "support/error.h"

namespace kiln::codegen::cpu {

using loops::BinaryOp;
using loops::Expr;
using loops::ScalarExpr;
using loops::ScalarKind;
using loops::UnaryOp;

// Every operand is computed for every element (Where computes both branches), so no helper may trap:
// integer x / 0 is 0 and MIN / -1 wraps; a NaN or out-of-range float cast to an integer gives the
// minimum. Max and Min return NaN when either side is NaN. The reduction steps keep a NaN accumulator
// (v > NaN is false) and take a NaN element, so that one NaN anywhere in a row gives NaN.
std::string_view row_scalar_prelude() {
  return R"(#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>
template <class T> static inline T kiln_max_nan(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
template <class T> static inline T kiln_min_nan(T a, T b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
template <class T> using kiln_unsigned = std::make_unsigned_t<T>;
template <class T> static inline T kiln_wrap_add(T a, T b) { return T(kiln_unsigned<T>(a) + kiln_unsigned<T>(b)); }
template <class T> static inline T kiln_wrap_sub(T a, T b) { return T(kiln_unsigned<T>(a) - kiln_unsigned<T>(b)); }
template <class T> static inline T kiln_wrap_mul(T a, T b) { return T(kiln_unsigned<T>(a) * kiln_unsigned<T>(b)); }
template <class T> static inline T kiln_wrap_neg(T a) { return T(kiln_unsigned<T>(0) - kiln_unsigned<T>(a)); }
template <class T> static inline T kiln_int_div(T a, T b) { return b == 0 ? T(0) : b == T(-1) ? kiln_wrap_neg(a) : T(a / b); }
template <class T, class F> static inline T kiln_float_to_int(F x) {
  constexpr F lo = F(std::numeric_limits<T>::min());  // -2^k, exact in F
  return (x >= lo && x < -lo) ? T(x) : std::numeric_limits<T>::min();
}
template <class T> static inline T kiln_sum_step(T acc, T v) { return acc + v; }
template <class T> static inline T kiln_max_step(T acc, T v) { return (v > acc || v != v) ? v : acc; }
template <class T> static inline T kiln_min_step(T acc, T v) { return (v < acc || v != v) ? v : acc; }
// acc[0] combined with acc[1..N) pairwise (a fixed order: the result does not depend on threads);
// one loop of constant length per level, so that each level compiles to a few vector operations.
template <class T, int W, class Step> static inline void kiln_fold(T* acc, Step step) {
  if constexpr (W >= 1) {
    for (int j = 0; j < W; ++j) acc[j] = step(acc[j], acc[j + W]);
    kiln_fold<T, W / 2>(acc, step);
  }
}
template <class T, int N, class Step> static inline T kiln_tree(T* acc, Step step) {
  kiln_fold<T, N / 2>(acc, step);
  return acc[0];
}
)";
}

std::string row_c_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::boolean: return "bool";
    default: internal_error("row kernels do not handle dtype {}", dtype_name(t));
  }
}

std::string row_literal(double v, DType t) {
  if (t == DType::f32 || t == DType::f64) {
    bool f32 = t == DType::f32;
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
    default: internal_error("row kernels do not handle dtype {}", dtype_name(t));
  }
}

namespace {

std::string unary_text(UnaryOp op, DType t, const std::string& x) {
  bool fp = is_float(t);
  switch (op) {
    case UnaryOp::Neg: return fp ? "(-" + x + ")" : fmt::format("kiln_wrap_neg({})", x);
    case UnaryOp::Abs: return fp ? "std::fabs(" + x + ")" : fmt::format("({0} < 0 ? kiln_wrap_neg({0}) : {0})", x);
    case UnaryOp::Exp: return "kiln_exp(" + x + ")";
    case UnaryOp::Log: return "kiln_log(" + x + ")";
    case UnaryOp::Sqrt: return "std::sqrt(" + x + ")";
    case UnaryOp::Reciprocal: return fmt::format("({} / {})", row_literal(1.0, t), x);
    // NaN < 0 is false, so NaN passes through (ONNX Relu = max(x, 0) propagates NaN).
    case UnaryOp::Relu: return fmt::format("({0} < {1} ? {1} : {0})", x, row_literal(0.0, t));
    case UnaryOp::Sigmoid: return "kiln_sigmoid(" + x + ")";
    case UnaryOp::Tanh: return "kiln_tanh(" + x + ")";
    case UnaryOp::Erf: return "kiln_erf(" + x + ")";
    case UnaryOp::IsNaN: return fmt::format("({0} != {0})", x);
    case UnaryOp::Not: return "(!" + x + ")";
  }
  internal_error("row emitter: unknown unary op");
}

std::string binary_text(BinaryOp op, const ScalarExpr& e, const std::string& a, const std::string& b) {
  DType t = e.operands()[0].dtype();
  auto infix = [&](const char* sym) { return fmt::format("({} {} {})", a, sym, b); };
  auto integer = [&](const char* helper) { return fmt::format("{}({}, {})", helper, a, b); };
  bool fp = is_float(t);
  switch (op) {
    case BinaryOp::Add: return fp ? infix("+") : integer("kiln_wrap_add");
    case BinaryOp::Sub: return fp ? infix("-") : integer("kiln_wrap_sub");
    case BinaryOp::Mul: return fp ? infix("*") : integer("kiln_wrap_mul");
    case BinaryOp::Div: return fp ? infix("/") : integer("kiln_int_div");
    case BinaryOp::Pow: {
      // x^2 as x * x: both are the correctly rounded square, and the product vectorises.
      const ScalarExpr& exponent = e.operands()[1];
      if (exponent.kind() == ScalarKind::Constant && exponent.constant_value() == 2.0)
        return fmt::format("({0} * {0})", a);
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
  internal_error("row emitter: unknown binary op");
}

}  // namespace

RowBodyEmitter::RowBodyEmitter(const loops::CppPrintOptions& print, const loops::ExprMap<Expr>& subs, Expr col_var,
                               Expr flat, std::string flat_text, std::string row_indent, std::string elem_indent)
    : print_(print),
      subs_(subs),
      col_var_(std::move(col_var)),
      flat_(loops::simplify(flat)),
      flat_text_(std::move(flat_text)),
      row_indent_(std::move(row_indent)),
      elem_indent_(std::move(elem_indent)) {}

std::string RowBodyEmitter::value(const ScalarExpr& e) { return emit(e).text; }

RowBodyEmitter::Operand RowBodyEmitter::index(const Expr& e) {
  Expr simple = loops::simplify(e);
  if (simple == flat_) return {flat_text_, false};
  Expr mapped = loops::simplify(loops::substitute(simple, subs_));
  for (const Expr& s : loops::free_syms(mapped)) used_syms_.insert(s.name());
  return {loops::to_cpp(mapped, print_), !loops::depends_on(mapped, col_var_)};
}

bool RowBodyEmitter::row_level(const ScalarExpr& e) {
  if (auto it = row_level_.find(e.node()); it != row_level_.end()) return it->second;
  bool row = true;
  if (e.kind() == ScalarKind::Load && !loops::is_row_leaf(e)) {
    Expr simple = loops::simplify(e.index());
    row = simple != flat_ && !loops::depends_on(loops::simplify(loops::substitute(simple, subs_)), col_var_);
  }
  for (const ScalarExpr& o : e.operands()) row = row_level(o) && row;
  return row_level_[e.node()] = row;
}

RowBodyEmitter::Operand RowBodyEmitter::emit(const ScalarExpr& e) {
  if (auto it = replaced_.find(e.node()); it != replaced_.end()) return it->second;
  if (auto it = done_.find(e.node()); it != done_.end()) return it->second;
  Operand result = emit_new(e);
  done_.emplace(e.node(), result);
  return result;
}

RowBodyEmitter::Operand RowBodyEmitter::emit_new(const ScalarExpr& e) {
  if (e.kind() == ScalarKind::Constant) return {row_literal(e.constant_value(), e.dtype()), true};
  std::string text;
  bool row = true;
  if (loops::is_row_length(e)) {
    text = fmt::format("static_cast<{}>(cols)", row_c_type(e.dtype()));
  } else if (int r = loops::row_result_index(e); r >= 0) {
    return {fmt::format("r{}", r), true};  // a parameter of the function
  } else if (e.kind() == ScalarKind::Load) {
    Operand at = index(e.index());
    used_inputs_.insert(e.input());
    // bool data is read as bytes: GCC 12 does not vectorise loads of `bool` (an 8-bit mask type to it).
    text = e.dtype() == DType::boolean ? fmt::format("(in{}[{}] != 0)", e.input(), at.text)
                                       : fmt::format("in{}[{}]", e.input(), at.text);
    row = at.row;
  } else {
    std::vector<std::string> a;
    for (const ScalarExpr& o : e.operands()) {
      Operand op = emit(o);
      a.push_back(op.text);
      row = row && op.row;
    }
    switch (e.kind()) {
      case ScalarKind::Unary: text = unary_text(e.unary_op(), e.operands()[0].dtype(), a[0]); break;
      case ScalarKind::Binary: text = binary_text(e.binary_op(), e, a[0], a[1]); break;
      case ScalarKind::Where: text = fmt::format("({} ? {} : {})", a[0], a[1], a[2]); break;
      case ScalarKind::Cast:
        if (is_float(e.operands()[0].dtype()) && is_integer(e.dtype()))
          text = fmt::format("kiln_float_to_int<{}>({})", row_c_type(e.dtype()), a[0]);
        else
          text = fmt::format("static_cast<{}>({})", row_c_type(e.dtype()), a[0]);
        break;
      default: internal_error("row emitter: unexpected scalar node");
    }
  }
  std::string key = row_c_type(e.dtype()) + " " + text;
  if (auto it = temps_.find(key); it != temps_.end()) return it->second;
  Operand temp{fmt::format("v{}", next_temp_++), row};
  (row ? row_lines_ : elem_lines_) +=
      fmt::format("{}const {} {} = {};\n", row ? row_indent_ : elem_indent_, row_c_type(e.dtype()), temp.text, text);
  temps_.emplace(std::move(key), temp);
  return temp;
}

}  // namespace kiln::codegen::cpu
