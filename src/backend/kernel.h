// What the executor launches: one compiled step (a generated kernel, a library call, an eager node),
// built by a backend at compile time. Backends implement Kernel; the executor and the autotuner's
// candidates only call launch().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::backend {

// The queue a launch is ordered on. The host backend runs synchronously and passes no stream; a
// device backend gives its stream here.
struct Stream {
  void* handle = nullptr;
};

struct LaunchArgs {
  const std::vector<const Tensor*>& inputs;  // in the step's input order; nullptr: an omitted optional input
  // One per output: a buffer of the memory plan (an undefined tensor where the plan has none). A kernel
  // writes into it when it has the output's dtype and shape, else it makes its own output.
  std::vector<Tensor>& planned;
  int64_t max_tensor_bytes = INT64_MAX;  // what a kernel may allocate for one output
  Stream stream{};
};

class Kernel {  // built once per compile; launch() is const and thread-safe (many runs at once)
 public:
  virtual ~Kernel() = default;
  // One tensor per output of the step. Shapes the kernel was not built for are user errors.
  virtual std::vector<Tensor> launch(const LaunchArgs& args) const = 0;
  // A generated kernel's name (its content hash), for plans and profiles; empty for others.
  virtual std::string name() const { return {}; }
};

// A kernel of one output: the form of library calls and generated kernels.
class SingleOutputKernel : public Kernel {
 public:
  std::vector<Tensor> launch(const LaunchArgs& args) const final {
    Tensor planned = args.planned.empty() ? Tensor() : std::move(args.planned[0]);
    return {run(args.inputs, args.max_tensor_bytes, std::move(planned))};
  }
  // The output: `planned` where it has the output's dtype and shape (it never overlaps an input), else a
  // new tensor.
  Tensor run(const std::vector<const Tensor*>& inputs, int64_t max_tensor_bytes, Tensor planned = {}) const {
    return run_into(inputs, max_tensor_bytes, std::move(planned));
  }

 protected:
  virtual Tensor run_into(const std::vector<const Tensor*>& inputs, int64_t max_tensor_bytes, Tensor planned) const = 0;
};

}  // namespace kiln::backend
