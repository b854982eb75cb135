// Session: a model loaded, prepared once, and run many times. run() is const and safe to call from
// many threads at once (each call has its own buffers).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/options.h"
#include "kiln/tensor.h"

namespace kiln {

class Graph;

enum class Mode {
  eager,      // each op its own kernel, vendor libraries where they apply
  reference,  // the oracle: fp64 everywhere, plain loops
  compiled,   // the compiler: fused groups become generated C++ kernels or library calls with
              // post-ops; the nodes left run on their eager kernels
};
const char* mode_name(Mode m);
// The mode of that name ("eager", "reference", "compiled"); nullopt for any other.
std::optional<Mode> mode_from_name(std::string_view name);

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<std::string> dims;  // "128" or a symbol name
};

struct RunStats {
  int ops = 0;              // graph nodes after preparation (what eager runs)
  int kernels = 0;          // kernels launched per run: a fused group counts once, a view (Reshape) not at all
  int fused_kernels = 0;    // generated kernels among them
  int library_kernels = 0;  // library calls with fused post-ops among them
  int views = 0;            // steps that only give a buffer another shape
  int buffers = 0;          // planned intermediate buffers (reused across the run)
  int64_t arena_bytes = 0;  // their total size
  int64_t bytes_moved = -1; // bytes all kernels read and write at the compile-time sizes (-1: unknown)
  int autotuned_ops = 0;        // ops whose implementation the autotuner chose at compile time...
  int autotune_benchmarks = 0;  // ...of which it benchmarked this many (the rest: tuning database or default)
  int template_kernels = 0;     // library steps running kiln's GEMM template (the autotuner's pick)
  int blas_kernels = 0;         // library steps running OpenBLAS's sgemm and an epilogue pass (likewise)
  int graph_captures = 0;       // device runs captured into a replayed graph so far (CUDA graphs)
};

// Where a run's time went, step by step (Session::run with a profile). A step is one kernel launch: an
// eager node, a generated kernel, a library call, or a view (no kernel).
struct StepProfile {
  std::string kind;                       // "node", "view", "generated", "library"
  std::string label;                      // kernel name or op, e.g. "matmul+bias+gelu"
  std::vector<std::string> source_nodes;  // the graph nodes it computes (their names)
  std::vector<std::string> source_ops;    // and their op types, in the same order
  std::vector<std::string> input_types;   // "f32[1,128,768]" per input (constants included)
  std::string output_type;
  double ms = 0.0;        // from just before its launch to just after (on a device: when the stream ran it)
  double start_ms = 0.0;  // its start, from the first step's start, on the same clock
};
struct RunProfile {
  std::vector<StepProfile> steps;  // in execution order
  double total_ms = 0.0;           // the whole run, wall clock
  int threads = 0;                 // the OpenMP threads the run's kernels had (the threads setting, or every core)
  // Step times are the device's clock (events on its stream, around each launch), not the host's: on a
  // GPU each step is a stream launch, never a replayed graph (a profiled run is not captured).
  bool device_clock = false;
};

class Session {
 public:
  // Loads an ONNX file. `dims` binds symbolic sizes (batch=1, seq=128) before preparation.
  static Session load_onnx(const std::string& path, Mode mode, const Options& options,
                           const std::map<std::string, int64_t>& dims = {});
  static Session from_graph(Graph graph, Mode mode, const Options& options,
                            const std::map<std::string, int64_t>& dims = {});
  // Loads an ONNX file or a saved model (`kiln compile -o`, told apart by its first bytes). A saved
  // model prepares without compiling or benchmarking, in the mode, sizes and settings it was compiled
  // with: `mode` and `dims` must agree with them, and a setting of `options` changed from its default
  // must have the file's value (debug, dump_dir, compile_jobs and cache_dir excepted). A damaged file,
  // one from another kiln build or for another machine is a user error.
  static Session load_file(const std::string& path, Mode mode, const Options& options,
                           const std::map<std::string, int64_t>& dims = {});
  // from_graph, then the compiled model written to `path` as a saved model (CPU only), which
  // load_file reads back.
  static Session compile_to_file(Graph graph, Mode mode, const Options& options,
                                 const std::map<std::string, int64_t>& dims, const std::string& path);
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  Mode mode() const;
  RunStats stats() const;
  const Graph& graph() const;

  // Runs with named inputs; every graph input must be given with a matching dtype and rank, and
  // consistent sizes for shared symbols. Returns outputs by name. In reference mode float inputs are
  // widened to f64 and float outputs come back as f64.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;
  // The same, timing every step into `profile` (replaced, not appended to).
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs, RunProfile* profile) const;

  // Tensors on the session's device (a GPU's memory with --device cuda; the host otherwise): run()
  // given only device inputs returns device outputs, with no copy to or from the host.
  std::map<std::string, Tensor> to_device(const std::map<std::string, Tensor>& tensors) const;
  std::map<std::string, Tensor> to_host(const std::map<std::string, Tensor>& tensors) const;

  struct Impl;  // opaque: defined in src/runtime/session.cpp

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
