#include "schedule/fuse_rows.h"

#include <algorithm>
#include <map>
#include <optional>

#include "loops/index_layout.h"
#include "schedule/pointwise_nodes.h"
#include "schedule/row_nodes.h"
#include "schedule/softmax_route.h"
#include "support/error.h"

namespace kiln::schedule {
namespace {

using loops::ScalarExpr;

constexpr size_t kMaxGroupNodes = 64;
constexpr int kMaxMisses = 8;  // consumers taken in a row without reaching a valid group

bool is_one(const Dim& d) { return d.is_static() && d.value == 1; }

// `s` broadcasts into the domain reading each dim at the domain's index or at 0 (a static 1).
bool fits(const Shape& s, const Shape& domain) {
  if (s.size() > domain.size()) return false;
  size_t off = domain.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (!(s[i] == domain[off + i]) && !is_one(s[i])) return false;
  return true;
}

Shape without_ones(const Shape& s) {
  Shape out;
  for (const Dim& d : s)
    if (!is_one(d)) out.push_back(d);
  return out;
}

class Finder {
 public:
  Finder(const Graph& g, const std::vector<char>& claimed) : g_(g), claimed_(claimed), uses_(g.use_counts()) {
    consumers_.resize(g.values.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ValueId v : g.nodes[i].inputs)
        if (v != kNoValue) consumers_[size_t(v)].push_back(static_cast<NodeId>(i));
    graph_output_.assign(g.values.size(), 0);
    for (ValueId v : g.outputs) graph_output_[size_t(v)] = 1;
    taken_.assign(g.nodes.size(), 0);
  }

  std::vector<RowGroup> run() {
    std::vector<RowGroup> groups;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!free_node(NodeId(i))) continue;
      std::optional<RowSplit> split = split_of(g_.nodes[i]);
      if (!split || !params_fit(g_.nodes[i], *split)) continue;
      std::optional<RowGroup> group = grow(NodeId(i), *split, groups.size());
      if (!group) continue;
      for (NodeId n : group->nodes) taken_[size_t(n)] = 1;
      groups.push_back(std::move(*group));
    }
    return groups;
  }

 private:
  bool free_node(NodeId n) const {
    return !taken_[size_t(n)] && !(size_t(n) < claimed_.size() && claimed_[size_t(n)] != 0);
  }
  std::optional<RowSplit> split_of(const Node& n) const { return row_split(g_, n, uses_); }
  const Shape& shape(ValueId v) const { return g_.value(v).type.shape; }

  // LayerNorm's scale and bias are read at the domain's indices: each dim must be the domain's or a
  // static 1 (two different symbols could differ at run time).
  bool params_fit(const Node& n, const RowSplit& split) const {
    if (split.is_reduce) return true;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.has_input(i) && !fits(shape(n.inputs[i]), split.domain)) return false;
    return true;
  }

  // A pointwise node that can join a group over `domain`.
  bool pointwise_fits(const Node& n, const Shape& domain) const {
    if (!pointwise_node_supported(g_, n) || !fits(shape(n.outputs[0]), domain)) return false;
    return std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) { return fits(shape(v), domain); });
  }

  // Only the last node's value leaves the group, and it has the shape of the kernel's output.
  bool valid(const std::vector<char>& in, NodeId last, const RowSplit& split) const {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i] || NodeId(i) == last) continue;
      for (ValueId v : g_.nodes[i].outputs) {
        if (v == kNoValue) continue;
        if (graph_output_[size_t(v)]) return false;
        for (NodeId c : consumers_[size_t(v)])
          if (!in[size_t(c)]) return false;
      }
    }
    const Node& n = g_.nodes[size_t(last)];
    const Shape& out = shape(n.outputs[0]);
    if (out == split.domain) return true;
    std::optional<RowSplit> s = split_of(n);
    bool flat_rows = s && s->is_reduce && !s->keepdims;  // [rows...] without the reduced dims
    if (!flat_rows && !row_level(out, split)) return false;
    return without_ones(out) == without_ones(Shape(split.domain.begin(), split.domain.begin() + split.p));
  }

  // A value of this shape is the same for every element of a row.
  static bool row_level(const Shape& s, const RowSplit& split) {
    if (!fits(s, split.domain)) return false;
    size_t off = split.domain.size() - s.size();
    for (size_t i = 0; i < s.size(); ++i)
      if (off + i >= size_t(split.p) && !is_one(s[i])) return false;
    return true;
  }

  // The earliest free node reading a value of the group that may join it (nullopt: none).
  std::optional<NodeId> next_consumer(const std::vector<char>& in, const std::vector<NodeId>& members,
                                      const RowSplit& split) const {
    std::optional<NodeId> best;
    for (NodeId m : members) {
      std::optional<RowSplit> ms = split_of(g_.nodes[size_t(m)]);
      if (ms && ms->is_reduce && !ms->keepdims) continue;  // its value does not broadcast against the domain
      for (ValueId v : g_.nodes[size_t(m)].outputs) {
        if (v == kNoValue) continue;
        for (NodeId c : consumers_[size_t(v)]) {
          if (in[size_t(c)] || !free_node(c) || (best && *best <= c)) continue;
          const Node& n = g_.nodes[size_t(c)];
          std::optional<RowSplit> cs = split_of(n);
          bool joins = cs ? cs->is_reduce && cs->domain == split.domain && cs->p == split.p
                          : pointwise_fits(n, split.domain);
          if (joins) best = c;
        }
      }
    }
    return best;
  }

  std::optional<RowGroup> grow(NodeId anchor, const RowSplit& split, size_t index) {
    std::vector<char> in(g_.nodes.size(), 0);
    std::vector<NodeId> members{anchor};
    in[size_t(anchor)] = 1;
    std::vector<NodeId> best = members;
    // Downstream: take consumers, remember the largest valid group.
    for (int misses = 0; misses < kMaxMisses && members.size() < kMaxGroupNodes;) {
      std::optional<NodeId> c = next_consumer(in, members, split);
      if (!c) break;
      in[size_t(*c)] = 1;
      members.push_back(*c);
      if (valid(in, *c, split)) {
        best = members;
        misses = 0;
      } else {
        ++misses;
      }
    }
    std::fill(in.begin(), in.end(), 0);
    for (NodeId n : best) in[size_t(n)] = 1;
    NodeId last = *std::max_element(best.begin(), best.end());
    if (!valid(in, last, split)) return std::nullopt;
    // Upstream: pointwise producers whose value is used only inside the group.
    for (bool changed = true; changed && best.size() < kMaxGroupNodes;) {
      changed = false;
      for (size_t k = 0; k < best.size() && best.size() < kMaxGroupNodes; ++k) {
        for (ValueId v : g_.nodes[size_t(best[k])].inputs) {
          if (v == kNoValue || graph_output_[size_t(v)]) continue;
          NodeId p = g_.value(v).producer;
          if (p < 0 || in[size_t(p)] || !free_node(p) || g_.value(v).constant) continue;
          const Node& n = g_.nodes[size_t(p)];
          if (!pointwise_fits(n, split.domain)) continue;
          const auto& cs = consumers_[size_t(v)];
          if (!std::all_of(cs.begin(), cs.end(), [&](NodeId c) { return in[size_t(c)] != 0; })) continue;
          in[size_t(p)] = 1;
          best.push_back(p);
          changed = true;
        }
      }
    }
    // Last, a gather of one column per row of the group's value (LogSoftmax + GatherElements): the
    // kernel reads only that column after the reductions. After the upstream pass, so that the
    // indices' producers stay outside (their value must be row-level).
    if (std::optional<NodeId> gather = row_gather(last, split)) best.push_back(*gather);
    std::sort(best.begin(), best.end());
    return build(best, split, index);
  }

  // The one consumer of `last`'s value when it is a gather that can end the group.
  std::optional<NodeId> row_gather(NodeId last, const RowSplit& split) const {
    ValueId v = g_.nodes[size_t(last)].outputs[0];
    if (v == kNoValue || graph_output_[size_t(v)] || uses_[size_t(v)] != 1 || consumers_[size_t(v)].size() != 1)
      return std::nullopt;
    NodeId c = consumers_[size_t(v)][0];
    if (!free_node(c) || !row_gather_fits(g_, g_.nodes[size_t(c)], split)) return std::nullopt;
    return c;
  }

  std::optional<RowGroup> build(const std::vector<NodeId>& nodes, const RowSplit& split, size_t index) const;

  const Graph& g_;
  const std::vector<char>& claimed_;
  std::vector<int> uses_;
  std::vector<std::vector<NodeId>> consumers_;
  std::vector<char> graph_output_;
  std::vector<char> taken_;
};

// The scalar expressions of a group's values over the domain's loop variables.
class RowBuilder {
 public:
  RowBuilder(const Graph& g, RowGroup& group) : g_(g), group_(group) {
    for (NodeId id : group.nodes) inside_[g.nodes[size_t(id)].outputs[0]] = id;
  }

  // nullopt when an input has a dtype the kernel cannot read.
  std::optional<ScalarExpr> value(ValueId v) {
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    std::optional<ScalarExpr> e = inside_.count(v) ? compute(g_.nodes[size_t(inside_.at(v))]) : read(v);
    if (e) memo_.emplace(v, *e);
    return e;
  }

 private:
  std::optional<ScalarExpr> read(ValueId v) {
    const Value& val = g_.value(v);
    DType t = val.type.dtype;
    if (val.constant && val.constant->numel() == 1 && is_float(t))
      return loops::constant(val.constant->as_double(0), t);
    if (!loops::pointwise_dtype_supported(t)) return std::nullopt;
    int index = static_cast<int>(group_.inputs.size());
    group_.inputs.push_back(v);
    group_.kernel.inputs.push_back({t, loops::sizes_of(val.type.shape)});
    return loops::load_broadcast(group_.kernel, index);
  }

  std::optional<ScalarExpr> compute(const Node& n) {
    if (is_row_gather_op(n)) return gather(n);
    const bool pointwise = pointwise_node_supported(g_, n);
    // A Reduce* node's axes (input 1) are no data: the kernel's split already has them.
    const bool reduce = n.op == OpKind::ReduceSum || n.op == OpKind::ReduceMean || n.op == OpKind::ReduceMax ||
                        n.op == OpKind::ReduceMin;
    std::vector<std::optional<ScalarExpr>> in;
    for (size_t i = 0; i < (reduce ? 1 : n.inputs.size()); ++i) {
      ValueId v = n.inputs[i];
      in.push_back(v == kNoValue ? std::nullopt : value(v));
      if (v != kNoValue && !in.back()) return std::nullopt;
    }
    if (pointwise) {
      std::vector<ScalarExpr> ops;
      for (auto& e : in) ops.push_back(*e);
      return pointwise_node_expr(n, ops);
    }
    loops::RowKernel& k = group_.kernel;
    return row_node_expr(n, in, [&k](loops::RowReduceKind kind, const ScalarExpr& body) {
      k.reductions.push_back({kind, body});
      return loops::row_result(static_cast<int>(k.reductions.size() - 1), body.dtype());
    });
  }

  // The data's element-level value, read by the kernel at the row's index (row_gather_fits checked
  // that the index is row-level: one per row).
  std::optional<ScalarExpr> gather(const Node& n) {
    std::optional<ScalarExpr> data = value(n.inputs[0]);
    if (!data) return std::nullopt;
    // The indices as an input read over the row variables alone (GatherElements: one per row;
    // Gather: the one index), never through the column: validate wants the column row-level.
    const Value& iv = g_.value(n.inputs[1]);
    loops::RowKernel& k = group_.kernel;
    int input = static_cast<int>(group_.inputs.size());
    group_.inputs.push_back(n.inputs[1]);
    k.inputs.push_back({iv.type.dtype, loops::sizes_of(iv.type.shape)});
    loops::Expr at(0);
    if (n.op == OpKind::GatherElements) {
      std::vector<loops::Expr> vars = loops::index_vars(k);
      vars.resize(static_cast<size_t>(k.row_rank));
      at = loops::linear_index(vars, loops::row_major_strides(loops::row_sizes(k)));
    }
    k.gather_column = loops::load(input, at, iv.type.dtype);
    return data;
  }

  const Graph& g_;
  RowGroup& group_;
  std::map<ValueId, NodeId> inside_;
  std::map<ValueId, ScalarExpr> memo_;
};

std::optional<RowGroup> Finder::build(const std::vector<NodeId>& nodes, const RowSplit& split, size_t index) const {
  RowGroup group;
  group.nodes = nodes;
  group.output = g_.nodes[size_t(nodes.back())].outputs[0];
  loops::RowKernel& k = group.kernel;
  k.name = "rows_" + std::to_string(index);
  k.domain = loops::sizes_of(split.domain);
  k.row_rank = split.p;
  const TensorType& out = g_.value(group.output).type;
  k.output_kind = out.shape == split.domain ? loops::RowOutput::elements : loops::RowOutput::rows;
  k.output = {out.dtype, loops::sizes_of(out.shape)};
  RowBuilder builder(g_, group);
  std::optional<ScalarExpr> body = builder.value(group.output);
  if (!body || k.reductions.empty()) return std::nullopt;
  if (!find_symbol_sources(g_, group.inputs, loops::kernel_symbols(k), group.symbols)) return std::nullopt;
  k.output_body = *body;
  if (k.gather_column) k.output_kind = loops::RowOutput::rows;  // also when the width is 1
  loops::validate(k);
  return group;
}

}  // namespace

std::vector<RowGroup> find_row_groups(const Graph& g, const std::vector<char>& claimed) {
  return Finder(g, claimed).run();
}

std::vector<RowGroup> find_row_groups(const Graph& g, const std::vector<char>& claimed, const FusionTarget& target) {
  std::vector<char> held(g.nodes.size(), 0);
  for (size_t i = 0; i < claimed.size() && i < held.size(); ++i) held[i] = claimed[i];
  for (const RoutedNode& r : target.routes)
    if (r.decision.route != SoftmaxRoute::fused) held[size_t(r.site.node)] = 1;
  std::vector<RowGroup> groups = Finder(g, held).run();
  for (RowGroup& group : groups)
    for (NodeId n : group.nodes)
      if (g.nodes[size_t(n)].op == OpKind::Softmax || g.nodes[size_t(n)].op == OpKind::LogSoftmax)
        group.split_min_cols = target.softmax_split_width;
  return groups;
}

}  // namespace kiln::schedule
