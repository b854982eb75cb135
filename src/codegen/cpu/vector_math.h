// Math functions for generated kernels that the compiler can vectorise inside `omp simd` loops
// (std::exp and friends stay scalar calls without -ffast-math, which kiln never uses).
//
// vector_math_prelude() is C++ text that defines, for float and double:
//   kiln_exp(x)  kiln_log(x)  kiln_erf(x)  kiln_tanh(x)  kiln_sigmoid(x)
// as inline, branch-free functions. Their maximum errors against the correctly rounded result are
// stated next to each definition and checked by tests/codegen/vector_math_test.cpp.
#pragma once
#include <string_view>

namespace kiln::codegen::cpu {

std::string_view vector_math_prelude();

}  // namespace kiln::codegen::cpu
