// Type inference of one node from its inputs' types (and values where known): the step that
// infer_shapes runs for each node of a graph, and If runs for each node of a branch.
#include <cstdlib>

#include "ops/registry.h"

namespace kiln {

int first_fresh_symbol(const Graph& g) {
  int fresh = 0;
  for (const Value& v : g.values)
    for (const Dim& d : v.type.shape)
      if (d.symbol.rfind("_d", 0) == 0) fresh = std::max(fresh, std::atoi(d.symbol.c_str() + 2) + 1);
  return fresh;
}

void infer_node_types(Graph& g, Node& n, int* fresh, int64_t max_rank) {
  const OpDef* def = op_registry().find(n.op);
  if (!def) unsupported("{}: operator {} is not supported", g.describe(n), op_name(n.op));
  int count = static_cast<int>(n.inputs.size());
  if (count < def->min_inputs || (def->max_inputs >= 0 && count > def->max_inputs))
    user_error("{}: has {} inputs, expected {}..{}", g.describe(n), count, def->min_inputs,
               def->max_inputs < 0 ? std::string("any") : std::to_string(def->max_inputs));
  // Every operator makes at least one output; a node without any would reach kernels that write
  // out[0] when its inputs are constant (found by fuzzing).
  if (n.outputs.empty()) user_error("{}: has no outputs", g.describe(n));
  std::vector<const TensorType*> types;
  std::vector<const Tensor*> vals;
  for (ValueId v : n.inputs) {
    types.push_back(v == kNoValue ? nullptr : &g.value(v).type);
    vals.push_back(v == kNoValue ? nullptr : g.value(v).constant.get());
  }
  InferContext ctx(n, std::move(types), std::move(vals), fresh, max_rank);
  std::vector<TensorType> out = def->infer(ctx);
  // A node with more outputs than its operator makes is the model's fault (found by fuzzing).
  if (out.size() < n.outputs.size())
    user_error("{}: has {} outputs, but {} produces {}", g.describe(n), n.outputs.size(), op_name(n.op), out.size());
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (n.outputs[i] == kNoValue) continue;
    if (out[i].rank() > max_rank)
      user_error("{}: output rank {} exceeds max_rank {}", g.describe(n), out[i].rank(), max_rank);
    g.value(n.outputs[i]).type = out[i];
  }
}

}  // namespace kiln
