// Conv and ConvTranspose. Eager f32 runs through oneDNN (src/kernels/onednn); the fp64 reference and
// anything oneDNN refuses run the plain loops here, which work on a D,H,W view of 1 to 3 spatial dims.
// Padding is never materialised: taps that fall on padding are skipped (also by oneDNN), so an
// infinite weight next to the border gives Inf rather than 0 * Inf = NaN.
#include <cstring>

#include "kernels/onednn/onednn.h"
#include "ops/linalg/linalg_ops.h"
#include "ops/linalg/plain_gemm.h"

namespace kiln::linalg_ops {
namespace {

int64_t read_group(const Node& node) {
  int64_t group = node.attr_int("group", 1);
  if (group < 1) node_fail(node, "group must be >= 1, got {}", group);
  return group;
}

// Checks shared by Conv and ConvTranspose inference; returns the number of spatial dims.
size_t check_conv_inputs(const InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const TensorType& w = ctx.in(1);
  if (!is_float(x.dtype)) ctx.fail("dtype {} is not supported (float types only)", dtype_name(x.dtype));
  if (w.dtype != x.dtype) ctx.fail("W has dtype {}, X has {}", dtype_name(w.dtype), dtype_name(x.dtype));
  if (x.rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial..), got {}", type_string(x));
  if (w.rank() != x.rank()) ctx.fail("W {} must have the rank of X {}", type_string(w), type_string(x));
  size_t nsp = static_cast<size_t>(x.rank() - 2);
  if (nsp > kMaxSpatial) ctx.fail("{} spatial dims are not supported (at most {})", nsp, kMaxSpatial);
  return nsp;
}

void check_bias(const InferContext& ctx, const Dim& channels) {
  if (!ctx.has(2)) return;
  const TensorType& b = ctx.in(2);
  if (b.dtype != ctx.in(0).dtype) ctx.fail("B has dtype {}, X has {}", dtype_name(b.dtype), dtype_name(ctx.in(0).dtype));
  if (b.rank() != 1) ctx.fail("B must be 1-D, got {}", type_string(b));
  if (b.shape[0].is_static() && channels.is_static() && b.shape[0].value != channels.value)
    ctx.fail("B {} must have {} elements", type_string(b), channels.value);
}

// The kernel extent from W's spatial dims when they are static, else empty.
std::vector<int64_t> static_kernel(const TensorType& w) {
  std::vector<int64_t> k;
  for (size_t i = 2; i < w.shape.size(); ++i) {
    if (!w.shape[i].is_static()) return {};
    k.push_back(w.shape[i].value);
  }
  return k;
}

void fill_bias(Tensor& y, const Tensor* bias) {
  if (!bias) {
    std::memset(y.raw(), 0, y.nbytes());
    return;
  }
  int64_t N = y.dim(0), M = y.dim(1), plane = y.numel() / std::max<int64_t>(1, N * M);
  dispatch_float(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t p = 0; p < N * M; ++p) std::fill_n(y.data<T>() + p * plane, plane, bias->data<T>()[p % M]);
  });
}

// ---------------------------------------------------------------- Conv

std::vector<TensorType> infer_conv(InferContext& ctx) {
  size_t nsp = check_conv_inputs(ctx);
  const Node& node = ctx.node();
  const TensorType& x = ctx.in(0);
  const TensorType& w = ctx.in(1);
  int64_t group = read_group(node);
  const Dim &c = x.shape[1], &wc = w.shape[1], &m = w.shape[0];
  if (c.is_static() && wc.is_static() && c.value != checked_mul(wc.value, group, node_what(node)))
    ctx.fail("X has {} channels but W {} with group {} expects {}", c.value, type_string(w), group, wc.value * group);
  if (m.is_static() && m.value % group != 0) ctx.fail("W's {} output channels are not divisible by group {}", m.value, group);
  check_bias(ctx, m);
  Shape out{x.shape[0], m};
  std::vector<int64_t> kernel = static_kernel(w);
  if (kernel.empty() && !node.has_attr("kernel_shape")) {
    for (size_t i = 0; i < nsp; ++i) out.push_back(ctx.fresh_dim());
  } else {
    WindowAttrs wa = read_window_attrs(node, nsp, kernel);
    Shape sp = window_output_spatial(ctx, wa, Shape(x.shape.begin() + 2, x.shape.end()));
    out.insert(out.end(), sp.begin(), sp.end());
  }
  return {TensorType{x.dtype, out}};
}

template <class T>
void conv_plain(const Spatial3& g, int64_t N, int64_t C, int64_t M, int64_t group, const T* x, const T* w,
                const T* bias, T* y) {
  int64_t Cg = C / group, Mg = M / group;
  int64_t in_sz = g.in_size(), out_sz = g.out_size(), ksz = g.kernel_size();
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t KD = g.kernel[0], KH = g.kernel[1], KW = g.kernel[2];
  const int64_t sd = g.stride[0], sh = g.stride[1], sw = g.stride[2];
  const int64_t dd = g.dilation[0], dh = g.dilation[1], dw = g.dilation[2];
  const int64_t pd = g.pad_begin[0], ph = g.pad_begin[1], pw = g.pad_begin[2];
  parallel_for(N * M, 1, [&](int64_t p0, int64_t p1) {
    std::vector<acc_t<T>> acc(static_cast<size_t>(out_sz));
    for (int64_t p = p0; p < p1; ++p) {
      int64_t n = p / M, oc = p % M, grp = oc / Mg;
      std::fill(acc.begin(), acc.end(), acc_t<T>{0});
      for (int64_t icg = 0; icg < Cg; ++icg) {
        const T* xplane = x + (n * C + grp * Cg + icg) * in_sz;
        const T* wk = w + (oc * Cg + icg) * ksz;
        for (int64_t kd = 0; kd < KD; ++kd)
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              T wv = wk[(kd * KH + kh) * KW + kw];
              int64_t ow0, ow1;  // outputs whose tap kw lands inside the row
              int64_t shift = kw * dw - pw;
              ow0 = shift >= 0 ? 0 : (-shift + sw - 1) / sw;
              ow1 = IW - 1 - shift < 0 ? 0 : std::min(OW, (IW - 1 - shift) / sw + 1);
              if (ow0 >= ow1) continue;
              for (int64_t od = 0; od < OD; ++od) {
                int64_t id = od * sd - pd + kd * dd;
                if (id < 0 || id >= ID) continue;
                for (int64_t oh = 0; oh < OH; ++oh) {
                  int64_t ih = oh * sh - ph + kh * dh;
                  if (ih < 0 || ih >= IH) continue;
                  const T* row = xplane + (id * IH + ih) * IW;
                  acc_t<T>* arow = acc.data() + (od * OH + oh) * OW;
                  if constexpr (std::is_floating_point_v<T>) {
                    if (sw == 1) {
                      axpy_row(arow + ow0, row + ow0 + shift, wv, ow1 - ow0);
                      continue;
                    }
                  }
                  for (int64_t ow = ow0; ow < ow1; ++ow) arow[ow] = mul_add<T>(arow[ow], wv, row[ow * sw + shift]);
                }
              }
            }
      }
      T* yp = y + p * out_sz;
      acc_t<T> bv = bias ? static_cast<acc_t<T>>(bias[oc]) : acc_t<T>{0};
      for (int64_t i = 0; i < out_sz; ++i) yp[i] = static_cast<T>(bias ? acc[i] + bv : acc[i]);
    }
  });
}

void conv_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                 const KernelContext& kctx) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  Tensor& y = out[0];
  size_t nsp = static_cast<size_t>(x.rank() - 2);
  int64_t group = read_group(node);
  WindowAttrs wa = read_window_attrs(node, nsp, spatial_dims(w.shape()));
  std::vector<int64_t> pb(nsp), pe(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    AxisGeometry ag = window_axis(node, wa, i, x.dim(static_cast<int>(2 + i)));
    pb[i] = ag.pad_begin;
    pe[i] = ag.pad_end;
  }
  if (y.numel() == 0) return;
  int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0);
  if (C == 0 || x.numel() == 0) {  // no input channels (or empty spatial input): bias only
    fill_bias(y, bias);
    return;
  }
  if (x.dtype() == DType::f32 && !kctx.reference) {
    onednn::ConvDesc d{x.shape(), w.shape(), y.shape(), group, wa.strides, wa.dilations, pb, pe};
    if (onednn::conv_f32(d, x.data<float>(), w.data<float>(), bias ? bias->data<float>() : nullptr, y.data<float>()))
      return;
  }
  Spatial3 g = make_spatial3(spatial_dims(x.shape()), spatial_dims(y.shape()), wa, pb);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    conv_plain<T>(g, N, C, M, group, x.data<T>(), w.data<T>(), bias ? bias->data<T>() : nullptr, y.data<T>());
  });
}

// ---------------------------------------------------------------- ConvTranspose

struct DeconvGeometry {
  std::vector<int64_t> out, pad_begin, pad_end, output_padding;
};

// Output size and pads per spatial axis (ONNX ConvTranspose rules). With output_shape (or SAME_*),
// the total padding follows from the requested size and is split: SAME_UPPER puts the odd unit at
// the end, otherwise at the beginning. A negative total (output larger than the full result) is allowed.
DeconvGeometry deconv_geometry(const Node& node, const WindowAttrs& wa, const std::vector<int64_t>& in) {
  std::string what = node_what(node);
  size_t nsp = wa.spatial;
  DeconvGeometry g;
  g.output_padding = node.attr_ints("output_padding", std::vector<int64_t>(nsp, 0));
  if (g.output_padding.size() != nsp)
    node_fail(node, "output_padding has {} values for {} spatial dims", g.output_padding.size(), nsp);
  std::vector<int64_t> output_shape = node.attr_ints("output_shape", {});
  if (output_shape.size() == nsp + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != nsp)
    node_fail(node, "output_shape has {} values for {} spatial dims", output_shape.size(), nsp);
  for (size_t i = 0; i < nsp; ++i) {
    int64_t s = wa.strides[i], op = g.output_padding[i];
    if (op < 0) node_fail(node, "output_padding must be >= 0, got {}", op);
    int64_t extent = checked_add(checked_mul(wa.kernel[i] - 1, wa.dilations[i], what), 1, what);
    int64_t full = checked_add(checked_add(checked_mul(s, in[i] - 1, what), op, what), extent, what);
    int64_t out, pb, pe;
    bool same = wa.auto_pad == AutoPad::same_upper || wa.auto_pad == AutoPad::same_lower;
    if (!output_shape.empty() || same) {
      out = !output_shape.empty() ? output_shape[i] : checked_mul(in[i], s, what);
      int64_t total = full - out;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor division, as ONNX's reference
      pb = wa.auto_pad == AutoPad::same_upper ? half : total - half;
      pe = total - pb;
    } else if (wa.auto_pad == AutoPad::valid) {
      pb = pe = 0;
      out = full;
    } else {
      pb = wa.pads[i];
      pe = wa.pads[i + nsp];
      out = full - pb - pe;
    }
    if (out < 0) node_fail(node, "spatial axis {}: output size {} is negative", i, out);
    g.out.push_back(out);
    g.pad_begin.push_back(pb);
    g.pad_end.push_back(pe);
  }
  return g;
}

std::vector<TensorType> infer_conv_transpose(InferContext& ctx) {
  size_t nsp = check_conv_inputs(ctx);
  const Node& node = ctx.node();
  const TensorType& x = ctx.in(0);
  const TensorType& w = ctx.in(1);
  int64_t group = read_group(node);
  const Dim &c = x.shape[1], &wc = w.shape[0], &mg = w.shape[1];
  if (c.is_static() && wc.is_static() && c.value != wc.value)
    ctx.fail("X has {} channels but W {} expects {}", c.value, type_string(w), wc.value);
  if (wc.is_static() && wc.value % group != 0) ctx.fail("W's {} input channels are not divisible by group {}", wc.value, group);
  Dim m = mg.is_static() ? Dim::fixed(checked_mul(mg.value, group, node_what(node))) : (group == 1 ? mg : ctx.fresh_dim());
  check_bias(ctx, m);
  Shape out{x.shape[0], m};
  std::vector<int64_t> kernel = static_kernel(w);
  bool spatial_static = true;
  for (size_t i = 2; i < x.shape.size(); ++i) spatial_static &= x.shape[i].is_static();
  if ((kernel.empty() && !node.has_attr("kernel_shape")) || !spatial_static) {
    std::vector<int64_t> os = node.attr_ints("output_shape", {});
    if (os.size() == nsp + 2) os.erase(os.begin(), os.begin() + 2);
    for (size_t i = 0; i < nsp; ++i) out.push_back(os.size() == nsp ? Dim::fixed(os[i]) : ctx.fresh_dim());
  } else {
    WindowAttrs wa = read_window_attrs(node, nsp, kernel);
    std::vector<int64_t> in;
    for (size_t i = 2; i < x.shape.size(); ++i) in.push_back(x.shape[i].value);
    for (int64_t d : deconv_geometry(node, wa, in).out) out.push_back(Dim::fixed(d));
  }
  return {TensorType{x.dtype, out}};
}

// Scatter form: every input element adds w * x to the outputs its taps reach. Parallel over output
// channels, so threads never write the same element.
template <class T>
void deconv_plain(const Spatial3& g, int64_t N, int64_t C, int64_t M, int64_t group, const T* x, const T* w,
                  const T* bias, T* y) {
  int64_t Cg = C / group, Mg = M / group;
  int64_t in_sz = g.in_size(), out_sz = g.out_size(), ksz = g.kernel_size();
  const int64_t ID = g.in[0], IH = g.in[1], IW = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2];
  const int64_t KD = g.kernel[0], KH = g.kernel[1], KW = g.kernel[2];
  const int64_t sd = g.stride[0], sh = g.stride[1], sw = g.stride[2];
  const int64_t dd = g.dilation[0], dh = g.dilation[1], dw = g.dilation[2];
  const int64_t pd = g.pad_begin[0], ph = g.pad_begin[1], pw = g.pad_begin[2];
  parallel_for(N * M, 1, [&](int64_t p0, int64_t p1) {
    std::vector<acc_t<T>> acc(static_cast<size_t>(out_sz));
    for (int64_t p = p0; p < p1; ++p) {
      int64_t n = p / M, oc = p % M, grp = oc / Mg, ocg = oc % Mg;
      std::fill(acc.begin(), acc.end(), acc_t<T>{0});
      for (int64_t icg = 0; icg < Cg; ++icg) {
        int64_t ic = grp * Cg + icg;
        const T* xplane = x + (n * C + ic) * in_sz;
        const T* wk = w + (ic * Mg + ocg) * ksz;
        for (int64_t kd = 0; kd < KD; ++kd)
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              T wv = wk[(kd * KH + kh) * KW + kw];
              int64_t shift = kw * dw - pw;  // ow = iw * sw + shift
              int64_t iw0 = shift >= 0 ? 0 : (-shift + sw - 1) / sw;
              int64_t iw1 = OW - 1 - shift < 0 ? 0 : std::min(IW, (OW - 1 - shift) / sw + 1);
              if (iw0 >= iw1) continue;
              for (int64_t id = 0; id < ID; ++id) {
                int64_t od = id * sd - pd + kd * dd;
                if (od < 0 || od >= OD) continue;
                for (int64_t ih = 0; ih < IH; ++ih) {
                  int64_t oh = ih * sh - ph + kh * dh;
                  if (oh < 0 || oh >= OH) continue;
                  const T* row = xplane + (id * IH + ih) * IW;
                  acc_t<T>* arow = acc.data() + (od * OH + oh) * OW;
                  for (int64_t iw = iw0; iw < iw1; ++iw) {
                    acc_t<T>& a = arow[iw * sw + shift];
                    a = mul_add<T>(a, wv, row[iw]);
                  }
                }
              }
            }
      }
      T* yp = y + p * out_sz;
      acc_t<T> bv = bias ? static_cast<acc_t<T>>(bias[oc]) : acc_t<T>{0};
      for (int64_t i = 0; i < out_sz; ++i) yp[i] = static_cast<T>(bias ? acc[i] + bv : acc[i]);
    }
  });
}

void conv_transpose_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                           const KernelContext& kctx) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
  Tensor& y = out[0];
  size_t nsp = static_cast<size_t>(x.rank() - 2);
  int64_t group = read_group(node);
  WindowAttrs wa = read_window_attrs(node, nsp, spatial_dims(w.shape()));
  DeconvGeometry dg = deconv_geometry(node, wa, spatial_dims(x.shape()));
  if (y.numel() == 0) return;
  int64_t N = x.dim(0), C = x.dim(1), M = y.dim(1);
  if (x.numel() == 0) {
    fill_bias(y, bias);
    return;
  }
  if (x.dtype() == DType::f32 && !kctx.reference) {
    std::vector<int64_t> pe(nsp);
    bool pads_ok = true;
    for (size_t i = 0; i < nsp; ++i) {
      pe[i] = dg.pad_end[i] - dg.output_padding[i];
      pads_ok &= dg.pad_begin[i] >= 0 && pe[i] >= 0;
    }
    onednn::ConvDesc d{x.shape(), w.shape(), y.shape(), group, wa.strides, wa.dilations, dg.pad_begin, pe};
    if (pads_ok && onednn::deconv_f32(d, x.data<float>(), w.data<float>(), bias ? bias->data<float>() : nullptr,
                                      y.data<float>()))
      return;
  }
  Spatial3 g = make_spatial3(spatial_dims(x.shape()), spatial_dims(y.shape()), wa, dg.pad_begin);
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    deconv_plain<T>(g, N, C, M, group, x.data<T>(), w.data<T>(), bias ? bias->data<T>() : nullptr, y.data<T>());
  });
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  r.add(OpKind::Conv, OpDef{infer_conv, conv_kernel, false, false, 2, 3});
  r.add(OpKind::ConvTranspose, OpDef{infer_conv_transpose, conv_transpose_kernel, false, false, 2, 3});
}

}  // namespace kiln::linalg_ops
