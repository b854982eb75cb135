// Subgraphs of control-flow nodes (If's branches): their types from the node's inputs, and an eager
// run of their nodes one by one.
#pragma once
#include <span>
#include <vector>

#include "ops/node_runner.h"

namespace kiln::control {

// The types of `g`'s outputs when its inputs have `types` (and, where not nullptr, the constant
// `values`); `g` itself is left as it is. A wrong input count is an internal error (the caller checks).
std::vector<TensorType> infer_subgraph(const Graph& g, const std::vector<const TensorType*>& types,
                                       const std::vector<const Tensor*>& values, int64_t max_rank);

// Runs `g`'s nodes in order through run_node on `inputs` (one per graph input); returns its outputs.
std::vector<Tensor> run_subgraph(const Graph& g, std::span<const Tensor* const> inputs, const NodeRunOptions& options);

}  // namespace kiln::control
