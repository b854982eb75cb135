// What `kiln sweep softmax` times: the steps of an Executable (compiler::compile's output), each
// launched through its backend::Kernel as runtime::execute launches it, but into buffers allocated
// once. runtime::execute is not used because it allocates (and zeroes) every graph output per run,
// which at attention's sizes costs as much as the kernel being measured.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "compiler/executable.h"
#include "kiln/tensor.h"

namespace kiln::tools {

// The steps that compute graph output `output` (and the steps those read from), in plan order: one
// part of a graph made of independent parts. An unknown name is an internal error.
std::vector<int> steps_reaching(const compiler::Executable& exe, const std::string& output);

// Launches `steps` of `exe` in order. `bound` gives tensors by value name: every graph input the steps
// read, and optionally buffers for the values they write (a graph output); every other value a step
// writes gets a buffer of its static type here, once. Views (no kernel, shared buffers) are not
// supported: internal error. Each launch checks that every kernel wrote into its buffer, so that
// nothing timed allocates.
class PreallocatedSteps {
 public:
  PreallocatedSteps(const compiler::Executable& exe, std::vector<int> steps, std::map<std::string, Tensor> bound,
                    int64_t max_tensor_bytes);
  void launch();
  // The tensor of value `name` (a bound one, or a step's output after launch()).
  const Tensor& value(const std::string& name) const;

 private:
  const compiler::Executable& exe_;
  std::vector<int> steps_;
  std::vector<Tensor> values_;  // per ValueId
  int64_t max_tensor_bytes_;
};

}  // namespace kiln::tools
