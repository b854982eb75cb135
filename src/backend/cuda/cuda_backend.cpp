#include "backend/cuda/cuda_backend.h"

#include <cstdio>

#include <fmt/format.h>

#include "backend/cuda/cubin_cache.h"
#include "backend/cuda/cuda_attention.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_norm_fold.h"
#include "backend/cuda/cuda_runtime.h"
#include "backend/cuda/nvrtc.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

class CudaCompile final : public BackendCompile {
 public:
  CudaCompile(const CudaRuntime& runtime, const Options& options)
      : runtime_(runtime), options_(options), modules_(runtime, options) {}

  std::unique_ptr<Kernel> library_kernel(const Graph& g, const schedule::LibraryGroup& group) override {
    return make_matmul_kernel(runtime_, g, group, options_, modules_);
  }

  std::vector<std::unique_ptr<Kernel>> generated_kernels(const Graph& g,
                                                         const std::vector<GeneratedGroup>& groups) override {
    std::vector<GeneratedSource> sources;
    std::vector<CudaUnit> units;
    for (const GeneratedGroup& group : groups) {
      sources.push_back(emit_generated_cuda(group, options_));
      units.push_back({sources.back().name, sources.back().code});
    }
    std::vector<std::unique_ptr<Kernel>> kernels;
    if (units.empty()) return kernels;
    CubinBatch batch = compile_cubins(units, compile_arch(runtime_.info()), options_);
    if (options_.debug_on("codegen"))
      std::fprintf(stderr, "[codegen] cuda: %zu kernels, %d compiled by NVRTC (the rest cached) in %.3f s\n",
                   units.size(), batch.compiled, batch.compile_seconds);
    for (size_t k = 0; k < groups.size(); ++k) {
      modules_.add(units[k].name, batch.cubins[k]);
      kernels.push_back(make_generated_kernel(runtime_, g, groups[k], sources[k], modules_.get(units[k].name, units[k].code)));
    }
    return kernels;
  }

  std::unique_ptr<Kernel> attention_kernel(const Graph& g, const schedule::AttentionGroup& group) override {
    return make_attention_kernel(runtime_, g, group, options_, modules_);
  }

  std::unique_ptr<Kernel> node_kernel(const Graph& g, const Node& node) override {
    return make_node_kernel(runtime_, g, node, options_, modules_);
  }

  std::shared_ptr<const Tensor> place_constant(std::shared_ptr<const Tensor> constant) override {
    return std::make_shared<const Tensor>(runtime_.upload(*constant));
  }

  TuningStats finish() override { return {}; }

 private:
  const CudaRuntime& runtime_;
  Options options_;
  ModuleCache modules_;
};

}  // namespace

CudaBackend::CudaBackend(int device_index, const Options& options)
    : runtime_(std::make_unique<CudaRuntime>(device_index, options)) {}
CudaBackend::~CudaBackend() = default;

std::string CudaBackend::device_key(const Options&) const {
  const DeviceInfo& d = runtime_->info();
  const NvrtcApi& rtc = nvrtc();
  return fmt::format("cuda {} sm_{}{} {} SMs driver {} nvrtc {}.{}", d.name, d.compute_major, d.compute_minor,
                     d.sm_count, cuda_version_text(driver().driver_version), rtc.major, rtc.minor);
}

Fusions CudaBackend::fusions(const Options& options) const { return cuda_fusions(options); }
bool CudaBackend::folds_layer_norm(const Graph& g, const schedule::LibraryGroup& group, const Options& options) const {
  return cuda_folds_layer_norm(g, group, options, compile_arch(runtime_->info()) == "sm_90a");
}
schedule::RoutingThresholds CudaBackend::routing_thresholds(const Options&) const { return cuda_routing_thresholds(); }

Fusions cuda_fusions(const Options& options) {
  return Fusions{.library = true,
                 .rows = true,
                 .pointwise = true,
                 .pointwise_singletons = true,
                 .half_floats = true,
                 .attention = options.cuda_attention != "off",
                 .sibling_matmuls = options.cuda_merge_matmuls,
                 .gemm_as_matmul = options.cuda_gemm_as_matmul};
}

schedule::RoutingThresholds cuda_routing_thresholds() {
  // No library softmax on the device yet: every width takes the fused row kernel.
  schedule::RoutingThresholds t;
  t.max_fused_width = int64_t{1} << 40;
  t.library_min_width = schedule::kNeverWidth;
  t.library_max_width = 0;
  t.source = "cuda: every width fused (no library softmax on the device yet)";
  return t;
}

std::unique_ptr<BackendCompile> CudaBackend::start_compile(const Options& options) const {
  return std::make_unique<CudaCompile>(*runtime_, options);
}

const DeviceRuntime& CudaBackend::runtime() const { return *runtime_; }

}  // namespace kiln::backend::cuda
