#include "loops/pointwise.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>

#include "kiln/tensor.h"
#include "loops/index_layout.h"
#include "support/error.h"

namespace kiln::loops {

ScalarExpr make_scalar(ScalarNode n) { return ScalarExpr(std::make_shared<const ScalarNode>(std::move(n))); }

namespace {

void check_kind(const ScalarExpr& e, ScalarKind k, const char* what) {
  KILN_INTERNAL_CHECK(e.kind() == k, "ScalarExpr::{} on a node of another kind", what);
}

void check_supported(DType t) {
  KILN_INTERNAL_CHECK(pointwise_dtype_supported(t), "pointwise kernels do not handle dtype {}", dtype_name(t));
}

bool is_numeric(DType t) { return t != DType::boolean; }

}  // namespace

ScalarKind ScalarExpr::kind() const { return node_->kind; }
DType ScalarExpr::dtype() const { return node_->dtype; }
int ScalarExpr::input() const {
  check_kind(*this, ScalarKind::Load, "input");
  return node_->input;
}
const Expr& ScalarExpr::index() const {
  check_kind(*this, ScalarKind::Load, "index");
  return node_->index;
}
double ScalarExpr::constant_value() const {
  check_kind(*this, ScalarKind::Constant, "constant_value");
  return node_->value;
}
UnaryOp ScalarExpr::unary_op() const {
  check_kind(*this, ScalarKind::Unary, "unary_op");
  return node_->unary;
}
BinaryOp ScalarExpr::binary_op() const {
  check_kind(*this, ScalarKind::Binary, "binary_op");
  return node_->binary;
}
const std::vector<ScalarExpr>& ScalarExpr::operands() const { return node_->ops; }

std::string_view unary_name(UnaryOp op) {
  static constexpr std::string_view kNames[] = {"neg",  "abs",     "exp",  "log", "sqrt",  "reciprocal",
                                                "relu", "sigmoid", "tanh", "erf", "isnan", "not"};
  return kNames[static_cast<size_t>(op)];
}

std::string_view binary_name(BinaryOp op) {
  static constexpr std::string_view kNames[] = {"add", "sub",   "mul",  "div",     "pow", "max",
                                                "min", "equal", "less", "greater", "and", "or"};
  return kNames[static_cast<size_t>(op)];
}

bool pointwise_dtype_supported(DType t) {
  return is_float(t) || t == DType::i32 || t == DType::i64 || t == DType::boolean;
}

ScalarExpr load(int input, Expr index, DType dtype) {
  check_supported(dtype);
  KILN_INTERNAL_CHECK(input >= 0, "load of input {}", input);
  ScalarNode n;
  n.kind = ScalarKind::Load;
  n.dtype = dtype;
  n.input = input;
  n.index = std::move(index);
  return make_scalar(std::move(n));
}

ScalarExpr constant(double value, DType dtype) {
  check_supported(dtype);
  if (!is_float(dtype)) {
    // Exactness: the emitter prints integers as integer literals.
    double lo = dtype == DType::boolean ? 0.0 : dtype == DType::i32 ? -2147483648.0 : -9223372036854775808.0;
    double hi_excl = dtype == DType::boolean ? 2.0 : dtype == DType::i32 ? 2147483648.0 : 9223372036854775808.0;
    KILN_INTERNAL_CHECK(std::isfinite(value) && std::trunc(value) == value && value >= lo && value < hi_excl,
                        "constant {} is not a {} value", value, dtype_name(dtype));
  }
  if (dtype == DType::f32) value = static_cast<double>(static_cast<float>(value));
  // A half constant holds a half value (NaN and infinities stay; f64 -> f32 -> half may round twice).
  if (dtype == DType::bf16) value = bf16_to_float(float_to_bf16(static_cast<float>(value)));
  if (dtype == DType::f16) value = half_to_float(float_to_half(static_cast<float>(value)));
  ScalarNode n;
  n.kind = ScalarKind::Constant;
  n.dtype = dtype;
  n.value = value;
  return make_scalar(std::move(n));
}

ScalarExpr unary(UnaryOp op, const ScalarExpr& x) {
  DType t = x.dtype();
  DType result = t;
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Relu:
      KILN_INTERNAL_CHECK(is_numeric(t), "{} of a bool", unary_name(op));
      break;
    case UnaryOp::IsNaN:
      KILN_INTERNAL_CHECK(is_float(t), "isnan of {}", dtype_name(t));
      result = DType::boolean;
      break;
    case UnaryOp::Not: KILN_INTERNAL_CHECK(t == DType::boolean, "not of {}", dtype_name(t)); break;
    default: KILN_INTERNAL_CHECK(is_float(t), "{} of {}", unary_name(op), dtype_name(t)); break;
  }
  ScalarNode n;
  n.kind = ScalarKind::Unary;
  n.dtype = result;
  n.unary = op;
  n.ops = {x};
  return make_scalar(std::move(n));
}

ScalarExpr binary(BinaryOp op, const ScalarExpr& a, const ScalarExpr& b) {
  DType t = a.dtype();
  KILN_INTERNAL_CHECK(t == b.dtype(), "{} of {} and {}", binary_name(op), dtype_name(t), dtype_name(b.dtype()));
  DType result = t;
  switch (op) {
    case BinaryOp::Pow: KILN_INTERNAL_CHECK(is_float(t), "pow of {}", dtype_name(t)); break;
    case BinaryOp::Equal: result = DType::boolean; break;
    case BinaryOp::Less:
    case BinaryOp::Greater:
      KILN_INTERNAL_CHECK(is_numeric(t), "{} of bools", binary_name(op));
      result = DType::boolean;
      break;
    case BinaryOp::And:
    case BinaryOp::Or:
      KILN_INTERNAL_CHECK(t == DType::boolean, "{} of {}", binary_name(op), dtype_name(t));
      break;
    default: KILN_INTERNAL_CHECK(is_numeric(t), "{} of bools", binary_name(op)); break;
  }
  ScalarNode n;
  n.kind = ScalarKind::Binary;
  n.dtype = result;
  n.binary = op;
  n.ops = {a, b};
  return make_scalar(std::move(n));
}

ScalarExpr where(const ScalarExpr& cond, const ScalarExpr& a, const ScalarExpr& b) {
  KILN_INTERNAL_CHECK(cond.dtype() == DType::boolean, "where with a {} condition", dtype_name(cond.dtype()));
  KILN_INTERNAL_CHECK(a.dtype() == b.dtype(), "where of {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  ScalarNode n;
  n.kind = ScalarKind::Where;
  n.dtype = a.dtype();
  n.ops = {cond, a, b};
  return make_scalar(std::move(n));
}

ScalarExpr cast(DType dtype, const ScalarExpr& x) {
  check_supported(dtype);
  if (x.dtype() == dtype) return x;
  ScalarNode n;
  n.kind = ScalarKind::Cast;
  n.dtype = dtype;
  n.ops = {x};
  return make_scalar(std::move(n));
}

ScalarExpr add(const ScalarExpr& a, const ScalarExpr& b) { return binary(BinaryOp::Add, a, b); }
ScalarExpr sub(const ScalarExpr& a, const ScalarExpr& b) { return binary(BinaryOp::Sub, a, b); }
ScalarExpr mul(const ScalarExpr& a, const ScalarExpr& b) { return binary(BinaryOp::Mul, a, b); }
ScalarExpr div(const ScalarExpr& a, const ScalarExpr& b) { return binary(BinaryOp::Div, a, b); }
ScalarExpr maximum(const ScalarExpr& a, const ScalarExpr& b) { return binary(BinaryOp::Max, a, b); }
ScalarExpr minimum(const ScalarExpr& a, const ScalarExpr& b) { return binary(BinaryOp::Min, a, b); }
ScalarExpr erf(const ScalarExpr& x) { return unary(UnaryOp::Erf, x); }
ScalarExpr is_nan(const ScalarExpr& x) { return unary(UnaryOp::IsNaN, x); }

std::string to_string(const ScalarExpr& e) {
  auto args = [&] {
    std::string s;
    for (const ScalarExpr& o : e.operands()) s += (s.empty() ? "" : ", ") + to_string(o);
    return s;
  };
  switch (e.kind()) {
    case ScalarKind::Load: return fmt::format("load{}[{}]", e.input(), to_string(e.index()));
    case ScalarKind::Constant: return fmt::format("{}:{}", e.constant_value(), dtype_name(e.dtype()));
    case ScalarKind::Unary: return fmt::format("{}({})", unary_name(e.unary_op()), args());
    case ScalarKind::Binary: return fmt::format("{}({})", binary_name(e.binary_op()), args());
    case ScalarKind::Where: return fmt::format("where({})", args());
    case ScalarKind::Cast: return fmt::format("cast:{}({})", dtype_name(e.dtype()), args());
  }
  return "?";
}

std::vector<Expr> index_vars(const PointwiseKernel& k) {
  std::vector<Expr> vars;
  vars.reserve(k.output.sizes.size());
  for (size_t d = 0; d < k.output.sizes.size(); ++d) vars.push_back(Expr::var(fmt::format("x{}", d), k.output.sizes[d]));
  return vars;
}

ScalarExpr load_broadcast(const PointwiseKernel& k, int input) {
  KILN_INTERNAL_CHECK(input >= 0 && static_cast<size_t>(input) < k.inputs.size(), "kernel '{}' has no input {}",
                      k.name, input);
  const TensorDesc& in = k.inputs[static_cast<size_t>(input)];
  return load(input, broadcast_index(index_vars(k), in.sizes, k.output.sizes), in.dtype);
}

namespace {

void collect_loads(const ScalarExpr& e, std::vector<ScalarExpr>& loads) {
  if (e.kind() == ScalarKind::Load) loads.push_back(e);
  for (const ScalarExpr& o : e.operands()) collect_loads(o, loads);
}

void add_syms(const Expr& e, std::vector<Expr>& out) {
  for (const Expr& s : free_syms(e)) out.push_back(s);
}

}  // namespace

std::vector<Expr> kernel_symbols(const PointwiseKernel& k) {
  std::vector<Expr> syms;
  for (const Expr& s : k.output.sizes) add_syms(s, syms);
  for (const TensorDesc& in : k.inputs)
    for (const Expr& s : in.sizes) add_syms(s, syms);
  std::vector<ScalarExpr> loads;
  collect_loads(k.body, loads);
  for (const ScalarExpr& l : loads) add_syms(l.index(), syms);
  std::sort(syms.begin(), syms.end());
  syms.erase(std::unique(syms.begin(), syms.end()), syms.end());
  // Two symbols with one name but different minima would print as one variable.
  for (size_t i = 1; i < syms.size(); ++i)
    KILN_INTERNAL_CHECK(syms[i].name() != syms[i - 1].name(), "kernel '{}': symbol '{}' occurs with two meanings",
                        k.name, syms[i].name());
  return syms;
}

void validate(const PointwiseKernel& k) {
  KILN_INTERNAL_CHECK(!k.name.empty() && (std::isalpha(static_cast<unsigned char>(k.name[0])) || k.name[0] == '_'),
                      "kernel name '{}' is not an identifier", k.name);
  for (char c : k.name)
    KILN_INTERNAL_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '_', "kernel name '{}' is not an identifier",
                        k.name);
  check_supported(k.output.dtype);
  for (const TensorDesc& in : k.inputs) check_supported(in.dtype);
  KILN_INTERNAL_CHECK(k.body.dtype() == k.output.dtype, "kernel '{}': body is {}, output is {}", k.name,
                      dtype_name(k.body.dtype()), dtype_name(k.output.dtype));
  std::vector<Expr> vars = index_vars(k);
  for (const Expr& s : kernel_symbols(k))
    for (const Expr& v : vars)
      KILN_INTERNAL_CHECK(s.name() != v.name(), "kernel '{}': symbol '{}' has a loop variable's name", k.name, s.name());
  std::vector<ScalarExpr> loads;
  collect_loads(k.body, loads);
  for (const ScalarExpr& l : loads) {
    KILN_INTERNAL_CHECK(static_cast<size_t>(l.input()) < k.inputs.size(), "kernel '{}' loads input {} of {}", k.name,
                        l.input(), k.inputs.size());
    KILN_INTERNAL_CHECK(l.dtype() == k.inputs[static_cast<size_t>(l.input())].dtype,
                        "kernel '{}': input {} loaded as {}", k.name, l.input(), dtype_name(l.dtype()));
    for (const Expr& v : free_vars(l.index()))
      KILN_INTERNAL_CHECK(std::find(vars.begin(), vars.end(), v) != vars.end(),
                          "kernel '{}': load index {} uses a variable that is not a loop variable", k.name,
                          to_string(l.index()));
  }
}

}  // namespace kiln::loops
