// runtime/compare.h: the low-precision rule (bf16 / fp16 runs against fp32 outputs).
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/compare.h"

namespace kiln {
namespace {

Tensor f32(std::vector<float> v) { return Tensor::from_vector<float>(DType::f32, {int64_t(v.size())}, v); }

TEST(LowPrecisionRule, PassesWithinBf16NoiseAndFailsBeyondIt) {
  std::vector<float> ref, near, far;
  for (int i = 0; i < 1000; ++i) {
    const float x = std::sin(0.37f * static_cast<float>(i)) * 4.f;
    ref.push_back(x);
    near.push_back(x * (1.f + ((i % 2) ? 4e-3f : -4e-3f)));  // about one bf16 rounding each
    far.push_back(x * (1.f + ((i % 2) ? 5e-2f : -5e-2f)));
  }
  LowPrecisionResult ok = low_precision_rule(f32(near), f32(ref));
  EXPECT_TRUE(ok.pass) << ok.detail;
  EXPECT_GT(ok.cosine, 0.9999);
  EXPECT_NEAR(ok.rel_l2, 4e-3, 1e-4);
  LowPrecisionResult bad = low_precision_rule(f32(far), f32(ref));
  EXPECT_FALSE(bad.pass) << bad.detail;
  EXPECT_NEAR(bad.rel_l2, 5e-2, 1e-3);
}

TEST(LowPrecisionRule, NonFiniteValuesMustBeInTheSamePlaces) {
  EXPECT_TRUE(low_precision_rule(f32({1, NAN, INFINITY}), f32({1, NAN, INFINITY})).pass);
  EXPECT_FALSE(low_precision_rule(f32({1, 2, 3}), f32({1, NAN, 3})).pass);
  EXPECT_FALSE(low_precision_rule(f32({1, -INFINITY, 3}), f32({1, INFINITY, 3})).pass);
  EXPECT_FALSE(low_precision_rule(f32({1, 2}), f32({1, 2, 3})).pass);  // shapes
}

TEST(LowPrecisionRule, IntegersMustBeEqual) {
  const Tensor a = Tensor::from_vector<int64_t>(DType::i64, {3}, {1, 2, 3});
  const Tensor b = Tensor::from_vector<int64_t>(DType::i64, {3}, {1, 2, 4});
  EXPECT_TRUE(low_precision_rule(a, a).pass);
  EXPECT_FALSE(low_precision_rule(a, b).pass);
}

}  // namespace
}  // namespace kiln
