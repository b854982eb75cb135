// The inputs of the pointwise cases (make_inputs) and the spacing their comparison counts errors in
// (ulp_at): random values of each dtype with its special values, drawn in the dtype itself (f16 and
// bf16 tensors hold 16-bit words, so every value is a half value).
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "pointwise_cases.h"
#include "support/error.h"

namespace kiln::backend::cuda::testing {
namespace {

// The values each dtype is tested at, in the first half of a tensor (as many as fit) and sprinkled in
// the rest. The first 12 are the ones the [24] operand of the binary cases holds. Half values are
// listed exactly (each is a value of its type).
std::vector<double> special_values(DType t) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  switch (t) {
    case DType::f32: {
      using L = std::numeric_limits<float>;
      return {nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, L::max(), -L::max(), L::denorm_min(), -1e-40,
              L::min(), -L::min(), 1e30, -1e30, 88.7, -88.7, 89.0, -104.0, 2.0, 3.0, 1e-30, 16777217.0,
              2147483648.0, -2147483648.0, 2147483520.0, -2147483904.0, 9.223372e18, -9.2233731e18};
    }
    case DType::f64: {
      using L = std::numeric_limits<double>;
      return {nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, L::max(), -L::max(), L::denorm_min(), -1e-310,
              L::min(), 1e300, -1e300, 709.7, 710.0, -745.0, -708.0, 3.5e38, -3.5e38, 1e-46, 2.0, 1e-300,
              9223372036854775808.0, -9223372036854775808.0, 9223372036854774784.0, 2147483648.0,
              -2147483649.0, 2147483647.5,
              // Just past a midpoint of f16 (1 + 2^-11) and of bf16 (1 + 2^-8), by less than f32 resolves:
              // rounded to f32 first they would land on the midpoint and round to even, down.
              1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-8 + 0x1p-40, -(3.0 + 0x1p-10 + 0x1p-35)};
    }
    case DType::f16:
      // 65504 the largest finite, 2^-24 the smallest subnormal, 1023 * 2^-24 the largest, 2^-14 the
      // smallest normal; exp overflows between 11.0859375 and 11.09375, and exp(-17) is subnormal.
      return {nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, 65504.0, -65504.0, 0x1p-24, -0x3p-24,
              0x1p-14, -0x1p-14, 1023 * 0x1p-24, -1023 * 0x1p-24, 11.0859375, 11.09375, -17.0, -16.0,
              2.0, 3.0, 0x1.998p-4 /* 0.1 */, -5.5, 32768.0, 2048.0, 0x1p-12, 256.5, -3.140625, 0.70703125};
    case DType::bf16:
      // 0x1.fep127 the largest finite, 2^-133 the smallest subnormal, 127 * 2^-133 the largest, 2^-126
      // the smallest normal; expf overflows past 88.5 (89 is inf), and exp(-104) is a bf16 zero.
      return {nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5, 0x1.fep127, -0x1.fep127, 0x1p-133, -0x3p-133,
              0x1p-126, -0x1p-126, 127 * 0x1p-133, -127 * 0x1p-133, 88.5, -88.5, 89.0, -104.0,
              2.0, 3.0, 0x1p127, 0x1.94p99 /* 1e30 */, 2147483648.0, -2147483648.0, 0x1.fep62, -0x1p63, 0x1p-100,
              -5.5};
    case DType::i32:
      // 2^24 + 2^16 + 1 is an i32 that f32 rounds onto a bf16 midpoint (2^24 + 2^16): to bf16 it must round
      // up, as its exact value is past that midpoint.
      return {0, 1, -1, 2147483647, -2147483648.0, 16777217, -16777217, 2, -2, 65536, 46341, -46341,
              16842753, -16842753, 65519, 65520, -65521};
    case DType::i64:
      // As doubles these would round; i64 specials are made in integer_specials() below.
      return {};
    case DType::boolean: return {0, 1};
    default: internal_error("no special values for {}", dtype_name(t));
  }
}

std::vector<int64_t> integer_specials() {
  using L = std::numeric_limits<int64_t>;
  return {0, 1, -1, L::max(), L::min(), (int64_t{1} << 53) + 1, -(int64_t{1} << 53) - 1, int64_t{1} << 31,
          -(int64_t{1} << 31) - 1, int64_t{1} << 32, 3037000500, -3037000500};
}

template <class T, class Draw>
void fill(Tensor& t, const std::vector<T>& specials, std::mt19937_64& rng, Draw draw) {
  T* data = t.data<T>();
  std::uniform_int_distribution<size_t> pick(0, specials.size() - 1);
  const size_t leading = std::min(specials.size(), static_cast<size_t>(t.numel() / 2));  // room for random ones
  for (int64_t i = 0; i < t.numel(); ++i) {
    const size_t k = static_cast<size_t>(i);
    if (k < leading) data[i] = specials[k];
    else if (rng() % 16 == 0) data[i] = specials[pick(rng)];  // sprinkled, so that wide tensors meet them too
    else data[i] = draw();
  }
}

// Random floats: half normal around 0 (where the functions bend), half log-uniform over 2^+-span.
template <class F>
F random_float(std::mt19937_64& rng, int span) {
  std::normal_distribution<double> normal(0.0, 4.0);
  std::uniform_real_distribution<double> exponent(-span, span);
  if (rng() % 2) return static_cast<F>(normal(rng));
  const double magnitude = std::exp2(exponent(rng));
  return static_cast<F>(rng() % 2 ? magnitude : -magnitude);
}

// A float rounded to the half type `t` (to nearest even), as its 16-bit word.
uint16_t half_bits(DType t, float v) { return t == DType::bf16 ? float_to_bf16(v) : float_to_half(v); }

Tensor random_tensor(DType t, std::vector<int64_t> shape, std::mt19937_64& rng) {
  Tensor out = Tensor::empty(t, std::move(shape));
  std::vector<double> specials = special_values(t);
  auto to = [&specials]<class T>(T) {
    std::vector<T> v;
    for (double s : specials) v.push_back(static_cast<T>(s));
    return v;
  };
  switch (t) {
    case DType::f32: fill<float>(out, to(0.0f), rng, [&] { return random_float<float>(rng, 40); }); break;
    case DType::f64: fill<double>(out, to(0.0), rng, [&] { return random_float<double>(rng, 80); }); break;
    case DType::f16:
    case DType::bf16: {
      // Specials are exact half values (their f32 form converts exactly); random ones are rounded to the
      // type: f16 over 2^+-15 (its range, the top of the subnormals included), bf16 over 2^+-40 as f32.
      std::vector<uint16_t> words;
      for (double s : specials) words.push_back(half_bits(t, static_cast<float>(s)));
      const int span = t == DType::f16 ? 15 : 40;
      fill<uint16_t>(out, words, rng, [&] { return half_bits(t, random_float<float>(rng, span)); });
      break;
    }
    case DType::i32:
      fill<int32_t>(out, to(int32_t{0}), rng, [&] {
        const int64_t v = rng() % 2 ? static_cast<int64_t>(rng() % 2001) - 1000 : static_cast<int64_t>(rng());
        return static_cast<int32_t>(v);
      });
      break;
    case DType::i64:
      fill<int64_t>(out, integer_specials(), rng, [&] {
        return rng() % 2 ? static_cast<int64_t>(rng() % 2001) - 1000 : static_cast<int64_t>(rng());
      });
      break;
    case DType::boolean: fill<bool>(out, {false, true}, rng, [&] { return rng() % 2 == 1; }); break;
    default: internal_error("no random tensors of {}", dtype_name(t));
  }
  return out;
}

}  // namespace

double ulp_at(double v, DType t) {
  // Significant bits (the implicit one included) and the frexp exponent of the smallest normal value.
  int bits = 53, min_exponent = -1021;
  switch (t) {
    case DType::f64: break;
    case DType::f32: bits = 24, min_exponent = -125; break;
    case DType::f16: bits = 11, min_exponent = -13; break;
    case DType::bf16: bits = 8, min_exponent = -125; break;
    default: internal_error("no ulp of {}", dtype_name(t));
  }
  int e = 0;
  std::frexp(v, &e);
  if (v == 0) e = std::numeric_limits<int>::min();
  return std::ldexp(1.0, std::max(e, min_exponent) - bits);
}

double overflow_threshold(DType t) {
  // The largest finite value plus half its spacing: (2 - 2^-bits) 2^emax.
  switch (t) {
    case DType::f32: return std::ldexp(2.0 - std::ldexp(1.0, -24), 127);
    case DType::f16: return std::ldexp(2.0 - std::ldexp(1.0, -11), 15);
    case DType::bf16: return std::ldexp(2.0 - std::ldexp(1.0, -8), 127);
    default: return std::numeric_limits<double>::infinity();
  }
}

std::vector<Tensor> make_inputs(const Graph& g, const schedule::PointwiseGroup& group,
                                const std::map<std::string, int64_t>& symbols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> inputs;
  for (ValueId v : group.inputs) {
    const Value& value = g.value(v);
    if (value.constant) {
      inputs.push_back(*value.constant);
      continue;
    }
    std::vector<int64_t> shape;
    for (const Dim& d : value.type.shape) shape.push_back(d.is_static() ? d.value : symbols.at(d.symbol));
    inputs.push_back(random_tensor(value.type.dtype, std::move(shape), rng));
  }
  return inputs;
}

}  // namespace kiln::backend::cuda::testing
