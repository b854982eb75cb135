// Runs one node on concrete tensors: shape inference with values, output allocation, the kernel.
// The eager executor, constant folding and the op tests all go through here.
#pragma once
#include <vector>

#include "ops/registry.h"

namespace kiln {

struct NodeRunOptions {
  KernelContext kernel;
  int64_t max_rank = 16;
  int64_t max_tensor_bytes = int64_t{16} << 30;
  int64_t max_loop_iterations = 10'000'000;
};

// `inputs[i]` is nullptr for an omitted optional input. Returns one tensor per node output (an
// undefined tensor for an omitted optional output). Unsupported ops are user errors.
// `preallocated` (optional, one entry per output) gives buffers planned by the caller: a defined
// entry (one with a buffer) must have the output's run-time dtype and shape (else an InternalError); it is zeroed and
// written, as a fresh output would be.
std::vector<Tensor> run_node(const Node& node, const std::vector<const Tensor*>& inputs,
                             const NodeRunOptions& options, std::vector<Tensor>* preallocated = nullptr);

// Converts every element to `to` (any dtype to any dtype; float to integer truncates toward zero,
// NaN to integer gives 0, to bool is != 0).
Tensor convert_tensor(const Tensor& t, DType to);

}  // namespace kiln
