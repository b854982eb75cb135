// The callable form of a LibraryGroup (fuse_library.h): one oneDNN matmul or convolution with the
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
#include <memory>
#include <vector>

#include "ir/graph.h"
#include "kiln/options.h"
#include "schedule/fuse_library.h"

namespace kiln::schedule {

class LibraryKernel {  // built once per session; run() is const and thread-safe (many threads at once)
 public:
  virtual ~LibraryKernel() = default;
  // inputs[i] is the tensor of group.inputs[i] (constants too). Returns the group output. Shapes that
  // differ from what the group was built for (K, channels, residual) are user errors.
  virtual Tensor run(const std::vector<const Tensor*>& inputs, int64_t max_tensor_bytes) const = 0;
};

// Never returns null: every group find_library_groups makes can be built.
std::unique_ptr<LibraryKernel> build_library_kernel(const Graph& g, const LibraryGroup& group, const Options& options);

}  // namespace kiln::schedule
