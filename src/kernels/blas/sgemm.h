// OpenBLAS's sgemm (Debian's OpenMP build, so it shares kiln's OpenMP threads), for the autotuner's
// "blas" GEMM candidate: the product only; a separate pass applies any epilogue.
#pragma once
#include <cstdint>
#include <string>

namespace kiln::blas {

// C[i] = alpha * op(A[i]) x op(B[i]) for i < batch; every matrix row-major and dense (A [M, K], or
// [K, M] with trans_a; B [K, N], or [N, K] with trans_b; C [M, N]), the i-th `stride_*` elements
// after the first (stride 0: one matrix for every i). Sizes past OpenBLAS's 32-bit int are an
// InternalError: callers check fits() first.
struct SgemmCall {
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  float alpha = 1.f;
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};
bool fits(const SgemmCall& call);
void sgemm(const SgemmCall& call);

// "openblas 0.3.21 SkylakeX": the library's version and the kernel set it picked for this CPU.
std::string version();

}  // namespace kiln::blas
