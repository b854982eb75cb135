// Cast: every dtype pair, f16/bf16 rounding (handled by Cast itself, not widened), NaN and saturation.
#include <cstring>

#include "elementwise_test_util.h"

namespace kiln::testing_elementwise {
namespace {

// Cast's `to` in the IR is a dtype name (the importer maps ONNX's element type codes).
constexpr DType kFloat = DType::f32, kUint8 = DType::u8, kInt8 = DType::i8, kInt32 = DType::i32, kInt64 = DType::i64,
                kBool = DType::boolean, kFloat16 = DType::f16, kDouble = DType::f64, kBFloat16 = DType::bf16;

Tensor cast_named(const Tensor& x, std::string to) {
  return run(make_node(OpKind::Cast, 1, {{"to", Attribute{std::move(to)}}}), {&x});
}
Tensor cast(const Tensor& x, DType to) { return cast_named(x, std::string(dtype_name(to))); }

std::vector<uint16_t> bits16(const Tensor& t) {
  std::vector<uint16_t> v(static_cast<size_t>(t.numel()));
  std::memcpy(v.data(), t.raw(), v.size() * 2);
  return v;
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(Cast, FloatToIntTruncatesSaturatesAndMapsNaNToZero) {
  Tensor x = f32({8}, {2.9, -2.9, kNaN, 1e20, -1e20, kInf, -kInf, -0.5});
  Tensor i32 = cast(x, kInt32);
  EXPECT_EQ(i32.dtype(), DType::i32);
  int64_t mx = std::numeric_limits<int32_t>::max(), mn = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(ints(i32), (std::vector<int64_t>{2, -2, 0, mx, mn, mx, mn, 0}));
  EXPECT_EQ(ints(cast(x, kInt64)), (std::vector<int64_t>{2, -2, 0, std::numeric_limits<int64_t>::max(),
                                                          std::numeric_limits<int64_t>::min(),
                                                          std::numeric_limits<int64_t>::max(),
                                                          std::numeric_limits<int64_t>::min(), 0}));
  EXPECT_EQ(ints(cast(x, kUint8)), (std::vector<int64_t>{2, 0, 0, 255, 0, 255, 0, 0}));
  EXPECT_EQ(ints(cast(x, kInt8)), (std::vector<int64_t>{2, -2, 0, 127, -128, 127, -128, 0}));
  // To bool: nonzero (NaN included) is true.
  EXPECT_EQ(ints(cast(x, kBool)), (std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1}));
  Tensor zeros = f32({2}, {0, -0.0});
  EXPECT_EQ(ints(cast(zeros, kBool)), (std::vector<int64_t>{0, 0}));
}

TEST(Cast, IntegerConversionsWrapAndWiden) {
  Tensor x = typed(DType::i64, {4}, std::vector<int64_t>{300, -1, int64_t{1} << 40, 0});
  EXPECT_EQ(ints(cast(x, kUint8)), (std::vector<int64_t>{44, 255, 0, 0}));
  EXPECT_EQ(ints(cast(x, kInt8)), (std::vector<int64_t>{44, -1, 0, 0}));
  EXPECT_EQ(ints(cast(x, kInt32)), (std::vector<int64_t>{300, -1, 0, 0}));
  EXPECT_EQ(ints(cast(x, kBool)), (std::vector<int64_t>{1, 1, 1, 0}));
  Tensor f = cast(x, kFloat);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_TRUE(same_values(values(f), {300, -1, 1099511627776.0, 0}));
  // int64 -> f32 rounds once: 2^24 + 1 is a tie that goes to even.
  Tensor odd = typed(DType::i64, {2}, std::vector<int64_t>{(1 << 24) + 1, (1 << 24) + 3});
  EXPECT_TRUE(same_values(values(cast(odd, kFloat)), {16777216.0, 16777220.0}));
  Tensor b = boolean({2}, {1, 0});
  EXPECT_TRUE(same_values(values(cast(b, kDouble)), {1, 0}));
  EXPECT_EQ(ints(cast(b, kInt64)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(bits16(cast(b, kFloat16)), (std::vector<uint16_t>{0x3c00, 0}));
}

TEST(Cast, HalfRoundingToNearestEven) {
  // f16 has 10 mantissa bits: around 1.0 its ulp is 2^-10.
  const double u = std::ldexp(1.0, -10);
  Tensor x = f32({9}, {1.0, 1.0 + u / 2, 1.0 + 1.5 * u, 1.0 + u / 2 + u / 1024, 65504, 65519, 65520, kNaN, -kInf});
  Tensor h = cast(x, kFloat16);
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(bits16(h), (std::vector<uint16_t>{0x3c00, 0x3c00, 0x3c02, 0x3c01, 0x7bff, 0x7bff, 0x7c00, 0x7e00, 0xfc00}));
  // Subnormals: the smallest is 2^-24; half of it ties to zero, 1.5 of it rounds to 2.
  Tensor s = f32({3}, {std::ldexp(1.0, -24), std::ldexp(1.0, -25), 1.5 * std::ldexp(1.0, -24)});
  EXPECT_EQ(bits16(cast(s, kFloat16)), (std::vector<uint16_t>{1, 0, 2}));
  // f64 -> f16 rounds once, directly: 1 + u/2 + 2^-40 is above the tie (through f32 it would be a tie
  // that rounds down to 1.0).
  Tensor d = f64({2}, {1.0 + u / 2 + std::ldexp(1.0, -40), -(1.0 + u / 2 + std::ldexp(1.0, -40))});
  EXPECT_EQ(bits16(cast(d, kFloat16)), (std::vector<uint16_t>{0x3c01, 0xbc01}));
  // And back: f16 -> f32 / f64 is exact (the op sees the f16 tensor itself, not a widened copy).
  Tensor back = cast(h, kFloat);
  EXPECT_TRUE(same_values(values(back), {1.0, 1.0, 1.0 + 2 * u, 1.0 + u, 65504, 65504, kInf, kNaN, -kInf}));
  Tensor back64 = cast(h, kDouble);
  EXPECT_EQ(back64.dtype(), DType::f64);
  EXPECT_EQ(back64.as_double(2), 1.0 + 2 * u);
  EXPECT_EQ(ints(cast(h, kInt32)), (std::vector<int64_t>{1, 1, 1, 1, 65504, 65504, std::numeric_limits<int32_t>::max(), 0,
                                                         std::numeric_limits<int32_t>::min()}));
}

TEST(Cast, BFloat16RoundingAndConversionsBetweenHalves) {
  // bf16 keeps f32's exponent and 7 mantissa bits: 0x3f80_8000 is exactly halfway between 0x3f80 and
  // 0x3f81 (tie to even: 0x3f80); 0x3f81_8000 ties up to 0x3f82; one bit above a tie rounds up.
  Tensor x = f32({6}, {from_bits(0x3f808000u), from_bits(0x3f818000u), from_bits(0x3f808001u), 3e38, kNaN, -0.0});
  Tensor b = cast(x, kBFloat16);
  EXPECT_EQ(b.dtype(), DType::bf16);
  auto bits = bits16(b);
  EXPECT_EQ(bits[0], 0x3f80);
  EXPECT_EQ(bits[1], 0x3f82);
  EXPECT_EQ(bits[2], 0x3f81);
  EXPECT_EQ(bits[3], 0x7f62);  // 3e38 is finite in bf16
  EXPECT_EQ(bits[4] & 0x7fc0, 0x7fc0);  // quiet NaN
  EXPECT_EQ(bits[5], 0x8000);
  // f64 -> bf16 directly, including overflow to Inf past the largest finite value.
  Tensor d = f64({3}, {1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -50), 1e39, -1e39});
  EXPECT_EQ(bits16(cast(d, kBFloat16)), (std::vector<uint16_t>{0x3f81, 0x7f80, 0xff80}));
  // bf16 -> f16 (exact widening, one rounding) and f16 -> bf16.
  Tensor h = cast(b, kFloat16);
  EXPECT_EQ(bits16(h)[0], 0x3c00);
  EXPECT_EQ(bits16(h)[3], 0x7c00);  // 3e38 overflows f16
  Tensor hb = cast(h, kBFloat16);
  EXPECT_EQ(bits16(hb)[0], 0x3f80);
  // Same type: a copy.
  EXPECT_EQ(bits16(cast(b, kBFloat16)), bits);
}

TEST(Cast, F32AndF64AgreeForEveryTarget) {
  // The same values given as f32 and as f64 must convert identically (each path rounds once).
  std::mt19937 rng(7);
  std::vector<double> v = random_values(rng, 20000, 70000);
  for (auto& x : v)  // also the neighbourhood of half-precision ties
    if (std::fmod(std::fabs(x), 7.0) < 1.0) x = static_cast<double>(static_cast<float>(x / 65536));
  Tensor x32 = f32({20000}, v);
  Tensor x64 = convert_tensor(x32, DType::f64);
  for (DType to : {kFloat16, kBFloat16, kInt8, kUint8, kInt32, kInt64, kBool, kFloat, kDouble}) {
    Tensor a = cast(x32, to), b = cast(x64, to);
    ASSERT_EQ(a.dtype(), b.dtype());
    ASSERT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes())) << "to " << dtype_name(to);
  }
}

TEST(Cast, ErrorsAndShapes) {
  Tensor x = f32({2, 0, 3}, {});
  Tensor y = cast(x, kInt64);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(y.dtype(), DType::i64);
  Tensor s = f32({}, {1.5});
  EXPECT_EQ(cast(s, kDouble).as_double(0), 1.5);
  EXPECT_THROW(cast_named(s, "string"), UserError);
  EXPECT_THROW(cast_named(s, "u4"), UserError);
  EXPECT_THROW(run(make_node(OpKind::Cast, 1, {{"to", int_attr(1)}}), {&s}), UserError);  // an ONNX code
  EXPECT_THROW(run(make_node(OpKind::Cast, 1), {&s}), UserError);  // no 'to'
}

}  // namespace
}  // namespace kiln::testing_elementwise
