// What the CUDA backend's kernels share: the compile's modules, the outputs they write, cuBLASLt plans
// and the generated epilogue kernels of library calls.
#include <fmt/format.h>

#include "backend/cuda/cubin_cache.h"
#include "backend/cuda/cuda_kernels.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::backend::cuda {

std::string content_name(const char* prefix, const std::string& code) {
  return fmt::format("{}_{:016x}", prefix, std::hash<std::string>{}(code));
}

Tensor output_buffer(const CudaRuntime& runtime, const LaunchArgs& args, size_t k, DType dtype,
                     const std::vector<int64_t>& dims, const std::string& what) {
  Tensor out = k < args.planned.size() ? args.planned[k] : Tensor();
  if (out.raw() && out.shape() == dims && out.dtype() == dtype) return out;
  const int64_t bytes = checked_mul(checked_numel(dims, what), static_cast<int64_t>(dtype_size(dtype)), what);
  if (bytes > args.max_tensor_bytes) user_error("{}: output of {} bytes exceeds max_tensor_bytes", what, bytes);
  return runtime.empty(dtype, dims);
}

void MatmulPlans::run(const GemmProblem& p, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias, CUdeviceptr residual,
                      CUdeviceptr d) const {
  const std::string key = describe(p);
  const Plan* plan;
  {
    std::lock_guard lock(mutex_);
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, Plan{std::make_unique<LtMatmul>(runtime_.context(), p), -1}).first;
    plan = &it->second;
  }
  int algorithm = plan->algorithm;
  if (algorithm < 0) {
    const bool timed = time_ && plan->matmul->algorithms() > 1;
    // Inside a capture nothing can be timed: the heuristic's first for now, timed on a later run.
    algorithm = timed && runtime_.capturing() ? 0 : -1;
    if (algorithm < 0) {
      const int count = plan->matmul->algorithms();
      algorithm = timed ? runtime_.measured_choice(
                              "cublaslt " + key, [&] { return fastest(*plan->matmul, a, b, bias, residual); },
                              [&](int c) { return c >= 0 && c < count; }, 0)
                        : 0;
      std::lock_guard lock(mutex_);
      plans_.at(key).algorithm = algorithm;
    }
  }
  const size_t workspace_bytes = plan->matmul->workspace_bytes(algorithm);
  // Stream-ordered: freed after the product that reads it (inside a capture: the graph's own).
  const Tensor workspace =
      workspace_bytes ? runtime_.empty(DType::u8, {static_cast<int64_t>(workspace_bytes)}) : Tensor();
  plan->matmul->run(runtime_.cuda_stream(), algorithm, a, b, bias, residual, d,
                    workspace_bytes ? device_ptr(workspace) : 0, workspace_bytes);
}

// Each algorithm once to warm up, then kTimed runs between two events, into a scratch D (D may be the
// residual itself, which repeated runs would accumulate into). The inputs are the run's own.
int MatmulPlans::fastest(const LtMatmul& mm, CUdeviceptr a, CUdeviceptr b, CUdeviceptr bias, CUdeviceptr residual) const {
  constexpr int kTimed = 10;
  const GemmProblem& p = mm.problem();
  const Tensor scratch = runtime_.empty(p.dtype, {p.batch, p.m, p.n});
  const size_t most = mm.max_workspace_bytes();
  const Tensor workspace = most ? runtime_.empty(DType::u8, {static_cast<int64_t>(most)}) : Tensor();
  const CUdeviceptr w = most ? device_ptr(workspace) : 0;
  int best = 0;
  double best_ms = 0;
  for (int i = 0; i < mm.algorithms(); ++i) {
    mm.run(runtime_.cuda_stream(), i, a, b, bias, residual, device_ptr(scratch), w, most);
    const std::unique_ptr<DeviceRuntime::Mark> from = runtime_.mark();
    for (int r = 0; r < kTimed; ++r) mm.run(runtime_.cuda_stream(), i, a, b, bias, residual, device_ptr(scratch), w, most);
    const std::unique_ptr<DeviceRuntime::Mark> to = runtime_.mark();
    runtime_.synchronize();
    const double ms = runtime_.elapsed_ms(*from, *to);
    if (i == 0 || ms < best_ms) best = i, best_ms = ms;
  }
  return best;
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
  run(stream, std::move(inputs), device_ptr(out), out.shape());
}

void EpilogueLaunch::run(const cuda::Stream& stream, std::vector<CUdeviceptr> inputs, CUdeviceptr out,
                         const std::vector<int64_t>& out_dims) const {
  inputs.push_back(out);
  std::vector<long long> syms;
  for (int d : symbol_dims_) syms.push_back(out_dims.at(size_t(d)));
  long long n = 1;
  for (int64_t d : out_dims) n *= d;
  const int64_t blocks = launch_.blocks(n);
  if (blocks == 0) return;
  std::vector<void*> parameters;
  for (CUdeviceptr& p : inputs) parameters.push_back(&p);
  for (long long& s : syms) parameters.push_back(&s);
  parameters.push_back(&n);
  LaunchConfig config;
  config.grid.x = static_cast<unsigned>(blocks);
  config.block.x = static_cast<unsigned>(launch_.threads_per_block);
  config.waits_for_prior_grids = true;  // emit_pointwise_cuda starts with the prologue
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
