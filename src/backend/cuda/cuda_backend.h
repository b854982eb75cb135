// The CUDA backend: the compiler's groups as kernels on one NVIDIA GPU. Generated pointwise and row
// kernels go through the CUDA emitters and NVRTC (a cubin cache on disk), MatMul / Gemm groups through
// cuBLASLt, the other nodes through device_ops.h; constants are uploaded once, and a run's launches are
// queued on one stream with no host work between them. fp32 only for now; compiled mode only (a GPU
// has no eager kernels).
#pragma once
#include <memory>

#include "backend/backend.h"
#include "kiln/options.h"

namespace kiln::backend::cuda {

class CudaRuntime;

// What CudaBackend::fusions and routing_thresholds return (tests compile for the CUDA backend without a GPU).
Fusions cuda_fusions(const Options& options);
schedule::RoutingThresholds cuda_routing_thresholds();

class CudaBackend final : public Backend {
 public:
  // No usable driver or GPU: a user error naming what is missing. `options` locate the cubin cache.
  CudaBackend(int device_index, const Options& options);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  std::string device_key(const Options& options) const override;
  Fusions fusions(const Options& options) const override;
  schedule::RoutingThresholds routing_thresholds(const Options& options) const override;
  bool tunes_gemm(const Graph&, const schedule::LibraryGroup&, const Options&) const override { return false; }
  bool folds_layer_norm(const Graph& g, const schedule::LibraryGroup& group, const Options& options) const override;
  std::unique_ptr<BackendCompile> start_compile(const Options& options) const override;
  const DeviceRuntime& runtime() const override;

 private:
  std::unique_ptr<CudaRuntime> runtime_;
};

}  // namespace kiln::backend::cuda
