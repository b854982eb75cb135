// Ops whose output is the input's buffer under another shape: Identity, Reshape, Flatten, Squeeze,
// Unsqueeze. The kernels return views (kernel_makes_outputs); their run-time shapes come from the same
// inference code as compile time.
#include <algorithm>

#include "ops/shape/shape_ops.h"

namespace kiln::shape_ops {
namespace {

std::vector<TensorType> infer_identity(InferContext& ctx) { return {ctx.in(0)}; }

void kernel_identity(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  out[0] = *in[0];
}

// ---- Reshape ---------------------------------------------------------------------------------------

// Removes from `from` one dim with the symbol of every dim of `to_remove` it holds; returns the dims
// of `to_remove` that were not found.
std::vector<const Dim*> cancel_symbols(std::vector<const Dim*>& from, const std::vector<const Dim*>& to_remove) {
  std::vector<const Dim*> left;
  for (const Dim* s : to_remove) {
    auto it = std::find_if(from.begin(), from.end(), [&](const Dim* d) { return d->symbol == s->symbol; });
    if (it != from.end()) from.erase(it);
    else left.push_back(s);
  }
  return left;
}

// fixed * the hints of `dims`, or -1 when a hint is unknown or the product overflows.
int64_t hinted_product(int64_t fixed, const std::vector<const Dim*>& dims) {
  int64_t p = fixed;
  for (const Dim* d : dims)
    if (d->hint < 0 || __builtin_mul_overflow(p, d->hint, &p)) return -1;
  return p;
}

// The -1 entry of a Reshape target: input elements divided by the other output dims. Symbols that
// appear on both sides cancel; what is left must be a plain number or a single symbol, else it is a
// fresh symbol (with a size hint when the symbols have hints).
Dim infer_minus_one(InferContext& ctx, const Shape& in, const Shape& out, size_t minus_one_at) {
  std::string what = node_what(ctx.node());
  int64_t in_fixed = 1, out_fixed = 1;
  std::vector<const Dim*> in_syms, out_syms;
  for (const Dim& d : in) {
    if (d.is_static()) in_fixed = checked_mul(in_fixed, d.value, what);
    else in_syms.push_back(&d);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == minus_one_at) continue;
    if (out[i].is_static()) out_fixed = checked_mul(out_fixed, out[i].value, what);
    else out_syms.push_back(&out[i]);
  }
  // A zero-size target leaves -1 undetermined by the element count; kiln resolves it to 0.
  if (out_fixed == 0) {
    if (in_syms.empty() && in_fixed != 0)
      ctx.fail("cannot reshape {} elements into a shape with 0 elements", in_fixed);
    return Dim::fixed(0);
  }
  if (in_fixed == 0) return Dim::fixed(0);  // no elements, whatever the symbols are
  std::vector<const Dim*> out_left = cancel_symbols(in_syms, out_syms);
  if (out_left.empty() && in_syms.empty()) {
    if (in_fixed % out_fixed != 0)
      ctx.fail("cannot reshape {} into {}: {} elements do not divide by {}", shape_string(in), shape_string(out),
               in_fixed, out_fixed);
    return Dim::fixed(in_fixed / out_fixed);
  }
  if (out_left.empty() && in_syms.size() == 1 && in_fixed == out_fixed) return *in_syms[0];
  int64_t num = hinted_product(in_fixed, in_syms), den = hinted_product(out_fixed, out_left);
  return ctx.fresh_dim(num >= 0 && den > 0 && num % den == 0 ? num / den : -1);
}

std::vector<TensorType> infer_reshape(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  require_integer_input(ctx, 1, "the shape input");
  bool allowzero = ctx.node().attr_int("allowzero", 0) != 0;
  const Tensor* target_value = ctx.value(1);
  if (!target_value) {  // target unknown until run time: its length gives the rank
    int64_t rank = static_length_1d(ctx, 1, "the shape input");
    if (rank < 0) ctx.fail("the shape input has an unknown length, so the output rank is unknown");
    check_rank(ctx, rank);
    Shape out;
    for (int64_t i = 0; i < rank; ++i) out.push_back(ctx.fresh_dim());
    return {TensorType{data.dtype, out}};
  }
  if (target_value->rank() != 1) ctx.fail("the shape input must be 1-D, got {}", target_value->shape_string());
  std::vector<int64_t> target = read_ints(ctx.node(), *target_value, "the shape input");
  check_rank(ctx, static_cast<int64_t>(target.size()));
  Shape out(target.size());
  int64_t minus_one_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == -1) {
      if (minus_one_at >= 0) ctx.fail("the shape {} has more than one -1", fmt::join(target, ","));
      minus_one_at = static_cast<int64_t>(i);
    } else if (t < -1) {
      ctx.fail("the shape {} has an invalid entry {}", fmt::join(target, ","), t);
    } else if (t == 0 && !allowzero) {
      if (i >= data.shape.size())
        ctx.fail("shape entry {} is 0 (copy the input dim) but the input {} has no dim {}", i,
                 shape_string(data.shape), i);
      out[i] = data.shape[i];
    } else {
      has_zero = has_zero || t == 0;
      out[i] = Dim::fixed(t);
    }
  }
  if (allowzero && has_zero && minus_one_at >= 0) ctx.fail("allowzero=1 forbids both 0 and -1 in the shape");
  if (minus_one_at >= 0) {
    out[static_cast<size_t>(minus_one_at)] = infer_minus_one(ctx, data.shape, out, static_cast<size_t>(minus_one_at));
  } else if (is_static(data.shape) && is_static(out)) {
    std::string what = node_what(ctx.node());
    int64_t n_in = checked_numel(static_dims(data.shape), what), n_out = checked_numel(static_dims(out), what);
    if (n_in != n_out) ctx.fail("cannot reshape {} ({} elements) into {}", shape_string(data.shape), n_in, shape_string(out));
  }
  return {TensorType{data.dtype, out}};
}

void kernel_reshape(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  out[0] = in[0]->reshaped(concrete_output_dims(infer_reshape, node, in, 0));
}

// ---- Flatten ---------------------------------------------------------------------------------------

std::vector<TensorType> infer_flatten(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  int64_t rank = data.rank(), axis = ctx.node().attr_int("axis", 1);
  if (axis < -rank || axis > rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  Shape out{product_dim(ctx, data.shape, 0, a), product_dim(ctx, data.shape, a, data.shape.size())};
  return {TensorType{data.dtype, out}};
}

void kernel_flatten(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  out[0] = in[0]->reshaped(concrete_output_dims(infer_flatten, node, in, 0));
}

// ---- Squeeze / Unsqueeze -------------------------------------------------------------------------

// Normalised, duplicate-free axes against `rank`.
std::vector<int64_t> normalized_axes(const InferContext& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> r;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(ctx, a, rank);
    if (std::find(r.begin(), r.end(), n) != r.end()) ctx.fail("axis {} appears more than once", a);
    r.push_back(n);
  }
  return r;
}

std::vector<TensorType> infer_squeeze(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  int64_t rank = data.rank();
  Shape out;
  if (!ctx.has(1)) {  // no axes: drop every dim known to be 1 (a symbolic dim is assumed not to be 1)
    for (const Dim& d : data.shape)
      if (!(d.is_static() && d.value == 1)) out.push_back(d);
    return {TensorType{data.dtype, out}};
  }
  require_integer_input(ctx, 1, "axes");
  const Tensor* axes_value = ctx.value(1);
  if (!axes_value) {
    int64_t n = static_length_1d(ctx, 1, "axes", true);
    if (n < 0 || n > rank) ctx.fail("axes has an unknown or too large length for rank {}", rank);
    for (int64_t i = 0; i < rank - n; ++i) out.push_back(ctx.fresh_dim());
    return {TensorType{data.dtype, out}};
  }
  std::vector<int64_t> axes = normalized_axes(ctx, read_ints(ctx.node(), *axes_value, "axes"), rank);
  for (int64_t a : axes) {
    const Dim& d = data.shape[static_cast<size_t>(a)];
    if (d.is_static() && d.value != 1) ctx.fail("cannot squeeze axis {} of size {} (input {})", a, d.value, shape_string(data.shape));
  }
  for (int64_t i = 0; i < rank; ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(data.shape[static_cast<size_t>(i)]);
  return {TensorType{data.dtype, out}};
}

void kernel_squeeze(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  out[0] = in[0]->reshaped(concrete_output_dims(infer_squeeze, node, in, 0));
}

std::vector<TensorType> infer_unsqueeze(InferContext& ctx) {
  const TensorType& data = ctx.in(0);
  require_integer_input(ctx, 1, "axes");
  int64_t n = static_length_1d(ctx, 1, "axes", true);
  if (n < 0) ctx.fail("axes has an unknown length, so the output rank is unknown");
  int64_t out_rank = data.rank() + n;
  check_rank(ctx, out_rank);
  const Tensor* axes_value = ctx.value(1);
  Shape out;
  if (!axes_value) {
    for (int64_t i = 0; i < out_rank; ++i) out.push_back(ctx.fresh_dim());
    return {TensorType{data.dtype, out}};
  }
  std::vector<int64_t> axes = normalized_axes(ctx, read_ints(ctx.node(), *axes_value, "axes"), out_rank);
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) out.push_back(Dim::fixed(1));
    else out.push_back(data.shape[next++]);
  }
  return {TensorType{data.dtype, out}};
}

void kernel_unsqueeze(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext&) {
  out[0] = in[0]->reshaped(concrete_output_dims(infer_unsqueeze, node, in, 0));
}

OpDef view_op(InferFn infer, KernelFn kernel, int min_inputs, int max_inputs) {
  OpDef d;
  d.infer = infer;
  d.kernel = kernel;
  d.kernel_makes_outputs = true;
  d.handles_half = true;
  d.min_inputs = min_inputs;
  d.max_inputs = max_inputs;
  return d;
}

}  // namespace

void register_view_ops(OpRegistry& r) {
  r.add(OpKind::Identity, view_op(infer_identity, kernel_identity, 1, 1));
  r.add(OpKind::Reshape, view_op(infer_reshape, kernel_reshape, 2, 2));
  r.add(OpKind::Flatten, view_op(infer_flatten, kernel_flatten, 1, 1));
  r.add(OpKind::Squeeze, view_op(infer_squeeze, kernel_squeeze, 1, 2));
  r.add(OpKind::Unsqueeze, view_op(infer_unsqueeze, kernel_unsqueeze, 2, 2));
}

}  // namespace kiln::shape_ops
