// The zoo compiled for the CUDA backend on a machine without a GPU (CI): the compiler runs with the
// CUDA backend's fusions and routing, every generated group's CUDA C++ compiles with NVRTC for sm_90a
// with an empty log, and every library group and lone node has a device route. Nothing runs: tests/cuda and
// scripts/device_run.sh run the kernels on the GPU machine.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <set>

#include "common/zoo_models.h"
#include "compiler/compile.h"
#include "onnx/import.h"
#include "support/error.h"

#ifdef KILN_HAVE_CUDA
#include "backend/cuda/cuda_attention.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_norm_fold.h"
#include "backend/cuda/nvrtc.h"
#endif

namespace kiln {
namespace {

using test_common::ZooModel;

#ifdef KILN_HAVE_CUDA
struct Counts {
  int generated = 0, compiled = 0, library = 0, nodes = 0;
  int half_kernels = 0;  // distinct kernels that read or write bf16 / f16 memory
  int attention = 0;     // attention groups (their kernel compiled once per variant)
  int softmax_outside = 0;  // Softmax nodes left to row kernels or node kernels (scores in memory)
  int folded_norms = 0;     // LayerNorms folded into a product (as on an sm_90a GPU)
  int norm_rows = 0;        // LayerNorms left in generated row kernels
  std::vector<std::string> missing;  // what has no device route
};

// A kernel that is never launched: the test only compiles.
class Unrun final : public backend::Kernel {
 public:
  std::vector<Tensor> launch(const backend::LaunchArgs&) const override { internal_error("not for running"); }
};

class HostOnlyRuntime final : public backend::DeviceRuntime {
 public:
  std::shared_ptr<void> allocate(int64_t) const override { internal_error("not for running"); }
};

class CudaCodegenBackend final : public backend::Backend {
 public:
  explicit CudaCodegenBackend(Counts& counts) : counts_(counts) {}
  std::string name() const override { return "cuda-codegen-test"; }
  std::string device_key(const Options&) const override { return "cuda-codegen-test"; }
  backend::Fusions fusions(const Options& options) const override { return backend::cuda::cuda_fusions(options); }
  schedule::RoutingThresholds routing_thresholds(const Options&) const override {
    return backend::cuda::cuda_routing_thresholds();
  }
  bool tunes_gemm(const Graph&, const schedule::LibraryGroup&, const Options&) const override { return false; }
  bool folds_layer_norm(const Graph& g, const schedule::LibraryGroup& group, const Options& options) const override {
    return backend::cuda::cuda_folds_layer_norm(g, group, options, /*sm90a=*/true);
  }
  std::unique_ptr<backend::BackendCompile> start_compile(const Options& options) const override {
    return std::make_unique<Compile>(counts_, options);
  }
  const backend::DeviceRuntime& runtime() const override { return runtime_; }

 private:
  class Compile final : public backend::BackendCompile {
   public:
    Compile(Counts& counts, const Options& options) : counts_(counts), options_(options) {}
    std::unique_ptr<backend::Kernel> library_kernel(const Graph& g, const schedule::LibraryGroup& group) override {
      if (!backend::cuda::has_library_route(g, group)) return nullptr;
      counts_.library++;
      counts_.folded_norms += group.norm >= 0;
      return std::make_unique<Unrun>();
    }
    std::vector<std::unique_ptr<backend::Kernel>> generated_kernels(
        const Graph& g, const std::vector<backend::GeneratedGroup>& groups) override {
      std::vector<std::unique_ptr<backend::Kernel>> kernels;
      for (const backend::GeneratedGroup& group : groups) {
        counts_.generated++;
        for (NodeId n : group.nodes) {
          counts_.softmax_outside += g.nodes[size_t(n)].op == OpKind::Softmax;
          counts_.norm_rows += g.nodes[size_t(n)].op == OpKind::LayerNormalization;
        }
        const backend::cuda::GeneratedSource src = backend::cuda::emit_generated_cuda(group, options_);
        if (compiled_.insert(src.name).second) {
          const backend::cuda::CompiledCubin c = backend::cuda::compile_to_cubin(src.code, src.name + ".cu", "sm_90a");
          EXPECT_EQ(c.log, "") << src.code;
          EXPECT_FALSE(c.cubin.empty()) << src.name;
          counts_.compiled++;
          if (src.code.find("unsigned short* __restrict__") != std::string::npos) counts_.half_kernels++;
        }
        kernels.push_back(std::make_unique<Unrun>());
      }
      return kernels;
    }
    std::unique_ptr<backend::Kernel> attention_kernel(const Graph& g, const schedule::AttentionGroup& a) override {
      if (!backend::cuda::attention_fused(options_, g.value(a.q).type.dtype, a.head_dim)) return nullptr;
      counts_.attention++;
      const backend::cuda::AttentionSpec spec{g.value(a.q).type.dtype, a.head_dim, a.mask != kNoValue, a.guard};
      const std::string name = fmt::format("attention_{}_{}_{}_{}", dtype_name(spec.dtype), spec.head_dim, spec.mask,
                                           spec.guard);
      if (compiled_.insert(name).second) {
        const std::string code = backend::cuda::attention_uses_tensor_cores(spec)
                                     ? backend::cuda::attention_mma_source(name, spec)
                                     : backend::cuda::attention_source(name, spec);
        const backend::cuda::CompiledCubin c = backend::cuda::compile_to_cubin(code, name + ".cu", "sm_90a");
        EXPECT_EQ(c.log, "") << name;
        counts_.compiled++;
      }
      return std::make_unique<Unrun>();
    }
    std::unique_ptr<backend::Kernel> node_kernel(const Graph& g, const Node& node) override {
      counts_.nodes++;
      counts_.softmax_outside += node.op == OpKind::Softmax;
      if (!backend::cuda::has_node_kernel(g, node)) counts_.missing.push_back(std::string(op_name(node.op)));
      return std::make_unique<Unrun>();
    }
    backend::TuningStats finish() override { return {}; }

   private:
    Counts& counts_;
    Options options_;
    std::set<std::string> compiled_;
  };

  Counts& counts_;
  HostOnlyRuntime runtime_;
};
#endif

struct ZooCase {
  ZooModel model;
  const char* precision;  // the `precision` setting: fp32, or bf16 (the half path; fp16 differs only in its helpers)
};

std::vector<ZooCase> zoo_cases() {
  std::vector<ZooCase> cases;
  for (const char* precision : {"fp32", "bf16"})
    for (const ZooModel& m : test_common::zoo_models()) cases.push_back({m, precision});
  return cases;
}

class CudaCodegenZoo : public ::testing::TestWithParam<ZooCase> {};

TEST_P(CudaCodegenZoo, EveryKernelCompilesWithNvrtcAndEveryNodeHasADeviceRoute) {
#ifndef KILN_HAVE_CUDA
  GTEST_SKIP() << "SKIPPED: this kiln was built without the CUDA toolkit";
#else
  std::string why;
  if (!backend::cuda::nvrtc_available(&why)) GTEST_SKIP() << "SKIPPED: NVRTC is not available here: " << why;
  const ZooModel& c = GetParam().model;
  const std::string precision = GetParam().precision;
  const std::filesystem::path path = test_common::zoo_model(c.name, why);
  if (path.empty()) {
    if (why.rfind("SKIPPED", 0) == 0) GTEST_SKIP() << why;
    FAIL() << why;
  }
  Options options;
  options.precision = precision;
  Counts counts;
  CudaCodegenBackend backend(counts);
  compiler::Executable exe = compiler::compile(import_onnx(path.string(), options), backend, options, Mode::compiled, c.dims);
  EXPECT_GT(counts.library, 0);
  // The default plan: in bf16 every attention of the zoo is one kernel (a layer's self attention,
  // trocr's decoder self and cross attention) and no Softmax is left with its [B,H,Sq,Sk] scores in
  // memory; in fp32 (cuda_attention=auto) each stays the unfused chain, its Softmax a row kernel.
  const std::map<std::string, int> attentions{{"bert", 12}, {"distilbert", 6}, {"gpt2", 12},
                                              {"vit", 12}, {"trocr_small", 18}, {"resnet18", 0}};
  if (attentions.count(c.name)) {
    const int n = attentions.at(c.name);
    EXPECT_EQ(counts.attention, precision == "fp32" ? 0 : n) << c.name;
    EXPECT_EQ(counts.softmax_outside, precision == "fp32" ? n : 0) << c.name;
  }
  if (c.has_generated) {
    EXPECT_GT(counts.compiled, 0);
  }
  // LayerNorms folded into the product after them (setting cuda_fold_layer_norm, off by default; bf16 on a
  // Hopper GPU): bert's 24 encoder ones and its embeddings' (into layer 0's Q/K/V product; the embeddings'
  // Adds become a pointwise kernel); only the head's (before the padded vocabulary product, N = 30522)
  // stays a row kernel.
  if (c.name == std::string("bert")) {
    EXPECT_EQ(counts.folded_norms, 0) << "folded by default";
    EXPECT_EQ(counts.norm_rows, 26);
    Options fold = options;
    fold.cuda_fold_layer_norm = true;
    Counts folded;
    CudaCodegenBackend fold_backend(folded);
    compiler::compile(import_onnx(path.string(), fold), fold_backend, fold, Mode::compiled, c.dims);
    EXPECT_EQ(folded.folded_norms, precision == "fp32" ? 0 : 25);
    EXPECT_EQ(folded.norm_rows, precision == "fp32" ? 26 : 1);
  }
  std::string list;
  for (const std::string& op : std::set<std::string>(counts.missing.begin(), counts.missing.end())) list += op + " ";
  EXPECT_EQ(list, "") << c.name << ": no device kernel for these ops";
  if (precision != "fp32" && c.has_generated) {
    EXPECT_GT(counts.half_kernels, 0) << "no generated kernel reads or writes " << precision;
  }
  std::cout << c.name << " " << precision << ": " << counts.attention << " attention groups, " << counts.half_kernels
            << " half kernels, " << counts.generated << " generated groups (" << counts.compiled
            << " distinct kernels compiled), " << counts.library << " library groups (" << counts.folded_norms
            << " with a LayerNorm folded in, " << counts.norm_rows << " left in row kernels), " << counts.nodes
            << " lone nodes\n";
#endif
}

INSTANTIATE_TEST_SUITE_P(Zoo, CudaCodegenZoo, ::testing::ValuesIn(zoo_cases()), [](const auto& info) {
  return std::string(info.param.model.name) + "_" + info.param.precision;
});

}  // namespace
}  // namespace kiln
