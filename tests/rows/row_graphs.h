// Small graphs with the patterns find_row_groups recognises, shared by the group and end-to-end tests.
#pragma once
#include <cmath>

#include "kiln/graph.h"
#include "kiln/builder.h"
#include "kiln/options.h"
#include "passes/passes.h"

namespace kiln::rows_test {

inline Graph finish(GraphBuilder& b) {
  Graph g = b.build();
  infer_shapes(g, Options{});
  return g;
}

// y = Softmax (or LogSoftmax) of x over `axis`.
inline Graph softmax_graph(Shape shape, int axis = -1, bool log = false, DType dtype = DType::f32) {
  GraphBuilder b("softmax");
  ValueId x = b.input("x", dtype, std::move(shape));
  b.output(b.op(log ? OpKind::LogSoftmax : OpKind::Softmax, {x}, {{"axis", axis}}), "y");
  return finish(b);
}

// NLL's pattern: GatherElements(LogSoftmax(x [rows, w]), idx [rows, 1] (i64), axis -1).
inline Graph log_softmax_gather_graph(Dim rows, Dim w) {
  GraphBuilder b("log_softmax_gather");
  ValueId x = b.input("x", DType::f32, Shape{rows, w});
  ValueId idx = b.input("idx", DType::i64, Shape{rows, Dim::fixed(1)});
  ValueId y = b.op(OpKind::LogSoftmax, {x}, {{"axis", -1}});
  b.output(b.op(OpKind::GatherElements, {y, idx}, {{"axis", -1}}), "picked");
  return finish(b);
}

// bert's attention probabilities: Softmax(scores + Where(mask, 0, -inf)) guarded by
// Where(IsNaN(s), 0, s); scores [1, heads, seq, seq], mask [1, 1, seq, seq].
inline Graph masked_softmax_graph(int64_t heads, Dim seq) {
  GraphBuilder b("attention");
  ValueId scores = b.input("scores", DType::f32, Shape{Dim::fixed(1), Dim::fixed(heads), seq, seq});
  ValueId mask = b.input("mask", DType::boolean, Shape{Dim::fixed(1), Dim::fixed(1), seq, seq});
  ValueId bias = b.op(OpKind::Where, {mask, b.scalar(DType::f32, 0.0), b.scalar(DType::f32, -INFINITY)});
  ValueId s = b.op(OpKind::Softmax, {b.op(OpKind::Add, {scores, bias})}, {{"axis", -1}});
  ValueId guarded = b.op(OpKind::Where, {b.op(OpKind::IsNaN, {s}), b.scalar(DType::f32, 0.0), s});
  b.output(guarded, "probs");
  return finish(b);
}

// LayerNormalization(a + b) over the last dim of [rows, hidden] (bert's residual + LayerNorm).
inline Graph residual_layernorm_graph(Dim rows, int64_t hidden, bool with_bias = true) {
  GraphBuilder b("layernorm");
  ValueId x = b.input("a", DType::f32, Shape{rows, Dim::fixed(hidden)});
  ValueId y = b.input("b", DType::f32, Shape{rows, Dim::fixed(hidden)});
  ValueId scale = b.constant("gamma", random_normal(DType::f32, {hidden}, 1.0, 0.2, 7));
  std::vector<ValueId> in{b.op(OpKind::Add, {x, y}), scale};
  if (with_bias) in.push_back(b.constant("beta", random_normal(DType::f32, {hidden}, 0.0, 0.5, 8)));
  b.output(b.op(OpKind::LayerNormalization, in, {{"axis", -1}, {"epsilon", 1e-5}}), "y");
  return finish(b);
}

// LayerNormalization over the last two dims of [n, 4, 5], scale [4, 5], no bias (stash_type 11:
// an f32 node computing in f64).
inline Graph layernorm_two_axes_graph(int stash_type = 1) {
  GraphBuilder b("layernorm2");
  ValueId x = b.input("x", DType::f32, Shape{Dim::sym("n"), Dim::fixed(4), Dim::fixed(5)});
  ValueId scale = b.constant("gamma", random_normal(DType::f32, {4, 5}, 1.0, 0.2, 9));
  b.output(b.op(OpKind::LayerNormalization, {x, scale}, {{"axis", 1}, {"epsilon", 1e-3}, {"stash_type", stash_type}}),
           "y");
  return finish(b);
}

// The LayerNorm older exporters emit: ReduceMean -> Sub -> Pow(., 2) (or Mul(d, d)) -> ReduceMean ->
// Add eps -> Sqrt -> Div -> Mul gamma -> Add beta, over the last dim of x [n, hidden].
inline Graph decomposed_layernorm_graph(int64_t hidden, bool square_by_mul) {
  GraphBuilder b("layernorm_decomposed");
  ValueId x = b.input("x", DType::f32, Shape{Dim::sym("n"), Dim::fixed(hidden)});
  ValueId axes = b.ints({-1});
  ValueId mean = b.op(OpKind::ReduceMean, {x, axes}, {{"keepdims", 1}});
  ValueId d = b.op(OpKind::Sub, {x, mean});
  ValueId sq = square_by_mul ? b.op(OpKind::Mul, {d, d}) : b.op(OpKind::Pow, {d, b.scalar(DType::f32, 2.0)});
  ValueId var = b.op(OpKind::ReduceMean, {sq, axes}, {{"keepdims", 1}});
  ValueId den = b.op(OpKind::Sqrt, {b.op(OpKind::Add, {var, b.scalar(DType::f32, 1e-5)})});
  ValueId norm = b.op(OpKind::Div, {d, den});
  ValueId gamma = b.constant("gamma", random_normal(DType::f32, {hidden}, 1.0, 0.2, 11));
  ValueId beta = b.constant("beta", random_normal(DType::f32, {hidden}, 0.0, 0.5, 12));
  b.output(b.op(OpKind::Add, {b.op(OpKind::Mul, {norm, gamma}), beta}), "y");
  return finish(b);
}

// y = Reduce<op>(x, axes) with keepdims (axes omitted when empty).
inline Graph reduce_graph(OpKind op, Shape shape, std::vector<int64_t> axes, int keepdims) {
  GraphBuilder b("reduce");
  ValueId x = b.input("x", DType::f32, std::move(shape));
  std::vector<ValueId> in{x};
  if (!axes.empty()) in.push_back(b.ints(axes));
  b.output(b.op(op, in, {{"keepdims", keepdims}}), "y");
  return finish(b);
}

}  // namespace kiln::rows_test
