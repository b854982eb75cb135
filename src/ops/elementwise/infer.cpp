#include "ops/elementwise/elementwise.h"

namespace kiln::elementwise {

bool dtype_in_class(DType t, TypeClass c) {
  switch (c) {
    case TypeClass::floating: return is_float(t);
    case TypeClass::numeric: return t != DType::boolean;
    case TypeClass::signed_numeric: return t != DType::boolean && !is_unsigned(t);
    case TypeClass::integer: return is_integer(t);
    case TypeClass::integer_or_bool: return !is_float(t);
    case TypeClass::boolean: return t == DType::boolean;
    case TypeClass::any: return true;
  }
  return false;
}

void check_dtype(const InferContext& ctx, size_t input, TypeClass c) {
  DType t = ctx.in(input).dtype;
  if (!dtype_in_class(t, c)) ctx.fail("input {} has unsupported dtype {}", input, dtype_name(t));
}

std::vector<TensorType> infer_unary_same(InferContext& ctx, TypeClass c) {
  check_dtype(ctx, 0, c);
  return {ctx.in(0)};
}

TensorType infer_broadcast_same_dtype(InferContext& ctx, TypeClass c) {
  check_dtype(ctx, 0, c);
  TensorType out = ctx.in(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has(i)) ctx.fail("input {} is missing", i);
    const TensorType& t = ctx.in(i);
    if (t.dtype != out.dtype)
      ctx.fail("input {} has dtype {} but input 0 has {}", i, dtype_name(t.dtype), dtype_name(out.dtype));
    out.shape = broadcast_shapes(ctx, out.shape, t.shape);
  }
  if (static_cast<int64_t>(out.shape.size()) > ctx.max_rank())
    ctx.fail("output rank {} exceeds max_rank {}", out.shape.size(), ctx.max_rank());
  return out;
}

}  // namespace kiln::elementwise
