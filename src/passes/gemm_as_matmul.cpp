// Flattened Gemms as MatMuls: exporters (gpt2's Conv1D, Linear layers of tf2onnx) write a product of a
// [b.., K] activation as Reshape to [M, K], Gemm with a constant B (and a constant bias C), Reshape back
// to [b.., N]. The Reshapes hide what follows the product (the residual Add, an activation) from the
// library fusion, which then runs each as a kernel of its own. Rewritten as MatMul(X, B or B^T) and
// the Add of C as [N], the chain reads as bert's does (matmul+bias+add), and the bytes are the same:
// each of the M rows of the flat view is one row of X, in order.
#include <cstring>

#include "kiln/graph.h"
#include "kiln/errors.h"
#include "passes/passes.h"
#include "passes/splice_nodes.h"

namespace kiln {
namespace {

const Tensor* constant_of(const Graph& g, ValueId v) {
  return v == kNoValue ? nullptr : g.value(v).constant.get();
}

// The Reshape node that makes v, when v has no other use and is no graph output; -1 otherwise.
NodeId sole_reshape_producer(const Graph& g, const std::vector<int>& uses, ValueId v) {
  const NodeId p = g.value(v).producer;
  if (p < 0 || uses[size_t(v)] != 1 || g.nodes[size_t(p)].op != OpKind::Reshape) return -1;
  return p;
}

Tensor transposed(const Tensor& w) {  // a [R, C] constant as [C, R]
  const int64_t rows = w.dim(0), cols = w.dim(1);
  Tensor t = Tensor::empty(w.dtype(), {cols, rows});
  const size_t es = dtype_size(w.dtype());
  const auto* src = static_cast<const char*>(w.raw());
  auto* dst = static_cast<char*>(t.raw());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) std::memcpy(dst + size_t(c * rows + r) * es, src + size_t(r * cols + c) * es, es);
  return t;
}

struct Match {
  NodeId flatten = -1, gemm = -1, unflatten = -1;
};

// Reshape(X [b.., K] -> [M, K]) -> Gemm(alpha 1, beta 1, no transA, constant B, constant C of N or
// absent) -> Reshape(-> [b.., N]), the Gemm's output used only by the second Reshape.
bool matches(const Graph& g, const std::vector<int>& uses, const std::vector<NodeId>& consumer, NodeId id, Match& m) {
  const Node& n = g.nodes[size_t(id)];
  if (n.op != OpKind::Gemm || n.outputs.size() != 1 || n.inputs.size() < 2) return false;
  try {
    if (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.0) != 1.0 ||
        (n.has_input(2) && n.attr_float("beta", 1.0) != 1.0))
      return false;
  } catch (const UserError&) {
    return false;
  }
  const Tensor* b = constant_of(g, n.inputs[1]);
  if (!b || b->rank() != 2) return false;
  const bool trans_b = n.attr_int("transB", 0) != 0;
  const int64_t k = b->dim(trans_b ? 1 : 0), cols = b->dim(trans_b ? 0 : 1);
  if (n.has_input(2)) {
    const Tensor* c = constant_of(g, n.inputs[2]);
    if (!c || c->numel() != cols || c->dim(-1) != cols || c->rank() > 2) return false;
  }
  const ValueId y = n.outputs[0];
  if (uses[size_t(y)] != 1 || consumer[size_t(y)] < 0) return false;
  const NodeId r2 = consumer[size_t(y)];
  if (g.nodes[size_t(r2)].op != OpKind::Reshape || g.nodes[size_t(r2)].inputs[0] != y) return false;
  const NodeId r1 = sole_reshape_producer(g, uses, n.inputs[0]);
  if (r1 < 0) return false;
  const TensorType &x = g.value(g.nodes[size_t(r1)].inputs[0]).type, &flat = g.value(n.inputs[0]).type;
  const TensorType& out = g.value(g.nodes[size_t(r2)].outputs[0]).type;
  if (x.rank() < 2 || flat.rank() != 2 || out.rank() != x.rank() || x.dtype != b->dtype() || out.dtype != x.dtype)
    return false;
  if (!(x.shape.back() == Dim::fixed(k)) || !(flat.shape[1] == Dim::fixed(k)) || !(out.shape.back() == Dim::fixed(cols)))
    return false;
  for (size_t d = 0; d + 1 < x.shape.size(); ++d)
    if (!(x.shape[d] == out.shape[d])) return false;
  m = {r1, id, r2};
  return true;
}

}  // namespace

int gemm_as_matmul(Graph& g) {
  const std::vector<int> uses = g.use_counts();
  std::vector<NodeId> consumer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].inputs)
      if (v != kNoValue) consumer[size_t(v)] = consumer[size_t(v)] == -1 ? NodeId(i) : -2;
  for (ValueId v : g.outputs) consumer[size_t(v)] = -2;

  std::vector<Match> found;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Match m;
    if (matches(g, uses, consumer, NodeId(i), m)) found.push_back(m);
  }
  if (found.empty()) return 0;
  // Each match's nodes are replaced where its Gemm was (the flattening Reshape goes: nothing else reads
  // its output; the MatMul reads X, which comes before).
  std::vector<char> dropped(g.nodes.size(), 0);
  std::vector<std::vector<Node>> placed(g.nodes.size());
  for (const Match& m : found) {
    const Node gemm = g.nodes[size_t(m.gemm)];
    const ValueId x = g.nodes[size_t(m.flatten)].inputs[0];
    const ValueId result = g.nodes[size_t(m.unflatten)].outputs[0];
    const TensorType type = g.value(result).type;
    const Tensor& b = *constant_of(g, gemm.inputs[1]);
    const ValueId w = gemm.attr_int("transB", 0) != 0 ? g.add_constant(gemm.name + "/weight", transposed(b)) : gemm.inputs[1];
    std::vector<Node>& nodes = placed[size_t(m.gemm)];
    if (!gemm.has_input(2)) {
      nodes.push_back(Node{OpKind::MatMul, gemm.name, {x, w}, {result}, {}, -1});
    } else {
      const Tensor& c = *constant_of(g, gemm.inputs[2]);
      const ValueId cv = g.add_constant(gemm.name + "/bias", c.reshaped({c.numel()}).clone());
      const ValueId product = g.add_value(gemm.name + "/product", type);
      nodes.push_back(Node{OpKind::MatMul, gemm.name, {x, w}, {product}, {}, -1});
      nodes.push_back(Node{OpKind::Add, gemm.name + "/bias_add", {product, cv}, {result}, {}, -1});
    }
    dropped[size_t(m.flatten)] = dropped[size_t(m.gemm)] = dropped[size_t(m.unflatten)] = 1;
  }
  splice_nodes(g, placed, dropped);
  return static_cast<int>(found.size());
}

}  // namespace kiln
