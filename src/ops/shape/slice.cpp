// Slice (opset 13+): data, starts, ends, axes?, steps?. Negative starts/ends count from the back, then
// are clamped ([0, dim] for positive steps, [-1, dim-1] for negative ones); INT64 max/min are the usual
// "to the end" sentinels. The kernel is one strided copy.
#include <algorithm>
#include <limits>

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

struct SliceAxis {
  int64_t start = 0, step = 1, count = 0;
};

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;  // axes normalised, steps filled
};

// Reads and validates the slice parameters (all known); `rank` normalises the axes.
SliceArgs read_slice_args(const Node& node, int64_t rank, const Tensor& starts, const Tensor& ends, const Tensor* axes,
                          const Tensor* steps) {
  SliceArgs a;
  a.starts = read_ints(node, starts, "starts");
  a.ends = read_ints(node, ends, "ends");
  if (a.starts.size() != a.ends.size())
    node_fail(node, "starts has {} entries but ends has {}", a.starts.size(), a.ends.size());
  size_t n = a.starts.size();
  if (axes) {
    a.axes = read_ints(node, *axes, "axes");
    if (a.axes.size() != n) node_fail(node, "axes has {} entries but starts has {}", a.axes.size(), n);
  } else {
    if (static_cast<int64_t>(n) > rank) node_fail(node, "{} starts for an input of rank {}", n, rank);
    for (size_t i = 0; i < n; ++i) a.axes.push_back(static_cast<int64_t>(i));
  }
  for (size_t i = 0; i < n; ++i) {
    a.axes[i] = normalize_axis(node, a.axes[i], rank);
    for (size_t j = 0; j < i; ++j)
      if (a.axes[j] == a.axes[i]) node_fail(node, "axis {} appears more than once", a.axes[i]);
  }
  if (steps) {
    a.steps = read_ints(node, *steps, "steps");
    if (a.steps.size() != n) node_fail(node, "steps has {} entries but starts has {}", a.steps.size(), n);
    for (int64_t s : a.steps)
      if (s == 0) node_fail(node, "a step of 0 is invalid");
  } else {
    a.steps.assign(n, 1);
  }
  return a;
}

// The element range of one axis of static size `dim`.
SliceAxis slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim == 0) return SliceAxis{0, step, 0};
  if (start < 0) start += dim;  // no overflow: dim >= 0
  if (end < 0) end += dim;
  SliceAxis r;
  r.step = step;
  int64_t span;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    span = end - start;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    span = start - end;
  }
  r.start = start;
  // ceil(span / |step|) in unsigned arithmetic: |INT64_MIN| does not fit an int64.
  uint64_t mag = step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
  r.count = span <= 0 ? 0 : static_cast<int64_t>((static_cast<uint64_t>(span) - 1) / mag + 1);
  return r;
}

constexpr int64_t kToEnd = std::numeric_limits<int32_t>::max();  // ends at or past this mean "to the end"

// A symbolic dim survives a slice that provably keeps all of it (x[:], x[::-1]); otherwise fresh.
Dim symbolic_slice_dim(InferContext& ctx, const Dim& dim, int64_t start, int64_t end, int64_t step) {
  if (step == 1 && start == 0 && end >= kToEnd) return dim;
  if (step == -1 && (start == -1 || start >= kToEnd) && end <= -kToEnd) return dim;
  return ctx.fresh_dim();
}

std::vector<TensorType> infer_slice(InferContext& ctx) {
  const Node& node = ctx.node();
  const TensorType& data = ctx.in(0);
  int64_t rank = data.rank();
  for (size_t i = 1; i < 5; ++i)
    if (ctx.has(i)) require_integer_input(ctx, i, i == 1 ? "starts" : i == 2 ? "ends" : i == 3 ? "axes" : "steps");
  const Tensor *starts = ctx.value(1), *ends = ctx.value(2);
  const Tensor* axes = ctx.has(3) ? ctx.value(3) : nullptr;
  const Tensor* steps = ctx.has(4) ? ctx.value(4) : nullptr;
  bool axes_known = !ctx.has(3) || axes, steps_known = !ctx.has(4) || steps;
  Shape out = data.shape;
  if (starts && ends && axes_known && steps_known) {
    SliceArgs a = read_slice_args(node, rank, *starts, *ends, axes, steps);
    for (size_t i = 0; i < a.axes.size(); ++i) {
      Dim& d = out[static_cast<size_t>(a.axes[i])];
      if (d.is_static()) d = Dim::fixed(slice_axis(d.value, a.starts[i], a.ends[i], a.steps[i]).count);
      else d = symbolic_slice_dim(ctx, d, a.starts[i], a.ends[i], a.steps[i]);
    }
    return {TensorType{data.dtype, out}};
  }
  // Some parameters are unknown: the sliced axes get fresh dims (all axes when even those are unknown).
  std::vector<int64_t> sliced;
  if (ctx.has(3) && axes) {
    for (int64_t ax : read_ints(node, *axes, "axes")) sliced.push_back(normalize_axis(ctx, ax, rank));
  } else if (!ctx.has(3)) {
    int64_t n = static_length_1d(ctx, 1, "starts");
    for (int64_t i = 0; i < (n < 0 ? rank : std::min(n, rank)); ++i) sliced.push_back(i);
  } else {
    for (int64_t i = 0; i < rank; ++i) sliced.push_back(i);
  }
  for (int64_t ax : sliced) out[static_cast<size_t>(ax)] = ctx.fresh_dim();
  return {TensorType{data.dtype, out}};
}

void kernel_slice(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  const Tensor* axes = in.size() > 3 ? in[3] : nullptr;
  const Tensor* steps = in.size() > 4 ? in[4] : nullptr;
  SliceArgs a = read_slice_args(node, x.rank(), *in[1], *in[2], axes, steps);
  std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  std::vector<int64_t> dims = x.shape(), strides = in_strides;
  int64_t offset = 0;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    size_t ax = static_cast<size_t>(a.axes[i]);
    SliceAxis s = slice_axis(x.shape()[ax], a.starts[i], a.ends[i], a.steps[i]);
    dims[ax] = s.count;
    // With one element or none the stride is never used (and step * stride could overflow).
    strides[ax] = s.count > 1 ? in_strides[ax] * s.step : 0;
    if (s.count > 0) offset += s.start * in_strides[ax];
  }
  KILN_INTERNAL_CHECK(dims == out[0].shape(), "{}: slice shape [{}] != allocated {}", node_what(node),
                      fmt::join(dims, ","), out[0].shape_string());
  size_t esize = dtype_size(x.dtype());
  strided_copy(esize, dims, strides, static_cast<const char*>(x.raw()) + static_cast<size_t>(offset) * esize,
               out[0].raw());
}

}  // namespace

void register_slice_op(OpRegistry& r) {
  OpDef d;
  d.infer = infer_slice;
  d.kernel = kernel_slice;
  d.handles_half = true;
  d.min_inputs = 3;
  d.max_inputs = 5;
  r.add(OpKind::Slice, d);
}

}  // namespace kiln::shape_ops
