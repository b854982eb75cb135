// The epilogue of a GEMM group as the CPU backend's generated code computes it: statements on `float v`
// (ONNX semantics: Relu keeps NaN) for the template's store hook and the epilogue pass, and the same in
// fp64 for the candidates' check.
#pragma once
#include <string>

#include "ir/graph.h"
#include "schedule/fuse_library.h"

namespace kiln::backend::cpu {

// An activation as a statement on `float v`, and in fp64.
const char* activation_cpp(schedule::LibraryActivation a);
double activation_fp64(schedule::LibraryActivation a, double v);

// Statements on `float v` computing the group's tail (schedule/gemm_tail.h): tail operand i
// (grp.tail_inputs[i]) is the epilogue's extra input x{first_extra + i}, read as x[n] per column or
// x[(b * M + m) * N + n].
std::string tail_cpp(const Graph& g, const schedule::LibraryGroup& grp, int first_extra);

}  // namespace kiln::backend::cpu
