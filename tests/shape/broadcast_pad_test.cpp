// Expand, Tile, Pad, Trilu: hand-checked semantics.
#include <limits>

#include "shape_test_util.h"

namespace kiln::shape_test {
namespace {

Tensor expand(const Tensor& x, std::vector<int64_t> shape) {
  Tensor s = i64v(shape);
  return run1(make_node(OpKind::Expand, 2), {&x, &s});
}

TEST(Expand, BroadcastsBothWays) {
  Tensor col = f32({3, 1}, {1, 2, 3});
  Tensor y = expand(col, {2, 1, 4});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(values(y)[4], 2.0);
  EXPECT_EQ(values(y)[12], 1.0);
  Tensor row = f32({1, 4}, {1, 2, 3, 4});
  Tensor z = expand(row, {3, 1});  // the target's 1 keeps the input's 4
  EXPECT_EQ(z.shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(values(z)[11], 4.0);
  Tensor m = iota(DType::boolean, {2, 3});
  EXPECT_EQ(expand(m, {1}).shape(), (std::vector<int64_t>{2, 3}));  // smaller target rank
  EXPECT_TRUE(same_bytes(expand(m, {3}), m));
  EXPECT_THROW(expand(m, {4}), UserError);
  EXPECT_THROW(expand(m, {-1}), UserError);
}

TEST(Expand, ZeroSizeAndScalars) {
  Tensor e = Tensor::empty(DType::f32, {0, 1});
  EXPECT_EQ(expand(e, {1, 5}).shape(), (std::vector<int64_t>{0, 5}));
  Tensor one = f32({1}, {7});
  EXPECT_EQ(expand(one, {0}).shape(), (std::vector<int64_t>{0}));
  Tensor s = Tensor::scalar(DType::f16, 1.5f);
  Tensor y = expand(s, {2, 2});
  EXPECT_EQ(y.dtype(), DType::f16);
  EXPECT_EQ(values(y), (std::vector<double>{1.5, 1.5, 1.5, 1.5}));
}

TEST(Tile, RepeatsEachAxis) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  Tensor r = i64v({2, 3});
  Tensor y = run1(make_node(OpKind::Tile, 2), {&x, &r});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(values(y), (std::vector<double>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,
                                            1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  Tensor zero = i64v({0, 1});
  EXPECT_EQ(run1(make_node(OpKind::Tile, 2), {&x, &zero}).shape(), (std::vector<int64_t>{0, 2}));
  Tensor short_r = i64v({2});
  EXPECT_THROW(run1(make_node(OpKind::Tile, 2), {&x, &short_r}), UserError);
  Tensor neg = i64v({1, -1});
  EXPECT_THROW(run1(make_node(OpKind::Tile, 2), {&x, &neg}), UserError);
}

Tensor pad(const Tensor& x, std::vector<int64_t> pads, const char* mode, const Tensor* value = nullptr,
           std::vector<int64_t> axes = {}) {
  Node n = make_node(OpKind::Pad, axes.empty() ? 3 : 4);
  set_attr(n, "mode", std::string(mode));
  Tensor p = i64v(pads), a = i64v(axes);
  std::vector<const Tensor*> in{&x, &p, value};
  if (!value) n.inputs[2] = kNoValue;
  if (!axes.empty()) in.push_back(&a);
  return run1(n, in);
}

TEST(Pad, ConstantWithValueAndNegativePads) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  Tensor nine = Tensor::scalar(DType::f32, 9.0f);
  Tensor y = pad(x, {1, 0, 0, 1}, "constant", &nine);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{9, 9, 9, 1, 2, 9, 3, 4, 9}));
  Tensor v = f32({4}, {1, 2, 3, 4});
  EXPECT_EQ(values(pad(v, {-1, 1}, "constant")), (std::vector<double>{2, 3, 4, 0}));
  EXPECT_EQ(pad(v, {-2, -2}, "constant").numel(), 0);
  EXPECT_THROW(pad(v, {-3, -2}, "constant"), UserError);
  EXPECT_THROW(pad(v, {1}, "constant"), UserError);
  EXPECT_THROW(pad(v, {1, 1}, "mirror"), UserError);
}

TEST(Pad, ReflectEdgeWrap) {
  Tensor v = f32({4}, {1, 2, 3, 4});
  EXPECT_EQ(values(pad(v, {2, 2}, "reflect")), (std::vector<double>{3, 2, 1, 2, 3, 4, 3, 2}));
  Tensor w = f32({3}, {1, 2, 3});
  EXPECT_EQ(values(pad(w, {4, 0}, "reflect")), (std::vector<double>{1, 2, 3, 2, 1, 2, 3}));  // numpy repeats
  EXPECT_EQ(values(pad(w, {2, 1}, "edge")), (std::vector<double>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(values(pad(w, {1, 2}, "wrap")), (std::vector<double>{3, 1, 2, 3, 1, 2}));
  Tensor e = Tensor::empty(DType::f32, {0});
  EXPECT_THROW(pad(e, {1, 0}, "edge"), UserError);
  EXPECT_EQ(values(pad(e, {1, 1}, "constant")), (std::vector<double>{0, 0}));
}

TEST(Pad, AxesInputAndHalfConstant) {
  Tensor x = iota(DType::f16, {2, 3});
  Tensor c = Tensor::scalar(DType::f16, -1.0f);
  Tensor y = pad(x, {1, 1}, "constant", &c, {-1});
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(y.dtype(), DType::f16);
  EXPECT_EQ(values(y), (std::vector<double>{-1, 0, 1, 2, -1, -1, 3, 4, 5, -1}));
  Tensor r = pad(iota(DType::i64, {2, 3}), {0, 1, 0, 1}, "reflect");
  EXPECT_EQ(values(r), (std::vector<double>{1, 0, 1, 2, 1, 4, 3, 4, 5, 4}));
}

Tensor trilu(const Tensor& x, bool upper, std::optional<int64_t> k) {
  Node n = make_node(OpKind::Trilu, k ? 2 : 1);
  set_attr(n, "upper", int64_t{upper});
  Tensor kt = Tensor::scalar(DType::i64, k.value_or(0));
  return k ? run1(n, {&x, &kt}) : run1(n, {&x});
}

TEST(Trilu, UpperLowerAndK) {
  Tensor x = f32({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_EQ(values(trilu(x, true, std::nullopt)), (std::vector<double>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
  EXPECT_EQ(values(trilu(x, true, 2)), (std::vector<double>{0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}));
  EXPECT_EQ(values(trilu(x, false, std::nullopt)), (std::vector<double>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
  EXPECT_EQ(values(trilu(x, false, -1)), (std::vector<double>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  EXPECT_EQ(values(trilu(x, true, std::numeric_limits<int64_t>::min())), values(x));
  EXPECT_EQ(values(trilu(x, false, std::numeric_limits<int64_t>::max())), values(x));
  EXPECT_EQ(values(trilu(x, true, std::numeric_limits<int64_t>::max())), std::vector<double>(12, 0.0));
}

TEST(Trilu, BatchedBoolAndZeroSize) {
  Tensor b = Tensor::from_vector(DType::boolean, {2, 2, 2}, std::vector<int>(8, 1));
  EXPECT_EQ(values(trilu(b, false, std::nullopt)), (std::vector<double>{1, 0, 1, 1, 1, 0, 1, 1}));
  Tensor e = Tensor::empty(DType::f32, {0, 3});
  EXPECT_EQ(trilu(e, true, std::nullopt).shape(), (std::vector<int64_t>{0, 3}));
  Tensor v = f32({3}, {1, 2, 3});
  EXPECT_THROW(trilu(v, true, std::nullopt), UserError);
}

}  // namespace
}  // namespace kiln::shape_test
