// Sliding-window attributes and output geometry (ONNX Conv / pool rules).
#include <fmt/ranges.h>

#include "ops/linalg/linalg_ops.h"

namespace kiln::linalg_ops {

std::string node_what(const Node& node) { return fmt::format("node '{}' ({})", node.name, op_name(node.op)); }

namespace {

std::vector<int64_t> read_per_axis(const Node& node, std::string_view name, size_t count, int64_t def,
                                   int64_t min_value) {
  if (!node.has_attr(name)) return std::vector<int64_t>(count, def);
  std::vector<int64_t> v = node.attr_ints(name);
  if (v.size() != count) node_fail(node, "attribute '{}' has {} values, expected {}", name, v.size(), count);
  for (int64_t x : v)
    if (x < min_value) node_fail(node, "attribute '{}' has value {} (must be >= {})", name, x, min_value);
  return v;
}

AutoPad parse_auto_pad(const Node& node) {
  std::string s = node.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::notset;
  if (s == "SAME_UPPER") return AutoPad::same_upper;
  if (s == "SAME_LOWER") return AutoPad::same_lower;
  if (s == "VALID") return AutoPad::valid;
  node_fail(node, "unknown auto_pad '{}' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)", s);
}

}  // namespace

WindowAttrs read_window_attrs(const Node& node, size_t spatial, std::vector<int64_t> kernel) {
  WindowAttrs w;
  w.spatial = spatial;
  if (node.has_attr("kernel_shape")) {
    std::vector<int64_t> ks = node.attr_ints("kernel_shape");
    if (ks.size() != spatial)
      node_fail(node, "kernel_shape has {} values for {} spatial dims", ks.size(), spatial);
    if (!kernel.empty() && ks != kernel)
      node_fail(node, "kernel_shape [{}] does not match the weights' kernel [{}]", fmt::join(ks, ","),
                fmt::join(kernel, ","));
    kernel = ks;
  }
  if (kernel.empty()) node_fail(node, "attribute 'kernel_shape' is required");
  for (int64_t k : kernel)
    if (k < 1) node_fail(node, "kernel size {} must be >= 1", k);
  w.kernel = std::move(kernel);
  w.strides = read_per_axis(node, "strides", spatial, 1, 1);
  w.dilations = read_per_axis(node, "dilations", spatial, 1, 1);
  w.pads = read_per_axis(node, "pads", 2 * spatial, 0, 0);
  w.auto_pad = parse_auto_pad(node);
  int64_t ceil_mode = node.attr_int("ceil_mode", 0);
  if (ceil_mode != 0 && ceil_mode != 1) node_fail(node, "ceil_mode must be 0 or 1, got {}", ceil_mode);
  w.ceil_mode = ceil_mode == 1;
  return w;
}

AxisGeometry window_axis(const Node& node, const WindowAttrs& w, size_t axis, int64_t in) {
  std::string what = node_what(node);
  int64_t s = w.strides[axis];
  int64_t extent = checked_add(checked_mul(w.kernel[axis] - 1, w.dilations[axis], what), 1, what);
  AxisGeometry g;
  if (w.auto_pad == AutoPad::same_upper || w.auto_pad == AutoPad::same_lower) {
    g.out = in / s + (in % s != 0);
    int64_t total = std::max<int64_t>(0, checked_add(checked_mul(g.out - 1, s, what), extent, what) - in);
    if (g.out == 0) total = 0;
    int64_t small = total / 2;
    g.pad_begin = w.auto_pad == AutoPad::same_upper ? small : total - small;
    g.pad_end = total - g.pad_begin;
    return g;
  }
  if (w.auto_pad == AutoPad::notset) {
    g.pad_begin = w.pads[axis];
    g.pad_end = w.pads[axis + w.spatial];
  }
  int64_t padded = checked_add(checked_add(in, g.pad_begin, what), g.pad_end, what);
  if (padded < extent)
    node_fail(node, "spatial axis {}: window extent {} is larger than the padded input {}", axis, extent, padded);
  int64_t span = padded - extent;
  g.out = span / s + 1;
  if (w.ceil_mode && span % s != 0) {
    g.out += 1;
    // The last window must start inside the input or the begin padding (as PyTorch and newer ONNX).
    if ((g.out - 1) * s >= in + g.pad_begin) g.out -= 1;
  }
  return g;
}

Shape window_output_spatial(InferContext& ctx, const WindowAttrs& w, const Shape& in_spatial) {
  Shape out;
  for (size_t i = 0; i < w.spatial; ++i) {
    const Dim& d = in_spatial[i];
    if (d.is_static()) {
      out.push_back(Dim::fixed(window_axis(ctx.node(), w, i, d.value).out));
      continue;
    }
    bool unit_window = w.kernel[i] == 1 && w.strides[i] == 1;
    bool no_pads = w.auto_pad != AutoPad::notset || (w.pads[i] == 0 && w.pads[i + w.spatial] == 0);
    bool same_stride1 = (w.auto_pad == AutoPad::same_upper || w.auto_pad == AutoPad::same_lower) && w.strides[i] == 1;
    out.push_back((unit_window && no_pads) || same_stride1 ? d : ctx.fresh_dim());
  }
  return out;
}

Spatial3 make_spatial3(const std::vector<int64_t>& in, const std::vector<int64_t>& out, const WindowAttrs& w,
                       const std::vector<int64_t>& pad_begin) {
  Spatial3 g;
  size_t n = in.size();
  KILN_INTERNAL_CHECK(n >= 1 && n <= kMaxSpatial && out.size() == n && w.spatial == n && pad_begin.size() == n,
                      "make_spatial3: {} spatial dims", n);
  size_t off = kMaxSpatial - n;
  for (size_t i = 0; i < n; ++i) {
    g.in[off + i] = in[i];
    g.out[off + i] = out[i];
    g.kernel[off + i] = w.kernel[i];
    g.stride[off + i] = w.strides[i];
    g.dilation[off + i] = w.dilations[i];
    g.pad_begin[off + i] = pad_begin[i];
  }
  return g;
}

void valid_taps(int64_t o, int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad, int64_t& k0,
                int64_t& k1) {
  int64_t start = o * stride - pad;  // input index of tap 0
  // First tap with start + k*dilation >= 0, and one past the last with start + k*dilation <= in - 1.
  k0 = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  k1 = start > in - 1 ? 0 : (in - 1 - start) / dilation + 1;
  k0 = std::min(k0, kernel);
  k1 = std::min(k1, kernel);
  if (k1 < k0) k1 = k0;
}

}  // namespace kiln::linalg_ops
