// Sigmoid Relu LeakyRelu HardSigmoid HardSwish Softplus Elu Clip. NaN inputs stay NaN: every clamp is
// written as comparisons that are false for NaN, so the NaN passes through.
#include <cmath>
#include <limits>

#include "ops/elementwise/unary.h"
#include "ops/elementwise/vector_math.h"

namespace kiln::elementwise {
namespace {

// Clamp to [0, 1] keeping NaN.
template <class T>
inline T clamp01(T v) {
  v = v < T{0} ? T{0} : v;
  return v > T{1} ? T{1} : v;
}

template <class T>
struct SigmoidOp {
  static constexpr bool valid = kIsFloat<T>;
  using out_type = T;
  explicit SigmoidOp(const Node&) {}
  // Through e = exp(-|x|), which cannot overflow: large negative x keep their tiny value.
  T operator()(T x) const {
    T e = std::exp(-std::fabs(x));
    return (x < T{0} ? e : T{1}) / (T{1} + e);
  }
};

template <class T>
struct ReluOp {
  static constexpr bool valid = kIsNumeric<T>;
  using out_type = T;
  explicit ReluOp(const Node&) {}
  T operator()(T x) const { return x < T{0} ? T{0} : x; }
};

template <class T>
struct LeakyReluOp {
  static constexpr bool valid = kIsFloat<T>;
  using out_type = T;
  T alpha;
  explicit LeakyReluOp(const Node& n) : alpha(static_cast<T>(n.attr_float("alpha", 0.01))) {}
  T operator()(T x) const { return x < T{0} ? alpha * x : x; }
};

template <class T>
struct HardSigmoidOp {
  static constexpr bool valid = kIsFloat<T>;
  using out_type = T;
  T alpha, beta;
  explicit HardSigmoidOp(const Node& n)
      : alpha(static_cast<T>(n.attr_float("alpha", 0.2))), beta(static_cast<T>(n.attr_float("beta", 0.5))) {}
  T operator()(T x) const { return clamp01(alpha * x + beta); }
};

template <class T>
struct HardSwishOp {
  static constexpr bool valid = kIsFloat<T>;
  using out_type = T;
  explicit HardSwishOp(const Node&) {}
  T operator()(T x) const { return x * clamp01(x * static_cast<T>(1.0 / 6.0) + T{0.5}); }
};

template <class T>
struct SoftplusOp {
  static constexpr bool valid = kIsFloat<T>;
  using out_type = T;
  explicit SoftplusOp(const Node&) {}
  // log(1 + exp(x)) without overflow for large x (where it is x + log1p(exp(-x))).
  T operator()(T x) const { return x > T{0} ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
};

template <class T>
struct EluOp {
  static constexpr bool valid = kIsFloat<T>;
  using out_type = T;
  T alpha;
  explicit EluOp(const Node& n) : alpha(static_cast<T>(n.attr_float("alpha", 1.0))) {}
  T operator()(T x) const { return x < T{0} ? alpha * std::expm1(x) : x; }
};

void sigmoid_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out,
                    const KernelContext& kc) {
  const Tensor& x = *in[0];
  if (x.dtype() == DType::f32 && !kc.reference) {
    const float* px = x.data<float>();
    float* py = out[0].data<float>();
    parallel_for(x.numel(), kCostlyGrain, [&](int64_t b, int64_t e) { vector_sigmoid_f32(px + b, py + b, e - b); });
    return;
  }
  unary_kernel<SigmoidOp, kCostlyGrain>(node, in, out, kc);
}

// Clip(x, min?, max?): min/max are optional scalar inputs of x's dtype; a missing bound is no bound.
// With min > max every element becomes max (numpy.clip, the ONNX reference).
template <class T>
struct ClipOp {
  T lo, hi;
  T operator()(T x) const {
    T v = x < lo ? lo : x;
    return v > hi ? hi : v;
  }
};

std::vector<TensorType> infer_clip(InferContext& ctx) {
  check_dtype(ctx, 0, TypeClass::numeric);
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has(i)) continue;
    const TensorType& b = ctx.in(i);
    if (b.dtype != ctx.in(0).dtype)
      ctx.fail("bound input {} has dtype {} but the input has {}", i, dtype_name(b.dtype), dtype_name(ctx.in(0).dtype));
    for (const Dim& d : b.shape)
      if (!d.is_static() || d.value != 1) ctx.fail("bound input {} must be a scalar, got {}", i, shape_string(b.shape));
  }
  return {ctx.in(0)};
}

void clip_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  const Tensor& x = *in[0];
  dispatch_numeric(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    ClipOp<T> op{std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max()};
    if constexpr (kIsFloat<T>) op = {-std::numeric_limits<T>::infinity(), std::numeric_limits<T>::infinity()};
    if (in.size() > 1 && in[1]) op.lo = in[1]->data<T>()[0];
    if (in.size() > 2 && in[2]) op.hi = in[2]->data<T>()[0];
    map_unary<T, T>(x, out[0], op, grain_for(kc, kCheapGrain));
  });
}

}  // namespace

void register_unary_activation_ops(OpRegistry& r) {
  add_unary<ReluOp, TypeClass::numeric>(r, OpKind::Relu);
  add_unary<LeakyReluOp, TypeClass::floating>(r, OpKind::LeakyRelu);
  add_unary<HardSigmoidOp, TypeClass::floating>(r, OpKind::HardSigmoid);
  add_unary<HardSwishOp, TypeClass::floating>(r, OpKind::HardSwish);
  add_unary<SoftplusOp, TypeClass::floating, kCostlyGrain>(r, OpKind::Softplus);
  add_unary<EluOp, TypeClass::floating, kCostlyGrain>(r, OpKind::Elu);

  OpDef sigmoid;
  sigmoid.infer = &infer_unary<TypeClass::floating>;
  sigmoid.kernel = &sigmoid_kernel;
  sigmoid.min_inputs = sigmoid.max_inputs = 1;
  r.add(OpKind::Sigmoid, sigmoid);

  OpDef clip;
  clip.infer = &infer_clip;
  clip.kernel = &clip_kernel;
  clip.min_inputs = 1;
  clip.max_inputs = 3;
  r.add(OpKind::Clip, clip);
}

}  // namespace kiln::elementwise
