// Sibling products as one: MatMuls that read the same activation X with constant 2-D weights of one
// dtype and K (attention's Q, K and V projections), each maybe followed by the Add of a constant 1-D
// bias, become one MatMul with the weights side by side, one Add of the biases side by side, and a
// Split along the last axis whose outputs are the values the siblings made. At batch 1 a device runs
// one wide product (and one launch) faster than three narrow ones; the attention fusion reads Q, K and
// V through the Split (schedule/fuse_attention.h), so nothing copies them apart.
#include <algorithm>
#include <cstring>
#include <map>

#include "kiln/graph.h"
#include "passes/passes.h"

namespace kiln {
namespace {

struct Sibling {
  NodeId matmul = -1;
  NodeId bias_add = -1;      // -1: no bias
  ValueId weight = kNoValue, bias = kNoValue;
  ValueId result = kNoValue;  // what the sibling makes (the Add's output, else the MatMul's)
};

const Tensor* constant_of(const Graph& g, ValueId v) {
  return v == kNoValue ? nullptr : g.value(v).constant.get();
}

// The Add of a constant 1-D bias of n elements to v, v's only use.
NodeId bias_add_of(const Graph& g, const std::vector<int>& uses, const std::vector<NodeId>& only_consumer, ValueId v,
                   int64_t n, ValueId& bias) {
  if (uses[size_t(v)] != 1 || only_consumer[size_t(v)] < 0) return -1;
  const NodeId a = only_consumer[size_t(v)];
  const Node& add = g.nodes[size_t(a)];
  if (add.op != OpKind::Add || add.inputs.size() != 2 || add.outputs.size() != 1) return -1;
  const ValueId other = add.inputs[0] == v ? add.inputs[1] : add.inputs[0];
  const Tensor* b = constant_of(g, other);
  if (add.inputs[0] == add.inputs[1] || !b || b->rank() != 1 || b->dim(0) != n) return -1;
  if (b->dtype() != g.value(v).type.dtype || !(g.value(add.outputs[0]).type == g.value(v).type)) return -1;
  bias = other;
  return a;
}

// The tensors side by side along their last axis (each [rows, n_i] as bytes).
Tensor side_by_side(const std::vector<const Tensor*>& parts) {
  const int64_t rows = parts[0]->rank() == 2 ? parts[0]->dim(0) : 1;
  int64_t cols = 0;
  for (const Tensor* p : parts) cols += p->dim(-1);
  std::vector<int64_t> shape = parts[0]->shape();
  shape.back() = cols;
  Tensor t = Tensor::empty(parts[0]->dtype(), shape);
  const size_t elem = dtype_size(t.dtype());
  char* out = static_cast<char*>(t.raw());
  for (int64_t r = 0; r < rows; ++r)
    for (const Tensor* p : parts) {
      const size_t n = size_t(p->dim(-1)) * elem;
      std::memcpy(out, static_cast<const char*>(p->raw()) + size_t(r) * n, n);
      out += n;
    }
  return t;
}

}  // namespace

int merge_sibling_matmuls(Graph& g) {
  const std::vector<int> uses = g.use_counts();
  std::vector<NodeId> only_consumer(g.values.size(), -1);
  std::vector<std::vector<NodeId>> matmuls_of(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (ValueId v : n.inputs)
      if (v != kNoValue) only_consumer[size_t(v)] = only_consumer[size_t(v)] == -1 ? NodeId(i) : -2;
    if (n.op == OpKind::MatMul && n.inputs.size() == 2 && n.outputs.size() == 1 && n.inputs[0] != n.inputs[1])
      matmuls_of[size_t(n.inputs[0])].push_back(static_cast<NodeId>(i));
  }
  for (ValueId v : g.outputs) only_consumer[size_t(v)] = -2;

  // Sets of siblings: same X, weights of one dtype and K, all with a bias or all without.
  std::vector<std::vector<Sibling>> sets;
  for (size_t x = 0; x < g.values.size(); ++x) {
    if (matmuls_of[x].size() < 2) continue;
    std::map<std::pair<bool, int64_t>, std::vector<Sibling>> by_form;
    for (NodeId m : matmuls_of[x]) {
      const Node& n = g.nodes[size_t(m)];
      const Tensor* w = constant_of(g, n.inputs[1]);
      const TensorType& out = g.value(n.outputs[0]).type;
      if (!w || w->rank() != 2 || w->dtype() != g.value(ValueId(x)).type.dtype || out.rank() < 2 ||
          !is_float(w->dtype()))
        continue;
      Sibling s{m, -1, n.inputs[1], kNoValue, n.outputs[0]};
      s.bias_add = bias_add_of(g, uses, only_consumer, n.outputs[0], w->dim(1), s.bias);
      if (s.bias_add >= 0) s.result = g.nodes[size_t(s.bias_add)].outputs[0];
      by_form[{s.bias_add >= 0, w->dim(0)}].push_back(s);
    }
    for (auto& [form, siblings] : by_form)
      if (siblings.size() >= 2) sets.push_back(std::move(siblings));
  }
  if (sets.empty()) return 0;

  // The merged nodes take the place of each set's first MatMul (every use of a sibling's result comes
  // after it); the siblings' own nodes go.
  std::vector<char> dropped(g.nodes.size(), 0);
  std::map<NodeId, std::vector<Node>> placed;
  for (const std::vector<Sibling>& set : sets) {
    const Node& first = g.nodes[size_t(set[0].matmul)];
    const ValueId x = first.inputs[0];
    std::vector<const Tensor*> weights, biases;
    std::vector<int64_t> widths;
    for (const Sibling& s : set) {
      weights.push_back(constant_of(g, s.weight));
      if (s.bias != kNoValue) biases.push_back(constant_of(g, s.bias));
      widths.push_back(weights.back()->dim(1));
      dropped[size_t(s.matmul)] = 1;
      if (s.bias_add >= 0) dropped[size_t(s.bias_add)] = 1;
    }
    const std::string base = first.name + "/merged";
    TensorType wide = g.value(set[0].result).type;
    int64_t total = 0;
    for (int64_t w : widths) total += w;
    wide.shape.back() = Dim::fixed(total);

    std::vector<Node> nodes;
    const ValueId w = g.add_constant(base + "/weight", side_by_side(weights));
    Node mm{OpKind::MatMul, base, {x, w}, {g.add_value(base + "/product", wide)}, {}, -1};
    nodes.push_back(mm);
    ValueId y = mm.outputs[0];
    if (!biases.empty()) {
      const ValueId b = g.add_constant(base + "/bias", side_by_side(biases));
      Node add{OpKind::Add, base + "/bias_add", {y, b}, {g.add_value(base + "/biased", wide)}, {}, -1};
      nodes.push_back(add);
      y = add.outputs[0];
    }
    const ValueId sizes = g.add_constant(base + "/sizes", Tensor::from_vector<int64_t>(DType::i64, {int64_t(widths.size())}, widths));
    Node split{OpKind::Split, base + "/split", {y, sizes}, {}, {}, -1};
    for (const Sibling& s : set) split.outputs.push_back(s.result);
    split.attrs["axis"] = Attribute{int64_t(wide.rank() - 1)};
    nodes.push_back(split);
    placed[set[0].matmul] = std::move(nodes);
  }
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (auto it = placed.find(NodeId(i)); it != placed.end())
      for (Node& n : it->second) out.push_back(std::move(n));
    if (!dropped[i]) out.push_back(std::move(g.nodes[i]));
  }
  g.set_nodes(std::move(out));
  g.remove_dead();
  return static_cast<int>(sets.size());
}

}  // namespace kiln
