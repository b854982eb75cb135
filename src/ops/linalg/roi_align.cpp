// RoiAlign(X [N, C, H, W], rois [R, 4] of (x1, y1, x2, y2), batch_indices [R]) -> [R, C, oh, ow]: each
// region, scaled by spatial_scale (and shifted by half a pixel in half_pixel mode), split into oh x ow
// bins, each bin sampled on a sampling_ratio^2 grid (ceil(bin size) per axis when 0) by bilinear
// interpolation, then averaged (avg) or maxed (max; as ONNX's reference and ONNX Runtime do, the max of
// the four weighted corners of each sample). Samples more than a pixel outside X read 0. In
// output_half_pixel mode (RoiAlign-10's only one) a region is at least 1 x 1. A non-finite region
// gives NaN.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/linalg/linalg_ops.h"

namespace kiln::linalg_ops {
namespace {

struct RoiAttrs {
  bool half_pixel = true, max = false;
  int64_t height = 1, width = 1, sampling_ratio = 0;
  double spatial_scale = 1;
};

RoiAttrs read_roi_attrs(const Node& node) {
  RoiAttrs a;
  const std::string coord = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (coord != "half_pixel" && coord != "output_half_pixel")
    node_fail(node, "unknown coordinate_transformation_mode '{}' (expected half_pixel or output_half_pixel)", coord);
  a.half_pixel = coord == "half_pixel";
  const std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") node_fail(node, "unknown mode '{}' (expected avg or max)", mode);
  a.max = mode == "max";
  a.height = node.attr_int("output_height", 1), a.width = node.attr_int("output_width", 1);
  a.sampling_ratio = node.attr_int("sampling_ratio", 0);
  a.spatial_scale = node.attr_float("spatial_scale", 1.0);
  if (a.height <= 0 || a.width <= 0) node_fail(node, "output_height and output_width must be positive, are {} and {}", a.height, a.width);
  if (a.sampling_ratio < 0) node_fail(node, "sampling_ratio must be 0 or more, is {}", a.sampling_ratio);
  return a;
}

std::vector<TensorType> infer_roi_align(InferContext& ctx) {
  const RoiAttrs a = read_roi_attrs(ctx.node());
  const TensorType &x = ctx.in(0), &rois = ctx.in(1), &indices = ctx.in(2);
  if (!is_float(x.dtype) || rois.dtype != x.dtype) ctx.fail("X and rois must be of one float type, are {} and {}", dtype_name(x.dtype), dtype_name(rois.dtype));
  if (indices.dtype != DType::i64) ctx.fail("batch_indices must be i64, is {}", dtype_name(indices.dtype));
  if (x.rank() != 4) ctx.fail("X must be [N, C, H, W], has rank {}", x.rank());
  if (rois.rank() != 2 || indices.rank() != 1) ctx.fail("rois must be [R, 4] and batch_indices [R]");
  if (rois.shape[1].is_static() && rois.shape[1].value != 4) ctx.fail("rois must be [R, 4], its last dim is {}", rois.shape[1].value);
  return {TensorType{x.dtype, {rois.shape[0], x.shape[1], Dim::fixed(a.height), Dim::fixed(a.width)}}};
}

// One bilinear sample: up to four (offset, weight) corners.
struct Sample {
  int64_t at[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

Sample bilinear(double y, double x, int64_t H, int64_t W) {
  Sample s;
  if (y < -1.0 || y > double(H) || x < -1.0 || x > double(W)) return s;  // reads 0
  y = std::max(y, 0.0), x = std::max(x, 0.0);
  int64_t y0 = int64_t(y), x0 = int64_t(x), y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= H - 1) y0 = y1 = H - 1, y = double(y0);
  if (x0 >= W - 1) x0 = x1 = W - 1, x = double(x0);
  const double ly = y - double(y0), lx = x - double(x0), hy = 1 - ly, hx = 1 - lx;
  s.at[0] = y0 * W + x0, s.at[1] = y0 * W + x1, s.at[2] = y1 * W + x0, s.at[3] = y1 * W + x1;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

template <class T>
void roi_align(const Node& node, const Tensor& X, const Tensor& rois, const Tensor& indices, Tensor& Y) {
  const RoiAttrs a = read_roi_attrs(node);
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = rois.dim(0);
  if (rois.dim(1) != 4 || indices.dim(0) != R)
    node_fail(node, "rois {} and batch_indices {} do not describe the same regions", rois.shape_string(), indices.shape_string());
  if ((H == 0 || W == 0) && R * C > 0) node_fail(node, "X {} has an empty spatial dim: nothing to sample", X.shape_string());
  const T* x = X.data<T>();
  T* y = Y.data<T>();
  const int64_t bins = a.height * a.width;
  std::vector<Sample> samples;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t batch = indices.as_int64(r);
    if (batch < 0 || batch >= N) node_fail(node, "batch index {} of region {} is not in [0, {})", batch, r, N);
    const double shift = a.half_pixel ? 0.5 : 0.0;
    double box[4];
    bool finite = true;
    for (int k = 0; k < 4; ++k) {
      box[k] = rois.as_double(r * 4 + k) * a.spatial_scale - shift;
      finite = finite && std::isfinite(box[k]);
    }
    T* out = y + r * C * bins;
    if (!finite) {
      std::fill(out, out + C * bins, std::numeric_limits<T>::quiet_NaN());
      continue;
    }
    double roi_w = box[2] - box[0], roi_h = box[3] - box[1];
    if (!a.half_pixel) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
    const double bin_h = roi_h / double(a.height), bin_w = roi_w / double(a.width);
    const auto grid = [&](double bin) { return a.sampling_ratio > 0 ? a.sampling_ratio : int64_t(std::ceil(bin)); };
    const double grid_h = double(grid(bin_h)), grid_w = double(grid(bin_w));  // <= 0 for an empty region
    if (grid_h * grid_w * double(bins) > 1e8)
      node_fail(node, "region {} needs {} samples per bin; kiln stops at 1e8 per region", r, grid_h * grid_w);
    const int64_t gh = int64_t(grid_h), gw = int64_t(grid_w), count = std::max<int64_t>(gh * gw, 1);
    samples.clear();
    for (int64_t ph = 0; ph < a.height; ++ph)
      for (int64_t pw = 0; pw < a.width; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix)
            samples.push_back(bilinear(box[1] + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / grid_h,
                                       box[0] + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / grid_w, H, W));
    for (int64_t c = 0; c < C; ++c) {
      const T* plane = x + (batch * C + c) * H * W;
      const Sample* s = samples.data();
      for (int64_t b = 0; b < bins; ++b) {
        double v = 0;
        for (int64_t k = 0; k < gh * gw; ++k, ++s) {
          if (a.max) {
            double m = s->w[0] * double(plane[s->at[0]]);
            for (int j = 1; j < 4; ++j) m = std::max(m, s->w[j] * double(plane[s->at[j]]));
            v = k == 0 ? m : std::max(v, m);
          } else {
            for (int j = 0; j < 4; ++j) v += s->w[j] * double(plane[s->at[j]]);
          }
        }
        out[c * bins + b] = T(a.max ? v : v / double(count));
      }
    }
  }
}

void kernel_roi_align(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  dispatch_float(in[0]->dtype(), [&](auto t) { roi_align<decltype(t)>(node, *in[0], *in[1], *in[2], out[0]); });
}

}  // namespace

void register_roi_align_op(OpRegistry& r) {
  OpDef def;
  def.infer = infer_roi_align;
  def.kernel = kernel_roi_align;
  def.min_inputs = def.max_inputs = 3;
  r.add(OpKind::RoiAlign, def);
}

}  // namespace kiln::linalg_ops
