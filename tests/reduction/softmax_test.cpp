#include <cmath>

#include "reduction_test_util.h"

namespace kiln::test {
namespace {

Node softmax_node(bool log, int64_t axis) {
  Node n = make_node(log ? OpKind::LogSoftmax : OpKind::Softmax, 1);
  set_int(n, "axis", axis);
  return n;
}

std::vector<double> run1(const Node& n, const Tensor& x) { return values(run_eager(n, {&x})[0]); }

TEST(Softmax, HandChecked) {
  Tensor x = f32({1, 3}, {1, 2, 3});
  std::vector<double> s = run1(make_node(OpKind::Softmax, 1), x);  // default axis -1
  std::vector<double> want = {0.09003057317038046, 0.24472847105479764, 0.6652409557748219};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(s[i], want[i], 1e-7);
  std::vector<double> l = run1(make_node(OpKind::LogSoftmax, 1), x);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(l[i], std::log(want[i]), 1e-6);
}

TEST(Softmax, AxisVariants) {
  // [[0, ln 3], [ln 3, 0]]: along axis 0 each column is {1/4, 3/4} or {3/4, 1/4}.
  double l3 = std::log(3.0);
  Tensor x = f32({2, 2}, {0, l3, l3, 0});
  for (int64_t axis : {0, -2}) {
    std::vector<double> s = run1(softmax_node(false, axis), x);
    EXPECT_NEAR(s[0], 0.25, 1e-7) << axis;
    EXPECT_NEAR(s[1], 0.75, 1e-7) << axis;
    EXPECT_NEAR(s[2], 0.75, 1e-7) << axis;
    EXPECT_NEAR(s[3], 0.25, 1e-7) << axis;
  }
  for (int64_t axis : {1, -1}) {
    std::vector<double> s = run1(softmax_node(false, axis), x);
    EXPECT_NEAR(s[0], 0.25, 1e-7) << axis;
    EXPECT_NEAR(s[1], 0.75, 1e-7) << axis;
  }
  // A middle axis of a 3-D tensor: [2, 3, 2] along axis 1 sums to 1 over each (outer, inner) column.
  std::vector<double> v(12);
  for (int i = 0; i < 12; ++i) v[i] = 0.3 * i - 1;
  std::vector<double> s = run1(softmax_node(false, 1), f32({2, 3, 2}, v));
  for (int o = 0; o < 2; ++o)
    for (int j = 0; j < 2; ++j) {
      double sum = 0;
      for (int i = 0; i < 3; ++i) sum += s[o * 6 + i * 2 + j];
      EXPECT_NEAR(sum, 1.0, 1e-6);
      // Consecutive elements along the axis differ by 0.6 in x: ratio e^0.6.
      EXPECT_NEAR(s[o * 6 + 2 + j] / s[o * 6 + j], std::exp(0.6), 1e-5);
    }
}

TEST(Softmax, SpecialRows) {
  const double inf = INFINITY;
  // Rows: all -inf; one +inf; a NaN; some -inf (others finite).
  Tensor x = f32({4, 3}, {-inf, -inf, -inf, 1, inf, 2, 1, NAN, 2, -inf, 0, -inf});
  for (int64_t axis : {1}) {
    std::vector<double> s = run1(softmax_node(false, axis), x);
    std::vector<double> l = run1(softmax_node(true, axis), x);
    for (int i = 0; i < 9; ++i) {
      EXPECT_TRUE(std::isnan(s[i])) << i;
      EXPECT_TRUE(std::isnan(l[i])) << i;
    }
    EXPECT_EQ(s[9], 0.0);
    EXPECT_EQ(s[10], 1.0);
    EXPECT_EQ(s[11], 0.0);
    EXPECT_EQ(l[9], -inf);
    EXPECT_EQ(l[10], 0.0);
    EXPECT_EQ(l[11], -inf);
  }
  // The same columns through the non-last-axis path (transposed input, axis 0).
  Tensor xt = f32({3, 4}, {-inf, 1, 1, -inf, -inf, inf, NAN, 0, -inf, 2, 2, -inf});
  std::vector<double> s = run1(softmax_node(false, 0), xt);
  std::vector<double> l = run1(softmax_node(true, 0), xt);
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 3; ++c) {
      EXPECT_TRUE(std::isnan(s[i * 4 + c])) << i << "," << c;
      EXPECT_TRUE(std::isnan(l[i * 4 + c])) << i << "," << c;
    }
  EXPECT_EQ(s[3], 0.0);
  EXPECT_EQ(s[7], 1.0);
  EXPECT_EQ(l[11], -inf);
}

TEST(Softmax, LargeNumbersAreStable) {
  // ONNX's test_logsoftmax_large_number: the max is subtracted first.
  Tensor x = f32({2, 4}, {1, 2, 3, 4, 10000, 10001, 10002, 10003});
  std::vector<double> l = run1(make_node(OpKind::LogSoftmax, 1), x);
  std::vector<double> want = {-3.4401896, -2.4401896, -1.4401897, -0.44018975};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(l[i], want[i], 1e-6);
    EXPECT_NEAR(l[4 + i], want[i], 1e-6);
  }
}

TEST(Softmax, SizeOneAndZeroSize) {
  Tensor x = f32({3, 1}, {5, -7, 1e30});
  for (double v : run1(make_node(OpKind::Softmax, 1), x)) EXPECT_EQ(v, 1.0);
  for (double v : run1(make_node(OpKind::LogSoftmax, 1), x)) EXPECT_EQ(v, 0.0);
  for (auto shape : {std::vector<int64_t>{0, 5}, std::vector<int64_t>{3, 0}, std::vector<int64_t>{2, 0, 3}}) {
    Tensor z = Tensor::empty(DType::f32, shape);
    for (int64_t axis : {0, -1}) {
      auto out = run_eager(softmax_node(false, axis), {&z});
      EXPECT_EQ(out[0].shape(), shape);
      EXPECT_EQ(out[0].numel(), 0);
    }
  }
}

TEST(Softmax, UserErrors) {
  Tensor scalar = f32({}, {1});
  EXPECT_THROW(run_eager(make_node(OpKind::Softmax, 1), {&scalar}), UserError);
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_THROW(run_eager(softmax_node(false, 2), {&x}), UserError);
  EXPECT_THROW(run_eager(softmax_node(true, -3), {&x}), UserError);
  Tensor xi = i64({2}, {1, 2});
  EXPECT_THROW(run_eager(make_node(OpKind::Softmax, 1), {&xi}), UserError);
}

TEST(Softmax, SymbolicShapeInference) {
  TensorType t{DType::f32, {Dim::sym("batch"), Dim::fixed(12), Dim::sym("seq")}};
  auto out = infer(make_node(OpKind::Softmax, 1), {&t});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], t);
}

// f32 eager vs the fp64 reference. Softmax: relative error (exp's ~1 ulp, the f32 sum over the row,
// one reciprocal). LogSoftmax: absolute error, since its values pass through 0.
void differential(const std::vector<int64_t>& shape, int64_t axis, double special, ErrorStats& s_stats,
                  ErrorStats& l_stats, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor x = random_f32(shape, rng, -8, 8, special);
  for (bool log : {false, true}) {
    Node n = softmax_node(log, axis);
    Tensor got = run_eager(n, {&x})[0];
    Tensor ref = run_reference(n, {&x})[0];
    EXPECT_EQ(ref.dtype(), DType::f64);
    std::string what = (log ? "LogSoftmax " : "Softmax ") + x.shape_string() + " axis " + std::to_string(axis);
    if (log) compare(got, ref, 2e-6, 1e-5, &l_stats, what);
    else compare(got, ref, 2e-5, 1e-30, &s_stats, what);
  }
}

TEST(Softmax, DifferentialLastAxis) {
  ErrorStats s, l;
  uint32_t seed = 1;
  for (int64_t width : {1, 7, 16, 33, 1000, 50265}) {
    int64_t rows = width > 10000 ? 3 : 37;
    differential({rows, width}, -1, 0, s, l, seed++);
    if (width <= 1000) differential({rows, width}, 1, 0.02, s, l, seed++);  // some NaN / inf rows
  }
  differential({1, 12, 128, 128}, -1, 0, s, l, seed++);  // bert's attention shape
  print_stats("Softmax last axis (f32 vs fp64)", s);
  print_stats("LogSoftmax last axis (f32 vs fp64)", l);
}

TEST(Softmax, DifferentialOtherAxes) {
  ErrorStats s, l;
  uint32_t seed = 100;
  for (int64_t axis : {0, 1, 2, -2, -3})
    differential({3, 17, 5, 33}, axis, axis == 1 ? 0.01 : 0, s, l, seed++);
  differential({2, 1000, 1100}, 1, 0, s, l, seed++);  // inner wider than one column chunk
  differential({50265, 3}, 0, 0, s, l, seed++);
  print_stats("Softmax other axes (f32 vs fp64)", s);
  print_stats("LogSoftmax other axes (f32 vs fp64)", l);
}

}  // namespace
}  // namespace kiln::test
