// Registration glue for unary elementwise ops. An op is a functor template Op<T> with
//   static constexpr bool valid;        // whether T is a dtype the op accepts
//   using out_type = ...;               // result element type
//   explicit Op(const Node&);           // reads attributes
//   out_type operator()(T x) const;
// The kernel dispatches on the input dtype and maps the functor over the tensor (see loops.h).
#pragma once
#include <span>

#include "ops/elementwise/elementwise.h"
#include "ops/elementwise/loops.h"

namespace kiln::elementwise {

template <TypeClass C>
std::vector<TensorType> infer_unary(InferContext& ctx) {
  return infer_unary_same(ctx, C);
}

template <TypeClass C>
std::vector<TensorType> infer_unary_to_bool(InferContext& ctx) {
  check_dtype(ctx, 0, C);
  return {TensorType{DType::boolean, ctx.in(0).shape}};
}

template <template <class> class Op, int64_t Grain>
void unary_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                  const KernelContext& kc) {
  const Tensor& x = *in[0];
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (Op<T>::valid) {
      Op<T> op(node);
      map_unary<T, typename Op<T>::out_type>(x, out[0], op, grain_for(kc, Grain));
    } else {
      internal_error("node '{}' ({}): kernel called with dtype {}", node.name, op_name(node.op), dtype_name(x.dtype()));
    }
  });
}

// Registers Op as a one-input op whose output has the input's dtype (or bool when ToBool).
template <template <class> class Op, TypeClass C, int64_t Grain = kCheapGrain, bool ToBool = false>
void add_unary(OpRegistry& r, OpKind kind) {
  OpDef def;
  def.infer = ToBool ? &infer_unary_to_bool<C> : &infer_unary<C>;
  def.kernel = &unary_kernel<Op, Grain>;
  def.min_inputs = 1;
  def.max_inputs = 1;
  r.add(kind, def);
}

template <class T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <class T>
inline constexpr bool kIsNumeric = !std::is_same_v<T, bool>;

}  // namespace kiln::elementwise
