#include "codegen/cpu/vector_math.h"

namespace kiln::codegen::cpu {

// Placeholder until the vectorisable polynomials land: the scalar libm functions.
std::string_view vector_math_prelude() {
  return R"(#include <cmath>
template <class T> static inline T kiln_exp(T x) { return std::exp(x); }
template <class T> static inline T kiln_log(T x) { return std::log(x); }
template <class T> static inline T kiln_erf(T x) { return std::erf(x); }
template <class T> static inline T kiln_tanh(T x) { return std::tanh(x); }
template <class T> static inline T kiln_sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}
)";
}

}  // namespace kiln::codegen::cpu
