// Reductions along the trailing axes fused with the pointwise nodes around them, one generated row
// kernel (loops::RowKernel) per group.
//
// A group grows from a reduction node (the anchor), in topological order:
//   Softmax / LogSoftmax whose axis is the last non-trivial one (the dims after it are static 1);
//   LayerNormalization (any axis: it normalises the trailing dims) when only its output Y is used;
//   ReduceSum / ReduceMean / ReduceMax / ReduceMin whose reduced axes are trailing (static-1 dims may
//   sit among them), with constant or omitted axes and keepdims 0 or 1.
// The anchor's input shape is the kernel's domain. Then:
//   downstream: the earliest consumer of a group value is taken while it is a pointwise node whose
//     operands fit the domain (each dim the domain's or a static 1) or a Reduce* over the same domain
//     and axes (so the decomposed LayerNorm ReduceMean -> Sub -> Pow -> ReduceMean -> Add -> Sqrt -> Div
//     -> Mul -> Add becomes one kernel with two reductions); the largest prefix in which only the last
//     node's value leaves the group is kept. A keepdims=0 reduction ends the group (its value does not
//     broadcast against the domain).
//   gather: a LogSoftmax (or any group) whose last value's sole consumer is GatherElements(idx
//     [rows..., 1], last axis) or Gather(scalar or [1] index, last axis) takes it: the kernel writes
//     one value per row, read at the gathered column only after the reductions (an index outside
//     [-C, C) known at compile time leaves the pair eager; one found at run time gives NaN).
//   upstream: a pointwise producer whose value fits the domain, is no graph output, and is used only
//     inside the group is computed in the kernel, recomputed per element that reads it (bert's
//     attention mask Where over [1,1,S,S] is recomputed for each of the 12 heads).
// Only f32 and f64 reductions; nodes with claimed[id] != 0 are never used, and a node belongs to at
// most one group.
#pragma once
#include <vector>

#include "kiln/graph.h"
#include "loops/row_kernel.h"
#include "schedule/fuse_pointwise.h"
#include "schedule/fusion_target.h"

namespace kiln::schedule {

struct RowGroup {
  std::vector<NodeId> nodes;    // in topological order; the last one makes `output`
  std::vector<ValueId> inputs;  // external inputs, in kernel input order
  ValueId output = kNoValue;
  std::vector<SymbolSource> symbols;  // in kernel_symbols(kernel) order
  loops::RowKernel kernel;
  // Rows at least this long are split across threads: the router's split width (the target's
  // softmax_split_width) for a Softmax / LogSoftmax group, the default otherwise.
  int64_t split_min_cols = loops::kRowSplitMinCols;
};

std::vector<RowGroup> find_row_groups(const Graph& g, const std::vector<char>& claimed);
// The same, with the router's decisions: a Softmax / LogSoftmax whose route in target.routes is not
// `fused` is left alone. (The overload without a target fuses every one.)
std::vector<RowGroup> find_row_groups(const Graph& g, const std::vector<char>& claimed, const FusionTarget& target);

}  // namespace kiln::schedule
