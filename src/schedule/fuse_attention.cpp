#include "schedule/fuse_attention.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace kiln::schedule {
namespace {

class Matcher {
 public:
  Matcher(const Graph& g, const std::vector<char>& claimed) : g_(g), claimed_(claimed), uses_(g.use_counts()) {
    is_output_.assign(g.values.size(), 0);
    for (ValueId v : g.outputs) is_output_[size_t(v)] = 1;
    consumers_.resize(g.values.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ValueId v : g.nodes[i].inputs)
        if (v != kNoValue) consumers_[size_t(v)].push_back(static_cast<NodeId>(i));
  }

  std::optional<AttentionGroup> match(NodeId softmax) {
    AttentionGroup a;
    std::vector<NodeId> nodes{softmax};
    const Node& s = node(softmax);
    if (s.op != OpKind::Softmax || s.inputs.size() != 1 || s.outputs.size() != 1) return std::nullopt;
    const TensorType& st = type(s.inputs[0]);
    const int64_t axis = s.attr_int("axis", -1);
    if (st.rank() != 4 || !is_f32_or_half(st.dtype) || (axis != -1 && axis != 3)) return std::nullopt;
    // The scores: MatMul(Q, K^T) (maybe scaled after the product), or that plus the mask.
    NodeId qk = scores_product(s.inputs[0], nodes, a.scale);
    if (qk < 0) {
      const NodeId add = producer_if(s.inputs[0], OpKind::Add);
      if (add < 0) return std::nullopt;
      nodes.push_back(add);
      for (int side : {0, 1}) {
        qk = scores_product(node(add).inputs[size_t(side)], nodes, a.scale);
        if (qk >= 0) {
          a.mask = node(add).inputs[size_t(1 - side)];
          break;
        }
      }
      if (qk < 0 || !mask_fits(a.mask, st)) return std::nullopt;
    }
    nodes.push_back(qk);
    const Node& mm = node(qk);
    if (mm.inputs.size() != 2) return std::nullopt;
    std::vector<NodeId> splits;
    if (!operand(mm.inputs[0], nodes, a.scale, a.q, a.q_perm, a.q_slice, splits)) return std::nullopt;
    if (!operand(mm.inputs[1], nodes, a.scale, a.k, a.k_perm, a.k_slice, splits)) return std::nullopt;
    std::swap(a.k_perm[2], a.k_perm[3]);  // K^T [B,H,D,Sk] read as K [B,H,Sk,D]

    // The probabilities, maybe through the NaN guard, into MatMul(P, V).
    ValueId p = s.outputs[0];
    if (is_output_[size_t(p)]) return std::nullopt;
    NodeId pv = -1;
    if (uses_[size_t(p)] == 1) {
      pv = sole_consumer(p, OpKind::MatMul);
    } else if (uses_[size_t(p)] == 2 && consumers_[size_t(p)].size() == 2) {
      NodeId isnan = -1, where = -1;
      for (NodeId c : consumers_[size_t(p)]) {
        if (node(c).op == OpKind::IsNaN) isnan = c;
        if (node(c).op == OpKind::Where) where = c;
      }
      if (isnan < 0 || where < 0 || sole_consumer(node(isnan).outputs[0], OpKind::Where) != where) return std::nullopt;
      const Node& w = node(where);
      if (w.inputs.size() != 3 || w.inputs[0] != node(isnan).outputs[0] || w.inputs[2] != p || !is_zero(w.inputs[1]) ||
          !(type(w.outputs[0]) == type(p)))
        return std::nullopt;
      nodes.push_back(isnan);
      nodes.push_back(where);
      a.guard = true;
      pv = sole_consumer(w.outputs[0], OpKind::MatMul);
    }
    if (pv < 0 || node(pv).inputs[0] == node(pv).inputs[1] || type(node(pv).inputs[0]).rank() != 4) return std::nullopt;
    if (node(pv).inputs[0] != (a.guard ? node(nodes.back()).outputs[0] : p)) return std::nullopt;
    nodes.push_back(pv);
    double unused_scale = 1.0;
    if (!operand(node(pv).inputs[1], nodes, unused_scale, a.v, a.v_perm, a.v_slice, splits) || unused_scale != 1.0)
      return std::nullopt;
    // A Split joins when the group reads every one of its outputs (through the Reshapes it holds).
    std::sort(splits.begin(), splits.end());
    for (size_t i = 0; i < splits.size(); ++i)
      if (std::count(splits.begin(), splits.end(), splits[i]) == ptrdiff_t(node(splits[i]).outputs.size()) &&
          (i == 0 || splits[i - 1] != splits[i]))
        nodes.push_back(splits[i]);

    // The output, through the Transpose back to [B,S,H,D] when that is its only use.
    a.output = node(pv).outputs[0];
    if (NodeId t = sole_consumer(a.output, OpKind::Transpose); t >= 0 && !claimed_[size_t(t)]) {
      const std::vector<int64_t> perm = node(t).attr_ints("perm");
      if (perm.size() == 4) {
        for (int i = 0; i < 4; ++i) a.out_perm[size_t(perm[size_t(i)])] = i;
        nodes.push_back(t);
        a.output = node(t).outputs[0];
      }
    }
    if (is_output_[size_t(node(pv).outputs[0])] && a.output != node(pv).outputs[0]) return std::nullopt;

    if (!shapes_fit(a)) return std::nullopt;
    for (NodeId n : nodes)
      if (claimed_[size_t(n)]) return std::nullopt;
    std::sort(nodes.begin(), nodes.end());
    a.nodes = std::move(nodes);
    return a;
  }

 private:
  const Node& node(NodeId n) const { return g_.nodes[size_t(n)]; }
  const TensorType& type(ValueId v) const { return g_.value(v).type; }
  bool inner(ValueId v) const { return v != kNoValue && uses_[size_t(v)] == 1 && !is_output_[size_t(v)]; }

  // The node of `op` that makes v, when v is used once and is no graph output.
  NodeId producer_if(ValueId v, OpKind op) const {
    if (!inner(v)) return -1;
    const NodeId p = g_.value(v).producer;
    return p >= 0 && node(p).op == op && node(p).outputs.size() == 1 ? p : -1;
  }
  NodeId sole_consumer(ValueId v, OpKind op) const {
    if (!inner(v) || consumers_[size_t(v)].size() != 1) return -1;
    const NodeId c = consumers_[size_t(v)][0];
    return node(c).op == op ? c : -1;
  }
  std::optional<double> scalar(ValueId v) const {
    const auto& c = g_.value(v).constant;
    if (!c || c->numel() != 1 || !is_f32_or_half(c->dtype())) return std::nullopt;
    const double x = c->as_double(0);
    return std::isfinite(x) ? std::optional<double>(x) : std::nullopt;
  }
  bool is_zero(ValueId v) const {
    std::optional<double> x = scalar(v);
    return x && *x == 0.0;
  }

  // MatMul(Q, K^T), or the product scaled: a Mul by a scalar constant or a Div by a nonzero one (the
  // exporters of `scores / sqrt(d)`), folded into `scale`. -1 when v is neither.
  NodeId scores_product(ValueId v, std::vector<NodeId>& nodes, double& scale) const {
    if (NodeId mm = producer_if(v, OpKind::MatMul); mm >= 0) return mm;
    for (OpKind op : {OpKind::Mul, OpKind::Div}) {
      const NodeId m = producer_if(v, op);
      if (m < 0) continue;
      const Node& n = node(m);
      for (int side : {1, 0}) {
        if (op == OpKind::Div && side == 0) continue;  // c / x is no scale
        const std::optional<double> c = scalar(n.inputs[size_t(side)]);
        const ValueId x = n.inputs[size_t(1 - side)];
        if (!c || (op == OpKind::Div && *c == 0.0) || !(type(x) == type(v))) continue;
        const NodeId mm = producer_if(x, OpKind::MatMul);
        if (mm < 0) continue;
        scale *= op == OpKind::Mul ? *c : 1.0 / *c;
        nodes.push_back(m);
        return mm;
      }
    }
    return -1;
  }

  // A MatMul operand: maybe a Mul by a scalar constant (folded into `scale`), maybe a Transpose of a
  // rank-4 tensor (read through its permutation), maybe a Reshape of a Split's output (read as columns
  // of the Split's input; the Split goes to `splits`, once per output so read), else the value as it is.
  bool operand(ValueId v, std::vector<NodeId>& nodes, double& scale, ValueId& base, std::array<int, 4>& perm,
               ColumnSlice& slice, std::vector<NodeId>& splits) {
    if (type(v).rank() != 4 || !is_f32_or_half(type(v).dtype)) return false;
    if (NodeId m = producer_if(v, OpKind::Mul); m >= 0) {
      const Node& n = node(m);
      for (int side : {0, 1})
        if (std::optional<double> c = scalar(n.inputs[size_t(side)]); c && type(n.inputs[size_t(1 - side)]) == type(v)) {
          scale *= *c;
          nodes.push_back(m);
          v = n.inputs[size_t(1 - side)];
          break;
        }
    }
    perm = {0, 1, 2, 3};
    if (NodeId t = producer_if(v, OpKind::Transpose); t >= 0 && !claimed_[size_t(t)]) {
      const std::vector<int64_t> p = node(t).attr_ints("perm");
      if (p.size() == 4) {
        for (int i = 0; i < 4; ++i) perm[size_t(i)] = static_cast<int>(p[size_t(i)]);
        nodes.push_back(t);
        v = node(t).inputs[0];
      }
    }
    base = v;
    if (type(v).rank() != 4) return false;
    split_columns(base, nodes, slice, splits);
    return true;
  }

  // v [B,S,H,D] = Reshape(x [B,S,H*D]), x one output of a Split along the last axis of a [B,S,N]
  // tensor with static sizes: v becomes that tensor, and `slice` the columns x is.
  void split_columns(ValueId& v, std::vector<NodeId>& nodes, ColumnSlice& slice, std::vector<NodeId>& splits) const {
    const NodeId r = producer_if(v, OpKind::Reshape);
    if (r < 0 || claimed_[size_t(r)]) return;
    const ValueId x = node(r).inputs[0];
    const TensorType &vt = type(v), &xt = type(x);
    if (xt.rank() != 3 || !(xt.shape[0] == vt.shape[0]) || !(xt.shape[1] == vt.shape[1])) return;
    if (!vt.shape[2].is_static() || !vt.shape[3].is_static() || !xt.shape[2].is_static() ||
        xt.shape[2].value != vt.shape[2].value * vt.shape[3].value)
      return;
    if (!inner(x)) return;
    const NodeId sp = g_.value(x).producer;
    if (sp < 0 || claimed_[size_t(sp)] || node(sp).op != OpKind::Split) return;
    const Node& split = node(sp);
    const ValueId in = split.inputs[0];
    const TensorType& it = type(in);
    if (it.rank() != 3 || it.dtype != xt.dtype || (split.attr_int("axis", 0) + 3) % 3 != 2) return;
    if (!(it.shape[0] == xt.shape[0]) || !(it.shape[1] == xt.shape[1])) return;
    int64_t column = 0;
    for (ValueId o : split.outputs) {
      if (o == x) break;
      if (o == kNoValue || !type(o).shape[2].is_static()) return;
      column += type(o).shape[2].value;
    }
    nodes.push_back(r);
    splits.push_back(sp);
    slice = {column, vt.shape[2].value};
    v = in;
  }

  bool mask_fits(ValueId m, const TensorType& scores) const {
    const TensorType& t = type(m);
    if (t.dtype != scores.dtype || t.rank() > 4) return false;
    const size_t off = 4 - size_t(t.rank());
    for (size_t i = 0; i < size_t(t.rank()); ++i)
      if (!(t.shape[i] == scores.shape[off + i]) && !(t.shape[i].is_static() && t.shape[i].value == 1)) return false;
    return true;
  }

  // The [B,S,H,D] (or own) shape of an operand: a slice's tensor [B,S,N] read as [B,S,heads,N/heads].
  std::vector<Dim> operand_shape(ValueId v, const ColumnSlice& slice, int64_t head_dim) const {
    std::vector<Dim> shape = type(v).shape;
    if (slice.column < 0) return shape;
    return {shape[0], shape[1], Dim::fixed(slice.heads), Dim::fixed(head_dim)};
  }

  // The views [B,H,S,D] of Q, K and V agree (B, H, D; Sk between K and V), D static and at most 128.
  bool shapes_fit(AttentionGroup& a) const {
    const DType t = type(a.q).dtype;
    if (type(a.k).dtype != t || type(a.v).dtype != t || type(a.output).dtype != t) return false;
    // A slice's D: its Reshape's last dim, which is the output's D too.
    const Dim out_d = type(a.output).shape[size_t(a.out_perm[3])];
    if (!out_d.is_static()) return false;
    const std::vector<Dim> qs = operand_shape(a.q, a.q_slice, out_d.value), ks = operand_shape(a.k, a.k_slice, out_d.value),
                           vs = operand_shape(a.v, a.v_slice, out_d.value);
    auto dim = [](const std::vector<Dim>& shape, const std::array<int, 4>& perm, int i) { return shape[size_t(perm[size_t(i)])]; };
    for (int i : {0, 1})
      if (!(dim(qs, a.q_perm, i) == dim(ks, a.k_perm, i)) || !(dim(qs, a.q_perm, i) == dim(vs, a.v_perm, i)))
        return false;
    const Dim d = dim(qs, a.q_perm, 3);
    if (!d.is_static() || d.value < 1 || d.value > 128 || !(d == out_d)) return false;
    if (!(dim(ks, a.k_perm, 3) == d) || !(dim(vs, a.v_perm, 3) == d)) return false;
    if (!(dim(ks, a.k_perm, 2) == dim(vs, a.v_perm, 2))) return false;
    a.head_dim = d.value;
    return true;
  }

  const Graph& g_;
  const std::vector<char>& claimed_;
  std::vector<int> uses_;
  std::vector<char> is_output_;
  std::vector<std::vector<NodeId>> consumers_;
};

}  // namespace

std::vector<AttentionGroup> find_attention_groups(const Graph& g, const std::vector<char>& claimed) {
  std::vector<char> taken = claimed;
  taken.resize(g.nodes.size(), 0);
  std::vector<AttentionGroup> groups;
  Matcher m(g, taken);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (taken[i] || g.nodes[i].op != OpKind::Softmax) continue;
    std::optional<AttentionGroup> a = m.match(static_cast<NodeId>(i));
    if (!a) continue;
    for (NodeId n : a->nodes) taken[size_t(n)] = 1;
    groups.push_back(std::move(*a));
  }
  return groups;
}

}  // namespace kiln::schedule
