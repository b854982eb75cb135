// Add Sub Mul Div Mod Pow with numpy broadcasting. Integer arithmetic wraps (two's complement) rather
// than overflowing into undefined behaviour, and integer division or modulo by zero gives 0 (ONNX
// leaves it undefined; numpy also returns 0), so a model can never crash kiln that way.
#include <cmath>
#include <limits>

#include "ops/elementwise/binary.h"

namespace kiln::elementwise {
namespace {

template <class T>
inline constexpr bool kArith = !std::is_same_v<T, bool>;

template <class T>
struct AddOp {
  static constexpr bool valid = kArith<T>;
  using out_type = T;
  explicit AddOp(const Node&) {}
  T operator()(T a, T b) const { return wrap_add(a, b); }
};

template <class T>
struct SubOp {
  static constexpr bool valid = kArith<T>;
  using out_type = T;
  explicit SubOp(const Node&) {}
  T operator()(T a, T b) const { return wrap_sub(a, b); }
};

template <class T>
struct MulOp {
  static constexpr bool valid = kArith<T>;
  using out_type = T;
  explicit MulOp(const Node&) {}
  T operator()(T a, T b) const { return wrap_mul(a, b); }
};

template <class T>
struct DivOp {
  static constexpr bool valid = kArith<T>;
  using out_type = T;
  explicit DivOp(const Node&) {}
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return a / b;
    } else {
      if (b == 0) return T{0};  // defined as 0 (see top of file)
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return wrap_sub(T{0}, a);  // INT_MIN / -1 wraps instead of trapping
      }
      return static_cast<T>(a / b);  // C: truncates toward zero
    }
  }
};

// Mod with fmod=1: C fmod / %, the result has the dividend's sign.
template <class T>
struct ModTruncOp {
  static constexpr bool valid = kArith<T>;
  using out_type = T;
  explicit ModTruncOp(const Node&) {}
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::fmod(a, b);
    } else {
      if (b == 0) return T{0};
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return T{0};  // INT_MIN % -1 would trap
      }
      return static_cast<T>(a % b);
    }
  }
};

// Mod with fmod=0: Python / numpy.mod, the result has the divisor's sign.
template <class T>
struct ModFloorOp {
  static constexpr bool valid = kArith<T>;
  using out_type = T;
  explicit ModFloorOp(const Node&) {}
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      T r = std::fmod(a, b);  // NaN for b == 0 or infinite a
      if (r != 0) return (r < 0) != (b < 0) ? r + b : r;
      return std::copysign(T{0}, b);
    } else {
      if (b == 0) return T{0};
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return T{0};
        T r = static_cast<T>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
      } else {
        return static_cast<T>(a % b);
      }
    }
  }
};

void mod_kernel(const Node& node, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  if (node.attr_int("fmod", 0) != 0) binary_kernel<ModTruncOp, kCheapGrain>(node, in, out, kc);
  else binary_kernel<ModFloorOp, kCheapGrain>(node, in, out, kc);
}

std::vector<TensorType> infer_mod(InferContext& ctx) {
  int64_t fmod = ctx.node().attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) ctx.fail("attribute fmod must be 0 or 1, got {}", fmod);
  return infer_binary<TypeClass::numeric, false>(ctx);
}

// ---- Pow: the exponent may have another dtype; the result has the base's dtype. ----

template <class T>
struct FloatPowOp {
  T operator()(T a, T b) const { return std::pow(a, b); }
};
template <class T>
struct SquareOp {
  T operator()(T a, T) const { return a * a; }  // pow(a, 2) is exactly a * a (one rounding)
};
template <class T>
struct CubeOp {
  T operator()(T a, T) const { return a * a * a; }  // within an ulp of pow(a, 3), and vectorises
};

// Integer base, exponent as double. An integral exponent gives the exact (wrapping) integer power; a
// negative one gives the truncation of 1 / a^-e (so 1, -1 or 0, and 0 for a zero base, not a crash);
// a fractional exponent goes through double pow and saturates into T.
template <class T>
struct IntPowOp {
  T operator()(T a, double e) const {
    if (e == std::floor(e) && std::fabs(e) < 9.2e18) {
      auto n = static_cast<int64_t>(e);
      if (n < 0) {
        if (a == 1) return T{1};
        if constexpr (std::is_signed_v<T>) {
          if (a == -1) return (n & 1) ? T{-1} : T{1};
        }
        return T{0};
      }
      T result{1}, base = a;
      for (; n > 0; n >>= 1) {
        if (n & 1) result = wrap_mul(result, base);
        base = wrap_mul(base, base);
      }
      return result;
    }
    double p = std::pow(static_cast<double>(a), e);
    if (std::isnan(p)) return T{0};
    if (p >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (p <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    return static_cast<T>(p);
  }
};

std::vector<TensorType> infer_pow(InferContext& ctx) {
  check_dtype(ctx, 0, TypeClass::numeric);
  check_dtype(ctx, 1, TypeClass::numeric);
  TensorType t = ctx.in(0);
  t.shape = broadcast_shapes(ctx, t.shape, ctx.in(1).shape);
  return {t};
}

void pow_kernel(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  const Tensor& base = *in[0];
  const Tensor& exponent = *in[1];
  const int64_t grain = grain_for(kc, kCostlyGrain);
  if (is_float(base.dtype())) {
    dispatch_float(base.dtype(), [&](auto tag) {
      using T = decltype(tag);
      Tensor converted;
      const Tensor* e = &exponent;
      if (exponent.dtype() != base.dtype()) {
        converted = convert_elements(exponent, base.dtype(), !kc.reference);
        e = &converted;
      }
      // Eager fast paths for the constant exponents models use (x^2 in norms, x^3 in GELU-tanh).
      if (!kc.reference && e->numel() == 1) {
        T v = e->data<T>()[0];
        if (v == T{2}) return map_binary<T, T, T>(base, *e, out[0], SquareOp<T>{}, kCheapGrain);
        if (v == T{3}) return map_binary<T, T, T>(base, *e, out[0], CubeOp<T>{}, kCheapGrain);
      }
      map_binary<T, T, T>(base, *e, out[0], FloatPowOp<T>{}, grain);
    });
    return;
  }
  Tensor e = exponent.dtype() == DType::f64 ? exponent : convert_elements(exponent, DType::f64, !kc.reference);
  dispatch_numeric(base.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) map_binary<T, double, T>(base, e, out[0], IntPowOp<T>{}, grain);
  });
}

}  // namespace

void register_arithmetic_ops(OpRegistry& r) {
  add_binary<AddOp, TypeClass::numeric>(r, OpKind::Add);
  add_binary<SubOp, TypeClass::numeric>(r, OpKind::Sub);
  add_binary<MulOp, TypeClass::numeric>(r, OpKind::Mul);
  add_binary<DivOp, TypeClass::numeric>(r, OpKind::Div);

  OpDef mod;
  mod.infer = &infer_mod;
  mod.kernel = &mod_kernel;
  mod.min_inputs = mod.max_inputs = 2;
  r.add(OpKind::Mod, mod);

  OpDef pow;
  pow.infer = &infer_pow;
  pow.kernel = &pow_kernel;
  pow.min_inputs = pow.max_inputs = 2;
  r.add(OpKind::Pow, pow);
}

}  // namespace kiln::elementwise
