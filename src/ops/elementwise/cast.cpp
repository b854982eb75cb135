// Cast and CastLike, and the dtype conversion they share with Pow. Every pair of dtypes converts directly with a
// single rounding: f64 -> f16/bf16 rounds the double itself (going through f32 would round twice).
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/elementwise/elementwise.h"

namespace kiln::elementwise {
namespace {

// Tags for the two 16-bit float types (stored as uint16_t bits).
struct F16 { uint16_t bits; };
struct BF16 { uint16_t bits; };

// Rounds a double to the nearest (ties to even) IEEE binary float with `kMant` mantissa bits and
// exponent bias `kBias`, returned as its bit pattern: the f16 (10, 15) and bf16 (7, 127) encodings.
template <int kMant, int kBias>
uint16_t round_double_to_small_float(double d) {
  constexpr uint32_t kInf = static_cast<uint32_t>(2 * kBias + 1) << kMant;
  uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  double a = std::fabs(d);
  if (std::isnan(a)) return static_cast<uint16_t>(sign | kInf | (1u << (kMant - 1)));  // quiet NaN
  // Halfway between the largest finite value and the next power of two rounds to Inf (the largest
  // finite mantissa is odd, so the tie goes up).
  const double overflow = std::ldexp(2.0 - std::ldexp(1.0, -(kMant + 1)), kBias);
  if (a >= overflow) return static_cast<uint16_t>(sign | kInf);
  const int min_exp = 1 - kBias;  // exponent of the smallest normal number
  if (a < std::ldexp(1.0, min_exp)) {
    // Subnormal (or zero): a count of the smallest subnormal, rounded to even by nearbyint. A result of
    // 2^kMant is the smallest normal, which the same encoding expresses.
    double units = std::nearbyint(std::ldexp(a, kMant - min_exp));
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));
  }
  int e;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1)
  int unbiased = e - 1;
  double mant = std::nearbyint(std::ldexp(a, kMant - unbiased));  // in [2^kMant, 2^(kMant+1)]
  // A mantissa that rounds up to 2^(kMant+1) carries into the exponent through the addition.
  uint32_t bits = (static_cast<uint32_t>(unbiased + kBias) << kMant) + (static_cast<uint32_t>(mant) - (1u << kMant));
  return static_cast<uint16_t>(sign | bits);
}

// Reads one element as the widest type of its kind: double for floats, int64 for integers and bool
// (uint64 for u64, whose high values int64 cannot hold).
template <class S>
inline auto load(S v) {
  if constexpr (std::is_same_v<S, F16>) return static_cast<double>(half_to_float(v.bits));
  else if constexpr (std::is_same_v<S, BF16>) return static_cast<double>(bf16_to_float(v.bits));
  else if constexpr (std::is_floating_point_v<S>) return static_cast<double>(v);
  else if constexpr (std::is_same_v<S, uint64_t>) return v;
  else return static_cast<int64_t>(v);
}

template <class D>
inline D saturate_to_int(double v) {
  if (std::isnan(v)) return D{0};
  if (v >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
  if (v <= static_cast<double>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
  return static_cast<D>(v);  // truncates toward zero; in range, so defined
}

template <class S, class D>
inline D convert_one(S s) {
  if constexpr (std::is_same_v<S, D>) {
    return s;
  } else if constexpr (std::is_same_v<D, bool>) {
    return load(s) != 0;  // NaN != 0: true
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, F16>) {
    return F16{float_to_half(s)};
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, BF16>) {
    return BF16{float_to_bf16(s)};
  } else if constexpr (std::is_same_v<D, F16>) {
    return F16{round_double_to_small_float<10, 15>(static_cast<double>(load(s)))};
  } else if constexpr (std::is_same_v<D, BF16>) {
    return BF16{round_double_to_small_float<7, 127>(static_cast<double>(load(s)))};
  } else if constexpr (std::is_floating_point_v<D>) {
    if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double>) return static_cast<D>(s);
    else return static_cast<D>(load(s));  // int64 -> float rounds once; halves widen exactly
  } else {  // integer destination
    auto v = load(s);
    if constexpr (std::is_same_v<decltype(v), double>) return saturate_to_int<D>(v);
    else return static_cast<D>(v);  // integer -> integer wraps (two's complement, C++20)
  }
}

template <class F>
decltype(auto) dispatch_storage(DType t, F&& f) {
  switch (t) {
    case DType::f16: return f(F16{});
    case DType::bf16: return f(BF16{});
    default: return dispatch_all(t, std::forward<F>(f));
  }
}

DType cast_target(const InferContext& ctx) {
  const Node& n = ctx.node();
  if (!n.has_attr("to")) ctx.fail("attribute 'to' is required");
  const std::string to = n.attr_string("to", "");
  auto t = dtype_from_name(to);
  if (!t) ctx.fail("attribute 'to' is '{}', not a dtype name (f32, f16, bf16, f64, i8, u8, i16, u16, i32, u32, i64, u64, bool)", to);
  return *t;
}

std::vector<TensorType> infer_cast(InferContext& ctx) { return {TensorType{cast_target(ctx), ctx.in(0).shape}}; }

// CastLike(x, like): Cast to the element type of `like`, whose data is never read. `saturate` only
// concerns float8 targets, which kiln has none of.
std::vector<TensorType> infer_cast_like(InferContext& ctx) { return {TensorType{ctx.in(1).dtype, ctx.in(0).shape}}; }

void cast_kernel(const Node&, std::span<const Tensor* const> in, std::span<Tensor> out, const KernelContext& kc) {
  convert_into(*in[0], out[0], !kc.reference);
}

}  // namespace

static_assert(sizeof(F16) == 2 && sizeof(BF16) == 2);

void convert_into(const Tensor& in, Tensor& out, bool parallel) {
  KILN_INTERNAL_CHECK(in.numel() == out.numel(), "convert: {} elements into {}", in.numel(), out.numel());
  if (in.numel() == 0) return;
  if (in.dtype() == out.dtype()) {
    std::memcpy(out.raw(), in.raw(), in.nbytes());
    return;
  }
  dispatch_storage(in.dtype(), [&](auto stag) {
    using S = decltype(stag);
    dispatch_storage(out.dtype(), [&](auto dtag) {
      using D = decltype(dtag);
      const S* src = static_cast<const S*>(in.raw());
      D* dst = static_cast<D*>(out.raw());
      parallel_for(in.numel(), parallel ? kCheapGrain : std::numeric_limits<int64_t>::max() / 4,
                   [&](int64_t b, int64_t e) {
                     for (int64_t i = b; i < e; ++i) dst[i] = convert_one<S, D>(src[i]);
                   });
    });
  });
}

Tensor convert_elements(const Tensor& t, DType to, bool parallel) {
  Tensor out = Tensor::empty(to, t.shape());
  convert_into(t, out, parallel);
  return out;
}

void register_cast_op(OpRegistry& r) {
  OpDef def;
  def.infer = &infer_cast;
  def.kernel = &cast_kernel;
  def.handles_half = true;  // converts f16/bf16 itself, rounding once
  def.min_inputs = def.max_inputs = 1;
  r.add(OpKind::Cast, def);
  OpDef like = def;
  like.infer = &infer_cast_like;
  like.min_inputs = like.max_inputs = 2;
  r.add(OpKind::CastLike, like);
}

}  // namespace kiln::elementwise
