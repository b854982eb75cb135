// The harness's own arithmetic, checked where it is cheap to check exhaustively: the spacing errors are
// counted in (ulp_at) against the bit patterns of f16 and bf16, the overflow thresholds against kiln's
// conversions, and the inputs of the half cases (make_inputs) for holding half values and the specials.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "pointwise_cases.h"

namespace kiln::backend::cuda::testing {
namespace {

float from_bits(DType t, uint16_t h) { return t == DType::bf16 ? bf16_to_float(h) : half_to_float(h); }
uint16_t to_bits(DType t, float v) { return t == DType::bf16 ? float_to_bf16(v) : float_to_half(v); }

// For every positive finite word but the largest: the distance to the next word is ulp_at, at the value
// and (for the largest) beyond it; negative values have the spacing of their magnitude.
TEST(CudaCaseHarness, HalfUlpsAreTheSpacingOfTheirBitPatterns) {
  for (DType t : {DType::f16, DType::bf16}) {
    const uint16_t max_word = t == DType::f16 ? 0x7bff : 0x7f7f;
    for (uint16_t h = 0; h < max_word; ++h) {
      const double v = from_bits(t, h), next = from_bits(t, static_cast<uint16_t>(h + 1));
      ASSERT_EQ(ulp_at(v, t), next - v) << dtype_name(t) << " word " << h;
      ASSERT_EQ(ulp_at(-v, t), next - v) << dtype_name(t) << " word " << h;
      // Between two words, the spacing of the lower one.
      if (h > 0) {
        ASSERT_EQ(ulp_at(v + (next - v) / 2, t), next - v) << dtype_name(t) << " word " << h;
      }
    }
    const double max = from_bits(t, max_word), below = from_bits(t, static_cast<uint16_t>(max_word - 1));
    EXPECT_EQ(ulp_at(max, t), max - below) << dtype_name(t);
  }
  EXPECT_EQ(ulp_at(1.0, DType::f32), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp_at(std::numeric_limits<float>::denorm_min(), DType::f32), std::ldexp(1.0, -149));
  EXPECT_EQ(ulp_at(1.0, DType::f64), std::ldexp(1.0, -52));
}

TEST(CudaCaseHarness, OverflowThresholdsAreWhereRoundingGivesInfinity) {
  for (DType t : {DType::f16, DType::bf16}) {
    const float threshold = static_cast<float>(overflow_threshold(t));
    ASSERT_EQ(static_cast<double>(threshold), overflow_threshold(t)) << "an f32 value";
    EXPECT_TRUE(std::isinf(from_bits(t, to_bits(t, threshold)))) << dtype_name(t) << ": the tie rounds up";
    const float below = std::nextafter(threshold, 0.0f);
    EXPECT_FALSE(std::isinf(from_bits(t, to_bits(t, below)))) << dtype_name(t);
  }
  EXPECT_EQ(overflow_threshold(DType::f16), 65520.0);
  const float f32_max = std::numeric_limits<float>::max();
  EXPECT_EQ(overflow_threshold(DType::f32), static_cast<double>(f32_max) + std::ldexp(1.0, 103));
}

const PointwiseCase& find(const std::string& name) {
  auto it = std::find_if(pointwise_cases().begin(), pointwise_cases().end(),
                         [&](const PointwiseCase& c) { return c.name == name; });
  EXPECT_NE(it, pointwise_cases().end()) << name;
  return *it;
}

// The binary cases' [24] operand leads with the specials; the wide one holds them and random values.
TEST(CudaCaseHarness, HalfInputsAreHalfValuesWithTheSpecials) {
  for (DType t : {DType::f16, DType::bf16}) {
    const BuiltCase built = build_case(find(std::string("add_") + std::string(dtype_name(t))));
    const std::vector<Tensor> in = make_inputs(built.graph, built.group, symbol_values(4099), 1);
    ASSERT_EQ(in.size(), 2u);
    for (const Tensor& x : in) ASSERT_EQ(x.dtype(), t);
    const Tensor& b = in[1];
    const double max = t == DType::f16 ? 65504.0 : 0x1.fep127, tiny = t == DType::f16 ? 0x1p-24 : 0x1p-133;
    EXPECT_TRUE(std::isnan(b.as_double(0)));
    const std::vector<double> leading = {INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, max, -max, tiny};
    for (size_t i = 0; i < leading.size(); ++i) {
      EXPECT_EQ(b.as_double(static_cast<int64_t>(i) + 1), leading[i]) << dtype_name(t) << " element " << i + 1;
      EXPECT_EQ(std::signbit(b.as_double(static_cast<int64_t>(i) + 1)), std::signbit(leading[i]));
    }
    const Tensor& a = in[0];
    int64_t subnormal = 0, finite_random = 0;
    const double min_normal = t == DType::f16 ? 0x1p-14 : 0x1p-126;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double v = std::fabs(a.as_double(i));
      subnormal += v > 0 && v < min_normal;
      finite_random += i >= 30 && std::isfinite(v);
    }
    EXPECT_GT(subnormal, 0) << dtype_name(t);
    EXPECT_GT(finite_random, 3500) << dtype_name(t) << ": mostly random values after the specials";
  }
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
