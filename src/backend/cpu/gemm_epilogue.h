// A GEMM group's epilogue as the CPU backend's generated code computes it: C++ printed from the one
// epilogue expression (schedule/gemm_tail.h: epilogue_expr, tail_expr), for the template's store hook
// and the epilogue passes. Statements work on `float v` with the hook's names (M, N, b, m, n, x0, x1...).
#pragma once
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "loops/pointwise.h"
#include "schedule/fuse_library.h"

namespace kiln::backend::cpu {

// " v = <e>;" with loads[i] the C++ text of load i; empty when e is load 0 alone.
std::string epilogue_cpp(const loops::ScalarExpr& e, const std::vector<std::string>& loads);

// The store hook's body for the whole epilogue of a group (epilogue_expr): the residual is extra input
// x0, read at [m * N + n] ([(b * M + m) * N + n] when batched), and tail operand i is x{1 + i} (x{i}
// without a residual), read as x[n] per column or x[(b * M + m) * N + n].
std::string group_epilogue_cpp(const Graph& g, const schedule::LibraryGroup& grp, bool batched);

// The tail alone (tail_expr), as a pass after a library's post-ops: tail operand i is x{first_extra + i}.
std::string tail_cpp(const Graph& g, const schedule::LibraryGroup& grp, int first_extra);

// One activation of v as a statement, and in fp64 (kiln sweep gemm's GELU epilogue).
std::string activation_cpp(schedule::LibraryActivation a);
double activation_fp64(schedule::LibraryActivation a, double v);

}  // namespace kiln::backend::cpu
