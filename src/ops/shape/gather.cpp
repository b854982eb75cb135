// Gather and GatherElements. Every index is checked (and negative ones wrapped) before any copy: an
// out-of-range index is a user error naming the node, never a read out of bounds. The checks run
// before the parallel copy so that no exception leaves an OpenMP region.
#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {

std::vector<int64_t> checked_indices(const Node& node, const Tensor& indices, int64_t dim, int64_t axis) {
  std::vector<int64_t> idx = read_ints(node, indices, "indices");
  for (int64_t& v : idx) v = wrapped_index(node, v, dim, axis);
  return idx;
}

namespace {

std::vector<TensorType> infer_gather(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  const TensorType& indices = ctx.in(1);
  require_integer_input(ctx, 1, "indices");
  if (data.rank() == 0) ctx.fail("cannot gather from a scalar");
  size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", 0), data.rank()));
  Shape out(data.shape.begin(), data.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.shape.end());
  check_rank(ctx, static_cast<int64_t>(out.size()));
  return {TensorType{data.dtype, out}};
}

void kernel_gather(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  int64_t axis = normalize_axis(node, node.attr_int("axis", 0), x.rank());
  int64_t dim = x.dim(static_cast<int>(axis));
  std::vector<int64_t> idx = checked_indices(node, *in[1], dim, axis);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < x.rank(); ++k) {
    if (k < axis) outer *= x.dim(static_cast<int>(k));
    if (k > axis) inner *= x.dim(static_cast<int>(k));
  }
  int64_t n_idx = static_cast<int64_t>(idx.size()), rows = outer * n_idx;
  if (rows == 0 || inner == 0) return;
  size_t esize = dtype_size(x.dtype());
  dispatch_bytes(esize, [&](auto u) {
    using U = decltype(u);
    const U* src = static_cast<const U*>(x.raw());
    U* dst = static_cast<U*>(out[0].raw());
    int64_t min_rows = std::max<int64_t>(1, 16384 / inner);
    parallel_for(rows, min_rows, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t o = r / n_idx, k = r % n_idx;
        const U* p = src + (o * dim + idx[static_cast<size_t>(k)]) * inner;
        U* q = dst + r * inner;
        if (inner == 1) *q = *p;
        else std::memcpy(q, p, static_cast<size_t>(inner) * sizeof(U));
      }
    });
  });
}

// ---- GatherElements --------------------------------------------------------------------------------

std::vector<TensorType> infer_gather_elements(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  const TensorType& indices = ctx.in(1);
  require_integer_input(ctx, 1, "indices");
  if (data.rank() == 0) ctx.fail("cannot gather from a scalar");
  if (indices.rank() != data.rank())
    ctx.fail("indices {} must have the rank of data {}", shape_string(indices.shape), shape_string(data.shape));
  size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.node().attr_int("axis", 0), data.rank()));
  for (size_t k = 0; k < data.shape.size(); ++k) {
    const Dim &d = data.shape[k], &i = indices.shape[k];
    if (k != axis && d.is_static() && i.is_static() && i.value > d.value)
      ctx.fail("indices {} exceed data {} on axis {}", shape_string(indices.shape), shape_string(data.shape), k);
  }
  return {TensorType{data.dtype, indices.shape}};
}

void kernel_gather_elements(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                            const KernelContext&) {
  const Tensor& x = *in[0];
  const Tensor& indices = *in[1];
  size_t rank = static_cast<size_t>(x.rank());
  size_t axis = static_cast<size_t>(normalize_axis(node, node.attr_int("axis", 0), x.rank()));
  if (indices.rank() != x.rank())
    node_fail(node, "indices {} must have the rank of data {}", indices.shape_string(), x.shape_string());
  std::vector<int64_t> idx = checked_indices(node, indices, x.dim(static_cast<int>(axis)), static_cast<int64_t>(axis));
  const std::vector<int64_t>& shape = indices.shape();
  for (size_t k = 0; k < rank; ++k)  // the bound that keeps the non-axis reads inside data
    if (k != axis && shape[k] > x.shape()[k])
      node_fail(node, "indices {} exceed data {} on axis {}", indices.shape_string(), x.shape_string(), k);
  int64_t n = indices.numel();
  if (n == 0) return;
  std::vector<int64_t> strides = contiguous_strides(x.shape());
  size_t esize = dtype_size(x.dtype());
  dispatch_bytes(esize, [&](auto u) {
    using U = decltype(u);
    const U* src = static_cast<const U*>(x.raw());
    U* dst = static_cast<U*>(out[0].raw());
    parallel_for(n, 16384, [&](int64_t b, int64_t e) {
      // Multi-index of element b, then an odometer; `base` is the source offset without the axis term.
      std::vector<int64_t> index(rank);
      int64_t rest = b, base = 0;
      for (size_t k = rank; k-- > 0;) {
        index[k] = rest % shape[k];
        rest /= shape[k];
        if (k != axis) base += index[k] * strides[k];
      }
      for (int64_t i = b; i < e; ++i) {
        dst[i] = src[base + idx[static_cast<size_t>(i)] * strides[axis]];
        for (size_t k = rank; k-- > 0;) {
          int64_t step = k == axis ? 0 : strides[k];
          base += step;
          if (++index[k] < shape[k]) break;
          base -= step * shape[k];
          index[k] = 0;
        }
      }
    });
  });
}

}  // namespace

void register_gather_ops(OpRegistry& r) {
  OpDef gather;
  gather.infer = infer_gather;
  gather.kernel = kernel_gather;
  gather.handles_half = true;
  gather.min_inputs = gather.max_inputs = 2;
  r.add(OpKind::Gather, gather);
  OpDef elements = gather;
  elements.infer = infer_gather_elements;
  elements.kernel = kernel_gather_elements;
  r.add(OpKind::GatherElements, elements);
}

}  // namespace kiln::shape_ops
