// Shared parts of the library-call kernels (library_kernel.cpp: matmul and Gemm;
// library_kernel_conv.cpp: convolution; library_softmax.cpp: Softmax, LogSoftmax). Internal to
// src/schedule.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "kernels/onednn/fused.h"
#include "backend/cpu/library_kernel.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::backend::cpu::library_detail {

inline onednn::Activation to_onednn(LibraryActivation a) {
  switch (a) {
    case LibraryActivation::none: return onednn::Activation::none;
    case LibraryActivation::relu: return onednn::Activation::relu;
    case LibraryActivation::tanh: return onednn::Activation::tanh;
    case LibraryActivation::sigmoid: return onednn::Activation::sigmoid;
    case LibraryActivation::gelu_erf: return onednn::Activation::gelu_erf;
    case LibraryActivation::gelu_tanh: return onednn::Activation::gelu_tanh;
    case LibraryActivation::silu: return onednn::Activation::silu;
    case LibraryActivation::hard_swish: return onednn::Activation::hard_swish;
  }
  return onednn::Activation::none;
}

inline const Tensor& constant_of(const Graph& g, ValueId v) {
  const auto& c = g.value(v).constant;
  KILN_INTERNAL_CHECK(c && c->dtype() == DType::f32, "library call: '{}' is not an f32 constant", g.value(v).name);
  return *c;
}

// A constant with one value or one per channel, as `channels` floats.
inline std::vector<float> per_channel(const Tensor& t, int64_t channels) {
  KILN_INTERNAL_CHECK(t.numel() == 1 || t.numel() == channels, "library call: bias of {} values for {} channels",
                      t.numel(), channels);
  std::vector<float> r(static_cast<size_t>(channels));
  for (int64_t i = 0; i < channels; ++i) r[size_t(i)] = t.data<float>()[t.numel() == 1 ? 0 : i];
  return r;
}

inline bool nonfinite(const std::vector<float>& v) {
  return onednn::any_nonfinite(v.data(), static_cast<int64_t>(v.size()));
}

inline std::string dims_string(const std::vector<int64_t>& d) { return fmt::format("[{}]", fmt::join(d, ",")); }

// What every library kernel shares: messages, the residual check, output allocation, the NaN guard.
class KernelBase : public LibraryKernel {
 protected:
  KernelBase(const Graph& g, const LibraryGroup& grp)
      : label_(grp.label), node_(g.nodes[size_t(grp.core_node)].name), residual_(grp.residual) {}

  // Call once the epilogue is known (and constants_nonfinite_ set).
  void init_guard(const onednn::Epilogue& e) { unsafe_step_ = onednn::first_nan_unsafe_step(e); }

  template <class... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    user_error("{}: {}", where(), fmt::format(f, std::forward<Args>(args)...));
  }
  std::string where() const { return fmt::format("library call '{}' (node '{}')", label_, node_); }

  // The residual operand, checked against the output's shape; null when the group has none.
  const Tensor* residual(const std::vector<const Tensor*>& in, const std::vector<int64_t>& out_dims) const {
    if (residual_ < 0) return nullptr;
    const Tensor* r = in.at(size_t(residual_));
    if (!r || r->dtype() != DType::f32 || r->shape() != out_dims)
      fail("the residual has shape {}, the output {}", r ? r->shape_string() : "?", dims_string(out_dims));
    return r;
  }

  // The output: the planned buffer where it fits, else a new tensor.
  Tensor allocate(const std::vector<int64_t>& dims, int64_t max_bytes, Tensor& planned) const {
    if (planned.raw() && planned.dtype() == DType::f32 && planned.shape() == dims) return std::move(planned);
    int64_t n = checked_numel(dims, "library call output");
    if (checked_mul(n, 4, "library call output") > max_bytes) fail("output of {} elements exceeds max_tensor_bytes", n);
    return Tensor::empty(DType::f32, dims);
  }

  // How many epilogue steps oneDNN may do for these operands: all, unless a relu could meet NaN.
  // `others_finite`: what the caller knows of operands it scanned itself.
  int steps_for(std::initializer_list<const Tensor*> operands, bool others_finite = true) const {
    if (unsafe_step_ >= onednn::kNumEpilogueSteps) return onednn::kNumEpilogueSteps;
    bool clean = !constants_nonfinite_ && others_finite;
    for (const Tensor* t : operands)
      if (clean && t) clean = !onednn::any_nonfinite(t->data<float>(), t->numel());
    return clean ? onednn::kNumEpilogueSteps : unsafe_step_;
  }

  std::string label_, node_;
  int residual_ = -1;
  int unsafe_step_ = onednn::kNumEpilogueSteps;
  bool constants_nonfinite_ = false;
};

// A Conv node's window geometry (attributes and weights' shape), for any input size.
struct ConvGeometry {
  enum class AutoPad { notset, same_upper, same_lower, valid };
  ConvGeometry(const Node& conv, const Tensor& weights);
  // The oneDNN descriptor for an input of `src` dims, as the eager Conv computes the output; a window
  // larger than the padded input is a user error prefixed by `what`.
  onednn::ConvDesc describe(const std::vector<int64_t>& src, const std::string& what) const;

  int64_t groups = 1, out_channels = 0, in_channels = 0;
  std::vector<int64_t> kernel, strides, dilations, pads;
  AutoPad auto_pad = AutoPad::notset;
};

// `ready` (may be null): whether the primitive of `algorithm` was made for the group's static input
// shape (false for symbolic shapes, and where oneDNN has none: the kernel then runs the direct one).
std::unique_ptr<LibraryKernel> make_conv_kernel(const Graph& g, const LibraryGroup& grp, onednn::Operands operands,
                                                onednn::ConvAlgorithm algorithm, bool* ready = nullptr);
std::unique_ptr<LibraryKernel> make_softmax_kernel(const Graph& g, const LibraryGroup& grp);  // library_softmax.cpp

}  // namespace kiln::backend::cpu::library_detail
