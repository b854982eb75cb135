// Registration glue for broadcasting two-input ops. An op is a functor template Op<T> (T = both
// inputs' dtype) with `valid`, `out_type`, a constructor from the Node and out_type operator()(T, T).
#pragma once
#include <span>

#include "ops/elementwise/elementwise.h"
#include "ops/elementwise/loops.h"

namespace kiln::elementwise {

template <TypeClass C, bool ToBool>
std::vector<TensorType> infer_binary(InferContext& ctx) {
  TensorType t = infer_broadcast_same_dtype(ctx, C);
  if (ToBool) t.dtype = DType::boolean;
  return {t};
}

template <template <class> class Op, int64_t Grain>
void binary_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                   const KernelContext& kc) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (Op<T>::valid) {
      Op<T> op(node);
      map_binary<T, T, typename Op<T>::out_type>(a, b, out[0], op, grain_for(kc, Grain));
    } else {
      internal_error("node '{}' ({}): kernel called with dtype {}", node.name, op_name(node.op), dtype_name(a.dtype()));
    }
  });
}

template <template <class> class Op, TypeClass C, bool ToBool = false, int64_t Grain = kCheapGrain>
void add_binary(OpRegistry& r, OpKind kind) {
  OpDef def;
  def.infer = &infer_binary<C, ToBool>;
  def.kernel = &binary_kernel<Op, Grain>;
  def.min_inputs = def.max_inputs = 2;
  r.add(kind, def);
}

}  // namespace kiln::elementwise
