#include "schedule/fuse_pointwise.h"

#include <map>
#include <optional>

#include "schedule/pointwise_nodes.h"
#include "support/error.h"

namespace kiln::schedule {
namespace {

using loops::ScalarExpr;

bool float_type(DType t) { return t == DType::f32 || t == DType::f64; }

// Whether `n` can live in a generated pointwise kernel: a supported node whose operands broadcast to
// its output exactly as the emitter reads them (each input dim is the output's or a constant 1).
bool fusible(const Graph& g, const Node& n) {
  if (!pointwise_node_supported(g, n)) return false;
  const TensorType& out = g.value(n.outputs[0]).type;
  for (ValueId v : n.inputs) {
    const TensorType& t = g.value(v).type;
    size_t off = out.shape.size() - t.shape.size();
    for (size_t i = 0; i < t.shape.size(); ++i) {
      const Dim& d = t.shape[i];
      if (!(d == out.shape[off + i]) && !(d.is_static() && d.value == 1)) return false;
    }
  }
  return true;
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
    return pointwise_node_expr(n, in);
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
