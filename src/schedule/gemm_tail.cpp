#include "schedule/gemm_tail.h"

#include <cmath>

#include <fmt/format.h>

#include "schedule/pointwise_nodes.h"
#include "support/error.h"

namespace kiln::schedule {
namespace {

using loops::BinaryOp;
using loops::ScalarExpr;
using loops::ScalarKind;
using loops::UnaryOp;

bool is_f32(const Graph& g, ValueId v) { return v != kNoValue && g.value(v).type.dtype == DType::f32; }

// A constant f32 with one value, broadcast over the output without changing its rank.
bool scalar_constant(const Graph& g, ValueId v, int out_rank) {
  const auto& c = g.value(v).constant;
  return c && is_f32(g, v) && c->numel() == 1 && c->rank() <= out_rank;
}

// The ops a tail may hold: f32 in, f32 out, elementwise.
bool tail_op(OpKind op) {
  switch (op) {
    case OpKind::Neg: case OpKind::Abs: case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt:
    case OpKind::Reciprocal: case OpKind::Relu: case OpKind::Sigmoid: case OpKind::Tanh: case OpKind::Erf:
    case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Pow: case OpKind::Max:
    case OpKind::Min:
      return true;
    default:
      return false;
  }
}

}  // namespace

namespace {

// The tail applied to `cur`; its operands are loads first_load, first_load + 1, ...
ScalarExpr append_tail(const Graph& g, const LibraryGroup& grp, ScalarExpr cur, int first_load) {
  ValueId running = kNoValue;  // the value `cur` stands for
  int next_operand = 0;
  for (size_t t = 0; t < grp.tail.size(); ++t) {
    const Node& n = g.nodes[size_t(grp.tail[t])];
    std::vector<ScalarExpr> in;
    const ValueId prev = t == 0 ? grp.tail_input : running;
    for (ValueId v : n.inputs) {
      if (v == prev) {
        in.push_back(cur);
      } else if (g.value(v).constant && g.value(v).constant->numel() == 1) {
        in.push_back(loops::constant(g.value(v).constant->as_double(0), DType::f32));
      } else {
        KILN_INTERNAL_CHECK(next_operand < static_cast<int>(grp.tail_inputs.size()), "gemm tail: more operands than inputs");
        in.push_back(loops::load(first_load + next_operand++, loops::Expr::constant(0), DType::f32));
      }
    }
    cur = pointwise_node_expr(n, in);
    running = n.outputs[0];
  }
  return cur;
}

ScalarExpr f32(double v) { return loops::constant(v, DType::f32); }

}  // namespace

ScalarExpr tail_expr(const Graph& g, const LibraryGroup& grp) {
  return append_tail(g, grp, loops::load(0, loops::Expr::constant(0), DType::f32), 1);
}

ScalarExpr activation_expr(LibraryActivation a, const ScalarExpr& x) {
  using loops::binary;
  using loops::unary;
  switch (a) {
    case LibraryActivation::none: return x;
    case LibraryActivation::relu: return unary(UnaryOp::Relu, x);
    case LibraryActivation::tanh: return unary(UnaryOp::Tanh, x);
    case LibraryActivation::sigmoid: return unary(UnaryOp::Sigmoid, x);
    case LibraryActivation::gelu_erf:  // 0.5 * x * (1 + erf(x / sqrt(2)))
      return binary(BinaryOp::Mul, binary(BinaryOp::Mul, f32(0.5), x),
                    binary(BinaryOp::Add, f32(1.0), unary(UnaryOp::Erf, binary(BinaryOp::Mul, x, f32(M_SQRT1_2)))));
    case LibraryActivation::gelu_tanh: {  // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x * x * x)))
      ScalarExpr cube = binary(BinaryOp::Mul, binary(BinaryOp::Mul, binary(BinaryOp::Mul, f32(0.044715), x), x), x);
      ScalarExpr inner = binary(BinaryOp::Mul, f32(std::sqrt(2.0 / M_PI)), binary(BinaryOp::Add, x, cube));
      return binary(BinaryOp::Mul, binary(BinaryOp::Mul, f32(0.5), x),
                    binary(BinaryOp::Add, f32(1.0), unary(UnaryOp::Tanh, inner)));
    }
    case LibraryActivation::silu: return binary(BinaryOp::Mul, x, unary(UnaryOp::Sigmoid, x));
    case LibraryActivation::hard_swish: {  // x * max(min(x / 6 + 0.5, 1), 0), as HardSwish decomposes
      ScalarExpr h = binary(BinaryOp::Add, binary(BinaryOp::Mul, x, f32(1.0 / 6.0)), f32(0.5));
      return binary(BinaryOp::Mul, x, binary(BinaryOp::Max, binary(BinaryOp::Min, h, f32(1.0)), f32(0.0)));
    }
  }
  internal_error("activation_expr: activation {}", static_cast<int>(a));
}

ScalarExpr epilogue_expr(const Graph& g, const LibraryGroup& grp) {
  ScalarExpr cur = activation_expr(grp.act, loops::load(0, loops::Expr::constant(0), DType::f32));
  if (grp.residual >= 0)
    cur = loops::binary(BinaryOp::Add, cur, loops::load(1, loops::Expr::constant(0), DType::f32));
  cur = activation_expr(grp.act_after, cur);
  return append_tail(g, grp, cur, grp.residual >= 0 ? 2 : 1);
}

bool is_identity(const ScalarExpr& e) { return e.kind() == ScalarKind::Load && e.input() == 0; }

// ONNX semantics in double: Relu keeps NaN, Max and Min return NaN when either side is.
double expr_fp64(const ScalarExpr& e, const std::vector<double>& loads) {
  if (e.kind() == ScalarKind::Load) return loads.at(size_t(e.input()));
  if (e.kind() == ScalarKind::Constant) return e.constant_value();
  std::vector<double> x;
  for (const ScalarExpr& o : e.operands()) x.push_back(expr_fp64(o, loads));
  if (e.kind() == ScalarKind::Unary) {
    switch (e.unary_op()) {
      case UnaryOp::Neg: return -x[0];
      case UnaryOp::Abs: return std::fabs(x[0]);
      case UnaryOp::Exp: return std::exp(x[0]);
      case UnaryOp::Log: return std::log(x[0]);
      case UnaryOp::Sqrt: return std::sqrt(x[0]);
      case UnaryOp::Reciprocal: return 1.0 / x[0];
      case UnaryOp::Relu: return x[0] < 0 ? 0.0 : x[0];
      case UnaryOp::Sigmoid: return 1.0 / (1.0 + std::exp(-x[0]));
      case UnaryOp::Tanh: return std::tanh(x[0]);
      case UnaryOp::Erf: return std::erf(x[0]);
      default: break;
    }
  } else if (e.kind() == ScalarKind::Binary) {
    const double a = x[0], b = x[1];
    switch (e.binary_op()) {
      case BinaryOp::Add: return a + b;
      case BinaryOp::Sub: return a - b;
      case BinaryOp::Mul: return a * b;
      case BinaryOp::Div: return a / b;
      case BinaryOp::Pow: return std::pow(a, b);
      case BinaryOp::Max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
      case BinaryOp::Min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
      default: break;
    }
  }
  internal_error("gemm epilogue: {} has no fp64 form", loops::to_string(e));
}

bool tail_operand_per_column(const Graph& g, ValueId operand) {
  return g.value(operand).constant != nullptr;  // tail_node_ok admits constants only as one value per column
}

bool tail_node_ok(const Graph& g, const Node& n, ValueId cur, ValueId& out, ValueId& operand) {
  if (!tail_op(n.op) || n.outputs.size() != 1 || !pointwise_node_supported(g, n)) return false;
  out = n.outputs[0];
  const TensorType& type = g.value(cur).type;
  if (out == kNoValue || !is_f32(g, out) || !(g.value(out).type == type) || type.rank() < 1) return false;
  if (!type.shape.back().is_static()) return false;
  const int64_t columns = type.shape.back().value;
  operand = kNoValue;
  int uses = 0;
  for (ValueId v : n.inputs) {
    if (v == cur) {
      ++uses;
      continue;
    }
    if (v == kNoValue || !is_f32(g, v) || operand != kNoValue) return false;
    if (scalar_constant(g, v, type.rank())) continue;
    const auto& c = g.value(v).constant;
    if (c) {  // one value per column: [N] or [1, .., N], no more dims than the output
      if (c->rank() > type.rank() || c->numel() != columns || c->dim(-1) != columns) return false;
    } else if (!(g.value(v).type == type)) {
      return false;
    }
    operand = v;
  }
  return uses == 1;
}

}  // namespace kiln::schedule
