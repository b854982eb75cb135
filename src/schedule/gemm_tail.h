// The tail of a GEMM library group: pointwise consumers after the post-ops a library can fuse (a
// chain of f32 elementwise nodes, each reading the running value once and at most one other operand:
// a scalar constant, a constant per output column, or a computed tensor of the output's type). kiln's
// GEMM candidates apply it as generated code: in the template's store hook, or as a pass after a
// library's product. Only groups the autotuner tunes get a tail (fuse_library.h).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "loops/pointwise.h"
#include "schedule/fuse_library.h"

namespace kiln::schedule {

// Whether `n` can extend a tail whose running value is `cur` (the group's output so far); then `out`
// is its output, `operand` its other non-scalar operand (kNoValue: none).
bool tail_node_ok(const Graph& g, const Node& n, ValueId cur, ValueId& out, ValueId& operand);

// Whether a tail operand is one value per output column (else a full tensor of the output's type).
bool tail_operand_per_column(const Graph& g, ValueId operand);

// The tail as a scalar expression: load 0 is the value before the tail, load i + 1 tail operand i.
loops::ScalarExpr tail_expr(const Graph& g, const LibraryGroup& grp);
// That expression in fp64 for one element (ONNX semantics): v before the tail, operands[i] tail
// operand i at this element.
double tail_fp64(const loops::ScalarExpr& tail, double v, const std::vector<double>& operands);

}  // namespace kiln::schedule
