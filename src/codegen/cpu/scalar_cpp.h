// The C++ text of scalar IR operations, shared by every kernel emitter (pointwise and row kernels),
// so that an operation means the same thing in each.
//
// Every operand is computed for every element (Where computes both branches), so no helper may trap:
// integer x / 0 is 0 and MIN / -1 wraps; a NaN or out-of-range float cast to an integer gives the
// type's minimum. Max and Min return NaN when either side is NaN. exp, log, erf, tanh and sigmoid
// come from vector_math_prelude().
#pragma once
#include <string>
#include <string_view>

#include "loops/pointwise.h"

namespace kiln::codegen::cpu {

// Helper templates every kernel includes (kiln_max_nan, kiln_wrap_add, kiln_int_div, ...).
std::string_view scalar_prelude();

std::string c_type(DType t);
// Exact and locale-independent: hex floats for finite values, builtins for NaN and infinities.
std::string literal(double v, DType t);

// The expression computing `e` (a Unary, Binary, Where or Cast node) from its operands' texts.
std::string operation_cpp(const loops::ScalarExpr& e, const std::vector<std::string>& operands);

// A load of input `input` at `index`. bool data is read as bytes: GCC 12 does not vectorise loads of
// `bool` (an 8-bit mask type to it).
std::string load_cpp(int input, DType dtype, const std::string& index);

}  // namespace kiln::codegen::cpu
