// The reduction nodes a row kernel computes (a part of fuse_rows, see fuse_rows.h): which nodes, over
// which domain, and their scalar expressions in terms of row reductions.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "ir/graph.h"
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

// Appends a reduction (kind, body) to the kernel under construction and returns its result's leaf.
using AddReduction = std::function<loops::ScalarExpr(loops::RowReduceKind, const loops::ScalarExpr&)>;

// The node's output 0 from its inputs' values (nullopt entries for omitted optional inputs).
loops::ScalarExpr row_node_expr(const Node& n, const std::vector<std::optional<loops::ScalarExpr>>& inputs,
                                const AddReduction& reduce);

}  // namespace kiln::schedule
