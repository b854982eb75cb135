#include "ops/control/subgraph.h"

namespace kiln::control {

std::vector<TensorType> infer_subgraph(const Graph& g, const std::vector<const TensorType*>& types,
                                       const std::vector<const Tensor*>& values, int64_t max_rank) {
  KILN_INTERNAL_CHECK(types.size() == g.inputs.size() && values.size() == g.inputs.size(),
                      "subgraph '{}': {} inputs given, it has {}", g.name, types.size(), g.inputs.size());
  Graph copy = g;
  for (size_t i = 0; i < types.size(); ++i) {
    Value& v = copy.value(copy.inputs[i]);
    KILN_INTERNAL_CHECK(types[i] != nullptr, "subgraph '{}': input {} has no type", g.name, i);
    v.type = *types[i];
    // Borrowed for this call only: value-dependent sizes (a captured shape) stay exact.
    if (values[i]) v.constant = std::shared_ptr<const Tensor>(std::shared_ptr<const Tensor>{}, values[i]);
  }
  int fresh = first_fresh_symbol(copy);
  for (Node& n : copy.nodes) infer_node_types(copy, n, &fresh, max_rank);
  std::vector<TensorType> out;
  for (ValueId v : copy.outputs) out.push_back(copy.value(v).type);
  return out;
}

std::vector<Tensor> run_subgraph(const Graph& g, std::span<const Tensor* const> inputs, const NodeRunOptions& options) {
  KILN_INTERNAL_CHECK(inputs.size() == g.inputs.size(), "subgraph '{}': {} inputs given, it has {}", g.name,
                      inputs.size(), g.inputs.size());
  std::vector<Tensor> vals(g.values.size());
  std::vector<char> have(g.values.size(), 0);
  auto set = [&](ValueId v, Tensor t) {
    vals[size_t(v)] = std::move(t);
    have[size_t(v)] = 1;
  };
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant) set(static_cast<ValueId>(v), *g.values[v].constant);
  for (size_t i = 0; i < inputs.size(); ++i) set(g.inputs[i], *inputs[i]);
  for (const Node& n : g.nodes) {
    std::vector<const Tensor*> ins;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        ins.push_back(nullptr);
        continue;
      }
      KILN_INTERNAL_CHECK(have[size_t(v)], "subgraph '{}': {} reads a value not computed before it", g.name, g.describe(n));
      ins.push_back(&vals[size_t(v)]);
    }
    std::vector<Tensor> outs = run_node(n, ins, options);
    for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i)
      if (n.outputs[i] != kNoValue) set(n.outputs[i], std::move(outs[i]));
  }
  std::vector<Tensor> out;
  for (ValueId v : g.outputs) {
    KILN_INTERNAL_CHECK(have[size_t(v)], "subgraph '{}': output '{}' was not computed", g.name, g.value(v).name);
    out.push_back(vals[size_t(v)]);
  }
  return out;
}

}  // namespace kiln::control
