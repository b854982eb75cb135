// Identity, Reshape, Flatten, Squeeze, Unsqueeze: semantics and views.
#include "shape_test_util.h"

namespace kiln::shape_test {
namespace {

TEST(Identity, ReturnsAViewOfAnyDtype) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::boolean, DType::i8}) {
    Tensor x = iota(t, {2, 3});
    Tensor y = run1(make_node(OpKind::Identity, 1), {&x});
    EXPECT_EQ(y.raw(), x.raw());
    EXPECT_EQ(y.dtype(), t);
    EXPECT_TRUE(same_bytes(x, y));
  }
}

TEST(Reshape, ZeroCopiesAndMinusOneInfers) {
  Tensor x = iota(DType::f32, {2, 3, 4});
  Node n = make_node(OpKind::Reshape, 2);
  Tensor s = i64v({0, -1});
  Tensor y = run1(n, {&x, &s});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(y.raw(), x.raw());  // a view
  Tensor s2 = i64v({-1, 0, 2});
  EXPECT_EQ(run1(n, {&x, &s2}).shape(), (std::vector<int64_t>{4, 3, 2}));
  Tensor s3 = i64v({4, 6});
  EXPECT_EQ(run1(n, {&x, &s3}).shape(), (std::vector<int64_t>{4, 6}));
  Tensor s4 = i64v({24});
  EXPECT_EQ(values(run1(n, {&x, &s4}))[23], 23.0);
}

TEST(Reshape, AllowZeroMakesZeroALiteralSize) {
  Tensor x = Tensor::empty(DType::f32, {0, 3});
  Node n = make_node(OpKind::Reshape, 2);
  set_attr(n, "allowzero", int64_t{1});
  Tensor s = i64v({3, 0});
  EXPECT_EQ(run1(n, {&x, &s}).shape(), (std::vector<int64_t>{3, 0}));
  // Without allowzero the 0 copies the input dim: [0, 3] -> [0, 3] only fits a target of [0, 3].
  Node copy = make_node(OpKind::Reshape, 2);
  Tensor s2 = i64v({0, 3});
  EXPECT_EQ(run1(copy, {&x, &s2}).shape(), (std::vector<int64_t>{0, 3}));
  EXPECT_THROW(run1(copy, {&x, &s}), UserError);  // [3, copy of dim 1 = 3] has 9 elements, not 0
  // allowzero with both 0 and -1 is invalid.
  Tensor s3 = i64v({0, -1});
  EXPECT_THROW(run1(n, {&x, &s3}), UserError);
}

TEST(Reshape, BadTargetsAreUserErrors) {
  Tensor x = iota(DType::f32, {2, 3});
  Node n = make_node(OpKind::Reshape, 2);
  for (auto bad : std::vector<std::vector<int64_t>>{{4, 2}, {-1, -1}, {-2, 3}, {-1, 4}, {0, 0, 0}}) {
    Tensor s = i64v(bad);
    EXPECT_THROW(run1(n, {&x, &s}), UserError) << bad.size();
  }
  Tensor fs = f32({2}, {3, 2});  // the shape must be an integer tensor
  EXPECT_THROW(run1(n, {&x, &fs}), UserError);
}

TEST(Reshape, ZeroSizeInputWithMinusOne) {
  Tensor x = Tensor::empty(DType::f32, {0, 4});
  Node n = make_node(OpKind::Reshape, 2);
  Tensor s = i64v({-1, 2});
  EXPECT_EQ(run1(n, {&x, &s}).shape(), (std::vector<int64_t>{0, 2}));
}

TEST(Flatten, AxesIncludingNegativeAndRank) {
  Tensor x = iota(DType::f16, {2, 3, 4});
  Node n = make_node(OpKind::Flatten, 1);
  EXPECT_EQ(run1(n, {&x}).shape(), (std::vector<int64_t>{2, 12}));  // default axis 1
  set_attr(n, "axis", int64_t{0});
  EXPECT_EQ(run1(n, {&x}).shape(), (std::vector<int64_t>{1, 24}));
  set_attr(n, "axis", int64_t{3});
  EXPECT_EQ(run1(n, {&x}).shape(), (std::vector<int64_t>{24, 1}));
  set_attr(n, "axis", int64_t{-1});
  Tensor y = run1(n, {&x});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(y.dtype(), DType::f16);
  set_attr(n, "axis", int64_t{4});
  EXPECT_THROW(run1(n, {&x}), UserError);
}

TEST(Squeeze, WithAndWithoutAxes) {
  Tensor x = iota(DType::boolean, {1, 3, 1, 2});
  Node all = make_node(OpKind::Squeeze, 1);
  EXPECT_EQ(run1(all, {&x}).shape(), (std::vector<int64_t>{3, 2}));
  Node n = make_node(OpKind::Squeeze, 2);
  Tensor axes = i64v({-2});
  EXPECT_EQ(run1(n, {&x, &axes}).shape(), (std::vector<int64_t>{1, 3, 2}));
  Tensor bad = i64v({1});  // size 3 cannot be squeezed
  EXPECT_THROW(run1(n, {&x, &bad}), UserError);
  Tensor dup = i64v({0, -4});
  EXPECT_THROW(run1(n, {&x, &dup}), UserError);
  Tensor out_of_range = i64v({4});
  EXPECT_THROW(run1(n, {&x, &out_of_range}), UserError);
}

TEST(Unsqueeze, AxesAgainstOutputRank) {
  Tensor x = iota(DType::i64, {3, 4});
  Node n = make_node(OpKind::Unsqueeze, 2);
  Tensor a = i64v({0, -1});
  EXPECT_EQ(run1(n, {&x, &a}).shape(), (std::vector<int64_t>{1, 3, 4, 1}));
  Tensor b = i64v({3, 1});  // unsorted
  EXPECT_EQ(run1(n, {&x, &b}).shape(), (std::vector<int64_t>{3, 1, 4, 1}));
  Tensor scalar = Tensor::scalar(DType::f32, 5.0f);
  Tensor z = i64v({0});
  Tensor y = run1(n, {&scalar, &z});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1}));
  EXPECT_EQ(y.as_double(0), 5.0);
  Tensor bad = i64v({4});
  EXPECT_THROW(run1(n, {&x, &bad}), UserError);
  Tensor dup = i64v({1, 1});
  EXPECT_THROW(run1(n, {&x, &dup}), UserError);
}

}  // namespace
}  // namespace kiln::shape_test
