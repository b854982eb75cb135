// Unique against numpy.unique's results written out by hand: flattened and along an axis (the last,
// a middle one, a negative one), sorted and in order of first occurrence, NaN (equal to itself, sorted
// last), integers past 2^53 that a double would merge, and the optional outputs left out.
#include <cstdint>

#include "shape_test_util.h"

namespace kiln::shape_test {
namespace {

TEST(Unique, FlatSortedAndInFirstOccurrenceOrder) {
  Tensor x = f32({2, 3}, {2, 1, 1, 3, 4, 3});
  Node n = make_node(OpKind::Unique, 1, 4);
  std::vector<Tensor> out = run(n, {&x});
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 0, 3, 4}));
  EXPECT_EQ(ints(out[2]), (std::vector<int64_t>{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(ints(out[3]), (std::vector<int64_t>{2, 1, 2, 1}));
  set_attr(n, "sorted", int64_t{0});
  out = run(n, {&x});
  EXPECT_EQ(values(out[0]), (std::vector<double>{2, 1, 3, 4}));
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(ints(out[2]), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(ints(out[3]), (std::vector<int64_t>{1, 2, 2, 1}));
  // The reference path gives the same.
  std::vector<Tensor> ref = run(n, {&x}, /*reference=*/true);
  EXPECT_EQ(ints(ref[2]), ints(out[2]));
}

TEST(Unique, SlicesAlongAnAxis) {
  // [3, 2, 2]: along axis 1 the slices x[:, 0, :] and x[:, 1, :] are equal; along -1 they differ.
  Tensor x = f32({3, 2, 2}, {1, 0, 1, 0, 5, 6, 5, 6, 7, 7, 7, 7});
  Node n = make_node(OpKind::Unique, 1, 4);
  set_attr(n, "axis", int64_t{1});
  std::vector<Tensor> out = run(n, {&x});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{1, 0, 5, 6, 7, 7}));
  EXPECT_EQ(ints(out[2]), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(ints(out[3]), (std::vector<int64_t>{2}));
  set_attr(n, "axis", int64_t{-1});
  out = run(n, {&x});
  // Columns (1,5,7) and (0,6,7): sorted lexicographically, (0,6,7) first.
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{0, 1, 0, 1, 6, 5, 6, 5, 7, 7, 7, 7}));
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ints(out[2]), (std::vector<int64_t>{1, 0}));
  Tensor scalar = f32({}, {1});
  EXPECT_THROW(run(n, {&scalar}), UserError);
  set_attr(n, "axis", int64_t{3});
  EXPECT_THROW(run(n, {&x}), UserError);
}

TEST(Unique, NaNIsOneValueAndWideIntegersStayApart) {
  Tensor x = f32({5}, {NAN, 1, NAN, -INFINITY, 1});
  Node n = make_node(OpKind::Unique, 1, 4);
  std::vector<Tensor> out = run(n, {&x});
  ASSERT_EQ(out[0].numel(), 3);
  EXPECT_EQ(out[0].as_double(0), -INFINITY);
  EXPECT_EQ(out[0].as_double(1), 1);
  EXPECT_TRUE(std::isnan(out[0].as_double(2)));
  EXPECT_EQ(ints(out[3]), (std::vector<int64_t>{1, 2, 2}));
  // 2^53 and 2^53 + 1 are one double but two int64 values.
  const int64_t big = int64_t{1} << 53;
  Tensor wide = i64({3}, {big + 1, big, big + 1});
  out = run(n, {&wide});
  EXPECT_EQ(ints(out[0]), (std::vector<int64_t>{big, big + 1}));
  // Only Y asked for.
  Node y_only = make_node(OpKind::Unique, 1, 1);
  EXPECT_EQ(ints(run1(y_only, {&wide})), (std::vector<int64_t>{big, big + 1}));
}

}  // namespace
}  // namespace kiln::shape_test
