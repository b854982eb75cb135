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
// The f16 / bf16 conversions (kiln_f16_to_f32, kiln_f32_to_bf16, kiln_round_f16, ...), which only a
// kernel that touches a half value includes (so that f32 kernels keep their text, and their cache keys).
std::string_view half_prelude();
// Whether a kernel touches a half value: an input, its output, or any node of its expression trees.
bool touches_half(const std::vector<loops::TensorDesc>& inputs, DType output,
                  const std::vector<loops::ScalarExpr>& roots);

// The type a value is computed in: float for f16 and bf16 (storage types, widened at each load).
std::string c_type(DType t);
// The type of a kernel's input and output elements: uint16_t words for f16 / bf16, uint8_t for bool.
std::string storage_type(DType t);
// Exact and locale-independent: hex floats for finite values, builtins for NaN and infinities.
std::string literal(double v, DType t);

// The expression computing `e` (a Unary, Binary, Where or Cast node) from its operands' texts.
std::string operation_cpp(const loops::ScalarExpr& e, const std::vector<std::string>& operands);

// A load of input `input` at `index`. bool data is read as bytes: GCC 12 does not vectorise loads of
// `bool` (an 8-bit mask type to it).
std::string load_cpp(int input, DType dtype, const std::string& index);
// The stored form of `value` (computed as c_type(dtype)): a half type narrowed, others as they are.
std::string store_cpp(DType dtype, const std::string& value);
// The row length `cols` (an int64_t) as a value of dtype t (a Cast from i64).
std::string row_length_cpp(DType t);

}  // namespace kiln::codegen::cpu
