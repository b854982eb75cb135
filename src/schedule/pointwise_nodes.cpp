#include "schedule/pointwise_nodes.h"

#include <optional>

#include "support/error.h"

namespace kiln::schedule {
namespace {

using loops::BinaryOp;
using loops::ScalarExpr;
using loops::UnaryOp;

std::optional<UnaryOp> unary_of(OpKind op) {
  switch (op) {
    case OpKind::Neg: return UnaryOp::Neg;
    case OpKind::Abs: return UnaryOp::Abs;
    case OpKind::Exp: return UnaryOp::Exp;
    case OpKind::Log: return UnaryOp::Log;
    case OpKind::Sqrt: return UnaryOp::Sqrt;
    case OpKind::Reciprocal: return UnaryOp::Reciprocal;
    case OpKind::Relu: return UnaryOp::Relu;
    case OpKind::Sigmoid: return UnaryOp::Sigmoid;
    case OpKind::Tanh: return UnaryOp::Tanh;
    case OpKind::Erf: return UnaryOp::Erf;
    case OpKind::IsNaN: return UnaryOp::IsNaN;
    case OpKind::Not: return UnaryOp::Not;
    default: return std::nullopt;
  }
}

std::optional<BinaryOp> binary_of(OpKind op) {
  switch (op) {
    case OpKind::Add: return BinaryOp::Add;
    case OpKind::Sub: return BinaryOp::Sub;
    case OpKind::Mul: return BinaryOp::Mul;
    case OpKind::Equal: return BinaryOp::Equal;
    case OpKind::Less: return BinaryOp::Less;
    case OpKind::Greater: return BinaryOp::Greater;
    case OpKind::And: return BinaryOp::And;
    case OpKind::Or: return BinaryOp::Or;
    default: return std::nullopt;
  }
}


// Whether `n` can live in a generated pointwise kernel: a supported op on supported dtypes, whose
// operands broadcast to its output exactly as the emitter reads them.
bool supported_impl(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0] == kNoValue) return false;
  const TensorType& out = g.value(n.outputs[0]).type;
  if (!loops::pointwise_dtype_supported(out.dtype)) return false;
  bool float_only = false;
  switch (n.op) {
    case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Reciprocal: case OpKind::Sigmoid:
    case OpKind::Tanh: case OpKind::Erf: case OpKind::Div: case OpKind::Pow: case OpKind::Relu: case OpKind::IsNaN:
      float_only = true;
      break;
    case OpKind::Cast:
      if (!loops::pointwise_dtype_supported(out.dtype)) return false;
      break;
    case OpKind::Where: case OpKind::Max: case OpKind::Min: case OpKind::LessOrEqual: case OpKind::GreaterOrEqual:
      break;
    default:
      if (!unary_of(n.op) && !binary_of(n.op)) return false;
  }
  if ((n.op == OpKind::Max || n.op == OpKind::Min) && n.inputs.size() != 2) return false;
  for (ValueId v : n.inputs) {
    if (v == kNoValue) return false;
    const TensorType& t = g.value(v).type;
    if (!loops::pointwise_dtype_supported(t.dtype)) return false;
    if (float_only && !is_float(t.dtype) && !(n.op == OpKind::Pow)) return false;
    if (t.rank() > out.rank()) return false;
  }
  if (n.op == OpKind::Pow && (!is_float(g.value(n.inputs[0]).type.dtype) ||
                              g.value(n.inputs[0]).type.dtype != g.value(n.inputs[1]).type.dtype))
    return false;
  return true;
}

// Cast's target (a dtype name since the importer); unknown: u8, which the emitter rejects by the output dtype.
DType dtype_of_cast(const Node& n) { return dtype_from_name(n.attr_string("to", "")).value_or(DType::u8); }

}  // namespace

bool pointwise_node_supported(const Graph& g, const Node& n) { return supported_impl(g, n); }

ScalarExpr pointwise_node_expr(const Node& n, const std::vector<ScalarExpr>& in) {
  if (auto u = unary_of(n.op)) return loops::unary(*u, in[0]);
  if (auto b = binary_of(n.op)) return loops::binary(*b, in[0], in[1]);
  switch (n.op) {
    case OpKind::Div: return loops::binary(BinaryOp::Div, in[0], in[1]);
    case OpKind::Pow: return loops::binary(BinaryOp::Pow, in[0], in[1]);
    case OpKind::Max: return loops::binary(BinaryOp::Max, in[0], in[1]);
    case OpKind::Min: return loops::binary(BinaryOp::Min, in[0], in[1]);
    case OpKind::Where: return loops::where(in[0], in[1], in[2]);
    case OpKind::Cast: return loops::cast(dtype_of_cast(n), in[0]);
    // a <= b as (a < b) or (a == b): false when either is NaN, as ONNX requires
    case OpKind::LessOrEqual:
      return loops::binary(BinaryOp::Or, loops::binary(BinaryOp::Less, in[0], in[1]),
                           loops::binary(BinaryOp::Equal, in[0], in[1]));
    case OpKind::GreaterOrEqual:
      return loops::binary(BinaryOp::Or, loops::binary(BinaryOp::Greater, in[0], in[1]),
                           loops::binary(BinaryOp::Equal, in[0], in[1]));
    default: internal_error("pointwise_node_expr: {} is not a pointwise node", op_name(n.op));
  }
}

}  // namespace kiln::schedule
