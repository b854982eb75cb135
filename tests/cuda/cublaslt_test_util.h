// What the cuBLASLt tests share (cublaslt_test.cpp on the GPU, cublaslt_host_test.cpp everywhere).
#pragma once
#include "backend/cuda/cublaslt.h"

namespace kiln::backend::cuda::testing {

// A plain row-major product m x k times k x n.
inline GemmProblem problem(DType dtype, int64_t m, int64_t n, int64_t k) {
  GemmProblem p;
  p.dtype = dtype;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

}  // namespace kiln::backend::cuda::testing
