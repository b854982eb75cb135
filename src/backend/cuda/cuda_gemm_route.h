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

class GemmTemplateRoute {
 public:
  // `weight` the constant B on the host, [K,N] (or [N,K] with trans_b), in `dtype`; `bias` one f32 per
  // output column or empty. Null where no template can run it: another dtype, a device without sm_90a,
  // setting off, K not a multiple of 8 (the TMA's 16-byte rows), or no config that builds.
  static std::unique_ptr<GemmTemplateRoute> make(const CudaRuntime& runtime, const std::string& what, DType dtype,
                                                 const Tensor& weight, bool trans_b, const std::vector<float>& bias,
                                                 GemmTemplateEpilogue epilogue, const Options& options,
                                                 ModuleCache& modules);

  // The template to run the product of m rows on (an index for run()), or -1: the library. `library`
  // runs the library path into the given output (for timing and the check).
  int choose(int64_t m, CUdeviceptr a, CUdeviceptr residual,
             const std::function<void(CUdeviceptr out)>& library) const;
  // out[m, N] = epilogue(A W) on the chosen template; A is [m, K] with rows of K elements.
  void run(int choice, int64_t m, CUdeviceptr a, CUdeviceptr residual, CUdeviceptr out) const;

  GemmTemplateRoute(const CudaRuntime& runtime, std::string what) : runtime_(runtime), what_(std::move(what)) {}

 private:
  GemmTemplateArgs args(int64_t m, CUdeviceptr a, CUdeviceptr residual, CUdeviceptr out) const;  // no workspace
  int measure(int64_t m, CUdeviceptr a, CUdeviceptr residual,
              const std::function<void(CUdeviceptr out)>& library) const;

  const CudaRuntime& runtime_;
  std::string what_;
  DType dtype_ = DType::bf16;
  int64_t n_ = 0, k_ = 0;
  bool library_allowed_ = true;  // auto; `on` times the templates only
  bool debug_ = false;           // KILN_DEBUG=route: each choice and its times on stderr
  Tensor weight_nk_;             // on the device: [N,K]
  Tensor bias_;                  // on the device: f32 [N], or none
  std::vector<std::unique_ptr<GemmTemplateKernel>> kernels_;
  mutable std::mutex mutex_;
  mutable std::map<int64_t, int> choices_;  // per m
};

// Template launches since the process began (tests: a forced route really ran).
uint64_t gemm_template_route_launches();

}  // namespace kiln::backend::cuda
