// The plain (library-free) matrix product used by MatMul and Gemm for the fp64 reference, integer
// dtypes and any f32 case oneDNN refuses. Accumulates in acc_t<T> (double for the reference).
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/common.h"

namespace kiln::linalg_ops {

// acc[j] += a * x[j]; vectorised per CPU for the float types.
void axpy_row(double* acc, const double* x, double a, int64_t n);
void axpy_row(float* acc, const float* x, float a, int64_t n);

// Integer products wrap (two's complement, as numpy) instead of overflowing.
template <class T>
inline acc_t<T> mul_add(acc_t<T> acc, T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return acc + static_cast<acc_t<T>>(x) * static_cast<acc_t<T>>(y);
  } else {
    return static_cast<int64_t>(static_cast<uint64_t>(acc) +
                                static_cast<uint64_t>(static_cast<int64_t>(x)) * static_cast<uint64_t>(static_cast<int64_t>(y)));
  }
}

// One output row: acc[j] = sum_k a[k * a_k] * b[k * b_k + j * b_n] for j in [0, N).
template <class T>
void product_row(const T* a, int64_t a_k, const T* b, int64_t b_k, int64_t b_n, int64_t K, int64_t N, acc_t<T>* acc) {
  for (int64_t j = 0; j < N; ++j) acc[j] = acc_t<T>{0};
  for (int64_t k = 0; k < K; ++k) {
    T av = a[k * a_k];
    const T* brow = b + k * b_k;
    if constexpr (std::is_floating_point_v<T>) {
      if (b_n == 1) {
        axpy_row(acc, brow, av, N);
        continue;
      }
    }
    for (int64_t j = 0; j < N; ++j) acc[j] = mul_add<T>(acc[j], av, brow[j * b_n]);
  }
}

}  // namespace kiln::linalg_ops
