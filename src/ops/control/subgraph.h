// Subgraphs of control-flow nodes (If's branches, Loop's and Scan's body): their types from the node's
// inputs, and an eager run of their nodes one by one.
#pragma once
#include <set>
#include <span>
#include <string>
#include <vector>

#include "ops/node_runner.h"

namespace kiln::control {

// The types of `g`'s outputs when its inputs have `types` (and, where not nullptr, the constant
// `values`); `g` itself is left as it is. A wrong input count is an internal error (the caller checks).
std::vector<TensorType> infer_subgraph(const Graph& g, const std::vector<const TensorType*>& types,
                                       const std::vector<const Tensor*>& values, int64_t max_rank);

// Runs `g`'s nodes in order through run_node on `inputs` (one per graph input); returns its outputs.
std::vector<Tensor> run_subgraph(const Graph& g, std::span<const Tensor* const> inputs, const NodeRunOptions& options);

// The symbols of the node's input types: a subgraph output dim naming one means the same size outside.
std::set<std::string> outer_symbols(const InferContext& ctx);

// `types` with the symbols a subgraph made itself (numbered by its own counter, which may clash with the
// outer graph's) renamed to fresh ones of the outer graph, one for one.
std::vector<TensorType> with_outer_symbols(InferContext& ctx, std::vector<TensorType> types,
                                           const std::set<std::string>& outer);

// The options to run a subgraph's nodes with: the kernel context's, limits included.
NodeRunOptions subgraph_run_options(const KernelContext& kc);

// Loop's carried values and Scan's state variables: body input in_first + k goes round as body output
// out_first + k (k < count). Infers `body` on `types` (and the constant `values`, nullptr for what
// changes between iterations); a carried dim that the body changes becomes a fresh symbol in `types`
// (marked in `loose`) and the body is inferred again, until it keeps the others. Element types that
// change are user errors, ranks unsupported; `what` names the values ("loop-carried value").
struct CarriedTypes {
  std::vector<TensorType> outputs;        // the body's output types in the last round
  std::vector<std::vector<char>> loose;   // per carried value and dim: its size changes
};
CarriedTypes infer_carried(InferContext& ctx, const Graph& body, std::vector<TensorType>& types,
                           const std::vector<const Tensor*>& values, size_t in_first, size_t out_first, size_t count,
                           const char* what);

// Stacks `parts` (each of `shape`, `dtype`) along a new axis `axis` (0..rank), in reverse order where
// `reverse`; no parts give a tensor of size 0 along it.
Tensor stack(const std::vector<Tensor>& parts, DType dtype, const std::vector<int64_t>& shape, int axis = 0,
             bool reverse = false);
// Entry `index` of `t` along `axis`, that axis removed (a copy).
Tensor slice_axis(const Tensor& t, int axis, int64_t index);

}  // namespace kiln::control
