#include "schedule/row_nodes.h"

#include "support/error.h"

namespace kiln::schedule {
namespace {

using loops::RowReduceKind;
using loops::ScalarExpr;

constexpr int64_t kStashDouble = 11;  // LayerNormalization stash_type: TensorProto.DOUBLE

bool is_one(const Dim& d) { return d.is_static() && d.value == 1; }

std::optional<int> normalized_axis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Output i is absent or unused (and no graph output: uses counts those).
bool unused_output(const Node& n, size_t i, const std::vector<int>& uses) {
  return i >= n.outputs.size() || n.outputs[i] == kNoValue || uses[static_cast<size_t>(n.outputs[i])] == 0;
}

std::optional<RowSplit> reduce_split(const Graph& g, const Node& n) {
  const TensorType& x = g.value(n.inputs[0]).type;
  const int rank = x.rank();
  std::vector<int64_t> axes;
  if (n.has_input(1)) {
    const Value& a = g.value(n.inputs[1]);
    if (!a.constant || !is_integer(a.constant->dtype()) || a.constant->rank() > 1) return std::nullopt;
    axes = a.constant->to_int64_vector();
  }
  std::vector<char> reduced(static_cast<size_t>(rank), 0);
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0) return std::nullopt;  // the identity
    reduced.assign(reduced.size(), 1);
  }
  for (int64_t a : axes) {
    std::optional<int> d = normalized_axis(a, rank);
    if (!d || reduced[static_cast<size_t>(*d)]) return std::nullopt;  // bad axes: the eager kernel reports them
    reduced[static_cast<size_t>(*d)] = 1;
  }
  // The reduced dims must be trailing; kept static-1 dims among or just before them change nothing.
  int p = rank;
  while (p > 0 && (reduced[static_cast<size_t>(p - 1)] || is_one(x.shape[static_cast<size_t>(p - 1)]))) --p;
  for (int d = 0; d < p; ++d)
    if (reduced[static_cast<size_t>(d)]) return std::nullopt;
  return RowSplit{x.shape, p, true, n.attr_int("keepdims", 1) != 0};
}

}  // namespace

std::optional<RowSplit> row_split(const Graph& g, const Node& n, const std::vector<int>& uses) {
  if (n.inputs.empty() || !n.has_input(0) || n.outputs.empty() || n.outputs[0] == kNoValue) return std::nullopt;
  const TensorType& x = g.value(n.inputs[0]).type;
  if (!is_float(x.dtype) || x.rank() == 0 || g.value(n.outputs[0]).type.dtype != x.dtype) return std::nullopt;
  switch (n.op) {
    case OpKind::Softmax:
    case OpKind::LogSoftmax: {
      // Opset 13: the one axis alone. Static-1 dims after it make it the trailing reduction.
      if (n.inputs.size() != 1 || n.outputs.size() != 1) return std::nullopt;
      std::optional<int> axis = normalized_axis(n.attr_int("axis", -1), x.rank());
      if (!axis) return std::nullopt;
      for (int d = *axis + 1; d < x.rank(); ++d)
        if (!is_one(x.shape[static_cast<size_t>(d)])) return std::nullopt;
      return RowSplit{x.shape, *axis, false, true};
    }
    case OpKind::LayerNormalization: {
      if (n.inputs.size() < 2 || n.inputs.size() > 3 || !n.has_input(1) || n.outputs.size() > 3) return std::nullopt;
      if (!unused_output(n, 1, uses) || !unused_output(n, 2, uses)) return std::nullopt;  // Mean, InvStdDev
      for (size_t i = 1; i < n.inputs.size(); ++i)
        if (n.has_input(i) && g.value(n.inputs[i]).type.dtype != x.dtype) return std::nullopt;
      std::optional<int> axis = normalized_axis(n.attr_int("axis", -1), x.rank());
      if (!axis) return std::nullopt;
      return RowSplit{x.shape, *axis, false, true};
    }
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
      if (n.inputs.size() > 2 || n.outputs.size() != 1) return std::nullopt;
      return reduce_split(g, n);
    default: return std::nullopt;
  }
}

bool is_row_gather_op(const Node& n) { return n.op == OpKind::Gather || n.op == OpKind::GatherElements; }

bool row_gather_fits(const Graph& g, const Node& n, const RowSplit& split) {
  if (!is_row_gather_op(n) || n.inputs.size() != 2 || n.outputs.size() != 1 || !n.has_input(0) || !n.has_input(1))
    return false;
  if (split.is_reduce || split.domain.size() != static_cast<size_t>(split.p) + 1) return false;
  const int rank = static_cast<int>(split.domain.size());
  const TensorType& data = g.value(n.inputs[0]).type;
  const Value& idx = g.value(n.inputs[1]);
  const TensorType& out = g.value(n.outputs[0]).type;
  if (n.inputs[1] == n.inputs[0] || !(data.shape == split.domain) || !is_float(data.dtype) || out.dtype != data.dtype)
    return false;
  if (idx.type.dtype != DType::i32 && idx.type.dtype != DType::i64) return false;
  std::optional<int> axis = normalized_axis(n.attr_int("axis", 0), rank);
  if (!axis || *axis != rank - 1) return false;
  const Shape& is = idx.type.shape;
  if (n.op == OpKind::GatherElements) {
    if (is.size() != static_cast<size_t>(rank) || !is_one(is.back())) return false;
    for (int d = 0; d < split.p; ++d)
      if (!(is[static_cast<size_t>(d)] == split.domain[static_cast<size_t>(d)])) return false;
  } else if (!(is.empty() || (is.size() == 1 && is_one(is[0])))) {
    return false;
  }
  const Dim& width = split.domain.back();
  if (idx.constant && width.is_static()) {  // out-of-range constants stay eager: it reports them
    for (int64_t v : idx.constant->to_int64_vector())
      if (v < -width.value || v >= width.value) return false;
  }
  return true;
}

ScalarExpr row_node_expr(const Node& n, const std::vector<std::optional<ScalarExpr>>& in, const AddReduction& reduce) {
  const ScalarExpr& x = *in.at(0);
  const DType t = x.dtype();
  switch (n.op) {
    case OpKind::Softmax:
    case OpKind::LogSoftmax: {
      // e = exp(x - max), softmax = e * (1 / sum(e)) (the eager kernel's scaling: one division per
      // row), logsoftmax = (x - max) - log(sum(e)); a row of all -inf, holding +inf or NaN gives NaN
      // across the row, as in the eager kernel.
      ScalarExpr m = reduce(RowReduceKind::Max, x);
      ScalarExpr d = loops::sub(x, m);
      ScalarExpr e = loops::unary(loops::UnaryOp::Exp, d);
      ScalarExpr s = reduce(RowReduceKind::Sum, e);
      if (n.op == OpKind::Softmax) return loops::mul(e, loops::unary(loops::UnaryOp::Reciprocal, s));
      return loops::sub(d, loops::unary(loops::UnaryOp::Log, s));
    }
    case OpKind::LayerNormalization: {
      // Y = (x - mean) * (1 / sqrt(var + eps)) * scale + B, var the mean of squared deviations; an
      // f32 node with stash_type = double computes in f64 (as the eager kernel does), a half one in f32.
      const DType ct = is_half(t) ? DType::f32 : t == DType::f32 && n.attr_int("stash_type", 1) == kStashDouble ? DType::f64 : t;
      ScalarExpr xc = loops::cast(ct, x);
      ScalarExpr count = loops::row_length(ct);
      ScalarExpr mean = loops::div(reduce(RowReduceKind::Sum, xc), count);
      ScalarExpr d = loops::sub(xc, mean);
      ScalarExpr var = loops::div(reduce(RowReduceKind::Sum, loops::mul(d, d)), count);
      ScalarExpr eps = loops::constant(n.attr_float("epsilon", 1e-5), ct);
      ScalarExpr inv = loops::unary(loops::UnaryOp::Reciprocal, loops::unary(loops::UnaryOp::Sqrt, loops::add(var, eps)));
      ScalarExpr y = loops::mul(loops::mul(d, inv), loops::cast(ct, *in.at(1)));
      if (in.size() > 2 && in[2]) y = loops::add(y, loops::cast(ct, *in[2]));
      return loops::cast(t, y);
    }
    case OpKind::ReduceSum: return reduce(RowReduceKind::Sum, x);
    case OpKind::ReduceMean: return loops::div(reduce(RowReduceKind::Sum, x), loops::row_length(t));
    case OpKind::ReduceMax: return reduce(RowReduceKind::Max, x);
    case OpKind::ReduceMin: return reduce(RowReduceKind::Min, x);
    default: internal_error("row_node_expr: {} is not a row reduction", op_name(n.op));
  }
}

}  // namespace kiln::schedule
