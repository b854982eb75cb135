// Min Max Sum Mean (any number of inputs, broadcast together) and Where(cond, x, y).
#include "ops/elementwise/binary.h"

namespace kiln::elementwise {
namespace {

// Min/Max propagate NaN from either side (ONNX and numpy.minimum/maximum), unlike std::min/max.
template <class T>
struct MaxOp {
  T operator()(T a, T b) const { return (a > b || a != a) ? a : b; }
};
template <class T>
struct MinOp {
  T operator()(T a, T b) const { return (a < b || a != a) ? a : b; }
};
template <class T>
struct SumOp {
  T operator()(T a, T b) const { return wrap_add(a, b); }
};
template <class T>
struct DivideByCount {
  T count;
  T operator()(T x) const { return static_cast<T>(x / count); }  // integers truncate
};

std::vector<TensorType> infer_variadic(InferContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  return {infer_broadcast_same_dtype(ctx, TypeClass::numeric)};
}

// out = in0 op in1 op in2 ..., folded left to right; after the first step `out` is its own left operand.
template <template <class> class Op, bool kMean>
void fold_kernel(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  Tensor& y = out[0];
  const int64_t grain = grain_for(kc, kCheapGrain);
  dispatch_numeric(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (in.size() == 1) {
      map_binary<T, T, T>(*in[0], *in[0], y, [](T a, T) { return a; }, grain);
      return;
    }
    map_binary<T, T, T>(*in[0], *in[1], y, Op<T>{}, grain);
    for (size_t k = 2; k < in.size(); ++k) map_binary<T, T, T>(y, *in[k], y, Op<T>{}, grain);
    if constexpr (kMean) map_unary<T, T>(y, y, DivideByCount<T>{static_cast<T>(in.size())}, grain);
  });
}

template <template <class> class Op, bool kMean = false>
void add_fold(OpRegistry& r, OpKind kind) {
  OpDef def;
  def.infer = &infer_variadic;
  def.kernel = &fold_kernel<Op, kMean>;
  def.min_inputs = 1;
  def.max_inputs = -1;
  r.add(kind, def);
}

template <class T>
struct SelectOp {
  T operator()(bool c, T a, T b) const { return c ? a : b; }
};

std::vector<TensorType> infer_where(InferContext& ctx) {
  check_dtype(ctx, 0, TypeClass::boolean);
  const TensorType& x = ctx.in(1);
  const TensorType& y = ctx.in(2);
  if (x.dtype != y.dtype)
    ctx.fail("inputs 1 and 2 must share a dtype, got {} and {}", dtype_name(x.dtype), dtype_name(y.dtype));
  Shape s = broadcast_shapes(ctx, broadcast_shapes(ctx, ctx.in(0).shape, x.shape), y.shape);
  return {TensorType{x.dtype, std::move(s)}};
}

void where_kernel(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  dispatch_all(in[1]->dtype(), [&](auto tag) {
    using T = decltype(tag);
    map_ternary<bool, T, T, T>(*in[0], *in[1], *in[2], out[0], SelectOp<T>{}, grain_for(kc, kCheapGrain));
  });
}

}  // namespace

void register_variadic_ops(OpRegistry& r) {
  add_fold<MaxOp>(r, OpKind::Max);
  add_fold<MinOp>(r, OpKind::Min);
  add_fold<SumOp>(r, OpKind::Sum);
  add_fold<SumOp, true>(r, OpKind::Mean);

  OpDef where;
  where.infer = &infer_where;
  where.kernel = &where_kernel;
  where.min_inputs = where.max_inputs = 3;
  r.add(OpKind::Where, where);
}

}  // namespace kiln::elementwise
