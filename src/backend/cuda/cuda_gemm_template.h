// The tensor-core GEMM template (cuda_gemm_template_source.h) compiled for one spec through the module
// cache and launched on device pointers, its grid computed from each call's sizes (M may change from
// call to call without recompiling). The default configs are in cuda_gemm_template_source.h.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "backend/cuda/cubin_cache.h"
#include "backend/cuda/cuda_gemm_template_source.h"
#include "backend/cuda/cuda_objects.h"

namespace kiln::backend::cuda {

class ModuleCache;

// One product C = epilogue(A B): A [m,k] (row stride lda), B [k,n] or, with trans_b, [n,k] (row stride
// ldb), C and the residual [m,n] (row strides ldc, ldr), bias an fp32 [n] vector. Pointers the
// epilogue does not read may be 0. workspace: at least workspace_bytes(m, n) (0 without a reduce kernel).
// row_norm (GemmTemplateEpilogue): norm_colsum an fp32 [n] vector (sum over K of B's row n); norm_y, if
// not 0, receives LayerNorm(A) [m,k] (row stride ldy) from fp32 [k] vectors norm_gamma and norm_beta.
struct GemmTemplateArgs {
  CUdeviceptr a = 0, b = 0, c = 0, bias = 0, residual = 0, workspace = 0;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0, ldr = 0;
  size_t workspace_bytes = 0;
  CUdeviceptr norm_colsum = 0, norm_gamma = 0, norm_beta = 0, norm_y = 0;
  int64_t ldy = 0;
  float norm_eps = 0.0f;
};

// The unit GemmTemplateKernel compiles for `spec`, named by its content: compile many at once with
// compile_cubins and ModuleCache::add them (the constructor then finds them loaded).
CudaUnit gemm_template_unit(const GemmTemplateSpec& spec);

// Whether a kernel of `spec` takes these operands: always for mma_sync; wgmma reads A and B through the
// TMA, which needs 16-byte aligned addresses and row strides (a multiple of 8 elements) and sizes under
// 2^31. (GemmTemplateKernel::accepts, without building the kernel.)
bool gemm_template_accepts(const GemmTemplateSpec& spec, const GemmTemplateArgs& args);

class GemmTemplateKernel {
 public:
  // Compiles (or finds in the cache) the spec's kernels for the cache's device. A config whose shared
  // memory exceeds what the device gives a block is a UserError naming both (the caller drops it).
  GemmTemplateKernel(const GemmTemplateSpec& spec, const Context& context, ModuleCache& modules);

  const GemmTemplateSpec& spec() const { return spec_; }
  size_t workspace_bytes(int64_t m, int64_t n) const;  // 0 without split-K or with a cluster reduce
  // Enqueues the product (and with split-K the reduction) on `stream`. mma_sync: operands whose address is
  // not a multiple of 16 bytes or whose row stride is not a multiple of 8 elements take the kernel's element
  // loads instead of cp.async (correct, slower); wgmma: operands it does not accept are an InternalError. Inconsistent arguments are an InternalError; a grid
  // past the device's limits a UserError. An empty C launches nothing.
  void launch(const Stream& stream, const GemmTemplateArgs& args) const;
  // Whether launch takes these operands (gemm_template_accepts).
  bool accepts(const GemmTemplateArgs& args) const { return gemm_template_accepts(spec_, args); }

 private:
  void launch_wgmma(const Stream& stream, const GemmTemplateArgs& args) const;
  void launch_reduce(const Stream& stream, const GemmTemplateArgs& args) const;  // split-K's second kernel
  bool needs_reduce_kernel() const;  // split-K through the workspace (not summed in a cluster)

  GemmTemplateSpec spec_;
  unsigned shared_bytes_ = 0;
  int sm_count_ = 0;
  std::optional<Function> main_, reduce_;
};

}  // namespace kiln::backend::cuda
