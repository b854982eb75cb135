// Library calls for Conv groups: the ONNX window geometry at run time, BatchNormalization folded into
// the constant weights and bias at build (in double, rounded once to f32), and the NaN guard.
#include <cmath>

#include "backend/cpu/library_kernel_detail.h"

namespace kiln::backend::cpu::library_detail {

ConvGeometry::ConvGeometry(const Node& n, const Tensor& w) {
  groups = n.attr_int("group", 1);
  out_channels = w.dim(0);
  in_channels = w.dim(1) * groups;
  size_t nsp = size_t(w.rank() - 2);
  kernel.assign(w.shape().begin() + 2, w.shape().end());
  strides = n.attr_ints("strides", std::vector<int64_t>(nsp, 1));
  dilations = n.attr_ints("dilations", std::vector<int64_t>(nsp, 1));
  pads = n.attr_ints("pads", std::vector<int64_t>(2 * nsp, 0));
  std::string ap = n.attr_string("auto_pad", "NOTSET");
  auto_pad = ap == "SAME_UPPER" ? AutoPad::same_upper
             : ap == "SAME_LOWER" ? AutoPad::same_lower
             : ap == "VALID"      ? AutoPad::valid
                                  : AutoPad::notset;
}

onednn::ConvDesc ConvGeometry::describe(const std::vector<int64_t>& src, const std::string& what) const {
  onednn::ConvDesc d;
  d.src_dims = src;
  d.weights_dims = {out_channels, in_channels / groups};
  d.weights_dims.insert(d.weights_dims.end(), kernel.begin(), kernel.end());
  d.dst_dims = {src[0], out_channels};
  d.groups = groups;
  d.strides = strides;
  d.dilations = dilations;
  size_t nsp = kernel.size();
  for (size_t i = 0; i < nsp; ++i) {
    int64_t in = src[2 + i], s = strides[i];
    int64_t extent = checked_add(checked_mul(kernel[i] - 1, dilations[i], what), 1, what);
    int64_t pb = 0, pe = 0, out;
    if (auto_pad == AutoPad::same_upper || auto_pad == AutoPad::same_lower) {
      out = in / s + (in % s != 0);
      int64_t total = out == 0 ? 0 : std::max<int64_t>(0, checked_add(checked_mul(out - 1, s, what), extent, what) - in);
      pb = auto_pad == AutoPad::same_upper ? total / 2 : total - total / 2;
      pe = total - pb;
    } else {
      if (auto_pad == AutoPad::notset) {
        pb = pads[i];
        pe = pads[i + nsp];
      }
      int64_t padded = checked_add(checked_add(in, pb, what), pe, what);
      if (padded < extent)
        user_error("{}: spatial axis {}: window extent {} is larger than the padded input {}", what, i, extent, padded);
      out = (padded - extent) / s + 1;
    }
    d.pad_begin.push_back(pb);
    d.pad_end.push_back(pe);
    d.dst_dims.push_back(out);
  }
  return d;
}

namespace {

class ConvKernel final : public KernelBase {
 public:
  ConvKernel(const Graph& g, const LibraryGroup& grp, onednn::Operands operands, onednn::ConvAlgorithm algorithm,
             bool* ready)
      : KernelBase(g, grp), geometry_(g.nodes[size_t(grp.core_node)], constant_of(g, g.nodes[size_t(grp.core_node)].inputs[1])) {
    const Node& n = g.nodes[size_t(grp.core_node)];
    auto w_owner = g.value(n.inputs[1]).constant;
    const Tensor& w = constant_of(g, n.inputs[1]);
    out_channels_ = geometry_.out_channels;
    in_channels_ = geometry_.in_channels;

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
    conv_ = std::make_unique<onednn::FusedConv>(w.shape(), geometry_.groups, owner, wdata, std::move(e), operands,
                                                algorithm);
    layouts_.blocked_src = grp.blocked_input;
    layouts_.blocked_residual = grp.blocked_residual;
    layouts_.blocked_dst = grp.blocked_output;
    const Shape& xs = g.value(n.inputs[0]).type.shape;
    bool prepared = false;
    if (is_static(xs)) {
      onednn::FusedConv::Call call = layouts_;
      call.desc = geometry_.describe(static_dims(xs), where());
      if (checked_numel(call.desc.dst_dims, "conv output") > 0 && checked_numel(call.desc.src_dims, "conv input") > 0)
        prepared = conv_->prepare(call);
    }
    if (ready) *ready = prepared && conv_->algorithm() == algorithm;
  }

  Tensor run_into(const std::vector<const Tensor*>& in, int64_t max_bytes, Tensor planned) const override {
    const Tensor& x = *in.at(0);
    if (x.dtype() != DType::f32 || x.rank() != static_cast<int>(geometry_.kernel.size()) + 2 || x.dim(1) != in_channels_)
      fail("input {} {}, expected f32 with {} channels and {} spatial dims", dtype_name(x.dtype()), x.shape_string(),
           in_channels_, geometry_.kernel.size());
    onednn::FusedConv::Call call = layouts_;
    call.desc = geometry_.describe(x.shape(), where());
    const std::vector<int64_t>& out_dims = call.desc.dst_dims;
    const Tensor* r = residual(in, out_dims);
    Tensor out = allocate(out_dims, max_bytes, planned);
    if (out.numel() == 0) return out;
    call.src = x.data<float>();
    call.residual = r ? r->data<float>() : nullptr;
    call.dst = out.data<float>();
    if (x.numel() == 0) {  // only padding under every window: the epilogue of zeros
      std::fill_n(out.data<float>(), out.numel(), 0.f);
      conv_->apply_epilogue(call, 0);
      return out;
    }
    // X scanned once, where the NaN guard or the Winograd kernel's safety check needs it.
    if (conv_->algorithm() == onednn::ConvAlgorithm::winograd || unsafe_step_ < onednn::kNumEpilogueSteps)
      call.src_max_exponent = static_cast<int>(onednn::max_exponent_field(x.data<float>(), x.numel()));
    call.steps = steps_for({r}, call.src_max_exponent < 255);
    if (!conv_->run(call)) internal_error("library call '{}': oneDNN has no convolution for {}", label_, x.shape_string());
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

  ConvGeometry geometry_;
  onednn::FusedConv::Call layouts_;  // the blocked_* flags every call carries
  int64_t out_channels_ = 0, in_channels_ = 0;
  std::unique_ptr<onednn::FusedConv> conv_;
};

}  // namespace

std::unique_ptr<LibraryKernel> make_conv_kernel(const Graph& g, const LibraryGroup& grp, onednn::Operands operands,
                                                onednn::ConvAlgorithm algorithm, bool* ready) {
  return std::make_unique<ConvKernel>(g, grp, operands, algorithm, ready);
}

}  // namespace kiln::backend::cpu::library_detail
