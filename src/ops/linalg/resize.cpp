// Resize (opset 18 form: inputs X, roi, scales, sizes). Separable interpolation: every axis gets a
// table of taps (input index, weight) per output index; an output element is the sum over the product
// of its axes' taps. Modes nearest, linear (N-linear) and cubic; antialias is not supported.
// Taps of weight exactly 0 are dropped, so an exact sample point returns the sample even when a
// neighbour is Inf (the ONNX reference would compute 0 * Inf = NaN there).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/linalg/linalg_ops.h"

namespace kiln::linalg_ops {
namespace {

enum class Mode { nearest, linear, cubic };
enum class Coord {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn,
  tf_crop_and_resize
};
enum class NearestRound { prefer_floor, prefer_ceil, floor, ceil };
enum class AspectPolicy { stretch, not_larger, not_smaller };

struct ResizeAttrs {
  Mode mode = Mode::nearest;
  Coord coord = Coord::half_pixel;
  NearestRound nearest = NearestRound::prefer_floor;
  AspectPolicy aspect = AspectPolicy::stretch;
  bool exclude_outside = false;
  double extrapolation = 0.0, cubic_a = -0.75;
  std::vector<int64_t> axes;  // normalised; all axes when the attribute is absent
};

ResizeAttrs read_resize_attrs(const Node& node, int64_t rank) {
  ResizeAttrs a;
  std::string mode = node.attr_string("mode", "nearest");
  if (mode == "nearest") a.mode = Mode::nearest;
  else if (mode == "linear") a.mode = Mode::linear;
  else if (mode == "cubic") a.mode = Mode::cubic;
  else node_fail(node, "unknown mode '{}' (expected nearest, linear or cubic)", mode);
  std::string coord = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel") a.coord = Coord::half_pixel;
  else if (coord == "half_pixel_symmetric") a.coord = Coord::half_pixel_symmetric;
  else if (coord == "pytorch_half_pixel") a.coord = Coord::pytorch_half_pixel;
  else if (coord == "align_corners") a.coord = Coord::align_corners;
  else if (coord == "asymmetric") a.coord = Coord::asymmetric;
  else if (coord == "tf_half_pixel_for_nn") a.coord = Coord::tf_half_pixel_for_nn;
  else if (coord == "tf_crop_and_resize") a.coord = Coord::tf_crop_and_resize;
  else unsupported("{}: coordinate_transformation_mode '{}' is not supported", node_what(node), coord);
  std::string nearest = node.attr_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor") a.nearest = NearestRound::prefer_floor;
  else if (nearest == "round_prefer_ceil") a.nearest = NearestRound::prefer_ceil;
  else if (nearest == "floor") a.nearest = NearestRound::floor;
  else if (nearest == "ceil") a.nearest = NearestRound::ceil;
  else node_fail(node, "unknown nearest_mode '{}'", nearest);
  std::string aspect = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (aspect == "stretch") a.aspect = AspectPolicy::stretch;
  else if (aspect == "not_larger") a.aspect = AspectPolicy::not_larger;
  else if (aspect == "not_smaller") a.aspect = AspectPolicy::not_smaller;
  else node_fail(node, "unknown keep_aspect_ratio_policy '{}'", aspect);
  if (node.attr_int("antialias", 0) != 0) unsupported("{}: antialias=1 is not supported", node_what(node));
  a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = node.attr_float("extrapolation_value", 0.0);
  a.cubic_a = node.attr_float("cubic_coeff_a", -0.75);
  if (node.has_attr("axes")) {
    for (int64_t ax : node.attr_ints("axes")) {
      int64_t n = normalize_axis(node, ax, rank);
      if (std::find(a.axes.begin(), a.axes.end(), n) != a.axes.end()) node_fail(node, "axis {} appears twice in axes", ax);
      a.axes.push_back(n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) a.axes.push_back(i);
  }
  return a;
}

// Scales or sizes: an input given as an empty tensor counts as absent (how older opsets are converted).
bool input_present(const InferContext& ctx, size_t i) {
  if (!ctx.has(i)) return false;
  const TensorType& t = ctx.in(i);
  return !(t.rank() == 1 && t.shape[0].is_static() && t.shape[0].value == 0);
}

struct ResizePlan {
  std::vector<int64_t> out;
  std::vector<double> scale;  // per axis (1 for axes not resized)
};

// Output sizes and per-axis scales from the known scales or sizes (values in the order of `axes`).
ResizePlan resize_plan(const Node& node, const ResizeAttrs& a, const std::vector<int64_t>& in, const Tensor* scales,
                       const Tensor* sizes) {
  ResizePlan p{in, std::vector<double>(in.size(), 1.0)};
  size_t na = a.axes.size();
  if (scales && scales->numel() > 0 && sizes && sizes->numel() > 0) node_fail(node, "only one of scales and sizes may be given");
  if (scales && scales->numel() > 0) {
    if (!is_float(scales->dtype())) node_fail(node, "scales must be a float tensor, got {}", dtype_name(scales->dtype()));
    if (static_cast<size_t>(scales->numel()) != na) node_fail(node, "scales has {} values for {} axes", scales->numel(), na);
    for (size_t i = 0; i < na; ++i) {
      double s = scales->as_double(static_cast<int64_t>(i));
      if (!(s > 0) || !std::isfinite(s)) node_fail(node, "scale {} must be positive and finite", s);
      size_t ax = static_cast<size_t>(a.axes[i]);
      double o = std::floor(static_cast<double>(in[ax]) * s);
      if (o > 9.0e18) node_fail(node, "output size {} is too large", o);
      p.out[ax] = static_cast<int64_t>(o);
      p.scale[ax] = s;
    }
    return p;
  }
  if (!sizes || sizes->numel() == 0) node_fail(node, "one of scales and sizes must be given");
  if (!is_integer(sizes->dtype())) node_fail(node, "sizes must be an integer tensor, got {}", dtype_name(sizes->dtype()));
  std::vector<int64_t> sz = sizes->to_int64_vector();
  if (sz.size() != na) node_fail(node, "sizes has {} values for {} axes", sz.size(), na);
  for (size_t i = 0; i < na; ++i) {
    if (sz[i] < 0) node_fail(node, "sizes has a negative value {}", sz[i]);
    if (in[static_cast<size_t>(a.axes[i])] == 0 && sz[i] > 0) node_fail(node, "cannot resize an empty axis to {}", sz[i]);
  }
  if (a.aspect == AspectPolicy::stretch) {
    for (size_t i = 0; i < na; ++i) {
      size_t ax = static_cast<size_t>(a.axes[i]);
      p.out[ax] = sz[i];
      p.scale[ax] = in[ax] > 0 ? static_cast<double>(sz[i]) / static_cast<double>(in[ax]) : 1.0;
    }
    return p;
  }
  double s = a.aspect == AspectPolicy::not_larger ? INFINITY : 0.0;
  for (size_t i = 0; i < na; ++i) {
    size_t ax = static_cast<size_t>(a.axes[i]);
    if (in[ax] == 0) continue;
    double r = static_cast<double>(sz[i]) / static_cast<double>(in[ax]);
    s = a.aspect == AspectPolicy::not_larger ? std::min(s, r) : std::max(s, r);
  }
  if (!std::isfinite(s) || s <= 0) s = 1.0;
  for (size_t i = 0; i < na; ++i) {
    size_t ax = static_cast<size_t>(a.axes[i]);
    p.out[ax] = static_cast<int64_t>(std::nearbyint(s * static_cast<double>(in[ax])));
    p.scale[ax] = s;
  }
  return p;
}

std::vector<TensorType> infer_resize(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const Node& node = ctx.node();
  ResizeAttrs a = read_resize_attrs(node, x.rank());
  if (x.dtype == DType::boolean) ctx.fail("dtype bool is not supported");
  if (a.mode != Mode::nearest && !is_float(x.dtype))
    ctx.fail("{} mode needs a float input, got {}", node.attr_string("mode", ""), dtype_name(x.dtype));
  bool has_scales = input_present(ctx, 2), has_sizes = input_present(ctx, 3);
  if (has_scales && has_sizes) ctx.fail("only one of scales and sizes may be given");
  if (!has_scales && !has_sizes) ctx.fail("one of scales and sizes must be given");
  const Tensor* values = has_scales ? ctx.value(2) : ctx.value(3);
  bool in_static = is_static(x.shape);
  if (values && in_static) {
    ResizePlan p = resize_plan(node, a, static_dims(x.shape), has_scales ? values : nullptr, has_sizes ? values : nullptr);
    return {TensorType{x.dtype, shape_of(p.out)}};
  }
  Shape out = x.shape;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    Dim& d = out[static_cast<size_t>(a.axes[i])];
    if (values && has_sizes && a.aspect == AspectPolicy::stretch) {
      d = Dim::fixed(values->as_int64(static_cast<int64_t>(i)));
    } else if (values && has_scales && values->as_double(static_cast<int64_t>(i)) == 1.0) {
      // a scale of exactly 1 keeps the dim (floor(n * 1) = n)
    } else if (values && has_scales && d.is_static()) {
      d = Dim::fixed(static_cast<int64_t>(std::floor(static_cast<double>(d.value) * values->as_double(static_cast<int64_t>(i)))));
    } else {
      d = ctx.fresh_dim();
    }
  }
  return {TensorType{x.dtype, out}};
}

// The taps of one output index on one axis.
struct Taps {
  int count = 0;
  bool outside = false;  // tf_crop_and_resize sampled outside the input: extrapolation_value
  int64_t index[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

// The resized length in the formulas is in * scale, unrounded, as in ONNX's reference implementation
// (with sizes it equals the output size; with scales such as 0.6 it is not an integer).
double source_coordinate(const ResizeAttrs& a, int64_t o, int64_t in, int64_t out, double scale, double roi_start,
                         double roi_end) {
  double x = static_cast<double>(o), length = static_cast<double>(in) * scale, last = static_cast<double>(in - 1);
  switch (a.coord) {
    case Coord::half_pixel: return (x + 0.5) / scale - 0.5;
    case Coord::half_pixel_symmetric: {  // half_pixel, centred where the output size was rounded down
      double offset = 0.5 * static_cast<double>(in) * (1.0 - static_cast<double>(out) / length);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case Coord::pytorch_half_pixel: return length > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case Coord::align_corners: return length == 1 ? 0.0 : x * last / (length - 1);
    case Coord::asymmetric: return x / scale;
    case Coord::tf_half_pixel_for_nn: return (x + 0.5) / scale;
    case Coord::tf_crop_and_resize:
      return length > 1 ? roi_start * last + x * (roi_end - roi_start) * last / (length - 1)
                        : 0.5 * (roi_start + roi_end) * last;
  }
  return x;
}

std::vector<Taps> axis_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double roi_start,
                            double roi_end) {
  std::vector<Taps> taps(static_cast<size_t>(out));
  bool identity = in == out && scale == 1.0 && a.coord != Coord::tf_crop_and_resize;
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  for (int64_t o = 0; o < out; ++o) {
    Taps& t = taps[static_cast<size_t>(o)];
    if (identity) {
      t.count = 1;
      t.index[0] = o;
      t.weight[0] = 1.0;
      continue;
    }
    double x = source_coordinate(a, o, in, out, scale, roi_start, roi_end);
    if (a.coord == Coord::tf_crop_and_resize && (x < 0 || x > static_cast<double>(in - 1))) {
      t.outside = true;
      continue;
    }
    double fl = std::floor(x);
    if (a.mode == Mode::nearest) {
      double r = fl;
      switch (a.nearest) {
        case NearestRound::prefer_floor: r = x - fl == 0.5 ? fl : std::round(x); break;
        case NearestRound::prefer_ceil: r = x - fl == 0.5 ? fl + 1 : std::round(x); break;
        case NearestRound::floor: r = fl; break;
        case NearestRound::ceil: r = std::ceil(x); break;
      }
      t.count = 1;
      t.index[0] = clamp(static_cast<int64_t>(std::clamp(r, -1.0, static_cast<double>(in))));
      t.weight[0] = 1.0;
      continue;
    }
    double ratio = x - fl;
    int64_t i0 = static_cast<int64_t>(std::clamp(fl, -4.0, static_cast<double>(in) + 4.0));
    double w[4];
    int64_t idx[4];
    int n;
    if (a.mode == Mode::linear) {
      n = 2;
      idx[0] = i0;
      idx[1] = i0 + 1;
      w[0] = 1.0 - ratio;
      w[1] = ratio;
    } else {
      n = 4;
      double A = a.cubic_a, r = ratio, q = 1.0 - ratio;
      w[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
      w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
      w[2] = ((A + 2) * q - (A + 3)) * q * q + 1;
      w[3] = ((A * (q + 1) - 5 * A) * (q + 1) + 8 * A) * (q + 1) - 4 * A;
      for (int k = 0; k < 4; ++k) idx[k] = i0 - 1 + k;
      if (a.exclude_outside) {
        double sum = 0;
        for (int k = 0; k < 4; ++k) {
          if (idx[k] < 0 || idx[k] >= in) w[k] = 0;
          sum += w[k];
        }
        for (int k = 0; k < 4; ++k) w[k] = sum != 0 ? w[k] / sum : 0;
      }
    }
    for (int k = 0; k < n; ++k) {
      if (w[k] == 0) continue;
      t.index[t.count] = clamp(idx[k]);
      t.weight[t.count] = w[k];
      ++t.count;
    }
  }
  return taps;
}

template <class T>
void resize_run(const ResizeAttrs& a, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                const std::vector<std::vector<Taps>>& taps, const T* x, T* y) {
  size_t rank = in.size();
  std::vector<int64_t> in_strides = contiguous_strides(in);
  int64_t last_out = out[rank - 1], rows = 1;
  for (size_t i = 0; i + 1 < rank; ++i) rows *= out[i];
  const std::vector<Taps>& last = taps[rank - 1];
  using W = std::conditional_t<std::is_same_v<T, float>, float, double>;
  const T extrapolation = static_cast<T>(a.extrapolation);
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, last_out)), [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> row_off;
    std::vector<W> row_w;
    std::vector<int64_t> idx(rank, 0);
    for (int64_t r = r0; r < r1; ++r) {
      // Output multi-index of this row, then the product of the leading axes' taps.
      int64_t rem = r;
      for (size_t i = rank - 1; i-- > 0;) {
        idx[i] = rem % out[i];
        rem /= out[i];
      }
      row_off.assign(1, 0);
      row_w.assign(1, W{1});
      bool outside = false;
      for (size_t i = 0; i + 1 < rank && !outside; ++i) {
        const Taps& t = taps[i][static_cast<size_t>(idx[i])];
        if (t.outside) {
          outside = true;
          break;
        }
        size_t n = row_off.size();
        std::vector<int64_t> off2;
        std::vector<W> w2;
        for (int k = 0; k < t.count; ++k)
          for (size_t j = 0; j < n; ++j) {
            off2.push_back(row_off[j] + t.index[k] * in_strides[i]);
            w2.push_back(row_w[j] * static_cast<W>(t.weight[k]));
          }
        row_off.swap(off2);
        row_w.swap(w2);
      }
      T* yr = y + r * last_out;
      if (outside) {
        std::fill_n(yr, last_out, extrapolation);
        continue;
      }
      bool gather = a.mode == Mode::nearest && row_off.size() == 1;
      for (int64_t o = 0; o < last_out; ++o) {
        const Taps& t = last[static_cast<size_t>(o)];
        if (t.outside) {
          yr[o] = extrapolation;
          continue;
        }
        if (gather) {  // nearest: a copy, exact for every dtype
          yr[o] = x[row_off[0] + t.index[0]];
          continue;
        }
        if constexpr (std::is_floating_point_v<T>) {
          W sum = 0;
          for (size_t j = 0; j < row_off.size(); ++j) {
            const T* xr = x + row_off[j];
            W part = 0;
            for (int k = 0; k < t.count; ++k) part += static_cast<W>(t.weight[k]) * static_cast<W>(xr[t.index[k]]);
            sum += row_w[j] * part;
          }
          yr[o] = static_cast<T>(sum);
        } else {
          yr[o] = x[row_off[0] + t.index[0]];
        }
      }
    }
  });
}

void resize_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  int64_t rank = x.rank();
  ResizeAttrs a = read_resize_attrs(node, rank);
  auto present = [&](size_t i) { return in.size() > i && in[i] && in[i]->numel() > 0 ? in[i] : nullptr; };
  ResizePlan p = resize_plan(node, a, x.shape(), present(2), present(3));
  if (p.out != y.shape()) internal_error("{}: inferred shape {} differs from the plan", node_what(node), y.shape_string());
  if (y.numel() == 0) return;
  if (rank == 0) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  // roi: [starts.., ends..] over `axes` (or every axis); only tf_crop_and_resize reads it.
  std::vector<double> roi_start(static_cast<size_t>(rank), 0.0), roi_end(static_cast<size_t>(rank), 1.0);
  if (a.coord == Coord::tf_crop_and_resize) {
    const Tensor* roi = present(1);
    if (!roi) node_fail(node, "tf_crop_and_resize needs the roi input");
    size_t na = a.axes.size();
    if (static_cast<size_t>(roi->numel()) != 2 * na) node_fail(node, "roi has {} values, expected {}", roi->numel(), 2 * na);
    for (size_t i = 0; i < na; ++i) {
      roi_start[static_cast<size_t>(a.axes[i])] = roi->as_double(static_cast<int64_t>(i));
      roi_end[static_cast<size_t>(a.axes[i])] = roi->as_double(static_cast<int64_t>(i + na));
    }
  }
  std::vector<std::vector<Taps>> taps;
  for (int64_t i = 0; i < rank; ++i) {
    size_t u = static_cast<size_t>(i);
    taps.push_back(axis_taps(a, x.dim(static_cast<int>(i)), p.out[u], p.scale[u], roi_start[u], roi_end[u]));
  }
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    resize_run<T>(a, x.shape(), p.out, taps, x.data<T>(), y.data<T>());
  });
}

}  // namespace

void register_resize_op(OpRegistry& r) {
  r.add(OpKind::Resize, OpDef{infer_resize, resize_kernel, false, false, 1, 4});
}

}  // namespace kiln::linalg_ops
