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

std::string content_name(const char* prefix, const std::string& code) {
  return fmt::format("{}_{:016x}", prefix, std::hash<std::string>{}(code));
}

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
    const int64_t bytes = checked_mul(checked_numel(dims, source_.name), int64_t(dtype_size(output_.dtype)), source_.name);
    Tensor out = args.planned.empty() ? Tensor() : args.planned[0];
    if (!out.raw() || out.shape() != dims || out.dtype() != output_.dtype) {
      if (bytes > args.max_tensor_bytes)
        user_error("fused kernel '{}': output of {} bytes exceeds max_tensor_bytes", source_.name, bytes);
      out = runtime_.empty(output_.dtype, dims);
    }

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

namespace {
codegen::cuda::CudaSource named_pointwise(loops::PointwiseKernel& kernel, const char* prefix) {
  kernel.name = prefix;  // the name is part of the text: hash the text under a fixed name
  kernel.name = content_name(prefix, codegen::cuda::emit_pointwise_cuda(kernel).code);
  return codegen::cuda::emit_pointwise_cuda(kernel);
}
}  // namespace

EpilogueLaunch::EpilogueLaunch(loops::PointwiseKernel kernel, const char* prefix, ModuleCache& modules)
    : EpilogueLaunch(named_pointwise(kernel, prefix), kernel, modules) {}

EpilogueLaunch::EpilogueLaunch(const codegen::cuda::CudaSource& src, const loops::PointwiseKernel& kernel,
                               ModuleCache& modules)
    : function_(modules.get(src.name, src.code).function(src.name)), launch_(src.launch) {
  for (const std::string& name : src.symbols) {
    size_t d = 0;
    while (d < kernel.output.sizes.size() &&
           !(kernel.output.sizes[d].is_sym() && kernel.output.sizes[d].name() == name))
      ++d;
    KILN_INTERNAL_CHECK(d < kernel.output.sizes.size(), "epilogue {}: size symbol {} is no output dim", src.name, name);
    symbol_dims_.push_back(static_cast<int>(d));
  }
}

void EpilogueLaunch::run(const cuda::Stream& stream, std::vector<CUdeviceptr> inputs, const Tensor& out) const {
  inputs.push_back(device_ptr(out));
  std::vector<long long> syms;
  for (int d : symbol_dims_) syms.push_back(out.dim(d));
  long long n = out.numel();
  const int64_t blocks = launch_.blocks(n);
  if (blocks == 0) return;
  std::vector<void*> parameters;
  for (CUdeviceptr& p : inputs) parameters.push_back(&p);
  for (long long& s : syms) parameters.push_back(&s);
  parameters.push_back(&n);
  LaunchConfig config;
  config.grid.x = static_cast<unsigned>(blocks);
  config.block.x = static_cast<unsigned>(launch_.threads_per_block);
  launch_kernel(stream, function_, config, parameters);
}

loops::ScalarExpr replace_loads(const loops::ScalarExpr& e, const std::function<loops::ScalarExpr(int)>& load_of) {
  using loops::ScalarKind;
  std::vector<loops::ScalarExpr> ops;
  for (const loops::ScalarExpr& o : e.operands()) ops.push_back(replace_loads(o, load_of));
  switch (e.kind()) {
    case ScalarKind::Load: return load_of(e.input());
    case ScalarKind::Constant: return e;
    case ScalarKind::Unary: return loops::unary(e.unary_op(), ops[0]);
    case ScalarKind::Binary: return loops::binary(e.binary_op(), ops[0], ops[1]);
    case ScalarKind::Where: return loops::where(ops[0], ops[1], ops[2]);
    case ScalarKind::Cast: return loops::cast(e.dtype(), ops[0]);
  }
  internal_error("replace_loads: unknown scalar kind");
}

std::string compile_arch(const DeviceInfo& info) {
  return info.compute_major == 9 && info.compute_minor == 0 ? "sm_90a" : info.arch();
}

Module ModuleCache::get(const std::string& name, const std::string& code) {
  std::lock_guard lock(mutex_);
  if (auto it = loaded_.find(name); it != loaded_.end()) return it->second;
  CubinBatch batch = compile_cubins({{name, code}}, compile_arch(runtime_.info()), options_);
  return loaded_.emplace(name, Module(runtime_.context(), batch.cubins[0])).first->second;
}

void ModuleCache::add(const std::string& name, std::span<const char> cubin) {
  std::lock_guard lock(mutex_);
  if (!loaded_.count(name)) loaded_.emplace(name, Module(runtime_.context(), cubin));
}

}  // namespace kiln::backend::cuda
