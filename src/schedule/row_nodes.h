// The reduction nodes a row kernel computes (a part of fuse_rows, see fuse_rows.h): which nodes, over
// which domain, and their scalar expressions in terms of row reductions.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "kiln/graph.h"
#include "loops/row_kernel.h"

namespace kiln::schedule {

// A reduction node's view of its input: the domain (the input's shape) reduced from dim `p` on.
struct RowSplit {
  Shape domain;
  int p = 0;
  bool is_reduce = false;   // a Reduce* node (one row value per row), not Softmax/LayerNorm
  bool keepdims = true;     // Reduce*: the output keeps the reduced dims as 1s
};

// The node's split when a row kernel can compute it (supported op, dtypes, axes), else nullopt.
std::optional<RowSplit> row_split(const Graph& g, const Node& n, const std::vector<int>& uses);

// Whether the Gather / GatherElements node `n` reads exactly one column per row of its data (input 0:
// a row group's elements value over `split`'s domain, one reduced dim) along the last axis, so that
// the group can end in it as a rows output read at that column (loops::RowKernel::gather_column):
//   GatherElements(data, idx [rows..., 1], axis = -1) -> [rows..., 1]  (NLL's pattern);
//   Gather(data, idx [] or [1], axis = -1) -> [rows...] or [rows..., 1].
// Indices i32 / i64; a constant idx must be in range for a static width (else eager reports it).
bool row_gather_fits(const Graph& g, const Node& n, const RowSplit& split);
bool is_row_gather_op(const Node& n);

// Appends a reduction (kind, body) to the kernel under construction and returns its result's leaf.
using AddReduction = std::function<loops::ScalarExpr(loops::RowReduceKind, const loops::ScalarExpr&)>;

// The node's output 0 from its inputs' values (nullopt entries for omitted optional inputs).
loops::ScalarExpr row_node_expr(const Node& n, const std::vector<std::optional<loops::ScalarExpr>>& inputs,
                                const AddReduction& reduce);

}  // namespace kiln::schedule
