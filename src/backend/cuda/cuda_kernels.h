// The CUDA backend's kernels: generated pointwise and row kernels (NVRTC), cuBLASLt matmuls with
// their epilogues, and the nodes that run on their own (views, and the hand-written kernels of
// device_ops.h). Each launches on the runtime's stream and never waits for the device.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cublaslt.h"
#include "backend/cuda/cuda_objects.h"
#include "backend/cuda/cuda_runtime.h"
#include "codegen/cuda/emit_pointwise_cuda.h"
#include "kiln/graph.h"
#include "kiln/options.h"

namespace kiln::backend::cuda {

class DeviceOps;

// CUDA C++ for a generated group, named by its content ("pw_<hash>", "row_<hash>"), and how to launch it.
struct GeneratedSource {
  std::string name;
  std::string code;
  bool row = false;
  int threads_per_block = 256;
  int elements_per_thread = 4;  // pointwise only
  int rows_per_block = 1;       // row only: threads_per_block / 32 for a warp per row
};
GeneratedSource emit_generated_cuda(const GeneratedGroup& group, const Options& options);

// The kernel of a generated group, from its loaded module.
std::unique_ptr<Kernel> make_generated_kernel(const CudaRuntime& runtime, const Graph& g, const GeneratedGroup& group,
                                              const GeneratedSource& source, const Module& module);

// The modules of one compile: a unit compiled (through the cubin cache) and loaded once, however many
// groups share its code (every layer's GELU epilogue).
class ModuleCache {
 public:
  ModuleCache(const CudaRuntime& runtime, const Options& options) : runtime_(runtime), options_(options) {}
  Module get(const std::string& name, const std::string& code);
  // Loads already-compiled cubins under their names (a batch compiled together).
  void add(const std::string& name, std::span<const char> cubin);

 private:
  const CudaRuntime& runtime_;
  Options options_;
  std::mutex mutex_;
  std::map<std::string, Module> loaded_;
};

// A pointwise kernel that finishes a library call (an epilogue past what the library fuses), compiled
// once and launched on device pointers: its inputs in kernel input order, then the output, whose sizes
// give the kernel's size symbols.
class EpilogueLaunch {
 public:
  EpilogueLaunch(loops::PointwiseKernel kernel, const char* prefix, ModuleCache& modules);
  void run(const cuda::Stream& stream, std::vector<CUdeviceptr> inputs, const Tensor& out) const;
  void run(const cuda::Stream& stream, std::vector<CUdeviceptr> inputs, CUdeviceptr out,
           const std::vector<int64_t>& out_dims) const;

 private:
  EpilogueLaunch(const codegen::cuda::CudaSource& src, const loops::PointwiseKernel& kernel, ModuleCache& modules);
  Function function_;
  codegen::cuda::CudaLaunchRule launch_;
  std::vector<int> symbol_dims_;  // per size symbol: the output dim that carries it
};

// `e` with each load i replaced by load_of(i) (a library epilogue's loads are per-element slots).
loops::ScalarExpr replace_loads(const loops::ScalarExpr& e, const std::function<loops::ScalarExpr(int)>& load_of);

// Whether the CUDA backend runs this library group (MatMul / Gemm in f32 on cuBLASLt) and this node on
// its own (views, MatMul, and the ops of device_ops.h): for tests that check a model without a GPU.
bool has_library_route(const Graph& g, const schedule::LibraryGroup& group);
bool has_node_kernel(const Graph& g, const Node& node);

// A MatMul / Gemm library group on cuBLASLt, its epilogue past the bias (and a residual) in a generated
// kernel; null for groups it has no route for (Conv, softmax).
std::unique_ptr<Kernel> make_matmul_kernel(const CudaRuntime& runtime, const Graph& g,
                                           const schedule::LibraryGroup& group, const Options& options,
                                           ModuleCache& modules);

// A MatMul node on its own (attention's products): batched, a rank-2 operand broadcast.
std::unique_ptr<Kernel> make_bare_matmul_kernel(const CudaRuntime& runtime, const Graph& g, const Node& node,
                                                const Options& options);

// w as the matrix [dim 0, the rest] ([K, N], or [N, K] when transposed) with its N output columns
// padded with zeros to `padded`, bit for bit: cuBLASLt's aligned kernels want 16-byte leading dimensions.
Tensor pad_columns(const Tensor& w, bool transposed, int64_t padded);

// Conv (2-D, f32, one group) as im2col and a cuBLASLt product, the bias and the group's epilogue in one
// generated kernel after it: a library group (`group` set) or a Conv node alone. Null for a group it
// has no route for (a folded BatchNormalization, grouped or non-2-D convolution, auto_pad).
std::unique_ptr<Kernel> make_conv_kernel(const CudaRuntime& runtime, const Graph& g, const Node& conv,
                                         const schedule::LibraryGroup* group, const Options& options,
                                         ModuleCache& modules);
bool has_conv_route(const Graph& g, const Node& conv, const schedule::LibraryGroup* group);

// A node on its own: a view, a bare MatMul or Conv, or a kernel of device_ops.h. An op with no device
// kernel is a user error naming it.
std::unique_ptr<Kernel> make_node_kernel(const CudaRuntime& runtime, const Graph& g, const Node& node,
                                         const Options& options, ModuleCache& modules);

// "pw_<16 hex digits>": a kernel named by a hash of its text.
std::string content_name(const char* prefix, const std::string& code);

// The output a kernel writes: the planned buffer where it has this dtype and shape, else a new device
// tensor (more than max_tensor_bytes is a user error naming `what`).
Tensor output_buffer(const CudaRuntime& runtime, const LaunchArgs& args, size_t k, DType dtype,
                     const std::vector<int64_t>& dims, const std::string& what);

// A kernel's cuBLASLt plans, one per problem (run-time shapes), built on first use; run() is
// thread-safe and launches the heuristic's first algorithm with its workspace on the runtime's stream.
class MatmulPlans {
 public:
  // time_algorithms: the first run of a problem outside a capture times each algorithm the heuristic
  // offered and keeps the fastest (once per runtime and problem); otherwise the heuristic's first.
  MatmulPlans(const CudaRuntime& runtime, bool time_algorithms) : runtime_(runtime), time_(time_algorithms) {}
  void run(const GemmProblem& p, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias, CUdeviceptr residual,
           CUdeviceptr d) const;

 private:
  struct Plan {
    std::unique_ptr<LtMatmul> matmul;
    int algorithm = 0;
  };
  int fastest(const LtMatmul& mm, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias, CUdeviceptr residual) const;

  const CudaRuntime& runtime_;
  bool time_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, Plan> plans_;
};

// The architecture kiln compiles for on this device: sm_90a on Hopper (its wgmma and TMA instructions), else sm_XY.
std::string compile_arch(const DeviceInfo& info);

}  // namespace kiln::backend::cuda
