// Shared plumbing of the fused library calls (fused_matmul.cpp, fused_conv.cpp): the post-op chain of
// an Epilogue, and prepacked constant weights. Not part of the public kernel API (see fused.h).
#pragma once
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "kernels/onednn/fused.h"
#include "kernels/onednn/runtime.h"

namespace kiln::onednn::detail {

// The oneDNN type a product of `operands` reads.
inline dnnl::memory::data_type operand_type(Operands operands) {
  return operands == Operands::bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

// The attributes of a primitive that applies the first `steps` steps of `e`, and how to bind them.
struct PostOpPlan {
  dnnl::primitive_attr attr;
  bool native_bias = false;  // the bias goes to DNNL_ARG_BIAS (then bias_md describes it)
  dnnl::memory::desc bias_md;
  int bias_arg = 0;          // else DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1 of a binary add, or 0
  int residual_arg = 0;      // the same for the residual's binary add, or 0 (sum post-op or none)
};
// `rank` is the destination's rank; the channel dim is `channel_axis`. With `residual_as_sum`, the
// residual is a sum post-op (the caller fills the destination with it first); otherwise a binary add
// reading `dst_md`.
PostOpPlan plan_post_ops(const Epilogue& e, int steps, const dnnl::memory::desc& dst_md, int channel_axis,
                         bool residual_as_sum);

// Constant weights reordered into each layout a primitive asks for, once (thread-safe).
class PrepackedWeights {
 public:
  PrepackedWeights(dnnl::memory::desc user_md, std::shared_ptr<const void> owner, const float* data)
      : user_md_(std::move(user_md)), owner_(std::move(owner)), data_(data) {}
  // The weights in layout `md` (made on first request).
  std::shared_ptr<const dnnl::memory> get(const dnnl::memory::desc& md);

 private:
  struct Packed {
    dnnl::memory::desc md;
    std::shared_ptr<const dnnl::memory> mem;
    std::shared_ptr<const void> saved_owner;  // a saved model's mapping, when mem wraps it
  };
  dnnl::memory::desc user_md_;
  std::shared_ptr<const void> owner_;
  const float* data_;
  std::mutex mutex_;
  std::vector<Packed> packed_;
};

}  // namespace kiln::onednn::detail
