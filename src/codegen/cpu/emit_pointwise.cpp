#include "codegen/cpu/emit_pointwise.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>

#include "codegen/cpu/toolchain.h"
#include "codegen/cpu/vector_math.h"
#include "loops/index_layout.h"
#include "support/error.h"

namespace kiln::codegen::cpu {

using loops::BinaryOp;
using loops::Expr;
using loops::ScalarExpr;
using loops::ScalarKind;
using loops::UnaryOp;

namespace {

// Scalar helpers of every pointwise kernel (values are computed for every element, so a helper must
// not trap or be undefined on any input). Max and Min return NaN if either side is NaN (std::fmax
// would return the other side). exp, log, erf, tanh and sigmoid come from vector_math_prelude()
// (std::exp and friends would stay scalar libm calls and keep the loop from vectorising).
constexpr std::string_view kScalarPrelude = R"(#include <cmath>
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
// Float to integer; NaN and out-of-range values (undefined in C++) give the minimum, as x86 does.
template <class T, class F> static inline T kiln_float_to_int(F x) {
  constexpr F lo = F(std::numeric_limits<T>::min());  // -2^k, exact in F
  return (x >= lo && x < -lo) ? T(x) : std::numeric_limits<T>::min();
}
)";

std::string c_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::boolean: return "bool";
    default: internal_error("pointwise kernels do not handle dtype {}", dtype_name(t));
  }
}

// Exact, locale-independent: hex floats for finite values, builtins for NaN and infinities.
std::string float_literal(double v, bool is_f32) {
  const char* suffix = is_f32 ? "f" : "";
  if (std::isnan(v)) return is_f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) return std::string(v < 0 ? "(-" : "(") + (is_f32 ? "__builtin_inff()" : "__builtin_inf()") + ")";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::hex);
  KILN_INTERNAL_CHECK(res.ec == std::errc(), "cannot print constant {}", v);
  std::string digits(buf, res.ptr);
  if (std::signbit(v)) return "(-0x" + digits + suffix + ")";
  return "0x" + digits + suffix;
}

std::string literal(double v, DType t) {
  switch (t) {
    case DType::f32: return float_literal(v, true);
    case DType::f64: return float_literal(v, false);
    case DType::boolean: return v != 0 ? "true" : "false";
    case DType::i32:
      if (v == -2147483648.0) return "(-2147483647 - 1)";
      return fmt::format("int32_t{{{}}}", static_cast<int64_t>(v));
    case DType::i64:
      if (v == -9223372036854775808.0) return "(-INT64_C(9223372036854775807) - 1)";
      return fmt::format("INT64_C({})", static_cast<int64_t>(v));
    default: internal_error("pointwise kernels do not handle dtype {}", dtype_name(t));
  }
}

class BodyEmitter {
 public:
  BodyEmitter(const loops::CppPrintOptions& print, std::string indent) : print_(print), indent_(std::move(indent)) {}

  // The operand text of e's value: a literal, or a temporary defined by an earlier line. Equal
  // subtrees (same operation on the same temporaries) share one temporary.
  std::string value(const ScalarExpr& e) {
    if (e.kind() == ScalarKind::Constant) return literal(e.constant_value(), e.dtype());
    std::vector<std::string> a;
    for (const ScalarExpr& o : e.operands()) a.push_back(value(o));
    std::string text = expression(e, a);
    std::string key = c_type(e.dtype()) + " " + text;
    auto it = temps_.find(key);
    if (it != temps_.end()) return it->second;
    std::string name = fmt::format("v{}", temps_.size());
    lines_ += fmt::format("{}const {} {} = {};\n", indent_, c_type(e.dtype()), name, text);
    temps_.emplace(std::move(key), name);
    return name;
  }

  // Indices equal to `from` (after simplification) print as `to`: the output's own flat index is
  // cheaper as o * inner + x_inner than rebuilt from the per-dimension indices.
  void set_rewrite(const Expr& from, const Expr& to) {
    rewrite_from_ = loops::simplify(from);
    rewrite_to_ = loops::simplify(to);
    has_rewrite_ = true;
  }

  std::string index(const Expr& e) {
    Expr simple = loops::simplify(e);
    if (has_rewrite_ && simple == rewrite_from_) simple = rewrite_to_;
    for (const Expr& v : loops::free_vars(simple)) used_vars_.insert(v.name());
    return loops::to_cpp(simple, print_);
  }
  bool uses(const Expr& var) const { return used_vars_.count(var.name()) != 0; }
  const std::string& lines() const { return lines_; }

 private:
  std::string expression(const ScalarExpr& e, const std::vector<std::string>& a) {
    switch (e.kind()) {
      case ScalarKind::Load: return fmt::format("in{}[{}]", e.input(), index(e.index()));
      case ScalarKind::Unary: return unary(e.unary_op(), e.operands()[0].dtype(), a[0]);
      case ScalarKind::Binary: return binary(e.binary_op(), e.operands()[0].dtype(), a[0], a[1]);
      case ScalarKind::Where: return fmt::format("({} ? {} : {})", a[0], a[1], a[2]);
      case ScalarKind::Cast:
        if (is_float(e.operands()[0].dtype()) && is_integer(e.dtype()))
          return fmt::format("kiln_float_to_int<{}>({})", c_type(e.dtype()), a[0]);
        return fmt::format("static_cast<{}>({})", c_type(e.dtype()), a[0]);
      case ScalarKind::Constant: break;
    }
    internal_error("pointwise emitter: unexpected scalar node");
  }

  static std::string unary(UnaryOp op, DType t, const std::string& x) {
    std::string zero = literal(0.0, t);
    switch (op) {
      case UnaryOp::Neg: return is_float(t) ? "(-" + x + ")" : fmt::format("kiln_wrap_neg({})", x);
      case UnaryOp::Abs: return is_float(t) ? "std::fabs(" + x + ")" : fmt::format("({0} < 0 ? kiln_wrap_neg({0}) : {0})", x);
      case UnaryOp::Exp: return "kiln_exp(" + x + ")";
      case UnaryOp::Log: return "kiln_log(" + x + ")";
      case UnaryOp::Sqrt: return "std::sqrt(" + x + ")";
      case UnaryOp::Reciprocal: return fmt::format("({} / {})", literal(1.0, t), x);
      // NaN < 0 is false, so NaN passes through (ONNX Relu = max(x, 0) propagates NaN).
      case UnaryOp::Relu: return fmt::format("({0} < {1} ? {1} : {0})", x, zero);
      case UnaryOp::Sigmoid: return "kiln_sigmoid(" + x + ")";
      case UnaryOp::Tanh: return "kiln_tanh(" + x + ")";
      case UnaryOp::Erf: return "kiln_erf(" + x + ")";
      case UnaryOp::IsNaN: return fmt::format("({0} != {0})", x);
      case UnaryOp::Not: return "(!" + x + ")";
    }
    internal_error("pointwise emitter: unknown unary op");
  }

  // Integer arithmetic wraps (through unsigned types: signed overflow would be undefined in C++).
  static std::string binary(BinaryOp op, DType t, const std::string& a, const std::string& b) {
    auto infix = [&](const char* sym) { return fmt::format("({} {} {})", a, sym, b); };
    auto integer = [&](const char* helper) { return fmt::format("{}({}, {})", helper, a, b); };
    bool fp = is_float(t);
    switch (op) {
      case BinaryOp::Add: return fp ? infix("+") : integer("kiln_wrap_add");
      case BinaryOp::Sub: return fp ? infix("-") : integer("kiln_wrap_sub");
      case BinaryOp::Mul: return fp ? infix("*") : integer("kiln_wrap_mul");
      case BinaryOp::Div: return fp ? infix("/") : integer("kiln_int_div");
      case BinaryOp::Pow: return fmt::format("std::pow({}, {})", a, b);
      case BinaryOp::Max: return fmt::format("kiln_max_nan({}, {})", a, b);
      case BinaryOp::Min: return fmt::format("kiln_min_nan({}, {})", a, b);
      case BinaryOp::Equal: return infix("==");
      case BinaryOp::Less: return infix("<");
      case BinaryOp::Greater: return infix(">");
      case BinaryOp::And: return infix("&&");
      case BinaryOp::Or: return infix("||");
    }
    internal_error("pointwise emitter: unknown binary op");
  }

  const loops::CppPrintOptions& print_;
  std::string indent_;
  std::map<std::string, std::string> temps_;
  std::set<std::string> used_vars_;
  bool has_rewrite_ = false;
  Expr rewrite_from_, rewrite_to_;
  std::string lines_;
};

void collect_inputs(const ScalarExpr& e, std::set<int>& used) {
  if (e.kind() == ScalarKind::Load) used.insert(e.input());
  for (const ScalarExpr& o : e.operands()) collect_inputs(o, used);
}

Expr product(const std::vector<Expr>& sizes, size_t begin, size_t end) {
  Expr p(1);
  for (size_t i = begin; i < end; ++i) p = p * sizes[i];
  return loops::simplify(p);
}

}  // namespace

PointwiseSource emit_pointwise_cpp(const loops::PointwiseKernel& k, const PointwiseEmitOptions& options) {
  loops::validate(k);
  KILN_INTERNAL_CHECK(options.parallel_threshold >= 0 && options.inner_block > 0, "bad pointwise emit options");
  KILN_INTERNAL_CHECK(k.name.rfind("kiln_", 0) != 0, "kernel name '{}' would clash with the helpers", k.name);
  std::vector<Expr> syms = loops::kernel_symbols(k);
  std::map<std::string, size_t> sym_slot;
  PointwiseSource result;
  for (const Expr& s : syms) {
    KILN_INTERNAL_CHECK(s.name() != "o", "kernel '{}': symbol 'o' is reserved for the outer loop", k.name);
    sym_slot.emplace(s.name(), result.symbols.size());
    result.symbols.push_back(s.name());
  }
  // Symbols print as s<slot> (their names need not be C identifiers); variables by their own names.
  loops::CppPrintOptions print;
  print.leaf_name = [&sym_slot](const Expr& e) {
    return e.is_sym() ? fmt::format("s{}", sym_slot.at(e.name())) : e.name();
  };
  auto cpp = [&print](const Expr& e) { return loops::to_cpp(loops::simplify(e), print); };

  const std::vector<Expr>& sizes = k.output.sizes;
  const size_t rank = sizes.size();
  std::vector<Expr> vars = loops::index_vars(k);
  const std::string out_type = c_type(k.output.dtype);

  std::string code;
  code += kKernelExportPrelude;
  code += fmt::format("// Pointwise kernel '{}', generated by kiln.\n", k.name);
  for (size_t j = 0; j < syms.size(); ++j) code += fmt::format("// syms[{}] = {}\n", j, syms[j].name());
  code += loops::cpp_index_prelude();
  code += kScalarPrelude;
  code += vector_math_prelude();
  code += fmt::format("\nKILN_EXPORT void {}(const void* const* inputs, void* output, const int64_t* syms) {{\n", k.name);
  if (std::any_of(sizes.begin(), sizes.end(), [](const Expr& d) { return d.is_const(0); })) {
    // A dimension of constant size 0: no elements (and delinearising by a zero stride is undefined).
    code += "  (void)inputs;\n  (void)output;\n  (void)syms;\n}\n";
    result.source = {k.name, std::move(code), {k.name}};
    return result;
  }
  for (size_t j = 0; j < syms.size(); ++j) code += fmt::format("  const int64_t s{} = syms[{}];\n", j, j);
  if (syms.empty()) code += "  (void)syms;\n";
  std::set<int> used;
  collect_inputs(k.body, used);
  for (int i : used) {
    std::string t = c_type(k.inputs[static_cast<size_t>(i)].dtype);
    code += fmt::format("  const {0}* __restrict in{1} = static_cast<const {0}*>(inputs[{1}]);\n", t, i);
  }
  if (used.empty()) code += "  (void)inputs;\n";
  code += fmt::format("  {0}* __restrict out = static_cast<{0}*>(output);\n", out_type);

  if (rank == 0) {
    BodyEmitter body(print, "  ");
    std::string v = body.value(k.body);
    code += body.lines() + fmt::format("  out[0] = {};\n}}\n", v);
    result.source = {k.name, std::move(code), {k.name}};
    return result;
  }

  // The inner loop runs over the last dimension, the outer one over the others collapsed. When the
  // last dimension may be long (symbolic, or a constant above inner_block), the
  // outer loop runs over tiles (row, block of the last dimension), so that few long rows still
  // spread over the threads.
  const Expr inner_var = vars[rank - 1];
  const Expr& inner_extent = sizes[rank - 1];
  const Expr outer_extent = product(sizes, 0, rank - 1);
  const Expr outer_var = Expr::var("o", outer_extent);
  const bool tiled = !(inner_extent.is_const() && inner_extent.value() <= options.inner_block);
  BodyEmitter body(print, "      ");
  body.set_rewrite(loops::linear_index(vars, loops::row_major_strides(sizes)), outer_var * inner_extent + inner_var);
  std::string stored = body.value(k.body);
  std::string store_index = body.index(loops::linear_index(vars, loops::row_major_strides(sizes)));

  code += fmt::format("  const int64_t numel = {};\n", cpp(product(sizes, 0, rank)));
  code += "  if (numel <= 0) return;  // no elements: touch nothing\n";
  code += fmt::format("  const int64_t outer = {};\n", cpp(outer_extent));
  std::string begin = "0", end = cpp(inner_extent);
  bool row_indices_used = false;
  for (size_t d = 0; d + 1 < rank; ++d) row_indices_used = row_indices_used || body.uses(vars[d]);
  if (tiled) {
    code += fmt::format("  const int64_t inner = {};\n", end);
    code += fmt::format("  const int64_t blocks = (inner + {}) / {};\n", options.inner_block - 1, options.inner_block);
    code += fmt::format("#pragma omp parallel for schedule(static) if (numel >= {})\n", options.parallel_threshold);
    code += "  for (int64_t t = 0; t < outer * blocks; ++t) {\n";
    code += fmt::format("    const int64_t begin = t % blocks * {};\n", options.inner_block);
    code += fmt::format("    const int64_t end = kiln_min(begin + {}, inner);\n", options.inner_block);
    begin = "begin", end = "end";
    if (body.uses(outer_var) || row_indices_used) code += "    const int64_t o = t / blocks;\n";
  } else {
    code += fmt::format("#pragma omp parallel for schedule(static) if (numel >= {})\n", options.parallel_threshold);
    code += "  for (int64_t o = 0; o < outer; ++o) {\n";
  }
  // Per-dimension indices of the row, declared only where an index uses them.
  std::vector<Expr> outer_idx = loops::delinearize(outer_var, std::vector<Expr>(sizes.begin(), sizes.end() - 1));
  for (size_t d = 0; d + 1 < rank; ++d)
    if (body.uses(vars[d]))
      code += fmt::format("    const int64_t {} = {};\n", vars[d].name(), loops::to_cpp(outer_idx[d], print));
  code += "#pragma omp simd\n";
  code += fmt::format("    for (int64_t {0} = {1}; {0} < {2}; ++{0}) {{\n", inner_var.name(), begin, end);
  code += body.lines();
  code += fmt::format("      out[{}] = {};\n", store_index, stored);
  code += "    }\n  }\n}\n";
  result.source = {k.name, std::move(code), {k.name}};
  return result;
}

}  // namespace kiln::codegen::cpu
