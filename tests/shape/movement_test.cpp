// Transpose, Concat, Split, Slice, Gather, GatherElements: hand-checked semantics.
#include <limits>

#include "shape_test_util.h"

namespace kiln::shape_test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(Transpose, DefaultReversesAndPermWorks) {
  Tensor x = iota(DType::f32, {2, 3});
  Tensor y = run1(make_node(OpKind::Transpose, 1), {&x});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(y), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Node n = make_node(OpKind::Transpose, 1);
  set_attr(n, "perm", std::vector<int64_t>{1, 0, 2});
  Tensor z = iota(DType::bf16, {2, 2, 2});
  Tensor w = run1(n, {&z});
  EXPECT_EQ(w.dtype(), DType::bf16);
  EXPECT_EQ(values(w), (std::vector<double>{0, 1, 4, 5, 2, 3, 6, 7}));
  set_attr(n, "perm", std::vector<int64_t>{0, 0, 1});
  EXPECT_THROW(run1(n, {&z}), UserError);
  set_attr(n, "perm", std::vector<int64_t>{0, 1});
  EXPECT_THROW(run1(n, {&z}), UserError);
}

TEST(Transpose, ZeroSizeAndScalar) {
  Tensor x = Tensor::empty(DType::f32, {0, 3});
  EXPECT_EQ(run1(make_node(OpKind::Transpose, 1), {&x}).shape(), (std::vector<int64_t>{3, 0}));
  Tensor s = Tensor::scalar(DType::f32, 7.0f);
  EXPECT_EQ(values(run1(make_node(OpKind::Transpose, 1), {&s})), (std::vector<double>{7}));
}

TEST(Concat, AxesAndZeroSizeInputs) {
  Tensor a = iota(DType::f32, {2, 2}), b = f32({2, 1}, {10, 11}), e = Tensor::empty(DType::f32, {2, 0});
  Node n = make_node(OpKind::Concat, 3);
  set_attr(n, "axis", int64_t{-1});
  Tensor y = run1(n, {&a, &e, &b});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{0, 1, 10, 2, 3, 11}));
  Node n0 = make_node(OpKind::Concat, 2);
  set_attr(n0, "axis", int64_t{0});
  Tensor c = iota(DType::f32, {1, 2});
  EXPECT_EQ(values(run1(n0, {&a, &c})), (std::vector<double>{0, 1, 2, 3, 0, 1}));
  EXPECT_THROW(run1(n0, {&a, &b}), UserError);  // dim 1 differs
  Tensor i = iota(DType::i64, {1, 2});
  EXPECT_THROW(run1(n0, {&a, &i}), UserError);  // dtype differs
}

TEST(Split, EqualUnevenAndExplicit) {
  Tensor x = iota(DType::f32, {2, 7});
  Node n = make_node(OpKind::Split, 1, 3);
  set_attr(n, "axis", int64_t{1});
  auto outs = run(n, {&x});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].shape(), (std::vector<int64_t>{2, 3}));  // ceil(7 / 3) = 3
  EXPECT_EQ(outs[2].shape(), (std::vector<int64_t>{2, 1}));  // the last chunk is smaller
  EXPECT_EQ(values(outs[1]), (std::vector<double>{3, 4, 5, 10, 11, 12}));
  EXPECT_EQ(values(outs[2]), (std::vector<double>{6, 13}));
  set_attr(n, "num_outputs", int64_t{3});
  EXPECT_EQ(run(n, {&x})[2].shape(), (std::vector<int64_t>{2, 1}));
  set_attr(n, "num_outputs", int64_t{2});
  EXPECT_THROW(run(n, {&x}), UserError);

  Node e = make_node(OpKind::Split, 2, 3);
  set_attr(e, "axis", int64_t{-1});
  Tensor s = i64v({2, 0, 5});
  auto parts = run(e, {&x, &s});
  EXPECT_EQ(parts[1].shape(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(values(parts[2]), (std::vector<double>{2, 3, 4, 5, 6, 9, 10, 11, 12, 13}));
  Tensor bad = i64v({2, 2, 2});
  EXPECT_THROW(run(e, {&x, &bad}), UserError);
  Tensor neg = i64v({8, -1, 0});
  EXPECT_THROW(run(e, {&x, &neg}), UserError);
}

// Runs Slice; steps need axes here (the omitted-axes case has its own test).
Tensor slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes = {},
             std::vector<int64_t> steps = {}) {
  Tensor s = i64v(starts), e = i64v(ends), a = i64v(axes), st = i64v(steps);
  std::vector<const Tensor*> in{&x, &s, &e};
  if (!axes.empty()) in.push_back(&a);
  if (!steps.empty()) in.push_back(&st);
  return run1(make_node(OpKind::Slice, in.size()), in);
}

TEST(Slice, BasicNegativeAndClamped) {
  Tensor x = iota(DType::f32, {10});
  EXPECT_EQ(values(slice(x, {2}, {5})), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(values(slice(x, {-3}, {kMax})), (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(values(slice(x, {-100}, {2})), (std::vector<double>{0, 1}));       // start clamped to 0
  EXPECT_EQ(slice(x, {20}, {30}).numel(), 0);                                  // start past the end
  EXPECT_EQ(values(slice(x, {1}, {kMax}, {0}, {4})), (std::vector<double>{1, 5, 9}));
  EXPECT_EQ(slice(x, {5}, {2}).numel(), 0);                                    // empty, not negative
}

TEST(Slice, NegativeSteps) {
  Tensor x = iota(DType::i64, {6});
  EXPECT_EQ(values(slice(x, {-1}, {kMin}, {0}, {-1})), (std::vector<double>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(values(slice(x, {kMax}, {kMin}, {0}, {-2})), (std::vector<double>{5, 3, 1}));
  EXPECT_EQ(values(slice(x, {4}, {1}, {0}, {-1})), (std::vector<double>{4, 3, 2}));
  EXPECT_EQ(values(slice(x, {100}, {-100}, {0}, {-4})), (std::vector<double>{5, 1}));
  EXPECT_EQ(slice(x, {1}, {4}, {0}, {-1}).numel(), 0);
  EXPECT_EQ(values(slice(x, {0}, {kMin}, {0}, {kMin})), (std::vector<double>{0}));  // |INT64_MIN| step
}

TEST(Slice, MultiAxisNegativeAxesAndErrors) {
  Tensor x = iota(DType::f16, {3, 4});
  Tensor y = slice(x, {1, 0}, {4, kMax}, {-1, 0}, {2, 2});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values(y), (std::vector<double>{1, 3, 9, 11}));
  EXPECT_THROW(slice(x, {0}, {1}, {0}, {0}), UserError);        // step 0
  EXPECT_THROW(slice(x, {0, 0}, {1, 1}, {1, -1}), UserError);   // duplicate axis
  EXPECT_THROW(slice(x, {0}, {1}, {2}), UserError);             // axis out of range
  EXPECT_THROW(slice(x, {0}, {1, 2}), UserError);               // lengths differ
  Tensor e = Tensor::empty(DType::f32, {0, 4});
  EXPECT_EQ(slice(e, {1}, {3}, {1}).shape(), (std::vector<int64_t>{0, 2}));
}

TEST(Slice, StepsWithoutAxes) {
  Tensor x = iota(DType::f32, {2, 5});
  Node n = make_node(OpKind::Slice, 5);
  n.inputs[3] = kNoValue;
  Tensor s = i64v({0, 4}), e = i64v({kMax, kMin}), st = i64v({1, -2});
  Tensor y = run1(n, {&x, &s, &e, nullptr, &st});
  EXPECT_EQ(values(y), (std::vector<double>{4, 2, 0, 9, 7, 5}));
}

TEST(Gather, AxesNegativeIndicesAndScalars) {
  Tensor x = iota(DType::f32, {3, 4});
  Node n = make_node(OpKind::Gather, 2);
  Tensor idx = i64({2, 2}, {0, -1, 2, 1});
  Tensor y = run1(n, {&x, &idx});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(values(y)[4], 8.0);  // row -1 == row 2
  set_attr(n, "axis", int64_t{-1});
  Tensor scalar = Tensor::scalar(DType::i32, int32_t{-4});
  Tensor z = run1(n, {&x, &scalar});
  EXPECT_EQ(z.shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(values(z), (std::vector<double>{0, 4, 8}));
}

TEST(Gather, OutOfRangeIsAUserErrorNamingTheNode) {
  Tensor x = iota(DType::f32, {3, 4});
  Node n = make_node(OpKind::Gather, 2);
  for (int64_t bad : {int64_t{3}, int64_t{-4}, kMax, kMin}) {
    Tensor idx = i64v({0, bad});
    try {
      run1(n, {&x, &idx});
      ADD_FAILURE() << "index " << bad << " accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("Gather_test"), std::string::npos) << e.what();
    }
  }
  Tensor empty_data = Tensor::empty(DType::f32, {0, 2});
  Tensor zero = i64v({0});
  EXPECT_THROW(run1(n, {&empty_data, &zero}), UserError);
  Tensor none = Tensor::empty(DType::i64, {0});
  EXPECT_EQ(run1(n, {&empty_data, &none}).shape(), (std::vector<int64_t>{0, 2}));
  Tensor fidx = f32({1}, {0});
  EXPECT_THROW(run1(n, {&x, &fidx}), UserError);
}

TEST(GatherElements, BothAxesAndBounds) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  Node n = make_node(OpKind::GatherElements, 2);
  set_attr(n, "axis", int64_t{1});
  Tensor idx = i64({2, 2}, {0, 0, 1, -2});
  EXPECT_EQ(values(run1(n, {&x, &idx})), (std::vector<double>{1, 1, 4, 3}));
  Node n0 = make_node(OpKind::GatherElements, 2);
  Tensor idx0 = i64({1, 2}, {1, 0});  // smaller than data on the other axis: allowed
  EXPECT_EQ(values(run1(n0, {&x, &idx0})), (std::vector<double>{3, 2}));
  Tensor oob = i64({2, 2}, {0, 2, 0, 0});
  EXPECT_THROW(run1(n0, {&x, &oob}), UserError);
  Tensor too_wide = i64({1, 3}, {0, 0, 0});
  EXPECT_THROW(run1(n0, {&x, &too_wide}), UserError);
  Tensor wrong_rank = i64v({0});
  EXPECT_THROW(run1(n0, {&x, &wrong_rank}), UserError);
}

}  // namespace
}  // namespace kiln::shape_test
