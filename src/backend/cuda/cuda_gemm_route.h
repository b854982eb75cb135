// The GEMM template as a route of a library product (cuda_matmul.cpp): on Hopper, a bf16 / f16 product
// with a constant weight and an epilogue the template fuses (bias, the erf GELU or ReLU, a residual) may
// run on the wgmma template instead of cuBLASLt plus a separate epilogue kernel. Which one runs is
// measured on the device, per product shape, on the first run outside a CUDA-graph capture: every
// template config against the library path as it would run; a template that disagrees with the library's
// result cannot win. The choice is kept in the tuning store (cuda_choice_store.h): the next process on
// the same GPU and build takes it without measuring. Setting cuda_gemm_templates: auto (measured), on (the fastest template, the library
// never), off (the library only: no route is made).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/cuda_gemm_template.h"
#include "backend/cuda/cuda_runtime.h"
#include "kiln/options.h"
#include "kiln/tensor.h"

namespace kiln::backend::cuda {

// A LayerNorm folded into the product (GemmTemplateEpilogue::row_norm; cuda_norm_fold.h): the route's
// own weight W' = diag(gamma) B as [N,K] (host; in the product's dtype), sum over K of each of its rows,
// and the LayerNorm's gamma, beta and epsilon (for its output y).
struct RowNormFold {
  Tensor weight_nk;
  std::vector<float> colsum, gamma, beta;
  float eps = 1e-5f;
};

class GemmTemplateRoute {
 public:
  // For a constant B of `k` x `n` in `dtype` ([K,N], or [N,K] with trans_b); `bias` one f32 per output
  // column or empty. Null where no template can run it: another dtype, a device without sm_90a, setting
  // off, K not a multiple of 8 (the TMA's 16-byte rows), or no config whose shared memory the device gives.
  // Nothing is compiled or copied here: a config's kernel is built when it is first measured or taken from
  // the tuning store, and B's [N,K] copy (without trans_b) is made on the device when a template first
  // needs it, so a product the library wins costs neither. With `fold` the templates standardise A's rows
  // (row_norm) and multiply its weight (uploaded here) instead of B; `library` is then the LayerNorm and
  // the product apart.
  static std::unique_ptr<GemmTemplateRoute> make(const CudaRuntime& runtime, const std::string& what, DType dtype,
                                                 int64_t k, int64_t n, bool trans_b, const std::vector<float>& bias,
                                                 GemmTemplateEpilogue epilogue, const Options& options,
                                                 const RowNormFold* fold = nullptr);

  // The template to run the product of m rows on (an index for run()), or -1: the library. `library`
  // runs the library path into the given output (for timing and the check). `b` is the constant B on
  // the device, as make() described it.
  int choose(int64_t m, CUdeviceptr a, CUdeviceptr b, CUdeviceptr residual,
             const std::function<void(CUdeviceptr out)>& library) const;
  // out[m, N] = epilogue(A B) on the chosen template; A is [m, K] with rows of K elements. With a fold, y
  // (if not 0) receives LayerNorm(A) [m, K].
  void run(int choice, int64_t m, CUdeviceptr a, CUdeviceptr b, CUdeviceptr residual, CUdeviceptr out,
           CUdeviceptr y = 0) const;

  GemmTemplateRoute(const CudaRuntime& runtime, std::string what, const Options& options);
  ~GemmTemplateRoute();

 private:
  GemmTemplateArgs args(int64_t m, CUdeviceptr a, CUdeviceptr b_nk, CUdeviceptr residual, CUdeviceptr out,
                        CUdeviceptr y = 0) const;
  int measure(int64_t m, CUdeviceptr a, CUdeviceptr b, CUdeviceptr residual,
              const std::function<void(CUdeviceptr out)>& library) const;
  const GemmTemplateKernel& kernel(size_t i) const;  // built on first use
  void build_all() const;                            // every config's kernel, compiled as one batch
  CUdeviceptr weight_nk(CUdeviceptr b) const;        // B as [N,K]: b itself, or its copy

  const CudaRuntime& runtime_;
  std::string what_;
  DType dtype_ = DType::bf16;
  int64_t n_ = 0, k_ = 0;
  bool trans_b_ = false;
  bool library_allowed_ = true;  // auto; `on` times the templates only
  bool debug_ = false;           // KILN_DEBUG=route: each choice and its times on stderr
  Options options_;              // of the compile: the cubin cache, NVRTC's settings
  Tensor bias_;                  // on the device: f32 [N], or none
  bool folded_ = false;          // a LayerNorm folded in: weight_nk_ is W', made by make()
  Tensor colsum_, gamma_, beta_;  // on the device, f32, with a fold
  float eps_ = 0.f;
  std::vector<GemmTemplateSpec> specs_;
  std::unique_ptr<ModuleCache> modules_;  // outlives the compile: kernels are built at run time
  mutable std::mutex mutex_;              // guards what follows
  mutable std::vector<std::unique_ptr<GemmTemplateKernel>> kernels_;  // one per spec, null until built
  mutable Tensor weight_nk_;                                          // B's [N,K] copy, once made
  mutable std::map<int64_t, int> choices_;                            // per m
};

// Template launches since the process began (tests: a forced route really ran).
uint64_t gemm_template_route_launches();
// Template kernels the routes have built (compiled or loaded from the cache) since the process began
// (tests: a prepare builds none, a stored choice builds only itself).
uint64_t gemm_template_route_kernels_built();

}  // namespace kiln::backend::cuda
