// Abs Neg Sqrt Reciprocal Exp Log Erf Tanh Floor Ceil Sin Cos Asin Acos Atan.
#include <cmath>

#include "ops/elementwise/unary.h"
#include "ops/elementwise/vector_math.h"

namespace kiln::elementwise {
namespace {

template <class T>
struct AbsOp {
  static constexpr bool valid = kIsNumeric<T>;
  using out_type = T;
  explicit AbsOp(const Node&) {}
  T operator()(T x) const {
    if constexpr (kIsFloat<T>) return std::fabs(x);
    else if constexpr (std::is_unsigned_v<T>) return x;
    else return x < 0 ? wrap_sub(T{0}, x) : x;  // abs(INT_MIN) wraps to INT_MIN, like numpy
  }
};

template <class T>
struct NegOp {
  static constexpr bool valid = kIsNumeric<T>;
  using out_type = T;
  explicit NegOp(const Node&) {}
  T operator()(T x) const {
    if constexpr (kIsFloat<T>) return -x;
    else return wrap_sub(T{0}, x);
  }
};

// Float-only functions of one argument.
#define KILN_FLOAT_UNARY(Name, expr)          \
  template <class T>                          \
  struct Name {                               \
    static constexpr bool valid = kIsFloat<T>; \
    using out_type = T;                       \
    explicit Name(const Node&) {}             \
    T operator()(T x) const { return expr; }  \
  };
KILN_FLOAT_UNARY(SqrtOp, std::sqrt(x))
KILN_FLOAT_UNARY(ReciprocalOp, T{1} / x)
KILN_FLOAT_UNARY(ExpOp, std::exp(x))
KILN_FLOAT_UNARY(LogOp, std::log(x))
KILN_FLOAT_UNARY(ErfOp, std::erf(x))
KILN_FLOAT_UNARY(TanhOp, std::tanh(x))
KILN_FLOAT_UNARY(FloorOp, std::floor(x))
KILN_FLOAT_UNARY(CeilOp, std::ceil(x))
KILN_FLOAT_UNARY(SinOp, std::sin(x))
KILN_FLOAT_UNARY(CosOp, std::cos(x))
KILN_FLOAT_UNARY(AsinOp, std::asin(x))
KILN_FLOAT_UNARY(AcosOp, std::acos(x))
KILN_FLOAT_UNARY(AtanOp, std::atan(x))
#undef KILN_FLOAT_UNARY

// Exp/Log/Erf/Tanh: eager f32 goes through the vectorised Sleef functions, everything else (f64 and
// the reference path) through libm.
template <template <class> class Op, VecFn Fn>
void vector_unary_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                         const KernelContext& kc) {
  const Tensor& x = *in[0];
  if (x.dtype() == DType::f32 && !kc.reference) {
    const float* px = x.data<float>();
    float* py = out[0].data<float>();
    parallel_for(x.numel(), kCostlyGrain, [&](int64_t b, int64_t e) { vector_math_f32(Fn, px + b, py + b, e - b); });
    return;
  }
  unary_kernel<Op, kCostlyGrain>(node, in, out, kc);
}

void sqrt_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  const Tensor& x = *in[0];
  if (x.dtype() == DType::f32 && !kc.reference) {
    const float* px = x.data<float>();
    float* py = out[0].data<float>();
    parallel_for(x.numel(), kCheapGrain, [&](int64_t b, int64_t e) { vector_sqrt_f32(px + b, py + b, e - b); });
    return;
  }
  unary_kernel<SqrtOp, kCheapGrain>(node, in, out, kc);
}

template <template <class> class Op, VecFn Fn>
void add_vector_unary(OpRegistry& r, OpKind kind) {
  OpDef def;
  def.infer = &infer_unary<TypeClass::floating>;
  def.kernel = &vector_unary_kernel<Op, Fn>;
  def.min_inputs = 1;
  def.max_inputs = 1;
  r.add(kind, def);
}

}  // namespace

void register_unary_math_ops(OpRegistry& r) {
  add_unary<AbsOp, TypeClass::numeric>(r, OpKind::Abs);
  add_unary<NegOp, TypeClass::signed_numeric>(r, OpKind::Neg);
  OpDef sqrt;
  sqrt.infer = &infer_unary<TypeClass::floating>;
  sqrt.kernel = &sqrt_kernel;
  sqrt.min_inputs = sqrt.max_inputs = 1;
  r.add(OpKind::Sqrt, sqrt);
  add_unary<ReciprocalOp, TypeClass::floating>(r, OpKind::Reciprocal);
  add_unary<FloorOp, TypeClass::floating>(r, OpKind::Floor);
  add_unary<CeilOp, TypeClass::floating>(r, OpKind::Ceil);
  add_unary<SinOp, TypeClass::floating, kCostlyGrain>(r, OpKind::Sin);
  add_unary<CosOp, TypeClass::floating, kCostlyGrain>(r, OpKind::Cos);
  add_unary<AsinOp, TypeClass::floating, kCostlyGrain>(r, OpKind::Asin);
  add_unary<AcosOp, TypeClass::floating, kCostlyGrain>(r, OpKind::Acos);
  add_unary<AtanOp, TypeClass::floating, kCostlyGrain>(r, OpKind::Atan);
  add_vector_unary<ExpOp, VecFn::exp>(r, OpKind::Exp);
  add_vector_unary<LogOp, VecFn::log>(r, OpKind::Log);
  add_vector_unary<ErfOp, VecFn::erf>(r, OpKind::Erf);
  add_vector_unary<TanhOp, VecFn::tanh>(r, OpKind::Tanh);
}

}  // namespace kiln::elementwise
