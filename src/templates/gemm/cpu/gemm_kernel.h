// A compiled GEMM template kernel, ready to call: compiles through the kernel cache, keeps the packed
// copy of constant weights, and calls the entry point. Copies share the compiled code and the packed B.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "codegen/cpu/compile_kernels.h"
#include "kiln/options.h"
#include "templates/gemm/cpu/gemm_template.h"

namespace kiln::templates::gemm {

struct GemmSpec {
  GemmProblem problem;
  GemmConfig config;
  GemmEpilogue epilogue;
};

class GemmKernel {
 public:
  // Compiles every spec at once (cache hits first, misses in parallel) for `features` (default: this CPU).
  static std::vector<GemmKernel> compile(const std::vector<GemmSpec>& specs, const Options& options);
  static std::vector<GemmKernel> compile(const std::vector<GemmSpec>& specs, const Options& options,
                                         const codegen::cpu::CpuFeatures& features);

  // Wraps a kernel compiled elsewhere (emit_gemm's source built together with other kernels).
  static GemmKernel wrap(const GemmSpec& spec, codegen::cpu::CompiledKernel compiled);

  const GemmSpec& spec() const { return spec_; }
  const codegen::cpu::CompiledKernel& compiled() const { return *kernel_; }

  // Constant weights (problem.b_constant): packs B (laid out as the problem says) into a 64-byte aligned
  // buffer owned here. Must be called before run().
  void set_constant_b(const float* B);

  // C = epilogue(alpha * A x B + beta * bias). `B` is ignored for constant weights (the packed copy is
  // used). M: the run-time rows (ignored when the problem's M is constant). nthreads <= 0: OpenMP's default.
  void run(const float* bias, const float* A, const float* B, float* C, int64_t M,
           const void* const* extra = nullptr, int nthreads = 0) const;

 private:
  using Entry = void(const float*, const float*, const float*, float*, int64_t, const void* const*, int);
  GemmSpec spec_;
  std::shared_ptr<const codegen::cpu::CompiledKernel> kernel_;
  Entry* entry_ = nullptr;
  std::shared_ptr<float> packed_b_;
};

}  // namespace kiln::templates::gemm
