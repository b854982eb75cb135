// LayerNormalization and BatchNormalization.
#include <cmath>

#include "reduction_test_util.h"

namespace kiln::test {
namespace {

Node layernorm_node(int64_t axis, bool bias, size_t outputs = 1) {
  Node n = make_node(OpKind::LayerNormalization, bias ? 3 : 2, outputs);
  set_int(n, "axis", axis);
  return n;
}

TEST(LayerNorm, HandCheckedWithStatistics) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 6, 8});
  Tensor scale = f32({3}, {1, 2, 0.5});
  Tensor bias = f32({3}, {0, 1, -1});
  auto out = run_eager(layernorm_node(-1, true, 3), {&x, &scale, &bias});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(out[2].shape(), (std::vector<int64_t>{2, 1}));
  const double means[] = {2, 6}, vars[] = {2.0 / 3, 8.0 / 3};
  const double sc[] = {1, 2, 0.5}, b[] = {0, 1, -1};
  for (int r = 0; r < 2; ++r) {
    double inv = 1 / std::sqrt(vars[r] + 1e-5);
    EXPECT_NEAR(out[1].as_double(r), means[r], 1e-6);
    EXPECT_NEAR(out[2].as_double(r), inv, 1e-5);
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(out[0].as_double(r * 3 + i), (x.as_double(r * 3 + i) - means[r]) * inv * sc[i] + b[i], 1e-6);
  }
  // Without B, and with only Y requested.
  auto y = run_eager(layernorm_node(1, false), {&x, &scale})[0];
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(y.as_double(i), (x.as_double(i) - 2) / std::sqrt(2.0 / 3 + 1e-5) * sc[i], 1e-6);
}

TEST(LayerNorm, AxisZeroAndBroadcastScale) {
  // axis 0: one row of all 6 values; Scale [1] broadcast over the normalised shape [2, 3].
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor scale = f32({1}, {2});
  Node n = layernorm_node(0, false, 3);
  set_float(n, "epsilon", 0.0);
  auto out = run_eager(n, {&x, &scale});
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{1, 1}));
  double var = 17.5 / 6;
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(out[0].as_double(i), (i + 1 - 3.5) / std::sqrt(var) * 2, 1e-6);
  // Scale [3] and B [1, 3] over normalised [2, 3] of a [2, 2, 3] input (axis -2).
  Tensor x3 = f32({2, 2, 3}, {1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 6});
  Tensor s3 = f32({3}, {1, -1, 2});
  Tensor b3 = f32({1, 3}, {10, 20, 30});
  Node n3 = layernorm_node(-2, true);
  set_float(n3, "epsilon", 0.0);
  Tensor y = run_eager(n3, {&x3, &s3, &b3})[0];
  for (int o = 0; o < 2; ++o) {
    double m = 0, q = 0;
    for (int i = 0; i < 6; ++i) m += x3.as_double(o * 6 + i) / 6;
    for (int i = 0; i < 6; ++i) q += std::pow(x3.as_double(o * 6 + i) - m, 2) / 6;
    for (int i = 0; i < 6; ++i) {
      double want = (x3.as_double(o * 6 + i) - m) / std::sqrt(q) * s3.as_double(i % 3) + b3.as_double(i % 3);
      EXPECT_NEAR(y.as_double(o * 6 + i), want, 1e-5) << o << "," << i;
    }
  }
}

TEST(LayerNorm, SpecialValuesAndEdges) {
  Tensor x = f32({3, 4}, {1, NAN, 2, 3, 1, INFINITY, 2, 3, 1, 2, 3, 4});
  Tensor scale = f32({4}, {1, 1, 1, 1});
  auto out = run_eager(layernorm_node(-1, false, 3), {&x, &scale});
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(std::isnan(out[0].as_double(i))) << i;
  EXPECT_TRUE(std::isnan(out[1].as_double(0)));
  EXPECT_EQ(out[1].as_double(1), INFINITY);
  EXPECT_NEAR(out[0].as_double(8), -1.5 / std::sqrt(1.25 + 1e-5), 1e-6);
  // Width 1: x - mean = 0, so Y = B.
  Tensor x1 = f32({2, 1}, {7, -3});
  Tensor s1 = f32({1}, {5}), b1 = f32({1}, {0.25});
  for (double v : values(run_eager(layernorm_node(-1, true), {&x1, &s1, &b1})[0])) EXPECT_EQ(v, 0.25);
  // Zero-size: no rows; or rows of nothing (statistics NaN, Y empty).
  Tensor z = Tensor::empty(DType::f32, {0, 4});
  EXPECT_EQ(run_eager(layernorm_node(-1, false), {&z, &scale})[0].numel(), 0);
  Tensor z2 = Tensor::empty(DType::f32, {2, 0});
  Tensor s0 = Tensor::empty(DType::f32, {0});
  auto o2 = run_eager(layernorm_node(-1, false, 3), {&z2, &s0});
  EXPECT_EQ(o2[0].numel(), 0);
  EXPECT_TRUE(std::isnan(o2[1].as_double(0)) && std::isnan(o2[2].as_double(1)));
}

TEST(LayerNorm, UserErrorsAndInference) {
  Tensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor bad = f32({5}, {1, 1, 1, 1, 1});
  EXPECT_THROW(run_eager(layernorm_node(-1, false), {&x, &bad}), UserError);
  Tensor big = f32({2, 4}, {1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_THROW(run_eager(layernorm_node(-1, false), {&x, &big}), UserError);  // rank above the normalised rank
  Tensor s = f32({4}, {1, 1, 1, 1});
  EXPECT_THROW(run_eager(layernorm_node(2, false), {&x, &s}), UserError);
  Tensor xi = i64({4}, {1, 2, 3, 4});
  EXPECT_THROW(run_eager(layernorm_node(-1, false), {&xi, &s}), UserError);

  TensorType xt{DType::f32, {Dim::sym("batch"), Dim::sym("seq"), Dim::fixed(768)}};
  TensorType st{DType::f32, {Dim::fixed(768)}};
  auto types = infer(layernorm_node(-1, true, 3), {&xt, &st, &st});
  ASSERT_EQ(types.size(), 3u);
  EXPECT_EQ(types[0], xt);
  EXPECT_EQ(types[1].shape, (Shape{Dim::sym("batch"), Dim::sym("seq"), Dim::fixed(1)}));
  TensorType wrong{DType::f32, {Dim::fixed(512)}};
  EXPECT_THROW(infer(layernorm_node(-1, false), {&xt, &wrong}), UserError);
}

// f32 eager vs fp64 reference; Y, Mean and InvStdDev all compared.
TEST(LayerNorm, Differential) {
  std::mt19937 rng(21);
  ErrorStats y_stats, stat_stats;
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
    bool bias;
    double special;
  };
  const Case cases[] = {{{5, 1}, -1, true, 0},      {{9, 7}, -1, true, 0},        {{9, 33}, -1, false, 0.01},
                        {{128, 768}, -1, true, 0},  {{3, 1000}, 1, true, 0},       {{2, 4097}, -1, true, 0},
                        {{4, 6, 33}, -2, true, 0},  {{4, 6, 33}, 0, false, 0},     {{2, 3, 5, 7}, 1, true, 0.005}};
  for (const Case& c : cases) {
    Tensor x = random_f32(c.shape, rng, -3, 5, c.special);
    int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
    std::vector<int64_t> norm(c.shape.begin() + axis, c.shape.end());
    Tensor scale = random_f32(norm, rng, 0.5, 1.5), bias = random_f32(norm, rng, -1, 1);
    Node n = layernorm_node(c.axis, c.bias, 3);
    std::vector<const Tensor*> in = {&x, &scale};
    if (c.bias) in.push_back(&bias);
    auto got = run_eager(n, in), ref = run_reference(n, in);
    std::string what = "LayerNorm " + x.shape_string() + " axis " + std::to_string(c.axis);
    compare(got[0], ref[0], 1e-5, 1e-5, &y_stats, what + " Y");
    compare(got[1], ref[1], 1e-5, 1e-6, &stat_stats, what + " Mean");
    compare(got[2], ref[2], 1e-5, 0, &stat_stats, what + " InvStdDev");
  }
  print_stats("LayerNorm Y (f32 vs fp64)", y_stats);
  print_stats("LayerNorm Mean/InvStdDev (f32 vs fp64)", stat_stats);
}

TEST(LayerNorm, StashDoubleAccumulatesInDouble) {
  std::mt19937 rng(4);
  Tensor x = random_f32({4, 3000}, rng, 1000, 1001);  // large mean, small spread
  Tensor scale = random_f32({3000}, rng, 0.5, 1.5);
  Node n = layernorm_node(-1, false, 3);
  set_int(n, "stash_type", 11);
  auto got = run_eager(n, {&x, &scale}), ref = run_reference(n, {&x, &scale});
  compare(got[0], ref[0], 1e-6, 1e-6, nullptr, "stash double");
}

Node batchnorm_node() { return make_node(OpKind::BatchNormalization, 5); }

TEST(BatchNorm, HandChecked) {
  Tensor x = f32({1, 2, 1, 3}, {-1, 0, 1, 2, 3, 4});
  Tensor scale = f32({2}, {1, 1.5}), b = f32({2}, {0, 1}), mean = f32({2}, {0, 3}), var = f32({2}, {1, 1.5});
  Tensor y = run_eager(batchnorm_node(), {&x, &scale, &b, &mean, &var})[0];
  EXPECT_EQ(y.shape(), x.shape());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(y.as_double(i), x.as_double(i) / std::sqrt(1 + 1e-5), 1e-6);
  for (int i = 3; i < 6; ++i)
    EXPECT_NEAR(y.as_double(i), (x.as_double(i) - 3) / std::sqrt(1.5 + 1e-5) * 1.5 + 1, 1e-6);
  // Rank 2 ([N, C]), epsilon attribute, inf passes through.
  Node n = batchnorm_node();
  set_float(n, "epsilon", 0.25);
  Tensor x2 = f32({2, 2}, {1, INFINITY, NAN, 2});
  Tensor v2 = f32({2}, {0.75, 0.75});
  Tensor y2 = run_eager(n, {&x2, &scale, &b, &mean, &v2})[0];
  EXPECT_NEAR(y2.as_double(0), 1.0, 1e-6);
  EXPECT_EQ(y2.as_double(1), INFINITY);
  EXPECT_TRUE(std::isnan(y2.as_double(2)));
  EXPECT_NEAR(y2.as_double(3), (2 - 3) * 1.5 + 1, 1e-6);
}

TEST(BatchNorm, UserErrors) {
  Tensor x = f32({1, 2, 2}, {1, 2, 3, 4});
  Tensor p = f32({2}, {1, 1}), p3 = f32({3}, {1, 1, 1});
  Node train = batchnorm_node();
  set_int(train, "training_mode", 1);
  try {
    run_eager(train, {&x, &p, &p, &p, &p});
    ADD_FAILURE() << "training_mode=1 accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("not supported"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_eager(batchnorm_node(), {&x, &p3, &p, &p, &p}), UserError);
  EXPECT_THROW(run_eager(batchnorm_node(), {&x, &p, &p, &p, &p3}), UserError);
  Tensor x1 = f32({2}, {1, 2});
  EXPECT_THROW(run_eager(batchnorm_node(), {&x1, &p, &p, &p, &p}), UserError);
  Node more = make_node(OpKind::BatchNormalization, 5, 3);
  EXPECT_THROW(run_eager(more, {&x, &p, &p, &p, &p}), UserError);
  Tensor z = Tensor::empty(DType::f32, {0, 2, 3});
  EXPECT_EQ(run_eager(batchnorm_node(), {&z, &p, &p, &p, &p})[0].numel(), 0);
}

TEST(BatchNorm, Differential) {
  std::mt19937 rng(8);
  ErrorStats stats;
  for (auto shape : {std::vector<int64_t>{2, 3, 5, 7}, std::vector<int64_t>{4, 16}, std::vector<int64_t>{1, 8, 1},
                     std::vector<int64_t>{3, 5, 33, 1}, std::vector<int64_t>{2, 64, 56, 56}}) {
    int64_t c = shape[1];
    Tensor x = random_f32(shape, rng, -3, 3, 0.001);
    Tensor scale = random_f32({c}, rng, -2, 2), b = random_f32({c}, rng, -1, 1), m = random_f32({c}, rng, -1, 1),
           v = random_f32({c}, rng, 0, 3);
    Node n = batchnorm_node();
    compare(run_eager(n, {&x, &scale, &b, &m, &v})[0], run_reference(n, {&x, &scale, &b, &m, &v})[0], 1e-5, 1e-5,
            &stats, "BatchNorm " + x.shape_string());
  }
  print_stats("BatchNorm (f32 vs fp64)", stats);
}

}  // namespace
}  // namespace kiln::test
