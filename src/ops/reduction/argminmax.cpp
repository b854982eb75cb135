// ArgMax / ArgMin (opset 13): index (i64) of the largest / smallest element along `axis` (default 0),
// keepdims (default 1), select_last_index (default 0: first occurrence; 1: last occurrence).
// NaN as numpy's argmax/argmin: a NaN beats every number, so the first NaN is chosen (the last NaN
// with select_last_index, which the ONNX reference computes by flipping the axis).
// An empty axis has no index to give: a user error (numpy raises too).
#include "ops/reduction/reduction_common.h"

namespace kiln {
namespace {

std::vector<TensorType> infer_arg(InferContext& ctx) {
  const Node& node = ctx.node();
  const TensorType& x = ctx.in(0);
  if (x.dtype == DType::boolean) ctx.fail("input must be numeric, not bool");
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  int64_t axis = normalize_axis(ctx, node.attr_int("axis", 0), x.rank());
  bool keepdims = node.attr_int("keepdims", 1) != 0;
  TensorType y{DType::i64, {}};
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != axis) y.shape.push_back(x.shape[static_cast<size_t>(d)]);
    else if (keepdims) y.shape.push_back(Dim::fixed(1));
  }
  return {y};
}

// Whether v at a later index replaces the current best b.
template <bool kMax, bool kLast, class T>
inline bool replaces(T v, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b != b) return kLast && v != v;  // a NaN is only replaced by a later NaN, when asked for the last
    if (v != v) return true;
  }
  if constexpr (kMax) return kLast ? v >= b : v > b;
  else return kLast ? v <= b : v < b;
}

template <bool kMax, bool kLast, class T>
void arg_loop(const T* x, int64_t* y, const AxisSplit& s) {
  const int64_t n = s.len, inner = s.inner;
  for_outer_and_chunks(s.outer, inner, n * std::min(inner, kColumnChunk), [&](int64_t o, int64_t j0, int64_t cnt) {
    const T* xb = x + o * n * inner + j0;
    int64_t* yb = y + o * inner + j0;
    if (inner == 1) {
      T best = xb[0];
      int64_t at = 0;
      for (int64_t i = 1; i < n; ++i)
        if (replaces<kMax, kLast>(xb[i], best)) best = xb[i], at = i;
      yb[0] = at;
      return;
    }
    T best[kColumnChunk];
    std::copy_n(xb, cnt, best);
    std::fill_n(yb, cnt, int64_t{0});
    for (int64_t i = 1; i < n; ++i) {
      const T* row = xb + i * inner;
      for (int64_t j = 0; j < cnt; ++j)
        if (replaces<kMax, kLast>(row[j], best[j])) best[j] = row[j], yb[j] = i;
    }
  });
}

template <bool kMax>
void arg_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  int64_t axis = normalize_axis(node, node.attr_int("axis", 0), x.rank());
  AxisSplit s = split_at_axis(x.shape(), axis);
  if (s.len == 0)
    user_error("node '{}' ({}): axis {} of {} is empty; there is no index to return", node.name,
               op_name(node.op), axis, x.shape_string());
  bool last = node.attr_int("select_last_index", 0) != 0;
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (last) arg_loop<kMax, true>(x.data<T>(), y.data<int64_t>(), s);
    else arg_loop<kMax, false>(x.data<T>(), y.data<int64_t>(), s);
  });
}

}  // namespace

void register_argminmax_ops(OpRegistry& r) {
  r.add(OpKind::ArgMax, OpDef{.infer = infer_arg, .kernel = arg_kernel<true>, .min_inputs = 1, .max_inputs = 1});
  r.add(OpKind::ArgMin, OpDef{.infer = infer_arg, .kernel = arg_kernel<false>, .min_inputs = 1, .max_inputs = 1});
}

}  // namespace kiln
