// Which graph nodes a generated kernel can compute element by element, and their scalar expressions.
// Shared by every fusion pass (pointwise groups, and the pointwise producers and consumers that join a
// reduction kernel), so that an op means the same thing in each.
#pragma once
#include <vector>

#include "kiln/graph.h"
#include "loops/pointwise.h"

namespace kiln::schedule {

// An elementwise node whose op and dtypes the scalar IR handles (shapes are not checked here: each
// pass decides which broadcasts it reads by index).
bool pointwise_node_supported(const Graph& g, const Node& n);

// The node's value from its operands' values (same order as n.inputs); n must be supported.
loops::ScalarExpr pointwise_node_expr(const Node& n, const std::vector<loops::ScalarExpr>& operands);

}  // namespace kiln::schedule
