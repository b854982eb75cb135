// Hand-checked semantics of the broadcasting binary ops: arithmetic, Pow, Mod, comparisons, logic.
#include "elementwise_test_util.h"

namespace kiln::testing_elementwise {
namespace {

Tensor iota_f32(std::vector<int64_t> shape, double start = 0) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<double>(i);
  return f32(std::move(shape), v);
}

TEST(Binary, BroadcastingShapes) {
  Tensor a = iota_f32({2, 3, 4});
  Tensor b = f32({3, 1}, {100, 200, 300});
  Tensor y = run(make_node(OpKind::Add, 2), {&a, &b});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3, 4}));
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(y.as_double(i), static_cast<double>(i) + 100.0 * ((i / 4) % 3 + 1)) << i;
  // The other operand order (broadcast on the left).
  Tensor yl = run(make_node(OpKind::Sub, 2), {&b, &a});
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(yl.as_double(i), 100.0 * ((i / 4) % 3 + 1) - static_cast<double>(i)) << i;

  Tensor one = f32({1}, {2});
  Tensor scalar = f32({}, {2});
  for (const Tensor* s : {&one, &scalar}) {
    Tensor m = run(make_node(OpKind::Mul, 2), {&a, s});
    EXPECT_EQ(m.shape(), (std::vector<int64_t>{2, 3, 4}));
    for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(m.as_double(i), 2.0 * static_cast<double>(i));
  }
  // Both operands broadcast: [3,1] x [1,4] -> [3,4].
  Tensor c = f32({3, 1}, {1, 2, 3}), d = f32({1, 4}, {10, 20, 30, 40});
  Tensor cd = run(make_node(OpKind::Mul, 2), {&c, &d});
  EXPECT_EQ(cd.shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(same_values(values(cd), {10, 20, 30, 40, 20, 40, 60, 80, 30, 60, 90, 120}));
  // Scalar with scalar, zero-size against size-1.
  Tensor ss = run(make_node(OpKind::Add, 2), {&scalar, &scalar});
  EXPECT_EQ(ss.shape(), std::vector<int64_t>{});
  EXPECT_EQ(ss.as_double(0), 4.0);
  Tensor z = f32({0, 3}, {}), r = f32({1, 3}, {1, 2, 3});
  EXPECT_EQ(run(make_node(OpKind::Add, 2), {&z, &r}).shape(), (std::vector<int64_t>{0, 3}));
  // Mask style: [2,3,4,5] + [2,1,1,5].
  Tensor big = iota_f32({2, 3, 4, 5});
  Tensor mask = iota_f32({2, 1, 1, 5}, 1000);
  Tensor bm = run(make_node(OpKind::Add, 2), {&big, &mask});
  for (int64_t i = 0; i < 120; ++i)
    EXPECT_EQ(bm.as_double(i), static_cast<double>(i) + 1000.0 + static_cast<double>((i / 60) * 5 + i % 5)) << i;
  // Incompatible shapes and mixed dtypes are the user's error.
  Tensor bad = f32({5}, {1, 2, 3, 4, 5});
  EXPECT_THROW(run(make_node(OpKind::Add, 2), {&a, &bad}), UserError);
  Tensor i = typed(DType::i64, {}, std::vector<int64_t>{1});
  EXPECT_THROW(run(make_node(OpKind::Add, 2), {&a, &i}), UserError);
}

TEST(Binary, LargeBroadcastsTakeEveryPath) {
  // Big enough to run in parallel chunks that split rows; checks every element.
  Tensor a = iota_f32({3, 40000});
  Tensor row = iota_f32({40000}, 0.5);
  Tensor col = f32({3, 1}, {1, 2, 3});
  Tensor yr = run(make_node(OpKind::Add, 2), {&a, &row});
  Tensor yc = run(make_node(OpKind::Mul, 2), {&col, &a});
  for (int64_t i = 0; i < 120000; ++i) {
    ASSERT_EQ(yr.as_double(i), static_cast<float>(static_cast<double>(i) + static_cast<double>(i % 40000) + 0.5)) << i;
    ASSERT_EQ(yc.as_double(i), static_cast<float>(static_cast<double>(i) * static_cast<double>(i / 40000 + 1))) << i;
  }
}

TEST(Binary, NaNAndInfinity) {
  Tensor a = f32({4}, {kNaN, kInf, kInf, 1});
  Tensor b = f32({4}, {1, -kInf, kInf, 0});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Add, 2), {&a, &b})), {kNaN, kNaN, kInf, 1}));
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Div, 2), {&a, &b})), {kNaN, kNaN, kNaN, kInf}));
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Mul, 2), {&a, &b})), {kNaN, -kInf, kInf, 0}));
}

TEST(Binary, IntegerDivisionTruncatesAndNeverTraps) {
  Tensor a = typed(DType::i32, {6}, std::vector<int64_t>{7, -7, 7, -7, 5, std::numeric_limits<int32_t>::min()});
  Tensor b = typed(DType::i32, {6}, std::vector<int64_t>{2, 2, -2, -2, 0, -1});
  Tensor q = run(make_node(OpKind::Div, 2), {&a, &b});
  EXPECT_EQ(q.dtype(), DType::i32);
  EXPECT_EQ(ints(q), (std::vector<int64_t>{3, -3, -3, 3, 0, std::numeric_limits<int32_t>::min()}));
  Tensor u = typed(DType::u8, {3}, std::vector<int64_t>{200, 7, 9});
  Tensor v = typed(DType::u8, {3}, std::vector<int64_t>{7, 0, 2});
  EXPECT_EQ(ints(run(make_node(OpKind::Div, 2), {&u, &v})), (std::vector<int64_t>{28, 0, 4}));
  // Integer add/mul wrap.
  Tensor big = typed(DType::i64, {1}, std::vector<int64_t>{std::numeric_limits<int64_t>::max()});
  Tensor one = typed(DType::i64, {}, std::vector<int64_t>{1});
  EXPECT_EQ(ints(run(make_node(OpKind::Add, 2), {&big, &one})),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
  Tensor u2 = typed(DType::u8, {1}, std::vector<int64_t>{200});
  EXPECT_EQ(ints(run(make_node(OpKind::Mul, 2), {&u2, &u2})), (std::vector<int64_t>{(200 * 200) % 256}));
}

TEST(Binary, ModSignConventions) {
  Tensor a = typed(DType::i64, {6}, std::vector<int64_t>{7, -7, 7, -7, 5, std::numeric_limits<int64_t>::min()});
  Tensor b = typed(DType::i64, {6}, std::vector<int64_t>{3, 3, -3, -3, 0, -1});
  // fmod = 0: sign of the divisor (Python); x mod 0 := 0.
  EXPECT_EQ(ints(run(make_node(OpKind::Mod, 2), {&a, &b})), (std::vector<int64_t>{1, 2, -2, -1, 0, 0}));
  // fmod = 1: sign of the dividend (C).
  EXPECT_EQ(ints(run(make_node(OpKind::Mod, 2, {{"fmod", int_attr(1)}}), {&a, &b})),
            (std::vector<int64_t>{1, -1, 1, -1, 0, 0}));
  Tensor i8a = typed(DType::i8, {2}, std::vector<int64_t>{-128, 100}), i8b = typed(DType::i8, {2}, std::vector<int64_t>{3, -7});
  EXPECT_EQ(ints(run(make_node(OpKind::Mod, 2), {&i8a, &i8b})), (std::vector<int64_t>{1, -5}));
  // Floats.
  Tensor fa = f32({6}, {7.5, -7.5, 7.5, -7.5, 1, kInf});
  Tensor fb = f32({6}, {2, 2, -2, -2, 0, 2});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Mod, 2, {{"fmod", int_attr(1)}}), {&fa, &fb})),
                          {1.5, -1.5, 1.5, -1.5, kNaN, kNaN}));
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Mod, 2), {&fa, &fb})), {1.5, 0.5, -0.5, -1.5, kNaN, kNaN}));
  Tensor m4 = f32({2}, {4, -4}), two = f32({}, {2}), ninf = f32({}, {-kInf});
  // Zero results take the divisor's sign with fmod = 0.
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Mod, 2), {&m4, &two})), {0, 0}, true));
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Mod, 2), {&m4, &ninf})), {-kInf, -4}));
  EXPECT_THROW(run(make_node(OpKind::Mod, 2, {{"fmod", int_attr(2)}}), {&fa, &fb}), UserError);
}

TEST(Binary, PowMixedDtypes) {
  Tensor x = f32({4}, {2, -2, 4, kNaN});
  Tensor e = f32({4}, {3, 2, 0.5, 0});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Pow, 2), {&x, &e})), {8, 4, 2, 1}));
  // Float base, integer exponent: output keeps the base's dtype.
  Tensor ei = typed(DType::i64, {}, std::vector<int64_t>{3});
  Tensor y = run(make_node(OpKind::Pow, 2), {&x, &ei});
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_TRUE(same_values(values(y), {8, -8, 64, kNaN}));
  Tensor two = f32({}, {2});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Pow, 2), {&x, &two})), {4, 4, 16, kNaN}));
  Tensor neg_half = f32({}, {-0.5});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Pow, 2), {&x, &neg_half})), {std::pow(2.0f, -0.5f), kNaN, 0.5, kNaN}));
  // Integer base, float or integer exponent: integer result.
  Tensor b = typed(DType::i32, {5}, std::vector<int64_t>{1, 2, 3, -2, 0});
  Tensor ef = f32({5}, {1, 2, 3, 3, 0});
  Tensor yi = run(make_node(OpKind::Pow, 2), {&b, &ef});
  EXPECT_EQ(yi.dtype(), DType::i32);
  EXPECT_EQ(ints(yi), (std::vector<int64_t>{1, 4, 27, -8, 1}));
  Tensor e64 = typed(DType::i64, {5}, std::vector<int64_t>{10, 31, -1, -1, -1});
  EXPECT_EQ(ints(run(make_node(OpKind::Pow, 2), {&b, &e64})), (std::vector<int64_t>{1, std::numeric_limits<int32_t>::min(), 0, 0, 0}));
  Tensor m1 = typed(DType::i64, {2}, std::vector<int64_t>{-1, -1}), en = typed(DType::i64, {2}, std::vector<int64_t>{-3, -4});
  EXPECT_EQ(ints(run(make_node(OpKind::Pow, 2), {&m1, &en})), (std::vector<int64_t>{-1, 1}));
  Tensor frac = f32({}, {0.5});
  Tensor sq = typed(DType::i64, {2}, std::vector<int64_t>{9, 10});
  EXPECT_EQ(ints(run(make_node(OpKind::Pow, 2), {&sq, &frac})), (std::vector<int64_t>{3, 3}));
}

TEST(Binary, ComparisonsGiveBool) {
  Tensor a = f32({2, 3}, {1, 2, 3, kNaN, 5, 6});
  Tensor b = f32({3}, {2, 2, kNaN});
  auto check = [&](OpKind op, std::vector<int64_t> want) {
    Tensor y = run(make_node(op, 2), {&a, &b});
    EXPECT_EQ(y.dtype(), DType::boolean);
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(ints(y), want) << op_name(op);
  };
  check(OpKind::Equal, {0, 1, 0, 0, 0, 0});
  check(OpKind::Less, {1, 0, 0, 0, 0, 0});
  check(OpKind::Greater, {0, 0, 0, 0, 1, 0});
  check(OpKind::LessOrEqual, {1, 1, 0, 0, 0, 0});
  check(OpKind::GreaterOrEqual, {0, 1, 0, 0, 1, 0});
  Tensor i = typed(DType::i64, {3}, std::vector<int64_t>{-1, 0, 1}), z = typed(DType::i64, {}, std::vector<int64_t>{0});
  EXPECT_EQ(ints(run(make_node(OpKind::Less, 2), {&i, &z})), (std::vector<int64_t>{1, 0, 0}));
  Tensor p = boolean({2}, {1, 0}), q = boolean({2}, {1, 1});
  EXPECT_EQ(ints(run(make_node(OpKind::Equal, 2), {&p, &q})), (std::vector<int64_t>{1, 0}));
  EXPECT_THROW(run(make_node(OpKind::Less, 2), {&p, &q}), UserError);
}

TEST(Binary, LogicOps) {
  Tensor p = boolean({2, 2}, {0, 0, 1, 1});
  Tensor q = boolean({2}, {0, 1});
  EXPECT_EQ(ints(run(make_node(OpKind::And, 2), {&p, &q})), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(ints(run(make_node(OpKind::Or, 2), {&p, &q})), (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(ints(run(make_node(OpKind::Xor, 2), {&p, &q})), (std::vector<int64_t>{0, 1, 1, 0}));
  Tensor f = f32({2}, {0, 1});
  EXPECT_THROW(run(make_node(OpKind::And, 2), {&f, &f}), UserError);
}

}  // namespace
}  // namespace kiln::testing_elementwise
