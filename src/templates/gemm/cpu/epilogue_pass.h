// A GEMM's epilogue as a pass of its own over a finished product C (for library GEMMs that cannot take
// kiln's epilogue: OpenBLAS, oneDNN without post-ops). The same problem and epilogue text as the
// template's store hook (gemm_template.h), so both compute the same values; but C is read back from
// memory after the product instead of while its tile is in L1.
//
//   C[b][m, n] = body(C[b][m, n] + beta * bias)   (alpha is the library's: C already holds alpha * A x B)
//
// Entry point (extern "C"):
//   void kiln_gemm_epilogue(const float* bias, float* C, int64_t M, const void* const* extra, int nthreads)
#pragma once
#include <memory>
#include <vector>

#include "codegen/cpu/compile_kernels.h"
#include "kiln/options.h"
#include "templates/gemm/cpu/gemm_template.h"

namespace kiln::templates::gemm {

// Whether the problem's epilogue changes anything besides alpha (else no pass is needed).
bool has_epilogue_pass(const GemmProblem& problem, const GemmEpilogue& epilogue);

codegen::cpu::KernelSource emit_epilogue_pass(const GemmProblem& problem, const GemmEpilogue& epilogue);

class EpiloguePass {
 public:
  // Compiles through the kernel cache (this CPU's features).
  static EpiloguePass compile(const GemmProblem& problem, const GemmEpilogue& epilogue, const Options& options);
  // M: the run-time rows (ignored when the problem's M is constant). nthreads <= 0: OpenMP's default.
  void run(const float* bias, float* C, int64_t M, const void* const* extra = nullptr, int nthreads = 0) const;

 private:
  using Entry = void(const float*, float*, int64_t, const void* const*, int);
  std::shared_ptr<const codegen::cpu::CompiledKernel> kernel_;
  Entry* entry_ = nullptr;
};

}  // namespace kiln::templates::gemm
