// Pattern matching for library calls with fused consumers (see fuse_library.h).
#include "schedule/fuse_library.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numbers>
#include <optional>

#include "schedule/gemm_tail.h"
#include "schedule/softmax_route.h"
#include "support/error.h"

namespace kiln::schedule {

const char* activation_name(LibraryActivation a) {
  static const char* names[] = {"none", "relu", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu", "hard_swish"};
  return names[static_cast<int>(a)];
}

namespace {

// Nodes that compute an activation of `in`, in topological order, and the value they make.
struct ActivationMatch {
  LibraryActivation act = LibraryActivation::none;
  std::vector<NodeId> nodes;
  ValueId out = kNoValue;
};

bool conv_attrs_ok(const Node& n, size_t spatial, const std::vector<int64_t>& w);

class Matcher {
 public:
  // tuned: whether the backend will tune a group (FusionTarget::tunes_gemm), so that kiln's own GEMM code may run
  // it: then a product of two computed operands with no fused consumer still makes a group, and
  // pointwise consumers past the library's post-ops join as the group's tail (gemm_tail.h).
  // folds_norm: whether the backend folds a LayerNormalization into a MatMul group (FusionTarget::folds_layer_norm).
  Matcher(const Graph& g, const std::vector<char>& claimed, std::function<bool(const LibraryGroup&)> tuned = nullptr,
          std::function<bool(const LibraryGroup&)> folds_norm = nullptr)
      : g_(g), uses_(g.use_counts()), tuned_(std::move(tuned)), folds_norm_(std::move(folds_norm)) {
    taken_.assign(g.nodes.size(), 0);
    for (size_t i = 0; i < g.nodes.size() && i < claimed.size(); ++i) taken_[i] = claimed[i] != 0;
    consumers_.resize(g.values.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ValueId v : g.nodes[i].inputs)
        if (v != kNoValue) consumers_[size_t(v)].push_back(static_cast<NodeId>(i));
    is_output_.assign(g.values.size(), 0);
    for (ValueId v : g.outputs) is_output_[size_t(v)] = 1;
  }

  std::vector<LibraryGroup> run() {
    std::vector<LibraryGroup> groups;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (taken_[i]) continue;
      std::optional<LibraryGroup> grp = match_from(static_cast<NodeId>(i));
      if (!grp) continue;
      for (NodeId n : grp->nodes) taken_[size_t(n)] = 1;
      groups.push_back(std::move(*grp));
    }
    // The group runs at its last node: order by it.
    std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.nodes.back() < b.nodes.back(); });
    return groups;
  }

 private:
  const Node& node(NodeId n) const { return g_.nodes[size_t(n)]; }
  const Value& value(ValueId v) const { return g_.value(v); }
  bool is_const(ValueId v) const { return v != kNoValue && value(v).constant != nullptr; }
  // f32, or a half type (only a backend computing in them sees those: backend::Fusions::half_floats).
  bool is_f32_or_half(ValueId v) const {
    return v != kNoValue && kiln::is_f32_or_half(value(v).type.dtype);
  }
  // Same dtype (f32 or half) and the same dims, symbols included.
  bool same_type(ValueId a, ValueId b) const {
    return is_f32_or_half(a) && is_f32_or_half(b) && value(a).type == value(b).type;
  }
  // The single output of a node (no other outputs present).
  ValueId sole_output(const Node& n) const {
    if (n.outputs.empty() || n.outputs[0] == kNoValue) return kNoValue;
    for (size_t i = 1; i < n.outputs.size(); ++i)
      if (n.outputs[i] != kNoValue && uses_[size_t(n.outputs[i])] != 0) return kNoValue;
    return n.outputs[0];
  }
  // The one free node that reads v, when v has exactly one use and is not a graph output.
  NodeId sole_consumer(ValueId v) const {
    if (v == kNoValue || is_output_[size_t(v)] || uses_[size_t(v)] != 1 || consumers_[size_t(v)].size() != 1) return -1;
    NodeId n = consumers_[size_t(v)][0];
    return taken_[size_t(n)] ? -1 : n;
  }
  // The other operand of a binary node that reads v once; kNoValue otherwise.
  ValueId other_operand(const Node& n, ValueId v) const {
    if (n.inputs.size() != 2) return kNoValue;
    if (n.inputs[0] == v && n.inputs[1] != v) return n.inputs[1];
    if (n.inputs[1] == v && n.inputs[0] != v) return n.inputs[0];
    return kNoValue;
  }
  // A constant scalar (one element, rank <= `max_rank`, so it broadcasts without reshaping) close to
  // `want`, or to `want` rounded to its half type (a GELU's 1/sqrt(2) in a model narrowed to bf16).
  bool is_scalar(ValueId v, double want, int max_rank) const {
    if (!is_const(v) || !is_f32_or_half(v)) return false;
    const Tensor& t = *value(v).constant;
    if (t.numel() != 1 || t.rank() > max_rank) return false;
    if (t.dtype() != DType::f32) want = Tensor::scalar<double>(t.dtype(), want).as_double(0);
    return std::fabs(t.as_double(0) - want) <= 1e-6 * std::fabs(want);
  }
  // Node `n` is `op` over v and a scalar near `want`, makes a value of v's type; returns that value.
  ValueId binary_with_scalar(NodeId n, OpKind op, ValueId v, double want, bool scalar_second_only = false) const {
    if (n < 0 || node(n).op != op) return kNoValue;
    const Node& nd = node(n);
    ValueId c = other_operand(nd, v);
    if (c == kNoValue || (scalar_second_only && nd.inputs[1] != c)) return kNoValue;
    if (!is_scalar(c, want, value(v).type.rank())) return kNoValue;
    ValueId out = sole_output(nd);
    return same_type(out, v) ? out : kNoValue;
  }
  // Mul(v, c), Mul(c, v) or Div(v, c) by a finite f32 scalar constant (Div: non-zero), the sole use of
  // v, making a value of v's type: that value, and the factor (1 / c for Div).
  std::optional<std::pair<ValueId, float>> scaled(ValueId v) const {
    NodeId n = sole_consumer(v);
    if (n < 0 || (node(n).op != OpKind::Mul && node(n).op != OpKind::Div)) return std::nullopt;
    const Node& nd = node(n);
    ValueId c = other_operand(nd, v);
    if (c == kNoValue || !is_const(c) || !is_f32_or_half(c) || (nd.op == OpKind::Div && nd.inputs[1] != c)) return std::nullopt;
    const Tensor& t = *value(c).constant;
    if (t.numel() != 1 || t.rank() > value(v).type.rank()) return std::nullopt;
    const float f = static_cast<float>(t.as_double(0));
    if (!std::isfinite(f) || (nd.op == OpKind::Div && f == 0.f)) return std::nullopt;
    ValueId out = sole_output(nd);
    if (!same_type(out, v)) return std::nullopt;
    return std::pair{out, nd.op == OpKind::Div ? 1.f / f : f};
  }
  // A free unary node of `op` reading v (sole use), whose output has v's type.
  ValueId unary(NodeId n, OpKind op, ValueId v) const {
    if (n < 0 || node(n).op != op || node(n).inputs.size() != 1 || node(n).inputs[0] != v) return kNoValue;
    ValueId out = sole_output(node(n));
    return same_type(out, v) ? out : kNoValue;
  }

  std::optional<ActivationMatch> match_activation(ValueId x, bool conv) const;
  std::optional<ActivationMatch> match_silu(ValueId x) const;
  std::optional<ActivationMatch> match_hard_swish(ValueId x) const;
  // The two free nodes reading x (its only uses; not a graph output), the one of `op` first; nullopt otherwise.
  std::optional<std::pair<NodeId, NodeId>> two_readers(ValueId x, OpKind op) const;
  std::optional<ActivationMatch> match_gelu_erf(ValueId x) const;
  std::optional<ActivationMatch> match_gelu_tanh(ValueId x) const;
  std::optional<ActivationMatch> match_half_product(ValueId x, NodeId other, ValueId a) const;
  bool match_core(NodeId n, LibraryGroup& grp, int64_t& channels, int& channel_axis, bool& has_bias) const;
  std::optional<LibraryGroup> match_from(NodeId n) const;
  void match_tail(LibraryGroup& grp) const;
  void match_norm(LibraryGroup& grp) const;
  bool bias_ok(ValueId c, ValueId out, int64_t channels, int channel_axis) const;

  const Graph& g_;
  std::vector<int> uses_;
  std::function<bool(const LibraryGroup&)> tuned_;
  std::function<bool(const LibraryGroup&)> folds_norm_;
  std::vector<char> taken_, is_output_;
  std::vector<std::vector<NodeId>> consumers_;
};

std::optional<ActivationMatch> Matcher::match_activation(ValueId x, bool conv) const {
  NodeId n = sole_consumer(x);
  if (n >= 0) {
    const std::pair<OpKind, LibraryActivation> simple[] = {
        {OpKind::Relu, LibraryActivation::relu}, {OpKind::Tanh, LibraryActivation::tanh},
        {OpKind::Sigmoid, LibraryActivation::sigmoid}};
    for (auto [op, act] : simple) {
      ValueId out = unary(n, op, x);
      if (out != kNoValue) return ActivationMatch{act, {n}, out};
    }
    return std::nullopt;
  }
  if (auto m = match_gelu_erf(x)) return m;
  if (auto m = match_gelu_tanh(x)) return m;
  if (!conv) return std::nullopt;
  if (auto m = match_silu(x)) return m;
  return match_hard_swish(x);
}

std::optional<std::pair<NodeId, NodeId>> Matcher::two_readers(ValueId x, OpKind op) const {
  if (x == kNoValue || is_output_[size_t(x)] || uses_[size_t(x)] != 2 || consumers_[size_t(x)].size() != 2)
    return std::nullopt;
  NodeId a = consumers_[size_t(x)][0], b = consumers_[size_t(x)][1];
  if (taken_[size_t(a)] || taken_[size_t(b)] || a == b) return std::nullopt;
  if (node(a).op != op) std::swap(a, b);
  if (node(a).op != op) return std::nullopt;
  return std::pair{a, b};
}

// Mul(x, Sigmoid(x)), operands in either order.
std::optional<ActivationMatch> Matcher::match_silu(ValueId x) const {
  auto readers = two_readers(x, OpKind::Sigmoid);
  if (!readers) return std::nullopt;
  auto [sig, mul] = *readers;
  const ValueId s = unary(sig, OpKind::Sigmoid, x);
  if (s == kNoValue || sole_consumer(s) != mul || node(mul).op != OpKind::Mul || other_operand(node(mul), s) != x)
    return std::nullopt;
  const ValueId y = sole_output(node(mul));
  if (!same_type(y, x)) return std::nullopt;
  return ActivationMatch{LibraryActivation::silu, {sig, mul}, y};
}

// Mul(x, Max(Min(Add(Mul(x, 1/6), 0.5), 1), 0)): HardSwish as decompose writes it (and HardSigmoid with
// alpha 1/6 times x).
std::optional<ActivationMatch> Matcher::match_hard_swish(ValueId x) const {
  auto readers = two_readers(x, OpKind::Mul);
  if (!readers) return std::nullopt;
  for (auto [scale, outer] : {*readers, std::pair{readers->second, readers->first}}) {
    const ValueId a = binary_with_scalar(scale, OpKind::Mul, x, 1.0 / 6.0);
    const NodeId add = sole_consumer(a);
    const ValueId b = binary_with_scalar(add, OpKind::Add, a, 0.5);
    const NodeId lo = sole_consumer(b);
    const ValueId c = binary_with_scalar(lo, OpKind::Min, b, 1.0);
    const NodeId hi = sole_consumer(c);
    const ValueId d = binary_with_scalar(hi, OpKind::Max, c, 0.0);
    if (d == kNoValue || sole_consumer(d) != outer || node(outer).op != OpKind::Mul || other_operand(node(outer), d) != x)
      continue;
    const ValueId y = sole_output(node(outer));
    if (!same_type(y, x)) continue;
    return ActivationMatch{LibraryActivation::hard_swish, {scale, add, lo, hi, outer}, y};
  }
  return std::nullopt;
}

// The outer product of GELU, given x's remaining consumer `other` and a = 1 + f(x):
// (x * a) * 0.5, or (x * 0.5) * a, or x * (a * 0.5), operands in either order.
std::optional<ActivationMatch> Matcher::match_half_product(ValueId x, NodeId other, ValueId a) const {
  NodeId after_a = sole_consumer(a);
  if (after_a < 0 || node(after_a).op != OpKind::Mul) return std::nullopt;
  // (x * a) * 0.5
  if (after_a == other && other_operand(node(other), a) == x) {
    ValueId m = sole_output(node(other));
    ValueId y = binary_with_scalar(sole_consumer(m), OpKind::Mul, m, 0.5);
    if (same_type(m, x) && y != kNoValue) return ActivationMatch{LibraryActivation::none, {other, sole_consumer(m)}, y};
  }
  // (x * 0.5) * a
  ValueId h = binary_with_scalar(other, OpKind::Mul, x, 0.5);
  if (h != kNoValue && sole_consumer(h) == after_a && other_operand(node(after_a), a) == h) {
    ValueId y = sole_output(node(after_a));
    if (same_type(y, x)) return ActivationMatch{LibraryActivation::none, {other, after_a}, y};
  }
  // x * (a * 0.5)
  ValueId q = binary_with_scalar(after_a, OpKind::Mul, a, 0.5);
  if (q != kNoValue && sole_consumer(q) == other && node(other).op == OpKind::Mul &&
      other_operand(node(other), q) == x) {
    ValueId y = sole_output(node(other));
    if (same_type(y, x)) return ActivationMatch{LibraryActivation::none, {after_a, other}, y};
  }
  return std::nullopt;
}

// x * 0.5 * (1 + erf(x / sqrt(2))), the division possibly a multiply by 1/sqrt(2).
std::optional<ActivationMatch> Matcher::match_gelu_erf(ValueId x) const {
  if (is_output_[size_t(x)] || uses_[size_t(x)] != 2 || consumers_[size_t(x)].size() != 2) return std::nullopt;
  for (int pick = 0; pick < 2; ++pick) {
    NodeId s = consumers_[size_t(x)][size_t(pick)], other = consumers_[size_t(x)][size_t(1 - pick)];
    if (s == other || taken_[size_t(s)] || taken_[size_t(other)]) return std::nullopt;
    ValueId t = binary_with_scalar(s, OpKind::Div, x, std::sqrt(2.0), /*scalar_second_only=*/true);
    if (t == kNoValue) t = binary_with_scalar(s, OpKind::Mul, x, 1.0 / std::sqrt(2.0));
    if (t == kNoValue) continue;
    NodeId erf = sole_consumer(t);
    ValueId e = unary(erf, OpKind::Erf, t);
    NodeId plus = sole_consumer(e);
    ValueId a = binary_with_scalar(plus, OpKind::Add, e, 1.0);
    if (a == kNoValue) continue;
    auto outer = match_half_product(x, other, a);
    if (!outer) continue;
    outer->act = LibraryActivation::gelu_erf;
    outer->nodes.insert(outer->nodes.end(), {s, erf, plus});
    std::sort(outer->nodes.begin(), outer->nodes.end());
    return outer;
  }
  return std::nullopt;
}

// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) with the cube as Pow(x, 3) (GPT-2's form).
std::optional<ActivationMatch> Matcher::match_gelu_tanh(ValueId x) const {
  if (is_output_[size_t(x)] || uses_[size_t(x)] != 3 || consumers_[size_t(x)].size() != 3) return std::nullopt;
  const auto& cons = consumers_[size_t(x)];
  for (NodeId c : cons)
    if (taken_[size_t(c)]) return std::nullopt;
  for (size_t ip = 0; ip < 3; ++ip) {
    NodeId pow = cons[ip];
    ValueId p = binary_with_scalar(pow, OpKind::Pow, x, 3.0, /*scalar_second_only=*/true);
    if (p == kNoValue) continue;
    NodeId scale3 = sole_consumer(p);
    ValueId c = binary_with_scalar(scale3, OpKind::Mul, p, 0.044715);
    NodeId sum = sole_consumer(c);
    if (c == kNoValue || sum < 0 || node(sum).op != OpKind::Add || other_operand(node(sum), c) != x) continue;
    ValueId s = sole_output(node(sum));
    if (!same_type(s, x)) continue;
    NodeId scale = sole_consumer(s);
    ValueId u = binary_with_scalar(scale, OpKind::Mul, s, std::sqrt(2.0 / std::numbers::pi));
    NodeId tanh = sole_consumer(u);
    ValueId t = unary(tanh, OpKind::Tanh, u);
    NodeId plus = sole_consumer(t);
    ValueId a = binary_with_scalar(plus, OpKind::Add, t, 1.0);
    if (a == kNoValue) continue;
    NodeId other = -1;
    for (NodeId cn : cons)
      if (cn != pow && cn != sum) other = cn;
    auto outer = other >= 0 ? match_half_product(x, other, a) : std::nullopt;
    if (!outer) continue;
    outer->act = LibraryActivation::gelu_tanh;
    outer->nodes.insert(outer->nodes.end(), {pow, scale3, sum, scale, tanh, plus});
    std::sort(outer->nodes.begin(), outer->nodes.end());
    return outer;
  }
  return std::nullopt;
}

// A constant that broadcasts onto `out` as one value per channel (all other dims 1).
bool Matcher::bias_ok(ValueId c, ValueId out, int64_t channels, int channel_axis) const {
  if (!is_const(c) || !is_f32_or_half(c) || channels < 1) return false;
  const Tensor& t = *value(c).constant;
  int out_rank = value(out).type.rank();
  if (t.rank() > out_rank) return false;
  for (int i = 0; i < t.rank(); ++i) {
    int axis = out_rank - t.rank() + i;
    int64_t d = t.dim(i);
    if (d != 1 && !(axis == channel_axis && d == channels)) return false;
  }
  return true;
}

bool Matcher::match_core(NodeId id, LibraryGroup& grp, int64_t& channels, int& channel_axis, bool& has_bias) const {
  const Node& n = node(id);
  ValueId out = sole_output(n);
  if (!is_f32_or_half(out) || n.inputs.size() < 2 || !is_f32_or_half(n.inputs[0]) || !is_f32_or_half(n.inputs[1]) || is_const(n.inputs[0]))
    return false;
  const TensorType& a = value(n.inputs[0]).type;
  const TensorType& b = value(n.inputs[1]).type;
  const Shape& os = value(out).type.shape;
  grp.core_node = id;
  grp.inputs = {n.inputs[0], n.inputs[1]};
  has_bias = false;
  try {
    if (n.op == OpKind::MatMul) {
      if (a.rank() < 2 || b.rank() < 2 || value(out).type.rank() != std::max(a.rank(), b.rank())) return false;
      const Dim& k = a.shape.back();
      const Dim& kb = b.shape[b.shape.size() - 2];
      if (k.is_static() && kb.is_static() && k.value != kb.value) return false;
      channel_axis = value(out).type.rank() - 1;
      channels = os.back().is_static() ? os.back().value : -1;
      if (is_const(n.inputs[1])) {
        grp.core = LibraryCore::matmul;
        return b.rank() == 2 && kb.value >= 1 && channels >= 1;
      }
      grp.core = LibraryCore::batched_matmul;
      if (a.rank() != b.rank() || a.rank() > 4 || !(k == kb)) return false;
      for (size_t i = 0; i + 2 < a.shape.size(); ++i)
        if (!(a.shape[i] == b.shape[i])) return false;
      return true;
    }
    if (n.op == OpKind::Gemm) {
      if (!is_const(n.inputs[1]) || a.rank() != 2 || b.rank() != 2 || value(out).type.rank() != 2) return false;
      int64_t ta = n.attr_int("transA", 0), tb = n.attr_int("transB", 0);
      if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1)) return false;
      (void)n.attr_float("alpha", 1.0), (void)n.attr_float("beta", 1.0);
      grp.core = LibraryCore::gemm;
      channel_axis = 1;
      channels = b.shape[tb ? 0 : 1].value;
      int64_t kb = b.shape[tb ? 1 : 0].value;
      const Dim& ka = a.shape[ta ? 0 : 1];
      if (channels < 1 || kb < 1 || (ka.is_static() && ka.value != kb)) return false;
      if (n.has_input(2)) {
        if (!bias_ok(n.inputs[2], out, channels, 1)) return false;
        grp.inputs.push_back(n.inputs[2]);
        has_bias = true;
      }
      return n.inputs.size() <= 3;
    }
    if (n.op == OpKind::Conv) {
      if (!is_const(n.inputs[1]) || a.rank() < 3 || a.rank() > 5 || b.rank() != a.rank()) return false;
      const Tensor& w = *value(n.inputs[1]).constant;
      int64_t group = n.attr_int("group", 1);
      if (w.numel() == 0 || group < 1 || w.dim(0) % group != 0) return false;
      const Dim& c = a.shape[1];
      if (!c.is_static() || c.value != w.dim(1) * group) return false;
      if (!conv_attrs_ok(n, size_t(a.rank() - 2), w.shape())) return false;
      grp.core = LibraryCore::conv;
      channel_axis = 1;
      channels = w.dim(0);
      if (n.has_input(2)) {
        ValueId bv = n.inputs[2];
        if (!is_const(bv) || !is_f32_or_half(bv) || value(bv).constant->rank() != 1 || value(bv).constant->numel() != channels)
          return false;
        grp.inputs.push_back(bv);
        has_bias = true;
      }
      return n.inputs.size() <= 3;
    }
  } catch (const UserError&) {
    return false;  // a malformed attribute: the eager node reports it
  }
  return false;
}

std::optional<LibraryGroup> Matcher::match_from(NodeId id) const {
  LibraryGroup grp;
  int64_t channels = -1;
  int channel_axis = 0;
  bool has_bias = false;
  if (!match_core(id, grp, channels, channel_axis, has_bias)) return std::nullopt;
  static const char* core_names[] = {"matmul", "bmm", "gemm", "conv"};
  grp.label = core_names[static_cast<int>(grp.core)];
  grp.nodes = {id};
  ValueId core_out = node(id).outputs[0];
  ValueId cur = core_out;
  auto advance = [&](const std::vector<NodeId>& nodes, ValueId out, const char* what) {
    grp.nodes.insert(grp.nodes.end(), nodes.begin(), nodes.end());
    cur = out;
    grp.label += std::string("+") + what;
  };
  // BatchNormalization after Conv.
  if (grp.core == LibraryCore::conv) {
    NodeId n = sole_consumer(cur);
    if (n >= 0 && node(n).op == OpKind::BatchNormalization && node(n).inputs.size() == 5 && node(n).inputs[0] == cur) {
      const Node& bn = node(n);
      bool ok = sole_output(bn) != kNoValue && same_type(sole_output(bn), cur);
      for (size_t i = 1; ok && i < 5; ++i)
        ok = is_const(bn.inputs[i]) && is_f32_or_half(bn.inputs[i]) && value(bn.inputs[i]).constant->rank() == 1 &&
             value(bn.inputs[i]).constant->numel() == channels;
      try {
        ok = ok && bn.attr_int("training_mode", 0) == 0;
        (void)bn.attr_float("epsilon", 1e-5);
      } catch (const UserError&) {
        ok = false;
      }
      if (ok) {
        grp.batchnorm = n;
        grp.inputs.insert(grp.inputs.end(), bn.inputs.begin() + 1, bn.inputs.end());
        advance({n}, sole_output(bn), "bn");
        has_bias = true;  // the folded BatchNormalization gives the bias (one bias per call)
      }
    }
  }
  // A scalar factor right after a MatMul (attention's 1/sqrt(d)), folded into the product's alpha.
  if (grp.core == LibraryCore::matmul || grp.core == LibraryCore::batched_matmul)
    if (auto s = scaled(cur)) {
      grp.scale = s->second;
      advance({sole_consumer(cur)}, s->first, "scale");
    }
  // A constant bias per channel.
  if (!has_bias) {
    NodeId n = sole_consumer(cur);
    if (n >= 0 && node(n).op == OpKind::Add) {
      ValueId c = other_operand(node(n), cur);
      ValueId out = sole_output(node(n));
      if (c != kNoValue && bias_ok(c, cur, channels, channel_axis) && same_type(out, cur)) {
        grp.bias = c;
        grp.inputs.push_back(c);
        advance({n}, out, "bias");
      }
    }
  }
  if (auto m = match_activation(cur, grp.core == LibraryCore::conv)) {
    grp.act = m->act;
    advance(m->nodes, m->out, activation_name(m->act));
  }
  // A residual: a non-constant tensor of exactly the output's type.
  NodeId n = sole_consumer(cur);
  if (n >= 0 && node(n).op == OpKind::Add) {
    ValueId r = other_operand(node(n), cur);
    ValueId out = sole_output(node(n));
    bool inside = r != kNoValue && value(r).producer >= 0 &&
                  std::find(grp.nodes.begin(), grp.nodes.end(), value(r).producer) != grp.nodes.end();
    if (r != kNoValue && !is_const(r) && !inside && same_type(r, cur) && same_type(out, cur)) {
      grp.residual = static_cast<int>(grp.inputs.size());
      grp.inputs.push_back(r);
      advance({n}, out, "add");
      NodeId relu = sole_consumer(cur);
      ValueId after = unary(relu, OpKind::Relu, cur);
      if (after != kNoValue) {
        grp.act_after = LibraryActivation::relu;
        advance({relu}, after, "relu");
      }
    }
  }
  grp.output = cur;
  const bool tuned = grp.core != LibraryCore::conv && tuned_ && tuned_(grp);
  grp.tuned = tuned;
  if (tuned) match_tail(grp);
  if (grp.core == LibraryCore::matmul && folds_norm_) match_norm(grp);
  // A product of two computed operands gains nothing from the library call on its own (eager MatMul is
  // the same oneDNN call), only from a template the autotuner may pick.
  if (grp.core == LibraryCore::batched_matmul && grp.nodes.size() == 1 && !tuned) return std::nullopt;
  return grp;
}

// The LayerNormalization whose output is the MatMul's A (see fuse_library.h), where the backend folds it.
void Matcher::match_norm(LibraryGroup& grp) const {
  const ValueId a = grp.inputs[0];
  // A group that also reads the LayerNorm's output elsewhere (its residual, a tail operand) would read a
  // value its own step makes.
  if (std::find(grp.inputs.begin() + 1, grp.inputs.end(), a) != grp.inputs.end()) return;
  const NodeId ln = value(a).producer;
  if (ln < 0 || taken_[size_t(ln)] || node(ln).op != OpKind::LayerNormalization || is_output_[size_t(a)]) return;
  const Node& n = node(ln);
  if (n.outputs.empty() || n.outputs[0] != a || n.inputs.size() < 2 || n.inputs.size() > 3 || !n.has_input(1)) return;
  for (size_t i = 1; i < n.outputs.size(); ++i)  // Mean and InvStdDev unused
    if (n.outputs[i] != kNoValue && (uses_[size_t(n.outputs[i])] > 0 || is_output_[size_t(n.outputs[i])])) return;
  const ValueId x = n.inputs[0];
  if (is_const(x) || !same_type(x, a)) return;
  const TensorType& type = value(x).type;
  const Dim& k = type.shape.back();
  if (!k.is_static() || k.value < 1) return;
  try {
    const int64_t axis = n.attr_int("axis", -1);
    if ((axis != -1 && axis != type.rank() - 1) || n.attr_int("stash_type", 1) != 1) return;  // f32 statistics
    (void)n.attr_float("epsilon", 1e-5);
  } catch (const UserError&) {
    return;  // a malformed attribute: the eager node reports it
  }
  auto per_column = [&](ValueId v) {
    return is_const(v) && value(v).type.dtype == type.dtype && value(v).constant->rank() == 1 &&
           value(v).constant->numel() == k.value;
  };
  if (!per_column(n.inputs[1]) || (n.has_input(2) && !per_column(n.inputs[2]))) return;
  // Other readers of the LayerNorm's output take it from this group, which runs at its last node.
  bool read_outside = false;
  for (NodeId r : consumers_[size_t(a)]) {
    if (std::find(grp.nodes.begin(), grp.nodes.end(), r) != grp.nodes.end()) continue;
    if (r < grp.nodes.back()) return;
    read_outside = true;
  }
  LibraryGroup folded = grp;
  folded.norm = ln;
  folded.nodes.insert(folded.nodes.begin(), ln);
  folded.inputs[0] = x;
  folded.norm_scale = static_cast<int>(folded.inputs.size());
  folded.inputs.push_back(n.inputs[1]);
  if (n.has_input(2)) {
    folded.norm_bias = static_cast<int>(folded.inputs.size());
    folded.inputs.push_back(n.inputs[2]);
  }
  folded.norm_output = read_outside ? a : kNoValue;
  folded.label = "layernorm+" + folded.label;
  if (folds_norm_(folded)) grp = std::move(folded);
}

// The pointwise chain after the post-ops (gemm_tail.h); grp.output is the value before it.
void Matcher::match_tail(LibraryGroup& grp) const {
  ValueId cur = grp.output;
  for (NodeId n = sole_consumer(cur); n >= 0; n = sole_consumer(cur)) {
    ValueId out = kNoValue, operand = kNoValue;
    if (!tail_node_ok(g_, node(n), cur, out, operand) || is_output_[size_t(cur)]) break;
    if (operand != kNoValue && !is_const(operand) && value(operand).producer >= 0 &&
        std::find(grp.nodes.begin(), grp.nodes.end(), value(operand).producer) != grp.nodes.end())
      break;  // a value the group computes itself
    if (grp.tail.empty()) grp.tail_input = cur;
    if (operand != kNoValue) {
      grp.tail_inputs.push_back(static_cast<int>(grp.inputs.size()));
      grp.inputs.push_back(operand);
    }
    grp.tail.push_back(n);
    grp.nodes.push_back(n);
    std::string name(op_name(node(n).op));
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    grp.label += "+" + name;
    cur = out;
  }
  grp.output = cur;
}

bool conv_attrs_ok(const Node& n, size_t spatial, const std::vector<int64_t>& w) {
  auto per_axis = [&](const char* name, size_t count, int64_t min) {
    if (!n.has_attr(name)) return true;
    std::vector<int64_t> v = n.attr_ints(name);
    if (v.size() != count) return false;
    for (int64_t x : v)
      if (x < min) return false;
    return true;
  };
  if (n.has_attr("kernel_shape") && n.attr_ints("kernel_shape") != std::vector<int64_t>(w.begin() + 2, w.end()))
    return false;
  std::string pad = n.attr_string("auto_pad", "NOTSET");
  bool pad_ok = pad == "NOTSET" || pad.empty() || pad == "VALID" || pad == "SAME_UPPER" || pad == "SAME_LOWER";
  return pad_ok && per_axis("strides", spatial, 1) && per_axis("dilations", spatial, 1) &&
         per_axis("pads", 2 * spatial, 0);
}

}  // namespace

std::vector<LibraryGroup> find_library_groups(const Graph& g, const std::vector<char>& claimed) {
  return Matcher(g, claimed).run();
}

std::vector<LibraryGroup> find_library_groups(const Graph& g, const std::vector<char>& claimed,
                                              const FusionTarget& target) {
  std::vector<LibraryGroup> groups = Matcher(g, claimed, target.tunes_gemm, target.folds_layer_norm).run();
  std::vector<char> taken(g.nodes.size(), 0);
  for (size_t i = 0; i < claimed.size() && i < taken.size(); ++i) taken[i] = claimed[i] != 0;
  for (const LibraryGroup& grp : groups)
    for (NodeId n : grp.nodes) taken[size_t(n)] = 1;
  for (const RoutedNode& r : target.routes) {
    if (r.decision.route != SoftmaxRoute::library || taken[size_t(r.site.node)]) continue;
    const Node& n = g.nodes[size_t(r.site.node)];
    LibraryGroup grp;
    grp.nodes = {r.site.node};
    grp.inputs = {n.inputs[0]};
    grp.output = n.outputs[0];
    grp.core = r.site.log ? LibraryCore::log_softmax : LibraryCore::softmax;
    grp.core_node = r.site.node;
    grp.label = r.site.log ? "log_softmax" : "softmax";
    groups.push_back(std::move(grp));
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.nodes.back() < b.nodes.back(); });
  return groups;
}

}  // namespace kiln::schedule
