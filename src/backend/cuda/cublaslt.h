// cuBLASLt, NVIDIA's matmul library, opened with dlopen on first use (never linked), and LtMatmul: one
// row-major matmul D = alpha * op(A) op(B) (+ bias) (+ R), batched, on one device. cublasLt.h gives only
// the types and the entry points' signatures.
//
// Row-major through cuBLASLt's column-major: a row-major [r, c] matrix is the column-major [c, r] one
// with the same leading dimension, so kiln's D = A B is given to cuBLASLt as D^T = B^T A^T (operands
// swapped, every layout's rows and columns exchanged). The bias along n (one value per column of D) is
// then cuBLASLt's bias along the rows of D^T, which is what its BIAS epilogue broadcasts.
#pragma once
#include <cublasLt.h>
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cuda/cuda_objects.h"
#include "kiln/dtype.h"

namespace kiln::backend::cuda {

struct CublasLtApi {
  decltype(&::cublasLtGetVersion) cublasLtGetVersion = nullptr;
  decltype(&::cublasLtGetStatusName) cublasLtGetStatusName = nullptr;
  decltype(&::cublasLtGetStatusString) cublasLtGetStatusString = nullptr;
  decltype(&::cublasLtCreate) cublasLtCreate = nullptr;
  decltype(&::cublasLtDestroy) cublasLtDestroy = nullptr;
  decltype(&::cublasLtMatmulDescInit_internal) cublasLtMatmulDescInit_internal = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) cublasLtMatmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutInit_internal) cublasLtMatrixLayoutInit_internal = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) cublasLtMatrixLayoutSetAttribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) cublasLtMatmulPreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) cublasLtMatmulPreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) cublasLtMatmulPreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) cublasLtMatmulAlgoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmul) cublasLtMatmul = nullptr;

  std::string library;  // the name that opened it ("libcublasLt.so.13")
  size_t version = 0;   // cublasLtGetVersion: 10000 * major + 100 * minor + patch (130100 is 13.1.0)
};

// Where cuBLASLt is looked for, in order: the soname of the toolkit kiln was built with
// ("libcublasLt.so.13"), the unversioned name, then the same two in that toolkit's lib64 folder.
std::vector<std::string> cublaslt_library_candidates();

// cuBLASLt, loaded on the first call from any thread. No library among the candidates, or one of another
// major version than cublasLt.h's (its enums and structs are that version's ABI), is a UserError naming
// each candidate tried; the failure is kept and thrown again on each later call. Needs no GPU.
const CublasLtApi& cublaslt();

// cublaslt()'s work on candidates of the caller's choosing (tests pass names that do not exist).
CublasLtApi load_cublaslt(const std::vector<std::string>& candidates);

// Whether cuBLASLt loads here; when it does not, `why` gets the reason (for tests that skip).
bool cublaslt_available(std::string* why = nullptr);

// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)", from the library's own
// tables when it is loaded.
std::string describe_status(cublasStatus_t status);

// Throws when `status` is not CUBLAS_STATUS_SUCCESS: "device cuda: <call>: <status>". Out of memory, no
// usable GPU and an architecture cuBLASLt does not support are UserErrors; anything else is an
// InternalError (kiln configured cuBLASLt wrongly).
void check_cublas(cublasStatus_t status, std::string_view call);
bool is_machine_status(cublasStatus_t status);  // the statuses check_cublas makes UserErrors

// Epilogues applied to every element of D after alpha * A B (+ R). GELU is not offered: cuBLASLt's is the
// tanh approximation, and kiln applies the exact erf form in its own kernel. The ReLU forms are refused
// unless GemmProblem::relu_may_clip_nan: cuBLASLt documents its ReLU as max(x, 0), and a GPU max returns
// the number when one operand is NaN, while ONNX Relu(NaN) is NaN. The backend applies ReLU in its own
// kernel; the GPU test shows what cuBLASLt's does with NaN on the machine it runs on.
enum class GemmEpilogue { none, relu, bias, bias_relu };

struct GemmProblem {
  DType dtype = DType::f32;  // of A, B, R, D and bias: f32, bf16 or f16 (bf16 and f16 accumulate in fp32)
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false;  // row-major A is [m, k], or [k, m] when trans_a
  bool trans_b = false;  // row-major B is [k, n], or [n, k] when trans_b (ONNX Gemm transB, Linear weights)
  // In elements; 0 broadcasts one matrix to every batch. D is dense [batch, m, n].
  int64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_residual = 0;
  bool residual = false;  // D = alpha A B (+ bias) + R, R [m, n] row-major per batch (cuBLASLt's C, beta 1)
  GemmEpilogue epilogue = GemmEpilogue::none;  // bias: a dense [n] vector added to every row of D
  bool allow_tf32 = false;  // f32 only: TF32 tensor cores. Otherwise IEEE fp32 (see LtMatmul::compute_type)
  float alpha = 1.0f;       // ONNX Gemm alpha; the residual's beta is 1
  // Every pointer run() is given is a multiple of this (bytes, a power of two, at least the element
  // size). cuBLASLt's heuristic picks kernels for it; run() refuses a pointer that is not.
  uint32_t pointer_alignment = 256;
  bool relu_may_clip_nan = false;  // accept cuBLASLt's ReLU epilogues (see GemmEpilogue)
};

// "f32 batch 4 [7,29]x[29,13] trans_b stride_a 203 stride_b 0 bias residual(stride 91) alpha 0.5", for
// errors and dumps.
std::string describe(const GemmProblem& problem);
std::string_view epilogue_name(GemmEpilogue epilogue);
inline bool adds_bias(GemmEpilogue e) { return e == GemmEpilogue::bias || e == GemmEpilogue::bias_relu; }

// An InternalError naming the problem when it is not one LtMatmul takes: another dtype, a negative size
// or stride, TF32 for a 16-bit type, k == 0 with a non-empty D (cuBLASLt has no k == 0 matmul; the
// backend writes D = bias + R, or 0, itself), a size past cuBLASLt's int32 range, a ReLU epilogue
// without relu_may_clip_nan, a residual stride without a residual, a bad pointer_alignment.
void validate(const GemmProblem& problem);

// True when the product has no elements (batch, m or n is 0): LtMatmul then launches nothing.
bool is_empty(const GemmProblem& problem);

// The column-major problem cuBLASLt is given (host-side, for tests and dumps): D^T = op(B^T) op(A^T).
// `first` is kiln's B, `second` kiln's A. A batch whose B is shared (stride 0) and whose A, R and D are
// dense and consecutive is folded into one matmul of batch * m rows (one larger GEMM, better kernels).
struct LtLayout {
  int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;  // column-major, in elements
};
struct LtShape {
  int64_t batch = 1;
  bool trans_first = false, trans_second = false;  // cuBLASLt's TRANSA, TRANSB
  LtLayout first, second, c, d;
  bool folded = false;  // the batch became rows (see above)
};
LtShape column_major_shape(const GemmProblem& problem);  // validate()s first

// Descriptors and the heuristic's algorithms for one problem on one device. run() is const and
// thread-safe: each call builds its own operation descriptor (the bias pointer lives there); the
// layouts and algorithms are only read. Movable; holds the device's cuBLASLt handle (one per context,
// created on first use, destroyed with the last LtMatmul of that context).
class LtMatmul {
 public:
  // Asks the heuristic for up to `max_algorithms` algorithms that need at most `workspace_limit` bytes of
  // workspace. None is an InternalError naming the problem and cuBLASLt's status (or a UserError when the
  // machine is the problem). An empty problem has one algorithm that does nothing.
  LtMatmul(const Context& context, const GemmProblem& problem, int max_algorithms = 8,
           size_t workspace_limit = size_t{32} << 20);
  ~LtMatmul();
  LtMatmul(LtMatmul&&) noexcept;
  LtMatmul& operator=(LtMatmul&&) noexcept;

  const GemmProblem& problem() const;
  int algorithms() const;  // >= 1, best first (the heuristic's order)
  size_t workspace_bytes(int algorithm) const;
  size_t max_workspace_bytes() const;  // over all algorithms
  // CUBLAS_COMPUTE_32F_PEDANTIC for f32 where this cuBLASLt has kernels for it (else CUBLAS_COMPUTE_32F,
  // which without a fast mode is IEEE fp32 too), CUBLAS_COMPUTE_32F_FAST_TF32 with allow_tf32, and
  // CUBLAS_COMPUTE_32F for bf16 and f16.
  cublasComputeType_t compute_type() const;
  std::string summary() const;  // describe(problem), the compute type, each algorithm's workspace

  // Enqueues D = ... on `stream` (of this LtMatmul's device). `bias` is read with a bias epilogue and
  // `residual` with problem().residual; other pointers may be 0. `workspace` must hold at least
  // workspace_bytes(algorithm). Each pointer must be a multiple of problem().pointer_alignment. The
  // buffers must stay alive until the stream reaches this work.
  void run(const Stream& stream, int algorithm, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias, CUdeviceptr residual,
           CUdeviceptr d, CUdeviceptr workspace, size_t workspace_bytes) const;

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
};

}  // namespace kiln::backend::cuda
