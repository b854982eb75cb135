// NonMaxSuppression(boxes [B, N, 4], scores [B, C, N], max_output_boxes_per_class, iou_threshold,
// score_threshold) -> selected_indices [K, 3] (batch, class, box): for each batch and class, the boxes
// whose score is above score_threshold (all without one), by descending score (ties: the lower index
// first), each kept unless its IoU with a box already kept is above iou_threshold, at most
// max_output_boxes_per_class (0 or absent: none) of them. Boxes are corners [y1, x1, y2, x2] in either
// order (center_point_box 0) or [x_center, y_center, width, height] (1). K depends on the values:
// exact when they are known (always at run time), else a fresh dim.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/linalg/linalg_ops.h"

namespace kiln::linalg_ops {
namespace {

struct Box {
  double y1, x1, y2, x2;
  double area() const { return (y2 - y1) * (x2 - x1); }
};

Box read_box(const Tensor& boxes, int64_t at, bool center) {
  double v[4];
  for (int k = 0; k < 4; ++k) v[k] = boxes.as_double(at + k);
  if (center) return Box{v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
  return Box{std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
}

double iou(const Box& a, const Box& b) {
  const double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0 || a.area() <= 0 || b.area() <= 0) return 0;
  const double inter = h * w;
  return inter / (a.area() + b.area() - inter);
}

// A scalar (or one-element) optional input, `def` when absent.
double scalar_input(const Node& node, std::span<const Tensor* const> in, size_t i, double def, const char* what) {
  if (i >= in.size() || !in[i]) return def;
  if (in[i]->numel() != 1) node_fail(node, "{} must hold one value, it has {}", what, in[i]->numel());
  return in[i]->as_double(0);
}

std::vector<int64_t> select_boxes(const Node& node, std::span<const Tensor* const> in) {
  const Tensor &boxes = *in[0], &scores = *in[1];
  if (boxes.rank() != 3 || boxes.dim(2) != 4) node_fail(node, "boxes must be [batches, boxes, 4], are {}", boxes.shape_string());
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    node_fail(node, "scores must be [batches, classes, boxes] for boxes {}, are {}", boxes.shape_string(),
              scores.shape_string());
  const double max_per_class = scalar_input(node, in, 2, 0, "max_output_boxes_per_class");
  const double iou_threshold = scalar_input(node, in, 3, 0, "iou_threshold");
  const bool has_score_threshold = in.size() > 4 && in[4];
  const double score_threshold = scalar_input(node, in, 4, 0, "score_threshold");
  if (iou_threshold < 0 || iou_threshold > 1) node_fail(node, "iou_threshold {} is not in [0, 1]", iou_threshold);
  const int64_t center = node.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) node_fail(node, "center_point_box is {}, not 0 or 1", center);
  const int64_t B = boxes.dim(0), N = boxes.dim(1), C = scores.dim(1);
  const int64_t limit = max_per_class <= 0 ? 0 : int64_t(std::min<double>(max_per_class, double(N)));
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<Box> box(static_cast<size_t>(N));
    for (int64_t i = 0; i < N; ++i) box[size_t(i)] = read_box(boxes, (b * N + i) * 4, center == 1);
    for (int64_t c = 0; c < C; ++c) {
      const int64_t base = (b * C + c) * N;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < N; ++i)
        if (!has_score_threshold || scores.as_double(base + i) > score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return scores.as_double(base + x) > scores.as_double(base + y); });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= limit) break;
        bool suppressed = false;
        for (int64_t k : kept) suppressed |= iou(box[size_t(i)], box[size_t(k)]) > iou_threshold;
        if (suppressed) continue;
        kept.push_back(i);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  return selected;
}

bool inputs_known(const InferContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has(i) && !ctx.value(i)) return false;
  return true;
}

std::vector<TensorType> infer_nms(InferContext& ctx) {
  for (size_t i = 0; i < 2; ++i)
    if (!is_float(ctx.in(i).dtype)) ctx.fail("input {} must be float, is {}", i, dtype_name(ctx.in(i).dtype));
  if (ctx.has(2) && ctx.in(2).dtype != DType::i64) ctx.fail("max_output_boxes_per_class must be i64");
  Dim count = ctx.fresh_dim();
  if (inputs_known(ctx)) {
    std::vector<const Tensor*> values;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) values.push_back(ctx.has(i) ? ctx.value(i) : nullptr);
    count = Dim::fixed(int64_t(select_boxes(ctx.node(), values).size() / 3));
  }
  return {TensorType{DType::i64, {count, Dim::fixed(3)}}};
}

void kernel_nms(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const std::vector<int64_t> selected = select_boxes(node, in);
  std::copy(selected.begin(), selected.end(), out[0].data<int64_t>());
}

}  // namespace

void register_nms_op(OpRegistry& r) {
  OpDef nms;
  nms.infer = infer_nms;
  nms.kernel = kernel_nms;
  nms.min_inputs = 2;
  nms.max_inputs = 5;
  r.add(OpKind::NonMaxSuppression, nms);
}

}  // namespace kiln::linalg_ops
