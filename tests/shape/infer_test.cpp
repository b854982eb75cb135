// Shape inference with symbolic dims and unknown values (what the compiler sees for exported models).
#include <limits>

#include "shape_test_util.h"

namespace kiln::shape_test {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
const TensorType kBSH{DType::f32, {S("batch"), S("seq"), F(768)}};
TensorType i64_vec(int64_t n) { return TensorType{DType::i64, {F(n)}}; }

TEST(InferReshape, ZerosCopySymbols) {
  Tensor target = i64v({0, 0, 12, 64});
  auto out = infer(make_node(OpKind::Reshape, 2), {kBSH, type_of(target)}, {nullptr, &target});
  EXPECT_EQ(out[0].shape, (Shape{S("batch"), S("seq"), F(12), F(64)}));
}

TEST(InferReshape, MinusOneCancelsSymbols) {
  Node n = make_node(OpKind::Reshape, 2);
  Tensor t1 = i64v({0, 0, 12, -1});
  EXPECT_EQ(infer(n, {kBSH, type_of(t1)}, {nullptr, &t1})[0].shape, (Shape{S("batch"), S("seq"), F(12), F(64)}));
  TensorType heads{DType::f32, {S("batch"), S("seq"), F(12), F(64)}};
  Tensor t2 = i64v({0, -1, 768});  // the -1 is exactly "seq"
  EXPECT_EQ(infer(n, {heads, type_of(t2)}, {nullptr, &t2})[0].shape, (Shape{S("batch"), S("seq"), F(768)}));
  Tensor t3 = i64v({-1, 768});  // batch*seq: not one symbol, so a fresh one (hinted when both are)
  TensorType hinted{DType::f32, {Dim::sym("batch", 2), Dim::sym("seq", 128), F(768)}};
  EXPECT_EQ(infer(n, {hinted, type_of(t3)}, {nullptr, &t3})[0].shape[0].hint, 256);
  TensorType empty{DType::f32, {S("batch"), F(0), F(4)}};
  Tensor t7 = i64v({-1, 2});
  EXPECT_EQ(infer(n, {empty, type_of(t7)}, {nullptr, &t7})[0].shape, (Shape{F(0), F(2)}));
  Shape s3 = infer(n, {kBSH, type_of(t3)}, {nullptr, &t3})[0].shape;
  ASSERT_EQ(s3.size(), 2u);
  EXPECT_FALSE(s3[0].is_static());
  EXPECT_NE(s3[0].symbol, "batch");
  EXPECT_NE(s3[0].symbol, "seq");
  EXPECT_EQ(s3[1], F(768));
  Tensor t4 = i64v({0, 12, -1});  // seq * 64: a fresh symbol
  Shape s4 = infer(n, {kBSH, type_of(t4)}, {nullptr, &t4})[0].shape;
  EXPECT_EQ(s4[0], S("batch"));
  EXPECT_FALSE(s4[2].is_static());
  EXPECT_NE(s4[2].symbol, "seq");
  Tensor t6 = i64v({0, 0, 7, -1});  // the symbols cancel and 768 does not divide by 7: provably wrong
  EXPECT_THROW(infer(n, {kBSH, type_of(t6)}, {nullptr, &t6}), UserError);
  TensorType fixed{DType::f32, {F(2), F(3), F(4)}};
  Tensor t5 = i64v({-1, 5});
  EXPECT_THROW(infer(n, {fixed, type_of(t5)}, {nullptr, &t5}), UserError);
}

TEST(InferReshape, UnknownTargetGivesFreshDims) {
  Node n = make_node(OpKind::Reshape, 2);
  auto out = infer(n, {kBSH, i64_vec(4)});
  ASSERT_EQ(out[0].shape.size(), 4u);
  for (const Dim& d : out[0].shape) EXPECT_FALSE(d.is_static());
  EXPECT_NE(out[0].shape[0].symbol, out[0].shape[1].symbol);
  TensorType unknown_len{DType::i64, {S("n")}};
  EXPECT_THROW(infer(n, {kBSH, unknown_len}), UserError);
}

TEST(InferShape, SymbolicInputGivesRankLengthVector) {
  auto out = infer(make_node(OpKind::Shape, 1), {kBSH});
  EXPECT_EQ(out[0], (TensorType{DType::i64, {F(3)}}));
  Node n = make_node(OpKind::Shape, 1);
  set_attr(n, "start", int64_t{-2});
  EXPECT_EQ(infer(n, {kBSH})[0].shape, (Shape{F(2)}));
}

TEST(InferTranspose, KeepsSymbols) {
  Node n = make_node(OpKind::Transpose, 1);
  set_attr(n, "perm", std::vector<int64_t>{0, 2, 1, 3});
  TensorType x{DType::f16, {S("batch"), S("seq"), F(12), F(64)}};
  auto out = infer(n, {x});
  EXPECT_EQ(out[0], (TensorType{DType::f16, {S("batch"), F(12), S("seq"), F(64)}}));
}

TEST(InferSqueezeUnsqueeze, KeepSymbols) {
  Tensor axes = i64v({1, -1});
  auto u = infer(make_node(OpKind::Unsqueeze, 2), {kBSH, type_of(axes)}, {nullptr, &axes});
  EXPECT_EQ(u[0].shape, (Shape{S("batch"), F(1), S("seq"), F(768), F(1)}));
  TensorType x{DType::f32, {S("batch"), F(1), S("seq")}};
  Tensor a1 = i64v({1});
  EXPECT_EQ(infer(make_node(OpKind::Squeeze, 2), {x, type_of(a1)}, {nullptr, &a1})[0].shape,
            (Shape{S("batch"), S("seq")}));
  EXPECT_EQ(infer(make_node(OpKind::Squeeze, 1), {x})[0].shape, (Shape{S("batch"), S("seq")}));
  auto unknown = infer(make_node(OpKind::Unsqueeze, 2), {kBSH, i64_vec(2)});
  EXPECT_EQ(unknown[0].shape.size(), 5u);
}

TEST(InferConcat, SumsAndPinsSymbols) {
  Node n = make_node(OpKind::Concat, 2);
  set_attr(n, "axis", int64_t{1});
  TensorType a{DType::f32, {S("batch"), F(3)}}, b{DType::f32, {S("batch"), F(5)}};
  EXPECT_EQ(infer(n, {a, b})[0].shape, (Shape{S("batch"), F(8)}));
  TensorType c{DType::f32, {S("batch"), S("past")}}, d{DType::f32, {F(2), F(0)}};
  EXPECT_EQ(infer(n, {c, d})[0].shape, (Shape{F(2), S("past")}));
  TensorType e{DType::f32, {S("batch"), S("past")}}, f{DType::f32, {S("batch"), F(1)}};
  Shape s = infer(n, {e, f})[0].shape;
  EXPECT_EQ(s[0], S("batch"));
  EXPECT_FALSE(s[1].is_static());
  EXPECT_NE(s[1].symbol, "past");
  // The exporter's shape vector: Concat of i64[1] pieces.
  Node v = make_node(OpKind::Concat, 3);
  set_attr(v, "axis", int64_t{0});
  EXPECT_EQ(infer(v, {i64_vec(1), i64_vec(1), i64_vec(2)})[0].shape, (Shape{F(4)}));
}

TEST(InferSlice, SymbolsSurviveFullSlices) {
  Node n = make_node(OpKind::Slice, 4);
  Tensor s = i64v({0}), e = i64v({kMax}), a = i64v({1}), e2 = i64v({5}), s2 = i64v({-1});
  auto full = infer(n, {kBSH, type_of(s), type_of(e), type_of(a)}, {nullptr, &s, &e, &a});
  EXPECT_EQ(full[0].shape, kBSH.shape);
  auto part = infer(n, {kBSH, type_of(s), type_of(e2), type_of(a)}, {nullptr, &s, &e2, &a});
  EXPECT_EQ(part[0].shape[0], S("batch"));
  EXPECT_FALSE(part[0].shape[1].is_static());
  EXPECT_NE(part[0].shape[1].symbol, "seq");
  Tensor a2 = i64v({-1});
  auto fixed = infer(n, {kBSH, type_of(s2), type_of(e), type_of(a2)}, {nullptr, &s2, &e, &a2});
  EXPECT_EQ(fixed[0].shape, (Shape{S("batch"), S("seq"), F(1)}));
  auto unknown = infer(n, {kBSH, i64_vec(1), i64_vec(1), type_of(a)}, {nullptr, nullptr, nullptr, &a});
  EXPECT_EQ(unknown[0].shape[0], S("batch"));
  EXPECT_EQ(unknown[0].shape[2], F(768));
  EXPECT_FALSE(unknown[0].shape[1].is_static());
}

TEST(InferSplit, SymbolsOutsideTheAxis) {
  Node n = make_node(OpKind::Split, 2, 3);
  set_attr(n, "axis", int64_t{-1});
  Tensor split = i64v({256, 256, 256});
  auto out = infer(n, {kBSH, type_of(split)}, {nullptr, &split});
  ASSERT_EQ(out.size(), 3u);
  for (const auto& t : out) EXPECT_EQ(t.shape, (Shape{S("batch"), S("seq"), F(256)}));
  Node eq = make_node(OpKind::Split, 1, 2);
  set_attr(eq, "axis", int64_t{1});
  auto halves = infer(eq, {kBSH});
  EXPECT_FALSE(halves[0].shape[1].is_static());
  EXPECT_EQ(halves[1].shape[2], F(768));
}

TEST(InferGather, ShapeVectorAndEmbedding) {
  Node n = make_node(OpKind::Gather, 2);
  Tensor idx = Tensor::scalar(DType::i64, int64_t{0});
  EXPECT_EQ(infer(n, {i64_vec(3), type_of(idx)}, {nullptr, &idx})[0].shape, Shape{});
  TensorType table{DType::f32, {F(50257), F(768)}};
  TensorType ids{DType::i64, {S("batch"), S("seq")}};
  EXPECT_EQ(infer(n, {table, ids})[0].shape, (Shape{S("batch"), S("seq"), F(768)}));
  Node e = make_node(OpKind::GatherElements, 2);
  EXPECT_EQ(infer(e, {kBSH, TensorType{DType::i64, {S("batch"), S("seq"), F(1)}}})[0].shape,
            (Shape{S("batch"), S("seq"), F(1)}));
}

TEST(InferExpand, BothDirectionsWithSymbols) {
  Node n = make_node(OpKind::Expand, 2);
  TensorType mask{DType::boolean, {S("batch"), F(1), F(1), S("seq")}};
  Tensor t = i64v({1, 12, 1, 1});
  EXPECT_EQ(infer(n, {mask, type_of(t)}, {nullptr, &t})[0].shape, (Shape{S("batch"), F(12), F(1), S("seq")}));
  TensorType one{DType::f32, {S("n"), F(4)}};
  Tensor t2 = i64v({3, 5, 1});  // the symbol broadcast against 5 must end up 5
  EXPECT_EQ(infer(n, {one, type_of(t2)}, {nullptr, &t2})[0].shape, (Shape{F(3), F(5), F(4)}));
  auto unknown = infer(n, {TensorType{DType::f32, {F(1), F(4)}}, i64_vec(3)});
  EXPECT_EQ(unknown[0].shape.size(), 3u);
  EXPECT_EQ(unknown[0].shape[2], F(4));
  EXPECT_FALSE(unknown[0].shape[1].is_static());
}

TEST(InferMisc, FlattenTilePadRangeConstantOfShape) {
  Node f = make_node(OpKind::Flatten, 1);
  set_attr(f, "axis", int64_t{2});
  TensorType x{DType::f32, {S("batch"), F(1), F(3), F(4)}};
  EXPECT_EQ(infer(f, {x})[0].shape, (Shape{S("batch"), F(12)}));
  Tensor reps = i64v({1, 2, 1, 1});
  EXPECT_EQ(infer(make_node(OpKind::Tile, 2), {x, type_of(reps)}, {nullptr, &reps})[0].shape,
            (Shape{S("batch"), F(2), F(3), F(4)}));
  Node p = make_node(OpKind::Pad, 2);
  Tensor pads = i64v({0, 0, 1, 1, 0, 0, 1, 1});
  EXPECT_EQ(infer(p, {x, type_of(pads)}, {nullptr, &pads})[0].shape, (Shape{S("batch"), F(1), F(5), F(6)}));
  TensorType scalar{DType::i64, {}};
  auto r = infer(make_node(OpKind::Range, 3), {scalar, scalar, scalar});
  EXPECT_FALSE(r[0].shape[0].is_static());
  auto c = infer(make_node(OpKind::ConstantOfShape, 1), {i64_vec(2)});
  EXPECT_EQ(c[0].dtype, DType::f32);
  EXPECT_EQ(c[0].shape.size(), 2u);
}

}  // namespace
}  // namespace kiln::shape_test
