// An If whose condition is a constant (a folded shape test, a constant flag) becomes the nodes of the
// branch it takes, in its place: the branch's inputs are the node's inputs after cond, its constants
// become the graph's, and its outputs the node's. Nested Ifs come along as nodes, for the next round.
#include <unordered_map>

#include "passes/passes.h"
#include "support/error.h"

namespace kiln {
namespace {

// Appends the chosen branch of `n` (whose cond is a constant) to `out`, writing the node's outputs.
void inline_branch(Graph& g, const Node& n, std::vector<Node>& out) {
  const Tensor& cond = *g.value(n.inputs[0]).constant;
  if (cond.numel() != 1) user_error("{}: cond must hold one element, has {}", g.describe(n), cond.numel());
  const char* attr = cond.as_double(0) != 0 ? "then_branch" : "else_branch";
  const Graph& b = n.attr_graph(attr);
  if (b.inputs.size() + 1 != n.inputs.size() || b.outputs.size() != n.outputs.size())
    user_error("{}: {} reads {} values and makes {}, but the node passes {} and has {} outputs", g.describe(n), attr,
               b.inputs.size(), b.outputs.size(), n.inputs.size() - 1, n.outputs.size());
  const std::string prefix = n.name + "/";
  std::vector<ValueId> map(b.values.size(), kNoValue);
  for (size_t i = 0; i < b.inputs.size(); ++i) map[size_t(b.inputs[i])] = n.inputs[i + 1];
  for (size_t v = 0; v < b.values.size(); ++v)
    if (b.values[v].constant && map[v] == kNoValue)
      map[v] = g.add_constant(prefix + b.values[v].name, *b.values[v].constant);
  // A branch node's output that is one branch output writes the node's output itself; an output read
  // straight from an input or constant, or twice, goes through an Identity.
  std::unordered_map<ValueId, int> output_uses;
  for (ValueId v : b.outputs) ++output_uses[v];
  std::vector<char> produced(b.values.size(), 0);
  for (const Node& bn : b.nodes)
    for (ValueId o : bn.outputs)
      if (o != kNoValue) produced[size_t(o)] = 1;
  for (size_t j = 0; j < b.outputs.size(); ++j) {
    ValueId bv = b.outputs[j];
    if (n.outputs[j] != kNoValue && produced[size_t(bv)] && output_uses[bv] == 1) map[size_t(bv)] = n.outputs[j];
  }
  for (const Node& bn : b.nodes) {
    Node copy = bn;
    copy.name = prefix + bn.name;
    copy.group = -1;
    for (ValueId& v : copy.inputs) {
      if (v == kNoValue) continue;
      KILN_INTERNAL_CHECK(map[size_t(v)] != kNoValue, "inline_constant_ifs: {} of {} reads an undefined value",
                          b.describe(bn), g.describe(n));
      v = map[size_t(v)];
    }
    for (ValueId& v : copy.outputs) {
      if (v == kNoValue) continue;
      if (map[size_t(v)] == kNoValue) map[size_t(v)] = g.add_value(prefix + b.value(v).name, b.value(v).type);
      v = map[size_t(v)];
    }
    out.push_back(std::move(copy));
  }
  for (size_t j = 0; j < b.outputs.size(); ++j) {
    ValueId from = map[size_t(b.outputs[j])];
    if (n.outputs[j] == kNoValue || from == n.outputs[j]) continue;
    Node id;
    id.op = OpKind::Identity;
    id.name = prefix + "output_" + std::to_string(j);
    id.inputs = {from};
    id.outputs = {n.outputs[j]};
    out.push_back(std::move(id));
  }
}

}  // namespace

int inline_constant_ifs(Graph& g) {
  int inlined = 0;
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::If && n.has_input(0) && g.value(n.inputs[0]).constant) {
      inline_branch(g, n, out);
      ++inlined;
    } else {
      out.push_back(n);
    }
  }
  if (!inlined) return 0;
  g.set_nodes(std::move(out));
  g.remove_dead();
  return inlined;
}

int fold_and_inline_ifs(Graph& g, const Options& options) {
  int total = 0;
  // Each round removes an If and brings in only the nodes of its branch, nested at most
  // kMaxSubgraphDepth (16) deep at import: the rounds end.
  while (int k = inline_constant_ifs(g)) {
    total += k;
    infer_shapes(g, options, /*fold=*/true);  // the inlined nodes may fold, and decide a nested If
  }
  return total;
}

}  // namespace kiln
