// Hand-checked semantics of Min Max Sum Mean and Where.
#include "elementwise_test_util.h"

namespace kiln::testing_elementwise {
namespace {

TEST(Variadic, MinMaxPropagateNaN) {
  Tensor a = f32({4}, {1, kNaN, 3, -kInf});
  Tensor b = f32({4}, {2, 0, kNaN, -5});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Max, 2), {&a, &b})), {2, kNaN, kNaN, -5}));
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Min, 2), {&a, &b})), {1, kNaN, kNaN, -kInf}));
  // NaN in a later input also wins.
  Tensor c = f32({}, {kNaN});
  Tensor z = f32({4}, {0, 0, 0, 0});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Max, 3), {&z, &z, &c})), {kNaN, kNaN, kNaN, kNaN}));
}

TEST(Variadic, BroadcastAcrossManyInputs) {
  Tensor a = f32({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({4, 1}, {10, 20, 30, 40});
  Tensor c = f32({}, {100});
  Tensor s = run(make_node(OpKind::Sum, 3), {&a, &b, &c});
  EXPECT_EQ(s.shape(), (std::vector<int64_t>{2, 4, 3}));
  for (int64_t i = 0; i < 24; ++i) {
    double av = static_cast<double>((i / 12) * 3 + i % 3 + 1), bv = 10.0 * static_cast<double>((i / 3) % 4 + 1);
    EXPECT_EQ(s.as_double(i), av + bv + 100) << i;
  }
  Tensor m = run(make_node(OpKind::Mean, 3), {&a, &b, &c});
  for (int64_t i = 0; i < 24; ++i) EXPECT_FLOAT_EQ(static_cast<float>(m.as_double(i)), static_cast<float>(s.as_double(i) / 3)) << i;
  Tensor mx = run(make_node(OpKind::Max, 2), {&a, &b});
  EXPECT_EQ(mx.shape(), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(mx.as_double(0), 10);
  // One input: a copy. Four inputs of ints.
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Sum, 1), {&a})), values(a)));
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Mean, 1), {&a})), values(a)));
  Tensor i = typed(DType::i32, {3}, std::vector<int64_t>{1, -7, 3});
  Tensor j = typed(DType::i32, {1}, std::vector<int64_t>{2});
  EXPECT_EQ(ints(run(make_node(OpKind::Max, 4), {&i, &j, &j, &i})), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(ints(run(make_node(OpKind::Min, 2), {&i, &j})), (std::vector<int64_t>{1, -7, 2}));
  EXPECT_EQ(ints(run(make_node(OpKind::Sum, 4), {&i, &j, &j, &i})), (std::vector<int64_t>{6, -10, 10}));
  EXPECT_EQ(ints(run(make_node(OpKind::Mean, 2), {&i, &j})), (std::vector<int64_t>{1, -2, 2}));  // truncated
  // Zero-size operands.
  Tensor e = f32({0}, {});
  EXPECT_EQ(run(make_node(OpKind::Sum, 2), {&e, &c}).shape(), std::vector<int64_t>{0});
  Tensor bad = f32({5}, {1, 2, 3, 4, 5});
  EXPECT_THROW(run(make_node(OpKind::Sum, 2), {&a, &bad}), UserError);
  EXPECT_THROW(run(make_node(OpKind::Max, 2), {&a, &i}), UserError);
}

TEST(Where, ThreeWayBroadcast) {
  Tensor cond = boolean({2, 1, 3}, {1, 0, 1, 0, 1, 0});
  Tensor x = f32({4, 1}, {1, 2, 3, 4});
  Tensor y = f32({}, {-1});
  Tensor w = run(make_node(OpKind::Where, 3), {&cond, &x, &y});
  EXPECT_EQ(w.shape(), (std::vector<int64_t>{2, 4, 3}));
  for (int64_t i = 0; i < 24; ++i) {
    bool c = (i / 12) == 0 ? (i % 3 != 1) : (i % 3 == 1);
    EXPECT_EQ(w.as_double(i), c ? static_cast<double>((i / 3) % 4 + 1) : -1.0) << i;
  }
  // NaN and Inf pass through untouched; ints and bools work.
  Tensor c2 = boolean({3}, {1, 0, 1});
  Tensor a = f32({3}, {kNaN, 0, kInf}), b = f32({3}, {0, kNaN, 0});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Where, 3), {&c2, &a, &b})), {kNaN, kNaN, kInf}));
  Tensor ia = typed(DType::i64, {3}, std::vector<int64_t>{1, 2, 3}), ib = typed(DType::i64, {1}, std::vector<int64_t>{9});
  EXPECT_EQ(ints(run(make_node(OpKind::Where, 3), {&c2, &ia, &ib})), (std::vector<int64_t>{1, 9, 3}));
  // Mask style with a large tensor: cond [1,1,S,S], x [B,H,S,S], scalar y.
  const int64_t S = 67;
  std::vector<int> tri(S * S);
  for (int64_t r = 0; r < S; ++r)
    for (int64_t col = 0; col < S; ++col) tri[static_cast<size_t>(r * S + col)] = col <= r;
  Tensor mask = boolean({1, 1, S, S}, tri);
  std::vector<double> xv(static_cast<size_t>(2 * 3 * S * S));
  for (size_t k = 0; k < xv.size(); ++k) xv[k] = static_cast<double>(k);
  Tensor big = f32({2, 3, S, S}, xv);
  Tensor ninf = f32({}, {-kInf});
  Tensor wm = run(make_node(OpKind::Where, 3), {&mask, &big, &ninf});
  for (int64_t k = 0; k < wm.numel(); ++k) {
    int64_t r = (k / S) % S, col = k % S;
    ASSERT_EQ(wm.as_double(k), col <= r ? static_cast<double>(k) : -kInf) << k;
  }
  // Errors: non-bool condition, mismatched branches.
  EXPECT_THROW(run(make_node(OpKind::Where, 3), {&a, &a, &b}), UserError);
  EXPECT_THROW(run(make_node(OpKind::Where, 3), {&c2, &a, &ia}), UserError);
}

}  // namespace
}  // namespace kiln::testing_elementwise
