// The seam between the compiler and a target. The compiler (src/compiler) runs the same passes for
// every backend; a backend says which fusions it takes, gives the router its device's thresholds,
// builds the kernels of the steps (library calls, generated kernels, eager nodes) and allocates the
// run's memory. docs/ADDING_A_BACKEND.md walks through the CPU backend as the example.
#pragma once
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "backend/kernel.h"
#include "kiln/graph.h"
#include "kiln/options.h"
#include "loops/pointwise.h"
#include "loops/row_kernel.h"
#include "schedule/fuse_attention.h"
#include "schedule/fuse_library.h"
#include "schedule/fuse_pointwise.h"
#include "schedule/softmax_route.h"

namespace kiln::backend {

// A group the fusion passes made into one generated kernel: its loops IR, what it reads and where its
// size symbols come from at run time.
struct GeneratedGroup {
  std::vector<NodeId> nodes;    // topological order; the last one makes `output`
  std::vector<ValueId> inputs;  // in kernel input order
  ValueId output = kNoValue;
  std::vector<schedule::SymbolSource> symbols;  // in kernel_symbols order
  std::variant<loops::PointwiseKernel, loops::RowKernel> kernel;
  int64_t split_min_cols = loops::kRowSplitMinCols;  // row kernels: rows this long are split across threads
};

// The fusion passes whose groups a backend builds kernels for.
struct Fusions {
  bool library = false;    // library calls with fused post-ops (fuse_library)
  bool rows = false;       // row kernels (fuse_rows)
  bool pointwise = false;  // pointwise kernels (fuse_pointwise)
  // A lone pointwise node becomes a generated kernel too (a device has no eager kernels to fall back on).
  bool pointwise_singletons = false;
  // Groups may hold f16 / bf16 values (kernels that compute them in f32); without it those nodes are
  // left to the node kernels, which widen them.
  bool half_floats = false;
  // Only the generated row and pointwise kernels take f16 / bf16 values (the library calls and the
  // attention kernels stay f32): the CPU, whose generated kernels widen halves at each load.
  bool half_generated = false;
  // Attention chains become one group each (schedule/fuse_attention.h) for BackendCompile::attention_kernel.
  bool attention = false;
  // MatMuls that share their activation and have constant weights become one wide MatMul and a Split
  // (passes/merge_sibling_matmuls.cpp): one launch instead of several where launches dominate.
  bool sibling_matmuls = false;
  // Flattened Gemms between two Reshapes become MatMuls over the unflattened activation
  // (passes/gemm_as_matmul.cpp), so that a residual Add or an activation after them joins the product.
  bool gemm_as_matmul = false;
  // MatMuls of two DequantizeLinear outputs become MatMulInteger times the scales' product
  // (passes/integer_matmuls.cpp): the backend runs 8-bit products with exact i32 sums.
  bool integer_matmul = false;
  // Under precision bf16, the library products (matmul, convolution) read bf16 operands inside their
  // kernels and the rest of the graph stays f32 (the CPU, where oneDNN has native bf16 kernels).
  bool bf16_products = false;
  // Activations between convolutions stay in the library's blocked layout (schedule/blocked_layouts.h):
  // the backend's Conv kernels read and write it where a group says so.
  bool blocked_conv_layouts = false;
};

// What a compile's tuning did, for RunStats and the terminal.
struct TuningStats {
  int tuned_ops = 0;         // ops whose implementation the autotuner chose
  int benchmarks = 0;        // of which it benchmarked this many (the rest came from its store)
  int template_kernels = 0;  // library steps on kiln's GEMM template
  int blas_kernels = 0;      // library steps on OpenBLAS plus an epilogue pass
  std::string summary;       // the autotuner's table (empty: nothing tuned)
};

// Where a run's tensors live and how they get there: the arena's memory, the queue kernels launch on,
// and the copies between the host and the device (host memory and no copies on the CPU; device
// memory, a stream and asynchronous copies on a GPU).
class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  // At least `bytes`, 64-byte aligned; freed when the last owner lets go. Out of memory: a user error.
  virtual std::shared_ptr<void> allocate(int64_t bytes) const = 0;
  // Where what it allocates lives (planned buffers are wrapped as tensors on it).
  virtual Device device() const { return {}; }
  // The stream launches are ordered on (none on the host).
  virtual Stream stream() const { return {}; }
  // `t` on this runtime's device (a copy when it lives elsewhere; ordered on stream()).
  virtual Tensor upload(const Tensor& t) const { return t; }
  // `t` in host memory (waits for the work queued before it).
  virtual Tensor download(const Tensor& t) const { return t; }
  // Waits until every launch queued on stream() has finished (a device fault is reported here).
  virtual void synchronize() const {}
  // Copies `from` (host or this device) into `to` (this device, same dtype and shape), on stream().
  virtual void copy_into(const Tensor& from, Tensor& to) const;

  // Capture: a device records a run's launches once and replays them as one graph (a CUDA graph: one
  // launch per run, no host work between kernels). Between begin_capture and end_capture launches on
  // stream() are recorded, not run, and what allocate() returns stays allocated for the graph's life.
  // The caller runs nothing else on this runtime meanwhile.
  virtual bool can_capture() const { return false; }
  virtual void begin_capture() const;
  virtual std::shared_ptr<const void> end_capture() const;  // the replayable graph (owns what it allocated)
  virtual void abort_capture() const noexcept {}            // after a failure between begin and end
  virtual void replay(const void* graph) const;             // queues the graph on stream()

  // Timing launches without waiting after each: mark() records a point on stream() that the stream
  // passes once the work queued before it is done (the host, which has no queue, reads its clock at
  // the call); once synchronize() has returned, elapsed_ms gives the time between two marks. A device
  // marks with its own clock (events on the stream) and never while the stream is being captured: an
  // event recorded then would be a node of the graph, not a time.
  class Mark {
   public:
    virtual ~Mark() = default;
  };
  virtual std::unique_ptr<Mark> mark() const;
  virtual double elapsed_ms(const Mark& from, const Mark& to) const;
  // Whether marks read the device's clock (then a step's time is when the stream ran it, not host time).
  virtual bool device_clock() const { return false; }
};

// One compile's work on a backend: its kernels, and the state that spans the model (the autotuner,
// whose budget and store cover every group).
class BackendCompile {
 public:
  virtual ~BackendCompile() = default;
  // The library call of a group, or null when the backend refuses it (its library has no
  // implementation for the case): then its nodes stay with the other passes.
  virtual std::unique_ptr<Kernel> library_kernel(const Graph& g, const schedule::LibraryGroup& group) = 0;
  // One kernel per group, in order (compiled together).
  virtual std::vector<std::unique_ptr<Kernel>> generated_kernels(const Graph& g,
                                                                 const std::vector<GeneratedGroup>& groups) = 0;
  // The kernel of an attention group, or null when the backend refuses it (its nodes stay with the
  // other passes). Only asked where Fusions::attention says so.
  virtual std::unique_ptr<Kernel> attention_kernel(const Graph&, const schedule::AttentionGroup&) { return nullptr; }
  // A node that runs on its own: its eager kernel (or a view).
  virtual std::unique_ptr<Kernel> node_kernel(const Graph& g, const Node& node) = 0;
  // A graph constant a step reads, where the backend's kernels read it (a device uploads it once, in
  // the precision it runs in). The host keeps the graph's own tensor.
  virtual std::shared_ptr<const Tensor> place_constant(std::shared_ptr<const Tensor> constant) { return constant; }
  // Called once, after every kernel is built.
  virtual TuningStats finish() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu"
  // The device in tuning stores' keys: what a measurement made here holds for.
  virtual std::string device_key(const Options& options) const = 0;
  virtual Fusions fusions(const Options& options) const = 0;
  // The softmax router's width thresholds on this device (a stored calibration, else defaults).
  virtual schedule::RoutingThresholds routing_thresholds(const Options& options) const = 0;
  // Whether this backend tunes the product of a MatMul / Gemm group (schedule::FusionTarget::tunes_gemm).
  virtual bool tunes_gemm(const Graph& g, const schedule::LibraryGroup& group, const Options& options) const = 0;
  // Whether this backend folds the group's LayerNormalization into its product
  // (schedule::FusionTarget::folds_layer_norm); the CPU does not.
  virtual bool folds_layer_norm(const Graph&, const schedule::LibraryGroup&, const Options&) const { return false; }
  virtual std::unique_ptr<BackendCompile> start_compile(const Options& options) const = 0;
  virtual const DeviceRuntime& runtime() const = 0;
};

}  // namespace kiln::backend
