// Vectorised f32 transcendental functions over arrays (y[i] = f(x[i])), used by the eager f32 kernels.
// They use Sleef's 1-ulp ("u10") AVX-512 / AVX2 functions when the CPU and the library allow, and scalar
// libm otherwise. Sleef keeps IEEE special cases (NaN in -> NaN out, exp(+-Inf) = Inf / 0,
// erf/tanh(+-Inf) = +-1). The fp64 reference path never calls these (it uses plain libm).
// x and y may be the same array.
#pragma once
#include <cstdint>
#include <optional>

namespace kiln::elementwise {

enum class VecFn { exp, log, erf, tanh };

void vector_math_f32(VecFn fn, const float* x, float* y, int64_t n);
// sigmoid(x) = 1 / (1 + exp(-x)), through the vectorised exp.
void vector_sigmoid_f32(const float* x, float* y, int64_t n);

// IEEE sqrt (correctly rounded, NaN for negative x), vectorised: libm's sqrtf keeps errno, so a
// plain loop over std::sqrt does not vectorise without -fno-math-errno.
void vector_sqrt_f32(const float* x, float* y, int64_t n);

// Which implementation runs on this machine: "avx512", "avx2" or "scalar" (for tests and logs).
const char* vector_math_backend();

// One named implementation, for tests: false (nothing written) where this CPU or the loaded library
// cannot run it. fn == nullopt means sigmoid.
enum class VecBackend { avx512, avx2, scalar };
bool vector_math_f32_on(VecBackend backend, std::optional<VecFn> fn, const float* x, float* y, int64_t n);

}  // namespace kiln::elementwise
