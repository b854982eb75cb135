// Generated pointwise and row kernels on the device: the CUDA emitters' source, named by content, and
// the kernel that reads its size symbols from its inputs' shapes and launches it on the stream.
#include <fmt/format.h>

#include <unordered_map>

#include "backend/cuda/cuda_kernels.h"
#include "backend/group_shapes.h"
#include "codegen/cuda/emit_pointwise_cuda.h"
#include "codegen/cuda/emit_row_cuda.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

class GeneratedCudaKernel final : public Kernel {
 public:
  GeneratedCudaKernel(const CudaRuntime& runtime, const Graph& g, const GeneratedGroup& group,
                      const GeneratedSource& source, const Module& module)
      : runtime_(runtime),
        source_(source),
        function_(module.function(source.name)),
        shapes_(g, group, source.name, symbol_names(group)) {
    if (const auto* row = std::get_if<loops::RowKernel>(&group.kernel)) {
      row_sizes_ = loops::row_sizes(*row);
      col_sizes_ = loops::col_sizes(*row);
    }
  }

  std::string name() const override { return source_.name; }

  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const std::vector<const Tensor*>& ins = args.inputs;
    const GroupShapes::Bound bound = shapes_.bind(ins);
    Tensor out = output_buffer(runtime_, args, 0, shapes_.output().dtype, bound.output_dims,
                               "fused kernel '" + source_.name + "'");
    std::vector<long long> syms(bound.symbols.begin(), bound.symbols.end());
    const auto& by_name = bound.by_name;

    std::vector<CUdeviceptr> pointers;
    for (const Tensor* t : ins) pointers.push_back(device_ptr(*t));
    pointers.push_back(device_ptr(out));
    std::vector<long long> counts;
    int64_t blocks;
    if (source_.row) {
      const int64_t rows = product(row_sizes_, by_name), cols = product(col_sizes_, by_name);
      counts = {rows, cols};
      blocks = codegen::cuda::CudaRowLaunch{source_.threads_per_block, source_.rows_per_block}.blocks(rows, cols);
    } else {
      const int64_t n = out.numel();
      counts = {n};
      blocks = codegen::cuda::CudaLaunchRule{source_.threads_per_block, source_.elements_per_thread}.blocks(n);
    }
    if (blocks == 0) return {out};
    std::vector<void*> parameters;
    for (CUdeviceptr& p : pointers) parameters.push_back(&p);
    for (long long& s : syms) parameters.push_back(&s);
    for (long long& c : counts) parameters.push_back(&c);
    LaunchConfig config;
    config.grid.x = static_cast<unsigned>(blocks);
    config.block.x = static_cast<unsigned>(source_.threads_per_block);
    config.waits_for_prior_grids = true;  // emit_pointwise_cuda / emit_row_cuda start with the prologue
    launch_kernel(runtime_.cuda_stream(), function_, config, parameters);
    return {out};
  }

 private:
  static int64_t product(const std::vector<loops::Expr>& sizes, const std::unordered_map<std::string, int64_t>& values) {
    int64_t p = 1;
    for (const loops::Expr& e : sizes) p = checked_mul(p, loops::evaluate(e, values), "a row kernel's size");
    return p;
  }

  static std::vector<std::string> symbol_names(const GeneratedGroup& group) {
    std::vector<loops::Expr> symbols = std::holds_alternative<loops::RowKernel>(group.kernel)
                                           ? loops::kernel_symbols(std::get<loops::RowKernel>(group.kernel))
                                           : loops::kernel_symbols(std::get<loops::PointwiseKernel>(group.kernel));
    std::vector<std::string> names;
    for (const loops::Expr& s : symbols) names.push_back(s.name());
    return names;  // kernel_symbols order: the kernel's parameters
  }

  const CudaRuntime& runtime_;
  GeneratedSource source_;
  Function function_;
  GroupShapes shapes_;
  std::vector<loops::Expr> row_sizes_, col_sizes_;
};

}  // namespace

GeneratedSource emit_generated_cuda(const GeneratedGroup& group, const Options& options) {
  GeneratedSource s;
  if (const auto* pw = std::get_if<loops::PointwiseKernel>(&group.kernel)) {
    loops::PointwiseKernel k = *pw;
    k.name = "pw";  // the name is part of the text: hash the text under a fixed name
    k.name = content_name("pw", codegen::cuda::emit_pointwise_cuda(k).code);
    codegen::cuda::CudaSource src = codegen::cuda::emit_pointwise_cuda(k);
    s.name = src.name;
    s.code = std::move(src.code);
    s.threads_per_block = src.launch.threads_per_block;
    s.elements_per_thread = src.launch.elements_per_thread;
    return s;
  }
  loops::RowKernel k = std::get<loops::RowKernel>(group.kernel);
  k.name = "row";
  const codegen::cuda::CudaRowEmitOptions emit{.stash_loads = options.cuda_row_stash};
  k.name = content_name("row", codegen::cuda::emit_row_cuda(k, emit).code);
  codegen::cuda::CudaRowSource src = codegen::cuda::emit_row_cuda(k, emit);
  s.name = src.name;
  s.code = std::move(src.code);
  s.row = true;
  s.threads_per_block = src.launch.threads_per_block;
  s.rows_per_block = src.launch.rows_per_block;
  return s;
}

std::unique_ptr<Kernel> make_generated_kernel(const CudaRuntime& runtime, const Graph& g, const GeneratedGroup& group,
                                              const GeneratedSource& source, const Module& module) {
  return std::make_unique<GeneratedCudaKernel>(runtime, g, group, source, module);
}

}  // namespace kiln::backend::cuda
