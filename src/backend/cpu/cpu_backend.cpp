#include "backend/cpu/cpu_backend.h"

#include <dnnl.hpp>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "autotune/autotuner.h"
#include "autotune/tuning_store.h"
#include "backend/cpu/cpu_device.h"
#include "backend/cpu/library_kernel.h"
#include "backend/group_shapes.h"
#include "codegen/cpu/compile_kernels.h"
#include "codegen/cpu/emit_pointwise.h"
#include "codegen/cpu/emit_row.h"
#include "codegen/cpu/kernel_cache.h"
#include "kernels/onednn/onednn.h"
#include "ops/node_runner.h"
#include "support/checked_math.h"
#include "support/dump.h"
#include "support/error.h"

namespace kiln::backend::cpu {
namespace {

// A compiled pointwise or row kernel: reads its size symbols from its inputs' shapes at run time.
class GeneratedKernel final : public SingleOutputKernel {
 public:
  GeneratedKernel(const Graph& g, const GeneratedGroup& group, std::string name, std::vector<std::string> symbol_names,
                  std::shared_ptr<const codegen::cpu::CompiledKernel> library)
      : name_(std::move(name)),
        shapes_(g, group, name_, std::move(symbol_names)),
        library_(std::move(library)),
        fn_(reinterpret_cast<codegen::cpu::PointwiseEntry*>(library_->entry(name_))) {}

 std::string name() const override { return name_; }

 protected:
  // Runs into `out` (a planned buffer), or into a fresh tensor when `out` has no buffer.
  Tensor run_into(const std::vector<const Tensor*>& ins, int64_t max_bytes, Tensor out) const override {
    const GroupShapes::Bound bound = shapes_.bind(ins);
    const TensorType& output = shapes_.output();
    if (!out.raw()) {
      int64_t bytes = checked_mul(checked_numel(bound.output_dims, name_),
                                  static_cast<int64_t>(dtype_size(output.dtype)), name_);
      if (bytes > max_bytes) user_error("fused kernel '{}': output of {} bytes exceeds max_tensor_bytes", name_, bytes);
      out = Tensor::empty(output.dtype, bound.output_dims);
    }
    KILN_INTERNAL_CHECK(out.shape() == bound.output_dims, "fused kernel '{}': planned buffer {} for output of {}", name_,
                        out.shape_string(), shape_string(output.shape));
    std::vector<const void*> ptrs;
    for (const Tensor* t : ins) ptrs.push_back(t->raw());
    fn_(ptrs.data(), out.raw(), bound.symbols.data());
    return out;
  }

 private:
  std::string name_;
  GroupShapes shapes_;  // symbol names in the kernel's syms[] order
  std::shared_ptr<const codegen::cpu::CompiledKernel> library_;  // keeps the code loaded
  codegen::cpu::PointwiseEntry* fn_;
};

// A node on its eager kernel (src/ops), with the run's thread count.
class NodeKernel final : public Kernel {
 public:
  NodeKernel(Node node, bool reference, int64_t max_rank, int64_t max_loop_iterations)
      : node_(std::move(node)), reference_(reference), max_rank_(max_rank), max_loop_iterations_(max_loop_iterations) {}
  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    NodeRunOptions run;
    run.kernel.reference = reference_;
    run.kernel.threads = omp_get_max_threads();
    run.max_rank = max_rank_;
    run.max_tensor_bytes = args.max_tensor_bytes;
    run.max_loop_iterations = max_loop_iterations_;
    return run_node(node_, args.inputs, run, &args.planned);
  }

 private:
  Node node_;
  bool reference_;
  int64_t max_rank_;
  int64_t max_loop_iterations_;
};

class HostRuntime final : public DeviceRuntime {
 public:
  std::shared_ptr<void> allocate(int64_t bytes) const override {
    void* p = std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64));
    if (!p) user_error("out of memory allocating a {}-byte arena", bytes);
    return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
};

}  // namespace

// Kernels are named by their content, so identical groups (every layer's GELU) share one compile.
codegen::cpu::PointwiseSource emit_generated(const GeneratedGroup& group) {
  if (const auto* pw = std::get_if<loops::PointwiseKernel>(&group.kernel)) {
    loops::PointwiseKernel k = *pw;
    k.name = "pw";
    k.name = fmt::format("pw_{:016x}", std::hash<std::string>{}(codegen::cpu::emit_pointwise_cpp(k).source.code));
    return codegen::cpu::emit_pointwise_cpp(k);
  }
  loops::RowKernel k = std::get<loops::RowKernel>(group.kernel);
  codegen::cpu::RowEmitOptions emit;
  emit.split_min_cols = group.split_min_cols;
  k.name = "row";
  k.name = fmt::format("row_{:016x}", std::hash<std::string>{}(codegen::cpu::emit_row_cpp(k, emit).source.code));
  codegen::cpu::RowSource src = codegen::cpu::emit_row_cpp(k, emit);
  return {src.source, src.symbols};
}

namespace {

class CpuCompile final : public BackendCompile {
 public:
  CpuCompile(const Options& options, bool reference) : options_(options), reference_(reference) {}

  std::unique_ptr<Kernel> library_kernel(const Graph& g, const schedule::LibraryGroup& group) override {
    if (group.tuned)  // oneDNN is built only as a candidate: a template winner never pays for its primitive
                      // and its reordered copy of the weights.
      return tune_matmul_kernel(g, group, options_, tuner(), device_key(options_),
                                [&g, &group, this] { return build_library_kernel(g, group, options_); });
    if (tunes_conv(g, group, options_)) return tune_conv_kernel(g, group, options_, tuner(), device_key(options_));
    try {
      return build_library_kernel(g, group, options_);
    } catch (const dnnl::error& e) {  // oneDNN refused the case: the nodes stay with the other passes
      if (options_.debug_on("fusion"))
        std::fprintf(stderr, "[fusion] library call %s for %s refused (%s): not fused\n", group.label.c_str(),
                     g.describe(g.nodes[size_t(group.nodes.back())]).c_str(), e.what());
      return nullptr;
    }
  }

  std::vector<std::unique_ptr<Kernel>> generated_kernels(const Graph& g,
                                                         const std::vector<GeneratedGroup>& groups) override {
    std::vector<codegen::cpu::PointwiseSource> sources;
    std::vector<codegen::cpu::KernelSource> units;
    for (const GeneratedGroup& group : groups) {
      sources.push_back(emit_generated(group));
      units.push_back(sources.back().source);
    }
    std::vector<std::unique_ptr<Kernel>> kernels;
    if (units.empty()) return kernels;
    std::vector<codegen::cpu::CompiledKernel> compiled = codegen::cpu::compile_kernels(units, options_);
    for (size_t k = 0; k < groups.size(); ++k) {  // --dump-dir: each source and its exact compile command
      const std::string& name = units[k].name;
      write_dump(options_, "kernels/" + name + ".cpp", units[k].code);
      write_dump(options_, "kernels/" + name + ".cmd", compiled[k].command + "\n");
      auto library = std::make_shared<const codegen::cpu::CompiledKernel>(std::move(compiled[k]));
      kernels.push_back(std::make_unique<GeneratedKernel>(g, groups[k], name, sources[k].symbols, std::move(library)));
    }
    return kernels;
  }

  std::unique_ptr<Kernel> node_kernel(const Graph& g, const Node& node) override {
    return std::make_unique<NodeKernel>(node, reference_, options_.max_rank, options_.max_loop_iterations);
  }

  autotune::Autotuner& tuner() {
    if (!tuner_)  // one per compile: its budget covers the model
      tuner_ = std::make_unique<autotune::Autotuner>(
          options_, codegen::cpu::resolve_cache_dir(options_) / autotune::kTuningStoreFileName);
    return *tuner_;
  }

  TuningStats finish() override {
    TuningStats stats;
    if (!tuner_) return stats;
    stats.summary = tuner_->summary_text();
    stats.tuned_ops = static_cast<int>(tuner_->results().size());
    stats.benchmarks = tuner_->benchmarks_run();
    for (const autotune::TuneResult& r : tuner_->results()) {
      stats.template_kernels += r.winner.rfind("template:", 0) == 0;
      stats.blas_kernels += r.winner == "blas";
    }
    if (tuner_->benchmarks_run() > 0 && ::isatty(2)) std::fputs(stats.summary.c_str(), stderr);
    return stats;
  }

 private:
  Options options_;
  bool reference_;
  std::unique_ptr<autotune::Autotuner> tuner_;
};

}  // namespace

std::string CpuBackend::device_key(const Options& options) const { return cpu::device_key(options); }

Fusions CpuBackend::fusions(const Options& options) const {
  if (reference_) return {};  // the oracle: every node on its plain fp64 loops
  // Blocked activations pay where Winograd or bf16 kernels read them (nChw16c is their layout: resnet18
  // 9.6 -> 9.0 ms with Winograd, 8.7 -> 8.0 in bf16); with the direct f32 kernels alone oneDNN's brgconv
  // wants nhwc, and a fixed nChw16c cost resnet18 8-10% (13.8 -> 14.8-15.2 ms with autotune off).
  const bool winograd = options.cpu_conv_algorithm == "winograd" ||
                        (options.cpu_conv_algorithm == "auto" && autotune::autotune_mode(options) != autotune::TuneMode::off);
  return Fusions{.library = true, .rows = true, .pointwise = true, .half_generated = true,
                 .integer_matmul = options.integer_matmul && onednn::has_exact_integer_matmul(),
                 .bf16_products = bf16_products(options) && onednn::has_native_bf16_matmul(),
                 .blocked_conv_layouts = options.cpu_conv_blocked_layouts && (winograd || bf16_products(options))};
}

schedule::RoutingThresholds CpuBackend::routing_thresholds(const Options& options) const {
  return cpu::routing_thresholds(options);
}

bool CpuBackend::tunes_gemm(const Graph& g, const schedule::LibraryGroup& group, const Options& options) const {
  return worth_tuning(g, group, options);
}

schedule::FusionTarget fusion_target(const Graph& g, const Options& options) {
  return schedule::make_fusion_target(
      g, schedule::routing_policy(options, routing_thresholds(options)),
      [&g, options](const schedule::LibraryGroup& group) { return worth_tuning(g, group, options); });
}

std::unique_ptr<BackendCompile> CpuBackend::start_compile(const Options& options) const {
  return std::make_unique<CpuCompile>(options, reference_);
}

CpuBackend::CpuBackend(bool reference) : reference_(reference), runtime_(std::make_unique<HostRuntime>()) {}
CpuBackend::~CpuBackend() = default;

const DeviceRuntime& CpuBackend::runtime() const { return *runtime_; }

}  // namespace kiln::backend::cpu
