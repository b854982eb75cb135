// The CPU backend's kernels for LibraryGroups (schedule/fuse_library.h): one oneDNN matmul or convolution with the
// group's consumers as post-ops, or one oneDNN softmax (kernels/onednn/softmax.h, NaN rows fixed).
// Built once per session: constant weights are reordered into the primitive's layout once
// (BatchNormalization folded in first, in double), primitives are cached per run-time shape.
//
// NaN: oneDNN's relu post-op maps NaN to 0 where ONNX keeps it. A group with a Relu therefore scans
// its non-constant inputs on each call (constants once, at build); when one holds NaN or Inf, the
// call stops oneDNN before the first Relu and finishes the epilogue with plain ONNX-exact loops.
// (Finite inputs whose sums overflow to +Inf and -Inf in different lanes could still give NaN before
// the Relu inside oneDNN; the fused call gives 0 there.)
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/options.h"
#include "backend/kernel.h"
#include "kernels/onednn/fused.h"
#include "codegen/cpu/compile_kernels.h"
#include "codegen/cpu/cpu_features.h"
#include "schedule/fuse_library.h"

namespace kiln::autotune {
class Autotuner;
}

namespace kiln::backend::cpu {

using schedule::LibraryActivation;
using schedule::LibraryCore;
using schedule::LibraryGroup;

// Built once per session; run() is const and thread-safe (many threads at once). inputs[i] is the
// tensor of group.inputs[i] (constants too). Shapes that differ from what the group was built for (K,
// channels, residual) are user errors.
using LibraryKernel = SingleOutputKernel;

// Whether the library products (oneDNN matmul and convolution) read bf16 operands: under precision bf16,
// which the compile accepts on the CPU only where oneDNN has native bf16 kernels. Sums, epilogues,
// inputs and outputs stay f32.
inline bool bf16_products(const Options& options) { return options.precision == "bf16"; }

// Never returns null: every group find_library_groups makes can be built.
std::unique_ptr<LibraryKernel> build_library_kernel(const Graph& g, const LibraryGroup& group, const Options& options);

// A kernel shared by several owners (the autotuner's candidates and the session).
class SharedLibraryKernel final : public LibraryKernel {
 public:
  explicit SharedLibraryKernel(std::shared_ptr<LibraryKernel> k) : k_(std::move(k)) {}
  Tensor run_into(const std::vector<const Tensor*>& inputs, int64_t max_tensor_bytes, Tensor planned) const override {
    return k_->run(inputs, max_tensor_bytes, std::move(planned));
  }

 private:
  std::shared_ptr<LibraryKernel> k_;
};

// Products smaller than this many multiply-adds stay with the library: a template's compile and a
// benchmark cost more than they could win.
inline constexpr double kTuneMinMacs = double(1 << 21);
// A group whose rows are symbolic (batch x sequence) is tuned at this many rows, and its template is the
// persistent kernel that takes M at run time, so any size runs without a recompile.
inline constexpr int64_t kSymbolicTuneRows = 128;

// A MatMul / Gemm group with constant 2-D weights and a static K (rows may be symbolic), or a batched
// MatMul of two computed operands with static shapes (B packed per call), on the faster of its oneDNN
// kernel ("onednn", made by `make_library` when prepared), kiln's GEMM templates with the group's epilogue in their store hook
// ("template:<config>") and OpenBLAS's sgemm followed by the epilogue as a pass ("blas"), as the autotuner picks (options: autotune, gemm_backends); every candidate is
// checked against fp64 rows of the group's result first. Only groups marked tuned (worth_tuning) come
// here; the others are built directly.

// The GEMM libraries' versions, as tuning-database keys: "onednn 2.7.3; openblas 0.3.21 Haswell".
std::string gemm_library_versions();

// Whether the CPU backend tunes this group (its tunes_gemm; find_library_groups records it in grp.tuned,
// and tune_matmul_kernel takes exactly the groups marked so).
bool worth_tuning(const Graph& g, const LibraryGroup& group, const Options& options);
// Builds the group's oneDNN kernel (build_library_kernel): called only when that candidate is prepared.
using LibraryFactory = std::function<std::unique_ptr<LibraryKernel>()>;
std::unique_ptr<LibraryKernel> tune_matmul_kernel(const Graph& g, const LibraryGroup& group, const Options& options,
                                                  autotune::Autotuner& tuner, const std::string& device_key,
                                                  LibraryFactory make_library);

// A Conv group on oneDNN's direct or Winograd kernel (onednn::ConvAlgorithm). tunes_conv: the backend
// has the autotuner choose (cpu_conv_algorithm auto, f32 products, a static 2-D 3x3 window at stride 1
// without groups, at most ReLUs after it, big enough to be worth a benchmark); tune_conv_kernel times
// both on the group's weights after checking each against the group's fp64 output (conv_tuning.cpp).
// Other groups take conv_algorithm(options): Winograd where the setting says so (and oneDNN has it).
bool tunes_conv(const Graph& g, const LibraryGroup& group, const Options& options);
onednn::ConvAlgorithm conv_algorithm(const Options& options);
std::unique_ptr<LibraryKernel> tune_conv_kernel(const Graph& g, const LibraryGroup& group, const Options& options,
                                                autotune::Autotuner& tuner, const std::string& device_key);

// The source of kiln's GEMM template for a tuned group, at the first config of its space for
// `features`, with the group's epilogue in the store hook: what tests/compiler/zoo_snapshot_test.cpp
// keeps so that a refactor that changes it shows the diff. Null for a group that is not tuned.
std::optional<codegen::cpu::KernelSource> gemm_template_source(const Graph& g, const LibraryGroup& group,
                                                               const codegen::cpu::CpuFeatures& features);

}  // namespace kiln::backend::cpu
