// The tail of a GEMM library group: pointwise consumers after the post-ops a library can fuse (a
// chain of f32 elementwise nodes, each reading the running value once and at most one other operand:
// a scalar constant, a constant per output column, or a computed tensor of the output's type). kiln's
// GEMM candidates apply it as generated code: in the template's store hook, or as a pass after a
// library's product. Only groups the autotuner tunes get a tail (fuse_library.h).
#pragma once
#include <string>
#include <vector>

#include "kiln/graph.h"
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

// The one representation of a MatMul / Gemm group's epilogue: everything after alpha * A x B + bias
// as one scalar expression (the activation, the residual Add, the Relu after it, the tail). Load 0 is
// alpha * A x B + bias, load 1 the residual when the group has one, then one load per tail operand.
// The template's store hook, the epilogue passes and the candidates' fp64 check all derive from it
// (the CPU backend prints it as C++, expr_fp64 evaluates it); oneDNN's post-ops are the group's act,
// residual and act_after, which this expression computes the same way.
loops::ScalarExpr epilogue_expr(const Graph& g, const LibraryGroup& grp);
// An activation of `x` as the epilogue computes it (GELU in the exporters' erf and tanh forms).
loops::ScalarExpr activation_expr(LibraryActivation a, const loops::ScalarExpr& x);
// Whether the expression is just load 0 (no epilogue past the bias).
bool is_identity(const loops::ScalarExpr& e);
// An epilogue expression in fp64 for one element, with ONNX semantics (Relu keeps NaN, Max and Min
// propagate it); loads[i] is load i.
double expr_fp64(const loops::ScalarExpr& e, const std::vector<double>& loads);

}  // namespace kiln::schedule
