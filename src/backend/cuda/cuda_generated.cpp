// Generated pointwise and row kernels on the device: the CUDA emitters' source, named by content, and
// the kernel that reads its size symbols from its inputs' shapes and launches it on the stream.
#include <fmt/format.h>

#include <unordered_map>

#include "backend/cuda/cubin_cache.h"
#include "backend/cuda/cuda_kernels.h"
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
      : runtime_(runtime), source_(source), function_(module.function(source.name)), symbols_(group.symbols) {
    for (ValueId v : group.inputs) inputs_.push_back({g.value(v).name, g.value(v).type.shape});
    output_ = g.value(group.output).type;
    std::vector<loops::Expr> symbols;
    if (const auto* row = std::get_if<loops::RowKernel>(&group.kernel)) {
      symbols = loops::kernel_symbols(*row);
      row_sizes_ = loops::row_sizes(*row);
      col_sizes_ = loops::col_sizes(*row);
    } else {
      symbols = loops::kernel_symbols(std::get<loops::PointwiseKernel>(group.kernel));
    }
    for (const loops::Expr& s : symbols) symbol_names_.push_back(s.name());
    KILN_INTERNAL_CHECK(symbol_names_.size() == symbols_.size(), "kernel {}: {} symbols, {} sources", source.name,
                        symbol_names_.size(), symbols_.size());
  }

  std::string name() const override { return source_.name; }

  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const std::vector<const Tensor*>& ins = args.inputs;
    std::vector<long long> syms;
    std::unordered_map<std::string, int64_t> by_name;
    for (size_t k = 0; k < symbols_.size(); ++k) {
      const int64_t v = ins[size_t(symbols_[k].input)]->dim(symbols_[k].dim);
      syms.push_back(v);
      by_name[symbol_names_[k]] = v;
    }
    auto size_of = [&](const Dim& d) { return d.is_static() ? d.value : by_name.at(d.symbol); };
    // The kernel indexes its inputs by these sizes: an input of another shape would be read out of bounds.
    for (size_t i = 0; i < ins.size(); ++i) {
      const Shape& want = inputs_[i].shape;
      bool same = static_cast<size_t>(ins[i]->rank()) == want.size();
      for (size_t d = 0; same && d < want.size(); ++d) same = ins[i]->dim(static_cast<int>(d)) == size_of(want[d]);
      if (!same)
        user_error("fused kernel '{}': input '{}' has shape {}, but the model's shapes say {}", source_.name,
                   inputs_[i].name, ins[i]->shape_string(), shape_string(want));
    }
    std::vector<int64_t> dims;
    for (const Dim& d : output_.shape) dims.push_back(size_of(d));
    Tensor out = output_buffer(runtime_, args, 0, output_.dtype, dims, "fused kernel '" + source_.name + "'");

    std::vector<CUdeviceptr> pointers;
    for (const Tensor* t : ins) pointers.push_back(device_ptr(*t));
    pointers.push_back(device_ptr(out));
    std::vector<long long> counts;
    int64_t blocks;
    if (source_.row) {
      const int64_t rows = product(row_sizes_, by_name), cols = product(col_sizes_, by_name);
      counts = {rows, cols};
      blocks = codegen::cuda::CudaRowLaunch{source_.threads_per_block}.blocks(rows, cols);
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
    launch_kernel(runtime_.cuda_stream(), function_, config, parameters);
    return {out};
  }

 private:
  static int64_t product(const std::vector<loops::Expr>& sizes, const std::unordered_map<std::string, int64_t>& values) {
    int64_t p = 1;
    for (const loops::Expr& e : sizes) p = checked_mul(p, loops::evaluate(e, values), "a row kernel's size");
    return p;
  }

  struct Input {
    std::string name;
    Shape shape;
  };
  const CudaRuntime& runtime_;
  GeneratedSource source_;
  Function function_;
  std::vector<Input> inputs_;
  TensorType output_;
  std::vector<schedule::SymbolSource> symbols_;
  std::vector<std::string> symbol_names_;  // kernel_symbols order: the kernel's parameters
  std::vector<loops::Expr> row_sizes_, col_sizes_;
};

}  // namespace

GeneratedSource emit_generated_cuda(const GeneratedGroup& group) {
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
  k.name = content_name("row", codegen::cuda::emit_row_cuda(k).code);
  codegen::cuda::CudaRowSource src = codegen::cuda::emit_row_cuda(k);
  s.name = src.name;
  s.code = std::move(src.code);
  s.row = true;
  s.threads_per_block = src.launch.threads_per_block;
  return s;
}

std::unique_ptr<Kernel> make_generated_kernel(const CudaRuntime& runtime, const Graph& g, const GeneratedGroup& group,
                                              const GeneratedSource& source, const Module& module) {
  return std::make_unique<GeneratedCudaKernel>(runtime, g, group, source, module);
}

}  // namespace kiln::backend::cuda
