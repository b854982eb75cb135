#include "schedule/fuse_pointwise.h"

#include <algorithm>
#include <map>
#include <optional>

#include "loops/index_layout.h"
#include "schedule/pointwise_nodes.h"
#include "support/error.h"

namespace kiln::schedule {
namespace {

using loops::ScalarExpr;


// The permutation of a Transpose (ONNX default: reversed dims).
std::vector<int64_t> perm_of(const Node& n, size_t rank) {
  std::vector<int64_t> perm = n.attr_ints("perm", {});
  if (perm.empty())
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  return perm;
}

// Whether `n` can live in a generated pointwise kernel: a supported elementwise node whose operands
// broadcast to its output exactly as the emitter reads them (each input dim is the output's or a
// constant 1), or a Transpose (read through its permutation).
bool fusible(const Graph& g, const Node& n) {
  if (n.op == OpKind::Transpose)
    return n.outputs.size() == 1 && n.outputs[0] != kNoValue && n.inputs.size() == 1 &&
           loops::pointwise_dtype_supported(g.value(n.outputs[0]).type.dtype);
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

// Whether `consumer` reads `producer`'s output once per element of it (a Transpose, or an
// elementwise node of the same shape): joining then costs no recomputation.
bool reads_without_expansion(const Graph& g, const Node& producer, const Node& consumer) {
  if (consumer.op == OpKind::Transpose) return true;
  return g.value(consumer.outputs[0]).type.shape == g.value(producer.outputs[0]).type.shape;
}

// Builds the scalar expression of a group: every value is evaluated at an index (one Expr per
// dimension of that value, over the kernel's loop variables), so broadcasts and transposes are
// reads at another index, never materialised.
class KernelBuilder {
 public:
  KernelBuilder(const Graph& g, PointwiseGroup& group) : g_(g), group_(group) {
    for (NodeId id : group.nodes) inside_[g.nodes[size_t(id)].outputs[0]] = id;
    const TensorType& out = g.value(group.output).type;
    group.kernel.output.dtype = out.dtype;
    for (const Dim& d : out.shape) group.kernel.output.sizes.push_back(loops::from_dim(d));
  }

  ScalarExpr build() { return value(group_.output, loops::index_vars(group_.kernel)); }

 private:
  using Index = std::vector<loops::Expr>;

  ScalarExpr value(ValueId v, const Index& idx) {
    auto key = std::make_pair(v, idx);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    ScalarExpr e = inside_.count(v) ? compute(g_.nodes[size_t(inside_.at(v))], idx) : read(v, idx);
    memo_.emplace(std::move(key), e);
    return e;
  }

  // A value from outside the group: an inlined scalar constant, or a load of a kernel input.
  ScalarExpr read(ValueId v, const Index& idx) {
    const Value& val = g_.value(v);
    if (val.constant && val.constant->numel() == 1 && is_float(val.constant->dtype()))
      return loops::constant(val.constant->as_double(0), val.constant->dtype());
    auto [it, added] = slot_.emplace(v, static_cast<int>(group_.inputs.size()));
    if (added) {
      group_.inputs.push_back(v);
      loops::TensorDesc desc{val.type.dtype, {}};
      for (const Dim& d : val.type.shape) desc.sizes.push_back(loops::from_dim(d));
      group_.kernel.inputs.push_back(desc);
    }
    const loops::TensorDesc& desc = group_.kernel.inputs[size_t(it->second)];
    return loops::load(it->second, loops::linear_index(idx, loops::row_major_strides(desc.sizes)), desc.dtype);
  }

  ScalarExpr compute(const Node& n, const Index& idx) {
    if (n.op == OpKind::Transpose) {
      std::vector<int64_t> perm = perm_of(n, idx.size());
      Index in(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) in[size_t(perm[i])] = idx[i];
      return value(n.inputs[0], in);
    }
    std::vector<ScalarExpr> operands;
    for (ValueId v : n.inputs) operands.push_back(value(v, broadcast(g_.value(v).type.shape, idx)));
    return pointwise_node_expr(n, operands);
  }

  // The index at which an operand of `shape` is read for the output index `idx` (numpy broadcast:
  // right-aligned, a size-1 dimension read at 0).
  static Index broadcast(const Shape& shape, const Index& idx) {
    Index r;
    size_t off = idx.size() - shape.size();
    for (size_t i = 0; i < shape.size(); ++i)
      r.push_back(shape[i].is_static() && shape[i].value == 1 ? loops::Expr(0) : idx[off + i]);
    return r;
  }

  const Graph& g_;
  PointwiseGroup& group_;
  std::map<ValueId, NodeId> inside_;
  std::map<ValueId, int> slot_;
  std::map<std::pair<ValueId, Index>, ScalarExpr> memo_;
};

}  // namespace

bool find_symbol_sources(const Graph& g, const std::vector<ValueId>& inputs, const std::vector<loops::Expr>& symbols,
                         std::vector<SymbolSource>& sources) {
  for (const loops::Expr& s : symbols) {
    bool found = false;
    for (size_t i = 0; i < inputs.size() && !found; ++i) {
      const Shape& shape = g.value(inputs[i]).type.shape;
      for (size_t d = 0; d < shape.size() && !found; ++d)
        if (!shape[d].is_static() && shape[d].symbol == s.name()) {
          sources.push_back({static_cast<int>(i), static_cast<int>(d)});
          found = true;
        }
    }
    if (!found) return false;
  }
  return true;
}

std::vector<PointwiseGroup> find_pointwise_groups(const Graph& g, const std::vector<char>& claimed, size_t min_nodes) {
  std::vector<std::vector<NodeId>> consumers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs)
      if (v != kNoValue) consumers[size_t(v)].push_back(static_cast<NodeId>(i));
  std::vector<char> graph_output(g.values.size(), 0);
  for (ValueId o : g.outputs) graph_output[size_t(o)] = 1;

  // Walk consumers before producers: a fusible node joins its consumers' group when every use of
  // its output is in that one group and reads it without expansion (no recomputation).
  std::vector<int> group_of(g.nodes.size(), -1);
  int groups = 0;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if ((i < claimed.size() && claimed[i]) || !fusible(g, n)) continue;
    ValueId out = n.outputs[0];
    const auto& users = consumers[size_t(out)];
    int joined = users.empty() || graph_output[size_t(out)] ? -1 : group_of[size_t(users[0])];
    for (NodeId c : users)
      if (group_of[size_t(c)] != joined || !reads_without_expansion(g, n, g.nodes[size_t(c)])) joined = -1;
    group_of[i] = joined >= 0 ? joined : groups++;
  }

  std::vector<PointwiseGroup> result(static_cast<size_t>(groups));
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (group_of[i] >= 0) result[size_t(group_of[i])].nodes.push_back(static_cast<NodeId>(i));
  std::vector<PointwiseGroup> kept;
  for (auto& group : result) {
    if (group.nodes.empty() || group.nodes.size() < min_nodes) continue;
    group.output = g.nodes[size_t(group.nodes.back())].outputs[0];
    group.kernel.name = "fused_" + std::to_string(kept.size());
    KernelBuilder builder(g, group);
    group.kernel.body = builder.build();
    if (!find_symbol_sources(g, group.inputs, loops::kernel_symbols(group.kernel), group.symbols)) continue;
    loops::validate(group.kernel);
    kept.push_back(std::move(group));
  }
  std::sort(kept.begin(), kept.end(), [](const PointwiseGroup& a, const PointwiseGroup& b) {
    return a.nodes.back() < b.nodes.back();
  });
  return kept;
}

}  // namespace kiln::schedule
