// 2-D convolution on the device as im2col and one batched cuBLASLt product per call:
//   columns[b] = im2col(x[b])            [C*KH*KW, OH*OW]   (a 1x1, stride-1, unpadded conv reads x itself)
//   y[b] = W [OC, C*KH*KW] x columns[b]  [OC, OH*OW]: NCHW, W shared by the batch (stride 0)
// then one generated kernel for the bias per output channel and the group's epilogue (activation,
// residual, Relu), from the same epilogue expression as the matmuls. A convolution cuDNN would fuse
// better; this route is correct first, for every conv of the zoo.
// cuBLASLt's fast kernels need every leading dimension a multiple of 16 bytes: where the pixels of a
// static output (7x7, 14x14) or the rows (a 7x7 stem over 3 channels: 147) are not, the columns and the
// product are padded to it (padding +0, W's padding columns too), and the epilogue reads the product's
// real pixels (ResNet-18's 7x7 layer: 110 us in an alignment-1 kernel on 8 blocks, against ~15 aligned).
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "backend/cuda/cublaslt.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/device_ops.h"
#include "schedule/gemm_tail.h"
#include "support/checked_math.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

using schedule::LibraryGroup;

std::vector<int64_t> ints_or(const Node& n, const char* name, std::vector<int64_t> def) {
  std::vector<int64_t> v = n.attr_ints(name);
  return v.empty() ? def : v;
}

// A constant per output channel (shape [OC], [OC,1,1] or [1,OC,1,1]) as OC floats.
std::vector<float> per_channel(const Tensor& c, int64_t oc, const std::string& what) {
  if (!is_f32_or_half(c.dtype()) || c.numel() != oc) user_error("{}: bias of shape {} for {} channels", what, c.shape_string(), oc);
  std::vector<float> v(static_cast<size_t>(oc));
  for (int64_t i = 0; i < oc; ++i) v[size_t(i)] = static_cast<float>(c.as_double(i));
  return v;
}

class ConvKernel final : public Kernel {
 public:
  ConvKernel(const CudaRuntime& runtime, const Graph& g, const Node& conv, const LibraryGroup* group,
             const Options& options, ModuleCache& modules)
      : runtime_(runtime), what_(g.describe(conv)), allow_tf32_(options.allow_tf32), plans_(runtime, options.cuda_time_gemms) {
    const Tensor& w = *g.value(conv.inputs[1]).constant;
    dtype_ = w.dtype();
    oc_ = w.dim(0);
    c_ = w.dim(1);
    kernel_ = {w.dim(2), w.dim(3)};
    strides_ = ints_or(conv, "strides", {1, 1});
    dilations_ = ints_or(conv, "dilations", {1, 1});
    pads_ = ints_or(conv, "pads", {0, 0, 0, 0});
    std::vector<float> bias(static_cast<size_t>(oc_), 0.f);
    bool has_bias = false;
    auto add_bias = [&](ValueId v) {
      std::vector<float> b = per_channel(*g.value(v).constant, oc_, what_);
      for (size_t i = 0; i < b.size(); ++i) bias[i] += b[i];
      has_bias = true;
    };
    if (conv.has_input(2)) add_bias(conv.inputs[2]);
    if (group && group->bias != kNoValue) add_bias(group->bias);
    if (has_bias) bias_ = runtime.upload(Tensor::from_vector<float>(DType::f32, {oc_, 1, 1}, bias));
    residual_input_ = group ? group->residual : -1;

    const TensorType& out = g.value(group ? group->output : conv.outputs[0]).type;
    const int64_t align = 16 / static_cast<int64_t>(dtype_size(dtype_));  // elements in 16 bytes
    const int64_t rows = c_ * kernel_[0] * kernel_[1];
    if (rows % align != 0) {
      rows_padded_ = (rows + align - 1) / align * align;
      padded_weight_ = runtime.upload(pad_columns(w, /*transposed=*/false, rows_padded_));  // [OC, rows_padded_]
    }
    if (out.shape.size() == 4 && out.shape[2].is_static() && out.shape[3].is_static()) {
      out_h_ = out.shape[2].value;
      out_w_ = out.shape[3].value;
      const int64_t pixels = out_h_ * out_w_;
      if (pixels % align != 0) pixels_padded_ = (pixels + align - 1) / align * align;
    }
    loops::ScalarExpr expr = group ? schedule::epilogue_expr(g, *group) : loops::load(0, loops::Expr(0), DType::f32);
    if (schedule::is_identity(expr) && !has_bias && pixels_padded_ == 0) return;  // the product is the output
    // Epilogue inputs: the product, the bias (per channel, f32), the residual. The arithmetic is f32
    // (gemm_tail.h): half operands are widened and the result narrowed.
    loops::PointwiseKernel k;
    loops::TensorDesc desc{dtype_, {}};
    for (const Dim& d : out.shape) desc.sizes.push_back(loops::from_dim(d));
    if (pixels_padded_ > 0)  // the product [n, oc, pixels_padded]
      k.inputs.push_back({dtype_, {desc.sizes[0], loops::Expr(oc_), loops::Expr(pixels_padded_)}});
    else
      k.inputs.push_back(desc);
    const int bias_slot = has_bias ? static_cast<int>(k.inputs.size()) : -1;
    if (has_bias) k.inputs.push_back({DType::f32, {loops::Expr(oc_), loops::Expr(1), loops::Expr(1)}});
    const int residual_slot = residual_input_ >= 0 ? static_cast<int>(k.inputs.size()) : -1;
    if (residual_slot >= 0) k.inputs.push_back(desc);
    k.output = desc;
    auto widened = [&k](int slot) { return loops::cast(DType::f32, loops::load_broadcast(k, slot)); };
    auto product = [&]() {
      if (pixels_padded_ == 0) return widened(0);
      const std::vector<loops::Expr> x = loops::index_vars(k);  // [n, oc, oh, ow]
      const loops::Expr at = (x[0] * loops::Expr(oc_) + x[1]) * loops::Expr(pixels_padded_) + x[2] * loops::Expr(out_w_) + x[3];
      return loops::cast(DType::f32, loops::load(0, at, dtype_));
    };
    k.body = replace_loads(expr, [&](int i) {
      if (i == 0) return bias_slot < 0 ? product() : loops::add(product(), loops::load_broadcast(k, bias_slot));
      KILN_INTERNAL_CHECK(i == 1 && residual_slot >= 0, "{}: epilogue load {}", what_, i);
      return widened(residual_slot);
    });
    if (dtype_ != DType::f32) k.body = loops::cast(dtype_, k.body);
    epilogue_.emplace(std::move(k), "conv_ep", modules);
  }

  std::vector<Tensor> launch(const LaunchArgs& args) const override {
    const Tensor& x = *args.inputs.at(0);
    const Tensor& w = *args.inputs.at(1);
    if (x.dtype() != dtype_ || x.rank() != 4 || x.dim(1) != c_)
      user_error("{}: input {} {} for {} input channels ({} NCHW)", what_, dtype_name(x.dtype()), x.shape_string(), c_,
                 dtype_name(dtype_));
    const Im2colShape shape = make_im2col_shape(x.dim(0), c_, x.dim(2), x.dim(3), std::span<const int64_t, 2>(kernel_),
                                                std::span<const int64_t, 2>(strides_.data(), 2),
                                                std::span<const int64_t, 4>(pads_.data(), 4),
                                                std::span<const int64_t, 2>(dilations_.data(), 2), dtype_);
    const std::vector<int64_t> out_dims{x.dim(0), oc_, shape.out_h, shape.out_w};
    const Tensor* residual = residual_input_ >= 0 ? args.inputs.at(size_t(residual_input_)) : nullptr;
    if (residual && residual->shape() != out_dims)
      user_error("{}: residual of shape {} for an output of [{}]", what_, residual->shape_string(), fmt::join(out_dims, ","));
    Tensor out = output_buffer(runtime_, args, 0, dtype_, out_dims, what_);
    if (out.numel() == 0) return {out};
    KILN_INTERNAL_CHECK(pixels_padded_ == 0 || (shape.out_h == out_h_ && shape.out_w == out_w_),
                        "{}: output {}x{} at run time, {}x{} when compiled", what_, shape.out_h, shape.out_w, out_h_, out_w_);
    Im2colShape columns_shape = shape;
    columns_shape.rows_padded = rows_padded_;
    columns_shape.pixels_padded = pixels_padded_;
    const int64_t rows = columns_shape.column_rows(), pixels = columns_shape.column_pixels();
    // A 1x1 stride-1 unpadded convolution is a product with x as it is (when no padding is wanted).
    const bool direct = kernel_[0] == 1 && kernel_[1] == 1 && strides_[0] == 1 && strides_[1] == 1 &&
                        pads_[0] == 0 && pads_[1] == 0 && pads_[2] == 0 && pads_[3] == 0 && rows_padded_ == 0 &&
                        pixels_padded_ == 0;
    Tensor columns = direct ? x : runtime_.empty(dtype_, {x.dim(0), rows, pixels});
    if (!direct) runtime_.device_ops().im2col(runtime_.cuda_stream(), device_ptr(x), device_ptr(columns), columns_shape);

    GemmProblem p;
    p.dtype = dtype_;
    p.batch = x.dim(0);
    p.m = oc_;
    p.k = rows;
    p.n = pixels;
    p.batch_stride_a = 0;
    p.batch_stride_b = rows * pixels;
    p.allow_tf32 = allow_tf32_;
    p.pointer_alignment = 64;
    Tensor product = !epilogue_ ? out : runtime_.empty(dtype_, {x.dim(0), oc_, pixels});
    plans_.run(p, device_ptr(rows_padded_ ? padded_weight_ : w), device_ptr(columns), 0, 0, device_ptr(product));
    if (epilogue_) {
      std::vector<CUdeviceptr> inputs{device_ptr(product)};
      if (bias_.raw()) inputs.push_back(device_ptr(bias_));
      if (residual) inputs.push_back(device_ptr(*residual));
      epilogue_->run(runtime_.cuda_stream(), inputs, out);
    }
    return {out};
  }

 private:
  const CudaRuntime& runtime_;
  std::string what_;
  bool allow_tf32_ = false;
  DType dtype_ = DType::f32;  // of x, W, the columns, the product and the output
  int64_t oc_ = 0, c_ = 0;
  std::array<int64_t, 2> kernel_{};
  std::vector<int64_t> strides_, dilations_, pads_;
  Tensor bias_;  // [OC, 1, 1] on the device
  int64_t rows_padded_ = 0, pixels_padded_ = 0;  // the columns' padded shape (0: as they are)
  int64_t out_h_ = 0, out_w_ = 0;                // the static output size, where known
  Tensor padded_weight_;                         // [OC, rows_padded_] on the device, where rows are padded
  int residual_input_ = -1;
  std::optional<EpilogueLaunch> epilogue_;
  MatmulPlans plans_;
};

}  // namespace

bool has_conv_route(const Graph& g, const Node& conv, const LibraryGroup* group) {
  if (conv.op != OpKind::Conv || conv.inputs.size() < 2) return false;
  const auto& w = g.value(conv.inputs[1]).constant;
  if (!w || w->rank() != 4 || !is_f32_or_half(w->dtype())) return false;
  if (conv.has_input(2) && !g.value(conv.inputs[2]).constant) return false;
  if (conv.attr_int("group", 1) != 1) return false;
  const std::string pad = conv.attr_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && !pad.empty()) return false;
  if (ints_or(conv, "strides", {1, 1}).size() != 2 || ints_or(conv, "dilations", {1, 1}).size() != 2 ||
      ints_or(conv, "pads", {0, 0, 0, 0}).size() != 4)
    return false;
  return !group || group->batchnorm < 0;  // no BatchNormalization folding here yet
}

std::unique_ptr<Kernel> make_conv_kernel(const CudaRuntime& runtime, const Graph& g, const Node& conv,
                                         const LibraryGroup* group, const Options& options, ModuleCache& modules) {
  if (!has_conv_route(g, conv, group)) return nullptr;
  return std::make_unique<ConvKernel>(runtime, g, conv, group, options, modules);
}

}  // namespace kiln::backend::cuda
