// CumSum and CumProd, TopK, ScatterElements and ScatterND. Every index is checked (negative ones wrapped) before
// anything is written: an out-of-range index is a user error naming the node, never a write out of
// bounds. Scatters apply their updates in index order, one after another, so duplicate indices
// give what the ONNX reference gives (the last write wins; reductions combine in that order).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include <fmt/ranges.h>

#include "ops/elementwise/elementwise.h"  // wrap_add, wrap_mul: integers wrap as in numpy
#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

// ---- CumSum and CumProd ------------------------------------------------------------------------------

// The axis input: a scalar or one element, of an integer type.
int64_t scan_axis(const Node& node, const Tensor& axis, int64_t rank) {
  std::vector<int64_t> a = read_ints(node, axis, "axis");
  if (a.size() != 1 || axis.rank() > 1) node_fail(node, "axis must hold one value, it has {}", a.size());
  return normalize_axis(node, a[0], rank);
}

std::vector<TensorType> infer_cumulative(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  const std::string_view op = op_name(ctx.node().op);
  require_integer_input(ctx, 1, "axis");
  if (x.dtype == DType::boolean || x.dtype == DType::i8 || x.dtype == DType::u8 || x.dtype == DType::i16 ||
      x.dtype == DType::u16)
    ctx.fail("{} of {} is not defined (floats, int32, int64, uint32 and uint64 are)", op, dtype_name(x.dtype));
  if (const Tensor* axis = ctx.value(1)) scan_axis(ctx.node(), *axis, std::max<int64_t>(1, x.rank()));
  if (x.rank() == 0) ctx.fail("{} of a scalar", op);
  return {x};
}

// The running sum (or product) along the axis; `exclusive` leaves the current element out.
template <bool kProduct>
void kernel_cumulative(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                       const KernelContext&) {
  const Tensor& x = *in[0];
  const int64_t axis = scan_axis(node, *in[1], x.rank());
  const bool exclusive = node.attr_int("exclusive", 0) != 0, reverse = node.attr_int("reverse", 0) != 0;
  const std::vector<int64_t>& d = x.shape();
  const int64_t n = d[size_t(axis)], inner = dims_product(d, size_t(axis) + 1, d.size());
  const int64_t outer = dims_product(d, 0, size_t(axis));
  if (x.numel() == 0) return;
  dispatch_numeric(x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* src = x.data<T>();
    T* dst = out[0].data<T>();
    parallel_for(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)), [&](int64_t b, int64_t e) {
      for (int64_t line = b; line < e; ++line) {
        const int64_t base = (line / inner) * n * inner + line % inner;
        T acc = kProduct ? T(1) : T(0);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = base + (reverse ? n - 1 - j : j) * inner;
          const T next = kProduct ? elementwise::wrap_mul(acc, src[at]) : elementwise::wrap_add(acc, src[at]);
          dst[at] = exclusive ? acc : next;
          acc = next;
        }
      }
    });
  });
}

// ---- TopK --------------------------------------------------------------------------------------------

int64_t topk_k(const Node& node, const Tensor& k_input, int64_t dim) {
  std::vector<int64_t> k = read_ints(node, k_input, "K");
  if (k.size() != 1) node_fail(node, "K must hold one value, it has {}", k.size());
  if (k[0] < 0 || k[0] > dim) node_fail(node, "K is {}, the axis has {} elements", k[0], dim);
  return k[0];
}

std::vector<TensorType> infer_topk(InferContext& ctx) {
  const TensorType& x = ctx.in(0);
  require_integer_input(ctx, 1, "K");
  if (x.rank() == 0) ctx.fail("TopK of a scalar");
  if (x.dtype == DType::boolean) ctx.fail("TopK of bool is not defined");
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", -1), x.rank()));
  Shape shape = x.shape;
  if (const Tensor* k = ctx.value(1); k && x.shape[axis].is_static())
    shape[axis] = Dim::fixed(topk_k(ctx.node(), *k, x.shape[axis].value));
  else
    shape[axis] = ctx.fresh_dim();
  return {TensorType{x.dtype, shape}, TensorType{DType::i64, shape}};
}

// Largest first (or smallest first); NaN counts as larger than every number (as torch.topk has it);
// equal values keep their order, the lower index first.
template <class T>
bool before(T a, T b, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return largest ? !std::isnan(b) : !std::isnan(a);
  }
  return largest ? a > b : a < b;
}

void kernel_topk(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  const int64_t axis = normalize_axis(node, node.attr_int("axis", -1), x.rank());
  const bool largest = node.attr_int("largest", 1) != 0;  // sorted=0 may give any order: sorted it is
  const std::vector<int64_t>& d = x.shape();
  const int64_t n = d[size_t(axis)], inner = dims_product(d, size_t(axis) + 1, d.size()), outer = dims_product(d, 0, size_t(axis));
  const int64_t k = topk_k(node, *in[1], n);
  if (out[0].numel() == 0) return;
  dispatch_numeric(x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* src = x.data<T>();
    T* values = out[0].data<T>();
    int64_t* indices = out[1].data<int64_t>();
    parallel_for(outer * inner, 1, [&](int64_t b, int64_t e) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t line = b; line < e; ++line) {
        const int64_t o = line / inner, i = line % inner;
        const T* row = src + o * n * inner + i;
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t p, int64_t q) { return before(row[p * inner], row[q * inner], largest); });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t at = (o * k + j) * inner + i;
          values[at] = row[order[size_t(j)] * inner];
          indices[at] = order[size_t(j)];
        }
      }
    });
  });
}

// ---- ScatterElements, ScatterND ----------------------------------------------------------------------

enum class Reduction { none, add, mul, max, min };

Reduction reduction_of(const Node& node) {
  const std::string r = node.attr_string("reduction", "none");
  if (r == "none") return Reduction::none;
  if (r == "add") return Reduction::add;
  if (r == "mul") return Reduction::mul;
  if (r == "max") return Reduction::max;
  if (r == "min") return Reduction::min;
  node_fail(node, "reduction '{}' is not none, add, mul, max or min", r);
}

template <class T>
void combine(T& dst, T v, Reduction r) {
  switch (r) {
    case Reduction::none: dst = v; break;
    case Reduction::add: dst = elementwise::wrap_add(dst, v); break;
    case Reduction::mul: dst = elementwise::wrap_mul(dst, v); break;
    case Reduction::max: dst = std::isnan(double(v)) || v > dst ? v : dst; break;
    case Reduction::min: dst = std::isnan(double(v)) || v < dst ? v : dst; break;
  }
}

// Calls f(T{}) for the scatter's data type (bool only without a reduction).
template <class F>
void dispatch_scatter(const Node& node, DType t, Reduction r, F&& f) {
  if (t == DType::boolean) {
    if (r != Reduction::none) node_fail(node, "a reduction over bool is not defined");
    f(bool{});
    return;
  }
  dispatch_numeric(t, f);
}

// What both scatters check first: integer indices, a known reduction, updates of data's type.
void check_scatter_inputs(InferContext& ctx) {
  require_integer_input(ctx, 1, "indices");
  reduction_of(ctx.node());
  if (ctx.in(2).dtype != ctx.in(0).dtype)
    ctx.fail("updates are {}, data is {}", dtype_name(ctx.in(2).dtype), dtype_name(ctx.in(0).dtype));
}

std::vector<TensorType> infer_scatter_elements(InferContext& ctx) {
  check_scatter_inputs(ctx);
  const TensorType& data = ctx.in(0);
  const TensorType& indices = ctx.in(1);
  const TensorType& updates = ctx.in(2);
  if (data.rank() == 0) ctx.fail("cannot scatter into a scalar");
  if (indices.rank() != data.rank() || updates.rank() != data.rank())
    ctx.fail("indices {} and updates {} must have the rank of data {}", shape_string(indices.shape),
             shape_string(updates.shape), shape_string(data.shape));
  normalize_axis(ctx, ctx.node().attr_int("axis", 0), data.rank());
  return {data};
}

void kernel_scatter_elements(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                             const KernelContext&) {
  const Tensor &data = *in[0], &indices = *in[1], &updates = *in[2];
  const Reduction r = reduction_of(node);
  const size_t rank = static_cast<size_t>(data.rank());
  const size_t axis = static_cast<size_t>(normalize_axis(node, node.attr_int("axis", 0), data.rank()));
  if (indices.shape() != updates.shape())
    node_fail(node, "indices {} and updates {} differ in shape", indices.shape_string(), updates.shape_string());
  for (size_t k = 0; k < rank; ++k)
    if (k != axis && indices.shape()[k] > data.shape()[k])
      node_fail(node, "indices {} exceed data {} on axis {}", indices.shape_string(), data.shape_string(), k);
  std::vector<int64_t> idx = checked_indices(node, indices, data.dim(static_cast<int>(axis)), int64_t(axis));
  std::memcpy(out[0].raw(), data.raw(), data.nbytes());
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  const std::vector<int64_t>& shape = indices.shape();
  dispatch_scatter(node, data.dtype(), r, [&](auto t) {
    using T = decltype(t);
    T* dst = out[0].data<T>();
    const T* src = updates.data<T>();
    std::vector<int64_t> index(rank, 0);
    for (size_t i = 0; i < idx.size(); ++i) {
      int64_t at = 0;
      for (size_t k = 0; k < rank; ++k) at += (k == axis ? idx[i] : index[k]) * strides[k];
      combine(dst[at], src[i], r);
      for (size_t k = rank; k-- > 0;) {  // the odometer over indices' shape
        if (++index[k] < shape[k]) break;
        index[k] = 0;
      }
    }
  });
}

std::vector<TensorType> infer_scatter_nd(InferContext& ctx) {
  check_scatter_inputs(ctx);
  const TensorType& data = ctx.in(0);
  const TensorType& indices = ctx.in(1);
  const TensorType& updates = ctx.in(2);
  if (indices.rank() < 1) ctx.fail("indices must have rank 1 or more");
  const Dim& k = indices.shape.back();
  if (k.is_static() && (k.value < 1 || k.value > data.rank()))
    ctx.fail("indices' last dim is {}, data has rank {}", k.value, data.rank());
  if (k.is_static() && updates.rank() != indices.rank() - 1 + data.rank() - k.value)
    ctx.fail("updates {} must have rank {} (indices {}, data {})", shape_string(updates.shape),
             indices.rank() - 1 + data.rank() - k.value, shape_string(indices.shape), shape_string(data.shape));
  return {data};
}

void kernel_scatter_nd(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                       const KernelContext&) {
  const Tensor &data = *in[0], &indices = *in[1], &updates = *in[2];
  const Reduction r = reduction_of(node);
  const std::vector<int64_t>& ds = data.shape();
  const std::vector<int64_t>& is = indices.shape();
  const int64_t k = is.back();
  if (k < 1 || k > data.rank()) node_fail(node, "indices' last dim is {}, data has rank {}", k, data.rank());
  std::vector<int64_t> want(is.begin(), is.end() - 1);
  want.insert(want.end(), ds.begin() + k, ds.end());
  if (updates.shape() != want)
    node_fail(node, "updates are {}, indices {} and data {} need {}", updates.shape_string(), indices.shape_string(),
              data.shape_string(), fmt::format("[{}]", fmt::join(want, ",")));
  const int64_t slice = dims_product(ds, size_t(k), ds.size());
  const std::vector<int64_t> strides = contiguous_strides(ds);
  std::vector<int64_t> idx = read_ints(node, indices, "indices");
  const int64_t tuples = static_cast<int64_t>(idx.size()) / k;
  std::vector<int64_t> offsets(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t at = 0;
    for (int64_t j = 0; j < k; ++j) {
      at += wrapped_index(node, idx[size_t(t * k + j)], ds[size_t(j)], j) * strides[size_t(j)];
    }
    offsets[size_t(t)] = at;
  }
  std::memcpy(out[0].raw(), data.raw(), data.nbytes());
  dispatch_scatter(node, data.dtype(), r, [&](auto t) {
    using T = decltype(t);
    T* dst = out[0].data<T>();
    const T* src = updates.data<T>();
    for (int64_t u = 0; u < tuples; ++u)
      for (int64_t e = 0; e < slice; ++e) combine(dst[offsets[size_t(u)] + e], src[u * slice + e], r);
  });
}

}  // namespace

void register_scatter_scan_ops(OpRegistry& r) {
  OpDef cumulative;
  cumulative.infer = infer_cumulative;
  cumulative.min_inputs = cumulative.max_inputs = 2;
  cumulative.kernel = kernel_cumulative<false>;
  r.add(OpKind::CumSum, cumulative);
  cumulative.kernel = kernel_cumulative<true>;
  r.add(OpKind::CumProd, cumulative);
  OpDef topk;
  topk.infer = infer_topk;
  topk.kernel = kernel_topk;
  topk.min_inputs = topk.max_inputs = 2;
  r.add(OpKind::TopK, topk);
  OpDef scatter;
  scatter.infer = infer_scatter_elements;
  scatter.kernel = kernel_scatter_elements;
  scatter.min_inputs = scatter.max_inputs = 3;
  r.add(OpKind::ScatterElements, scatter);
  scatter.infer = infer_scatter_nd;
  scatter.kernel = kernel_scatter_nd;
  r.add(OpKind::ScatterND, scatter);
}

}  // namespace kiln::shape_ops
