// Library calls for Conv groups: the ONNX window geometry at run time, BatchNormalization folded into
// the constant weights and bias at build (in double, rounded once to f32), and the NaN guard.
#include <cmath>

#include "backend/cpu/library_kernel_detail.h"

namespace kiln::backend::cpu::library_detail {
namespace {

enum class AutoPad { notset, same_upper, same_lower, valid };

class ConvKernel final : public KernelBase {
 public:
  ConvKernel(const Graph& g, const LibraryGroup& grp, onednn::Operands operands) : KernelBase(g, grp) {
    const Node& n = g.nodes[size_t(grp.core_node)];
    auto w_owner = g.value(n.inputs[1]).constant;
    const Tensor& w = constant_of(g, n.inputs[1]);
    groups_ = n.attr_int("group", 1);
    out_channels_ = w.dim(0);
    in_channels_ = w.dim(1) * groups_;
    size_t nsp = size_t(w.rank() - 2);
    kernel_.assign(w.shape().begin() + 2, w.shape().end());
    strides_ = n.attr_ints("strides", std::vector<int64_t>(nsp, 1));
    dilations_ = n.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
    pads_ = n.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
    std::string ap = n.attr_string("auto_pad", "NOTSET");
    auto_pad_ = ap == "SAME_UPPER" ? AutoPad::same_upper
                : ap == "SAME_LOWER" ? AutoPad::same_lower
                : ap == "VALID"      ? AutoPad::valid
                                     : AutoPad::notset;

    onednn::Epilogue e;
    e.act = to_onednn(grp.act);
    e.residual = grp.residual >= 0;
    e.act_after = to_onednn(grp.act_after);
    if (n.has_input(2)) e.bias = per_channel(constant_of(g, n.inputs[2]), out_channels_);
    if (grp.bias != kNoValue) e.bias = per_channel(constant_of(g, grp.bias), out_channels_);
    std::shared_ptr<const void> owner = w_owner;
    const float* wdata = w.data<float>();
    if (grp.batchnorm >= 0) {
      auto folded = fold_batchnorm(g, g.nodes[size_t(grp.batchnorm)], w, e.bias);
      wdata = folded->data();
      owner = folded;
    }
    constants_nonfinite_ = nonfinite(e.bias) || onednn::any_nonfinite(wdata, w.numel());
    init_guard(e);
    conv_ = std::make_unique<onednn::FusedConv>(w.shape(), groups_, owner, wdata, std::move(e), operands);
    const Shape& xs = g.value(n.inputs[0]).type.shape;
    if (is_static(xs)) {
      onednn::FusedConv::Call call;
      call.desc = describe(static_dims(xs));
      if (checked_numel(call.desc.dst_dims, "conv output") > 0 && checked_numel(call.desc.src_dims, "conv input") > 0)
        conv_->prepare(call);
    }
  }

  Tensor run_into(const std::vector<const Tensor*>& in, int64_t max_bytes, Tensor planned) const override {
    const Tensor& x = *in.at(0);
    if (x.dtype() != DType::f32 || x.rank() != static_cast<int>(kernel_.size()) + 2 || x.dim(1) != in_channels_)
      fail("input {} {}, expected f32 with {} channels and {} spatial dims", dtype_name(x.dtype()), x.shape_string(),
           in_channels_, kernel_.size());
    onednn::FusedConv::Call call;
    call.desc = describe(x.shape());
    const std::vector<int64_t>& out_dims = call.desc.dst_dims;
    const Tensor* r = residual(in, out_dims);
    Tensor out = allocate(out_dims, max_bytes, planned);
    if (out.numel() == 0) return out;
    int64_t spatial = out.numel() / (out_dims[0] * out_channels_);
    const onednn::Epilogue& e = conv_->epilogue();
    const float* rp = r ? r->data<float>() : nullptr;
    if (x.numel() == 0) {  // only padding under every window: the epilogue of zeros
      onednn::apply_epilogue_plain(e, 0, out.data<float>(), out.numel(), spatial, out_channels_, rp);
      return out;
    }
    call.src = x.data<float>();
    call.residual = rp;
    call.dst = out.data<float>();
    call.steps = steps_for({&x, r});
    if (!conv_->run(call)) internal_error("library call '{}': oneDNN has no convolution for {}", label_, x.shape_string());
    if (call.steps < onednn::kNumEpilogueSteps)
      onednn::apply_epilogue_plain(e, call.steps, out.data<float>(), out.numel(), spatial, out_channels_, rp);
    return out;
  }

 private:
  // y = scale * (conv + b - mean) / sqrt(var + eps) + B as a convolution with scaled weights and a new
  // bias (computed in double, rounded once). `bias` (conv's own, or empty) becomes the folded bias.
  std::shared_ptr<const std::vector<float>> fold_batchnorm(const Graph& g, const Node& bn, const Tensor& w,
                                                           std::vector<float>& bias) const {
    const float* scale = constant_of(g, bn.inputs[1]).data<float>();
    const float* shift = constant_of(g, bn.inputs[2]).data<float>();
    const float* mean = constant_of(g, bn.inputs[3]).data<float>();
    const float* var = constant_of(g, bn.inputs[4]).data<float>();
    double eps = bn.attr_float("epsilon", 1e-5);
    auto folded = std::make_shared<std::vector<float>>(static_cast<size_t>(w.numel()));
    int64_t per_oc = w.numel() / out_channels_;
    std::vector<float> new_bias(static_cast<size_t>(out_channels_));
    for (int64_t o = 0; o < out_channels_; ++o) {
      double s = double(scale[o]) / std::sqrt(double(var[o]) + eps);
      for (int64_t i = 0; i < per_oc; ++i)
        (*folded)[size_t(o * per_oc + i)] = static_cast<float>(double(w.data<float>()[o * per_oc + i]) * s);
      double b = bias.empty() ? 0.0 : double(bias[size_t(o)]);
      new_bias[size_t(o)] = static_cast<float>((b - double(mean[o])) * s + double(shift[o]));
    }
    bias = std::move(new_bias);
    return folded;
  }

  // ONNX Conv geometry for an input of `src` dims (as the eager Conv computes it).
  onednn::ConvDesc describe(const std::vector<int64_t>& src) const {
    std::string what = "library call '" + label_ + "'";
    onednn::ConvDesc d;
    d.src_dims = src;
    d.weights_dims = {out_channels_, in_channels_ / groups_};
    d.weights_dims.insert(d.weights_dims.end(), kernel_.begin(), kernel_.end());
    d.dst_dims = {src[0], out_channels_};
    d.groups = groups_;
    d.strides = strides_;
    d.dilations = dilations_;
    size_t nsp = kernel_.size();
    for (size_t i = 0; i < nsp; ++i) {
      int64_t in = src[2 + i], s = strides_[i];
      int64_t extent = checked_add(checked_mul(kernel_[i] - 1, dilations_[i], what), 1, what);
      int64_t pb = 0, pe = 0, out;
      if (auto_pad_ == AutoPad::same_upper || auto_pad_ == AutoPad::same_lower) {
        out = in / s + (in % s != 0);
        int64_t total = out == 0 ? 0 : std::max<int64_t>(0, checked_add(checked_mul(out - 1, s, what), extent, what) - in);
        pb = auto_pad_ == AutoPad::same_upper ? total / 2 : total - total / 2;
        pe = total - pb;
      } else {
        if (auto_pad_ == AutoPad::notset) {
          pb = pads_[i];
          pe = pads_[i + nsp];
        }
        int64_t padded = checked_add(checked_add(in, pb, what), pe, what);
        if (padded < extent) fail("spatial axis {}: window extent {} is larger than the padded input {}", i, extent, padded);
        out = (padded - extent) / s + 1;
      }
      d.pad_begin.push_back(pb);
      d.pad_end.push_back(pe);
      d.dst_dims.push_back(out);
    }
    return d;
  }

  int64_t groups_ = 1, out_channels_ = 0, in_channels_ = 0;
  std::vector<int64_t> kernel_, strides_, dilations_, pads_;
  AutoPad auto_pad_ = AutoPad::notset;
  std::unique_ptr<onednn::FusedConv> conv_;
};

}  // namespace

std::unique_ptr<LibraryKernel> make_conv_kernel(const Graph& g, const LibraryGroup& grp, onednn::Operands operands) {
  return std::make_unique<ConvKernel>(g, grp, operands);
}

}  // namespace kiln::backend::cpu::library_detail
