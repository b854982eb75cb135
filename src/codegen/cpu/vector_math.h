// Math functions for generated kernels that the compiler can vectorise inside `omp simd` loops
// (std::exp and friends stay scalar calls without -ffast-math, which kiln never uses).
//
// vector_math_prelude() is C++ text that defines, for float and double:
//   kiln_exp(x)  kiln_log(x)  kiln_erf(x)  kiln_tanh(x)  kiln_sigmoid(x)
//   kiln_exp_nonpos(x)  (exp for x <= 0 or NaN only, where a kernel proved that range)
// as inline, branch-free functions (no libm calls). Maximum errors, in ulp of the exact result, for float
// and double alike (below the normal range: in units of the smallest subnormal, an absolute bound):
//   exp 1.5, log 1.5, erf 2, tanh 3, sigmoid 3; special values (NaN, +-inf, +-0, overflow, log of
//   zero and negatives) are exact. They are stated next to each definition and asserted by
//   tests/codegen/vector_math_test.cpp.
#pragma once
#include <string_view>

namespace kiln::codegen::cpu {

std::string_view vector_math_prelude();

}  // namespace kiln::codegen::cpu
