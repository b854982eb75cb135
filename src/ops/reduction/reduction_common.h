// Shared pieces of the reduction family (softmax, layernorm, batchnorm, Reduce*, ArgMax/ArgMin).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/common.h"

namespace kiln {

// A tensor seen as [outer, len, inner] around one axis (row-major): the axis' elements are `inner`
// apart, and the inner loop over `inner` is contiguous.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
inline AxisSplit split_at_axis(const std::vector<int64_t>& dims, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    int64_t v = dims[static_cast<size_t>(d)];
    if (d < axis) s.outer *= v;
    else if (d == axis) s.len = v;
    else s.inner *= v;
  }
  return s;
}

// Elements of `inner` handled per task when reducing a non-last axis: the working rows of one task
// (a few arrays of this many floats) stay in L1/L2.
inline constexpr int64_t kColumnChunk = 1024;

// Runs f(outer_index, inner_begin, inner_count) for every (outer, chunk of inner) pair, in parallel.
// `work_per_task` estimates the elements one task touches, so that tiny problems stay serial.
template <class F>
void for_outer_and_chunks(int64_t outer, int64_t inner, int64_t work_per_task, F&& f) {
  int64_t chunks = (inner + kColumnChunk - 1) / kColumnChunk;
  int64_t per_thread = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, work_per_task));
  parallel_for(outer * chunks, per_thread, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / chunks, j0 = (t % chunks) * kColumnChunk;
      f(o, j0, std::min(kColumnChunk, inner - j0));
    }
  });
}

// The fast f32 path applies (eager mode on f32 data); everything else runs the plain loops.
inline bool use_fast_f32(const KernelContext& ctx, DType t) { return !ctx.reference && t == DType::f32; }

// Optional output i is requested by the node (and was allocated).
inline bool has_output(const Node& node, size_t i) {
  return i < node.outputs.size() && node.outputs[i] != kNoValue;
}

void register_softmax_ops(OpRegistry& r);
void register_layernorm_op(OpRegistry& r);
void register_batchnorm_op(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_argminmax_ops(OpRegistry& r);

}  // namespace kiln
