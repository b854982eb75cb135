#include "schedule/fuse_pointwise.h"

#include <map>
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

bool float_type(DType t) { return t == DType::f32 || t == DType::f64; }

// Whether `n` can live in a generated pointwise kernel: a supported op on supported dtypes, whose
// operands broadcast to its output exactly as the emitter reads them.
bool fusible(const Graph& g, const Node& n) {
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
    if (float_only && !float_type(t.dtype) && !(n.op == OpKind::Pow)) return false;
    if (t.rank() > out.rank()) return false;
    // Each input dim must be the output's dim or a constant 1 (read with stride 0).
    size_t off = out.shape.size() - t.shape.size();
    for (size_t i = 0; i < t.shape.size(); ++i) {
      const Dim& d = t.shape[i];
      if (!(d == out.shape[off + i]) && !(d.is_static() && d.value == 1)) return false;
    }
  }
  if (n.op == OpKind::Pow && (!float_type(g.value(n.inputs[0]).type.dtype) ||
                              g.value(n.inputs[0]).type.dtype != g.value(n.inputs[1]).type.dtype))
    return false;
  return true;
}

DType dtype_of_cast(const Node& n) {
  switch (n.attr_int("to", 0)) {
    case 1: return DType::f32;
    case 11: return DType::f64;
    case 7: return DType::i64;
    case 6: return DType::i32;
    case 9: return DType::boolean;
    default: return DType::u8;  // unsupported by the emitter: rejected by fusible via the output dtype
  }
}

class KernelBuilder {
 public:
  KernelBuilder(const Graph& g, PointwiseGroup& group) : g_(g), group_(group) {
    for (NodeId id : group.nodes) inside_[g.nodes[size_t(id)].outputs[0]] = id;
    const TensorType& out = g.value(group.output).type;
    group.kernel.output.dtype = out.dtype;
    for (const Dim& d : out.shape) group.kernel.output.sizes.push_back(loops::from_dim(d));
  }

  ScalarExpr value(ValueId v) {
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    ScalarExpr e = inside_.count(v) ? compute(g_.nodes[size_t(inside_.at(v))]) : read(v);
    memo_.emplace(v, e);
    return e;
  }

 private:
  // A value from outside the group: an inlined scalar constant, or a broadcast load of a kernel input.
  ScalarExpr read(ValueId v) {
    const Value& val = g_.value(v);
    if (val.constant && val.constant->numel() == 1 && float_type(val.constant->dtype()))
      return loops::constant(val.constant->as_double(0), val.constant->dtype());
    int index = static_cast<int>(group_.inputs.size());
    group_.inputs.push_back(v);
    loops::TensorDesc desc{val.type.dtype, {}};
    for (const Dim& d : val.type.shape) desc.sizes.push_back(loops::from_dim(d));
    group_.kernel.inputs.push_back(desc);
    return loops::load_broadcast(group_.kernel, index);
  }

  ScalarExpr compute(const Node& n) {
    std::vector<ScalarExpr> in;
    for (ValueId v : n.inputs) in.push_back(value(v));
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
      default: internal_error("fuse_pointwise: {} is not fusible", op_name(n.op));
    }
  }

  const Graph& g_;
  PointwiseGroup& group_;
  std::map<ValueId, NodeId> inside_;
  std::map<ValueId, ScalarExpr> memo_;
};

// Where each kernel symbol's size comes from at run time; false if some symbol has no source.
bool find_symbol_sources(const Graph& g, PointwiseGroup& group) {
  for (const loops::Expr& s : loops::kernel_symbols(group.kernel)) {
    bool found = false;
    for (size_t i = 0; i < group.inputs.size() && !found; ++i) {
      const Shape& shape = g.value(group.inputs[i]).type.shape;
      for (size_t d = 0; d < shape.size() && !found; ++d)
        if (!shape[d].is_static() && shape[d].symbol == s.name()) {
          group.symbols.push_back({static_cast<int>(i), static_cast<int>(d)});
          found = true;
        }
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace

std::vector<PointwiseGroup> find_pointwise_groups(const Graph& g) {
  std::vector<int> uses = g.use_counts();
  std::vector<NodeId> consumer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs)
      if (v != kNoValue) consumer[size_t(v)] = static_cast<NodeId>(i);

  // Walk consumers before producers: a fusible node joins its single consumer's group when that
  // consumer is fusible too and has the same output shape (no recomputation under broadcast).
  std::vector<int> group_of(g.nodes.size(), -1);
  int groups = 0;
  std::vector<char> ok(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) ok[i] = fusible(g, g.nodes[i]);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!ok[i]) continue;
    ValueId out = g.nodes[i].outputs[0];
    NodeId c = uses[size_t(out)] == 1 ? consumer[size_t(out)] : -1;
    bool graph_output = false;
    for (ValueId o : g.outputs) graph_output = graph_output || o == out;
    if (c >= 0 && !graph_output && ok[size_t(c)] &&
        g.value(g.nodes[size_t(c)].outputs[0]).type.shape == g.value(out).type.shape) {
      group_of[i] = group_of[size_t(c)];
    } else {
      group_of[i] = groups++;
    }
  }

  std::vector<PointwiseGroup> result(static_cast<size_t>(groups));
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (group_of[i] >= 0) result[size_t(group_of[i])].nodes.push_back(static_cast<NodeId>(i));
  std::vector<PointwiseGroup> kept;
  for (auto& group : result) {
    if (group.nodes.size() < 2) continue;
    group.output = g.nodes[size_t(group.nodes.back())].outputs[0];
    group.kernel.name = "fused_" + std::to_string(kept.size());
    KernelBuilder builder(g, group);
    group.kernel.body = builder.value(group.output);
    if (!find_symbol_sources(g, group)) continue;
    loops::validate(group.kernel);
    kept.push_back(std::move(group));
  }
  return kept;
}

}  // namespace kiln::schedule
