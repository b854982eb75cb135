// Session: a model loaded, prepared once, and run many times. run() is const and safe to call from
// many threads at once (each call has its own buffers).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/options.h"
#include "kiln/tensor.h"

namespace kiln {

class Graph;

enum class Mode {
  eager,      // each op its own kernel, vendor libraries where they apply
  reference,  // the oracle: fp64 everywhere, plain loops
  compiled,   // first steps of the compiler: pointwise chains fused into generated C++ kernels,
              // every other node on its eager kernel
};
const char* mode_name(Mode m);

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<std::string> dims;  // "128" or a symbol name
};

struct RunStats {
  int ops = 0;      // graph nodes after preparation (what eager runs)
  int kernels = 0;  // kernels launched per run (fused groups count once)
  int fused_kernels = 0;  // generated kernels among them
};

class Session {
 public:
  // Loads an ONNX file. `dims` binds symbolic sizes (batch=1, seq=128) before preparation.
  static Session load_onnx(const std::string& path, Mode mode, const Options& options,
                           const std::map<std::string, int64_t>& dims = {});
  static Session from_graph(Graph graph, Mode mode, const Options& options,
                            const std::map<std::string, int64_t>& dims = {});
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

  struct Impl;  // opaque: defined in src/runtime/session.cpp

 private:
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
