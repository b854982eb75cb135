// Hand-checked semantics of the unary elementwise ops.
#include "elementwise_test_util.h"

namespace kiln::testing_elementwise {
namespace {

std::vector<double> unary_f32(OpKind op, const std::vector<double>& x,
                              std::map<std::string, Attribute, std::less<>> attrs = {}) {
  Tensor t = f32({static_cast<int64_t>(x.size())}, x);
  Tensor y = run(make_node(op, 1, std::move(attrs)), {&t});
  EXPECT_EQ(y.dtype(), DType::f32);
  return values(y);
}

TEST(Unary, AbsNegOnFloatsAndInts) {
  EXPECT_TRUE(same_values(unary_f32(OpKind::Abs, {-1.5, 2, -0.0, -kInf, kNaN}), {1.5, 2, 0, kInf, kNaN}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Neg, {-1.5, 2, 0, kInf, kNaN}), {1.5, -2, -0.0, -kInf, kNaN}, true));
  Tensor i32 = typed(DType::i32, {4}, std::vector<int64_t>{-7, 7, 0, std::numeric_limits<int32_t>::min()});
  Tensor abs = run(make_node(OpKind::Abs, 1), {&i32});
  EXPECT_EQ(abs.dtype(), DType::i32);
  EXPECT_EQ(ints(abs), (std::vector<int64_t>{7, 7, 0, std::numeric_limits<int32_t>::min()}));  // wraps
  Tensor neg = run(make_node(OpKind::Neg, 1), {&i32});
  EXPECT_EQ(ints(neg), (std::vector<int64_t>{7, -7, 0, std::numeric_limits<int32_t>::min()}));
  Tensor u8 = typed(DType::u8, {2}, std::vector<int64_t>{0, 200});
  EXPECT_EQ(ints(run(make_node(OpKind::Abs, 1), {&u8})), (std::vector<int64_t>{0, 200}));
  EXPECT_THROW(run(make_node(OpKind::Neg, 1), {&u8}), UserError);  // ONNX Neg has no unsigned types
}

TEST(Unary, MathFunctions) {
  EXPECT_TRUE(same_values(unary_f32(OpKind::Sqrt, {4, 0, -1, kInf, kNaN}), {2, 0, kNaN, kInf, kNaN}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Reciprocal, {4, 0, -0.0, kInf}), {0.25, kInf, -kInf, 0}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Exp, {0, -kInf, kInf, kNaN, 100, -200}), {1, 0, kInf, kNaN, kInf, 0}));
  EXPECT_NEAR(unary_f32(OpKind::Exp, {1})[0], M_E, 3e-7);
  EXPECT_TRUE(same_values(unary_f32(OpKind::Log, {1, 0, -1, kInf, kNaN}), {0, -kInf, kNaN, kInf, kNaN}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Erf, {0, kInf, -kInf, kNaN, 10}), {0, 1, -1, kNaN, 1}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Tanh, {0, kInf, -kInf, kNaN, 50, -50}), {0, 1, -1, kNaN, 1, -1}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Floor, {1.5, -1.5, -0.0, kInf, kNaN}), {1, -2, -0.0, kInf, kNaN}, true));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Ceil, {1.5, -1.5, -0.5, kInf, kNaN}), {2, -1, -0.0, kInf, kNaN}, true));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Sin, {0, kInf, kNaN}), {0, kNaN, kNaN}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Cos, {0, -kInf, kNaN}), {1, kNaN, kNaN}));
  // Outside [-1, 1] the inverse sine and cosine are NaN; atan reaches +-pi/2 at the infinities.
  EXPECT_TRUE(same_values(unary_f32(OpKind::Asin, {0, 1.5, -kInf, kNaN}), {0, kNaN, kNaN, kNaN}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::Acos, {1, -1.5, kInf, kNaN}), {0, kNaN, kNaN, kNaN}));
  auto at = unary_f32(OpKind::Atan, {kInf, -kInf, 1, kNaN});
  EXPECT_NEAR(at[0], M_PI / 2, 1e-7);
  EXPECT_NEAR(at[1], -M_PI / 2, 1e-7);
  EXPECT_NEAR(at[2], M_PI / 4, 1e-7);
  EXPECT_TRUE(std::isnan(at[3]));
  // Known values within f32 rounding.
  auto e = unary_f32(OpKind::Erf, {0.5, -1, 2});
  EXPECT_NEAR(e[0], 0.5204998778, 1e-7);
  EXPECT_NEAR(e[1], -0.8427007929, 1e-7);
  EXPECT_NEAR(e[2], 0.9953222650, 1e-7);
  auto t = unary_f32(OpKind::Tanh, {0.5, -3});
  EXPECT_NEAR(t[0], 0.4621171573, 1e-7);
  EXPECT_NEAR(t[1], -0.9950547537, 1e-7);
}

TEST(Unary, Activations) {
  EXPECT_TRUE(same_values(unary_f32(OpKind::Relu, {-1, 0, 2, -kInf, kNaN}), {0, 0, 2, 0, kNaN}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::LeakyRelu, {-100, 3, kNaN}), {-1, 3, kNaN}));  // alpha 0.01
  EXPECT_TRUE(same_values(unary_f32(OpKind::LeakyRelu, {-2, 3}, {{"alpha", float_attr(0.5)}}), {-1, 3}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::HardSigmoid, {0, 10, -10, 1, kNaN}), {0.5, 1, 0, 0.7f, kNaN}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::HardSigmoid, {1}, {{"alpha", float_attr(0.5)}, {"beta", float_attr(0.25)}}),
                          {0.75}));
  EXPECT_TRUE(same_values(unary_f32(OpKind::HardSwish, {-4, 0, 4, 1.5, kNaN}), {-0.0, 0, 4, 1.5 * 0.75, kNaN}));
  auto s = unary_f32(OpKind::Sigmoid, {0, kInf, -kInf, kNaN, 100, -100, 2});
  EXPECT_TRUE(same_values({s[0], s[1], s[2], s[3], s[4]}, {0.5, 1, 0, kNaN, 1}));
  EXPECT_NEAR(s[5], 3.720076e-44, 1e-44);  // an f32 subnormal, not 1 / (1 + Inf) = 0
  EXPECT_NEAR(s[6], 0.8807970779, 1e-7);
  auto sp = unary_f32(OpKind::Softplus, {0, 100, -100, kInf, -kInf, kNaN});
  EXPECT_NEAR(sp[0], std::log(2.0), 1e-7);
  EXPECT_EQ(sp[1], 100);  // stable for large x (no exp overflow)
  EXPECT_NEAR(sp[2], 3.720076e-44, 1e-44);  // an f32 subnormal
  EXPECT_TRUE(same_values({sp[3], sp[4], sp[5]}, {kInf, 0, kNaN}));
  auto elu = unary_f32(OpKind::Elu, {-kInf, 2, -1, kNaN});
  EXPECT_TRUE(same_values({elu[0], elu[1], elu[3]}, {-1, 2, kNaN}));
  EXPECT_NEAR(elu[2], std::expm1(-1.0), 1e-7);
  EXPECT_TRUE(same_values(unary_f32(OpKind::Elu, {-kInf, 3}, {{"alpha", float_attr(2.0)}}), {-2, 3}));
  // Relu on integers.
  Tensor i8 = typed(DType::i8, {3}, std::vector<int64_t>{-5, 0, 5});
  EXPECT_EQ(ints(run(make_node(OpKind::Relu, 1), {&i8})), (std::vector<int64_t>{0, 0, 5}));
}

TEST(Unary, ClipBoundsAreOptionalAndWorkForInts) {
  Tensor x = f32({6}, {-5, -1, 0, 1, 5, kNaN});
  Tensor lo = f32({}, {-1}), hi = f32({}, {2});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Clip, 3), {&x, &lo, &hi})), {-1, -1, 0, 1, 2, kNaN}));
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Clip, 3, {}, {true, false, true}), {&x, nullptr, &hi})),
                          {-5, -1, 0, 1, 2, kNaN}));
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Clip, 2), {&x, &lo})), {-1, -1, 0, 1, 5, kNaN}));
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Clip, 1), {&x})), {-5, -1, 0, 1, 5, kNaN}));
  // min > max: everything becomes max (numpy.clip).
  Tensor lo3 = f32({}, {3});
  EXPECT_TRUE(same_values(values(run(make_node(OpKind::Clip, 3), {&x, &lo3, &hi})), {2, 2, 2, 2, 2, kNaN}));

  Tensor xi = typed(DType::i8, {4}, std::vector<int64_t>{-128, -3, 3, 127});
  Tensor loi = typed(DType::i8, {}, std::vector<int64_t>{-2});
  Tensor hii = typed(DType::i8, {1}, std::vector<int64_t>{100});
  Tensor y = run(make_node(OpKind::Clip, 3), {&xi, &loi, &hii});
  EXPECT_EQ(y.dtype(), DType::i8);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{-2, -2, 3, 100}));
  Tensor yi = run(make_node(OpKind::Clip, 3, {}, {true, false, true}), {&xi, nullptr, &hii});
  EXPECT_EQ(ints(yi), (std::vector<int64_t>{-128, -3, 3, 100}));
  // A bound of another dtype, or not a scalar, is the user's error.
  Tensor bad = f32({2}, {0, 1});
  EXPECT_THROW(run(make_node(OpKind::Clip, 2), {&x, &bad}), UserError);
  EXPECT_THROW(run(make_node(OpKind::Clip, 2), {&xi, &lo}), UserError);
}

TEST(Unary, LogicAndClassification) {
  Tensor b = boolean({3}, {1, 0, 1});
  Tensor n = run(make_node(OpKind::Not, 1), {&b});
  EXPECT_EQ(n.dtype(), DType::boolean);
  EXPECT_EQ(ints(n), (std::vector<int64_t>{0, 1, 0}));
  Tensor x = f32({5}, {1, kNaN, kInf, -kInf, 0});
  Tensor isnan = run(make_node(OpKind::IsNaN, 1), {&x});
  EXPECT_EQ(isnan.dtype(), DType::boolean);
  EXPECT_EQ(ints(isnan), (std::vector<int64_t>{0, 1, 0, 0, 0}));
  EXPECT_EQ(ints(run(make_node(OpKind::IsInf, 1), {&x})), (std::vector<int64_t>{0, 0, 1, 1, 0}));
  EXPECT_EQ(ints(run(make_node(OpKind::IsInf, 1, {{"detect_negative", int_attr(0)}}), {&x})),
            (std::vector<int64_t>{0, 0, 1, 0, 0}));
  EXPECT_EQ(ints(run(make_node(OpKind::IsInf, 1, {{"detect_positive", int_attr(0)}}), {&x})),
            (std::vector<int64_t>{0, 0, 0, 1, 0}));
  EXPECT_THROW(run(make_node(OpKind::Not, 1), {&x}), UserError);
  EXPECT_THROW(run(make_node(OpKind::IsNaN, 1), {&b}), UserError);
}

TEST(Unary, DtypeRulesAndShapes) {
  Tensor i = typed(DType::i64, {2}, std::vector<int64_t>{1, 2});
  EXPECT_THROW(run(make_node(OpKind::Sqrt, 1), {&i}), UserError);
  EXPECT_THROW(run(make_node(OpKind::Exp, 1), {&i}), UserError);
  // Zero-size and scalar tensors keep their shape.
  Tensor empty = f32({0, 3}, {});
  Tensor y = run(make_node(OpKind::Exp, 1), {&empty});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{0, 3}));
  Tensor s = f32({}, {0});
  Tensor ys = run(make_node(OpKind::Exp, 1), {&s});
  EXPECT_EQ(ys.shape(), std::vector<int64_t>{});
  EXPECT_EQ(ys.as_double(0), 1.0);
  // f64 eager uses libm directly.
  Tensor d = f64({2}, {0.5, kNaN});
  Tensor yd = run(make_node(OpKind::Erf, 1), {&d});
  EXPECT_EQ(yd.dtype(), DType::f64);
  EXPECT_EQ(yd.as_double(0), std::erf(0.5));
  EXPECT_TRUE(std::isnan(yd.as_double(1)));
  // f16 inputs are widened by the executor and come back as f16.
  Tensor h = Tensor::from_vector<double>(DType::f16, {2}, {-1, 4});
  Tensor yh = run(make_node(OpKind::Relu, 1), {&h});
  EXPECT_EQ(yh.dtype(), DType::f16);
  EXPECT_TRUE(same_values(values(yh), {0, 4}));
}

}  // namespace
}  // namespace kiln::testing_elementwise
