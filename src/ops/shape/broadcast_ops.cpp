// Expand (numpy broadcast of the input against a shape, in both directions) and Tile. Both are one
// strided copy with stride 0 on the repeated dims.
#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

// One broadcast dim of Expand: input dim `d` (nullptr when the input has fewer dims) against the
// requested size `t`. A symbolic input dim broadcast against t != 1 must be 1 or t, so the result is t.
Dim expand_dim(InferContext& ctx, const Dim* d, int64_t t, const Shape& in, const std::vector<int64_t>& target) {
  if (!d) return Dim::fixed(t);
  if (t == 1) return *d;
  if (!d->is_static()) return Dim::fixed(t);
  if (d->value == 1 || d->value == t) return Dim::fixed(t);
  ctx.fail("cannot expand {} to [{}]", shape_string(in), fmt::join(target, ","));
}

std::vector<TensorType> infer_expand(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  require_integer_input(ctx, 1, "the shape input");
  int64_t rank = data.rank();
  Shape out;
  if (const Tensor* shape_value = ctx.value(1)) {
    if (shape_value->rank() != 1) ctx.fail("the shape input must be 1-D, got {}", shape_value->shape_string());
    std::vector<int64_t> target = read_ints(ctx.node(), *shape_value, "the shape input");
    for (int64_t t : target)
      if (t < 0) ctx.fail("the shape [{}] has a negative entry", fmt::join(target, ","));
    int64_t n = static_cast<int64_t>(target.size()), out_rank = std::max(rank, n);
    check_rank(ctx, out_rank);
    for (int64_t i = 0; i < out_rank; ++i) {
      int64_t di = i - (out_rank - rank), ti = i - (out_rank - n);
      const Dim* d = di >= 0 ? &data.shape[static_cast<size_t>(di)] : nullptr;
      if (ti < 0) out.push_back(*d);
      else out.push_back(expand_dim(ctx, d, target[static_cast<size_t>(ti)], data.shape, target));
    }
    return {TensorType{data.dtype, out}};
  }
  int64_t n = static_length_1d(ctx, 1, "the shape input");
  if (n < 0) ctx.fail("the shape input has an unknown length, so the output rank is unknown");
  int64_t out_rank = std::max(rank, n);
  check_rank(ctx, out_rank);
  for (int64_t i = 0; i < out_rank; ++i) {
    int64_t di = i - (out_rank - rank);
    const Dim* d = di >= 0 ? &data.shape[static_cast<size_t>(di)] : nullptr;
    // A static input dim other than 1 survives any valid broadcast; beyond the target's rank too.
    bool kept = d && ((d->is_static() && d->value != 1) || i < out_rank - n);
    out.push_back(kept ? *d : ctx.fresh_dim());
  }
  return {TensorType{data.dtype, out}};
}

void kernel_expand(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  std::vector<int64_t> strides = broadcast_strides(x.shape(), y.shape());
  strided_copy(dtype_size(x.dtype()), y.shape(), strides, x.raw(), y.raw());
}

// ---- Tile ------------------------------------------------------------------------------------------

std::vector<TensorType> infer_tile(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  require_integer_input(ctx, 1, "repeats");
  Shape out = data.shape;
  const Tensor* repeats_value = ctx.value(1);
  if (!repeats_value) {
    int64_t n = static_length_1d(ctx, 1, "repeats");
    if (n >= 0 && n != data.rank()) ctx.fail("repeats has {} entries for an input of rank {}", n, data.rank());
    for (Dim& d : out)
      if (!(d.is_static() && d.value == 0)) d = ctx.fresh_dim();
    return {TensorType{data.dtype, out}};
  }
  if (repeats_value->rank() != 1) ctx.fail("repeats must be 1-D, got {}", repeats_value->shape_string());
  std::vector<int64_t> repeats = read_ints(ctx.node(), *repeats_value, "repeats");
  if (static_cast<int64_t>(repeats.size()) != data.rank())
    ctx.fail("repeats has {} entries for an input of rank {}", repeats.size(), data.rank());
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t r = repeats[k];
    if (r < 0) ctx.fail("repeats [{}] has a negative entry", fmt::join(repeats, ","));
    Dim& d = out[k];
    if (d.is_static()) d = Dim::fixed(checked_mul(d.value, r, node_what(ctx.node())));
    else if (r == 0) d = Dim::fixed(0);
    else if (r != 1) {
      int64_t hint = -1;
      if (d.hint < 0 || __builtin_mul_overflow(d.hint, r, &hint)) hint = -1;
      d = ctx.fresh_dim(hint);
    }
  }
  return {TensorType{data.dtype, out}};
}

void kernel_tile(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  const Tensor& x = *in[0];
  std::vector<int64_t> repeats = read_ints(node, *in[1], "repeats");
  std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  // The output read as [r0, d0, r1, d1, ...] is row-major [r0*d0, r1*d1, ...]: stride 0 on each r.
  std::vector<int64_t> dims, strides;
  for (size_t k = 0; k < repeats.size(); ++k) {
    dims.insert(dims.end(), {repeats[k], x.shape()[k]});
    strides.insert(strides.end(), {0, in_strides[k]});
  }
  strided_copy(dtype_size(x.dtype()), dims, strides, x.raw(), out[0].raw());
}

}  // namespace

void register_broadcast_ops(OpRegistry& r) {
  OpDef expand;
  expand.infer = infer_expand;
  expand.kernel = kernel_expand;
  expand.handles_half = true;
  expand.min_inputs = expand.max_inputs = 2;
  r.add(OpKind::Expand, expand);
  OpDef tile = expand;
  tile.infer = infer_tile;
  tile.kernel = kernel_tile;
  r.add(OpKind::Tile, tile);
}

}  // namespace kiln::shape_ops
