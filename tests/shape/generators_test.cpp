// Shape, Size, Constant, ConstantOfShape, Range.
#include <limits>

#include "shape_test_util.h"

namespace kiln::shape_test {
namespace {

TEST(Shape, StartEndClamp) {
  Tensor x = Tensor::empty(DType::f16, {2, 3, 0, 5});
  Node n = make_node(OpKind::Shape, 1);
  EXPECT_EQ(ints(run1(n, {&x})), (std::vector<int64_t>{2, 3, 0, 5}));
  set_attr(n, "start", int64_t{1});
  set_attr(n, "end", int64_t{-1});
  Tensor y = run1(n, {&x});
  EXPECT_EQ(y.dtype(), DType::i64);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{3, 0}));
  set_attr(n, "start", int64_t{-10});
  set_attr(n, "end", int64_t{10});
  EXPECT_EQ(ints(run1(n, {&x})), (std::vector<int64_t>{2, 3, 0, 5}));
  set_attr(n, "start", int64_t{3});
  set_attr(n, "end", int64_t{1});
  EXPECT_EQ(run1(n, {&x}).numel(), 0);
  Tensor s = Tensor::scalar(DType::boolean, true);
  EXPECT_EQ(run1(make_node(OpKind::Shape, 1), {&s}).shape(), (std::vector<int64_t>{0}));
}

TEST(Size, CountsElements) {
  Tensor x = Tensor::empty(DType::bf16, {2, 3, 4});
  Tensor y = run1(make_node(OpKind::Size, 1), {&x});
  EXPECT_EQ(y.rank(), 0);
  EXPECT_EQ(ints(y), (std::vector<int64_t>{24}));
  Tensor e = Tensor::empty(DType::f32, {3, 0});
  EXPECT_EQ(ints(run1(make_node(OpKind::Size, 1), {&e})), (std::vector<int64_t>{0}));
}

TEST(Constant, EveryValueAttribute) {
  Node n = make_node(OpKind::Constant, 0);
  Tensor t = iota(DType::f16, {2, 2});
  set_attr(n, "value", t);
  Tensor y = run1(n, {});
  EXPECT_TRUE(same_bytes(y, t));
  EXPECT_NE(y.raw(), t.raw());  // a copy: consumers may write in place

  Node f = make_node(OpKind::Constant, 0);
  set_attr(f, "value_float", 2.5);
  EXPECT_EQ(run1(f, {}).dtype(), DType::f32);
  EXPECT_EQ(run1(f, {}).rank(), 0);
  Node fs = make_node(OpKind::Constant, 0);
  set_attr(fs, "value_floats", std::vector<double>{1, 2});
  EXPECT_EQ(values(run1(fs, {})), (std::vector<double>{1, 2}));
  Node i = make_node(OpKind::Constant, 0);
  set_attr(i, "value_int", int64_t{-7});
  EXPECT_EQ(ints(run1(i, {})), (std::vector<int64_t>{-7}));
  Node is = make_node(OpKind::Constant, 0);
  set_attr(is, "value_ints", std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 3});
  Tensor iy = run1(is, {});
  EXPECT_EQ(iy.dtype(), DType::i64);
  EXPECT_EQ(ints(iy), (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 3}));

  Node none = make_node(OpKind::Constant, 0);
  EXPECT_THROW(run1(none, {}), UserError);
  set_attr(i, "value_float", 1.0);  // two value attributes
  EXPECT_THROW(run1(i, {}), UserError);
}

TEST(ConstantOfShape, DefaultAndTypedValues) {
  Node n = make_node(OpKind::ConstantOfShape, 1);
  Tensor s = i64v({2, 3});
  Tensor y = run1(n, {&s});
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(values(y), std::vector<double>(6, 0.0));
  set_attr(n, "value", Tensor::from_vector(DType::i32, {1}, std::vector<int>{4}));
  Tensor z = run1(n, {&s});
  EXPECT_EQ(z.dtype(), DType::i32);
  EXPECT_EQ(values(z), std::vector<double>(6, 4.0));
  set_attr(n, "value", Tensor::from_vector(DType::f16, {1}, std::vector<float>{0.5f}));
  EXPECT_EQ(values(run1(n, {&s})), std::vector<double>(6, 0.5));
  set_attr(n, "value", Tensor::from_vector(DType::boolean, {1}, std::vector<int>{1}));
  EXPECT_EQ(values(run1(n, {&s})), std::vector<double>(6, 1.0));
  Tensor zero = i64v({0, 4});
  EXPECT_EQ(run1(n, {&zero}).numel(), 0);
  Tensor scalar_shape = Tensor::empty(DType::i64, {0});
  EXPECT_EQ(run1(n, {&scalar_shape}).rank(), 0);
  Tensor neg = i64v({-1});
  EXPECT_THROW(run1(n, {&neg}), UserError);
  Tensor huge = i64v({int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_THROW(run1(n, {&huge}), UserError);
}

Tensor range(DType t, double start, double limit, double delta) {
  Tensor s = Tensor::scalar(t, start), l = Tensor::scalar(t, limit), d = Tensor::scalar(t, delta);
  return run1(make_node(OpKind::Range, 3), {&s, &l, &d});
}

TEST(Range, IntsFloatsAndCounts) {
  EXPECT_EQ(values(range(DType::i64, 1, 5, 2)), (std::vector<double>{1, 3}));
  EXPECT_EQ(values(range(DType::i32, 10, 4, -3)), (std::vector<double>{10, 7}));
  EXPECT_EQ(values(range(DType::f32, 1, 2, 0.25)), (std::vector<double>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(range(DType::f64, 0, 1, 0.1).numel(), 10);
  EXPECT_EQ(range(DType::f32, 5, 1, 1).numel(), 0);  // max(ceil(-4), 0)
  EXPECT_EQ(range(DType::i64, 3, 3, 1).numel(), 0);
  Tensor y = range(DType::f64, 0, 1, 0.3);
  EXPECT_EQ(y.numel(), 4);
  EXPECT_NEAR(y.as_double(3), 0.9, 1e-15);
}

TEST(Range, ExtremeIntegers) {
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  Tensor s = Tensor::scalar(DType::i64, lo), l = Tensor::scalar(DType::i64, hi),
         d = Tensor::scalar(DType::i64, int64_t{1} << 62);
  Tensor y = run1(make_node(OpKind::Range, 3), {&s, &l, &d});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{lo, lo + (int64_t{1} << 62), 0, int64_t{1} << 62}));
}

TEST(Range, BadDeltasAreUserErrors) {
  EXPECT_THROW(range(DType::i64, 0, 5, 0), UserError);
  EXPECT_THROW(range(DType::f32, 0, 5, 0), UserError);
  EXPECT_THROW(range(DType::f64, 0, 1e300, 1e-300), UserError);  // absurd count
  EXPECT_THROW(range(DType::f32, 0, NAN, 1), UserError);
  EXPECT_THROW(range(DType::f64, 0, INFINITY, 1), UserError);
  Tensor s = Tensor::scalar(DType::i64, int64_t{0}), l = Tensor::scalar(DType::i32, 5), d = Tensor::scalar(DType::i64, int64_t{1});
  EXPECT_THROW(run1(make_node(OpKind::Range, 3), {&s, &l, &d}), UserError);  // mixed dtypes
}

}  // namespace
}  // namespace kiln::shape_test
