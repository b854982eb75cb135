#include "runtime/demo_model.h"

#include <cmath>

#include "kiln/builder.h"

namespace kiln {
namespace {

constexpr int64_t kVocab = 1000, kHidden = 64, kHeads = 4, kFfn = 256, kLayers = 2, kMaxSeq = 512;

struct Demo {
  GraphBuilder b{"demo_transformer"};
  uint64_t seed = 1;

  ValueId weight(std::vector<int64_t> shape, double scale) {
    return b.constant(random_normal(DType::f32, std::move(shape), 0.0, scale, seed++));
  }
  ValueId linear(ValueId x, int64_t in, int64_t out) {
    ValueId y = b.op(OpKind::MatMul, {x, weight({in, out}, 1.0 / std::sqrt(static_cast<double>(in)))});
    return b.op(OpKind::Add, {y, weight({out}, 0.02)});
  }
  ValueId layer_norm(ValueId x) {
    ValueId scale = b.constant(Tensor::from_vector<float>(DType::f32, {kHidden}, std::vector<float>(kHidden, 1.0f)));
    ValueId bias = b.constant(Tensor::empty(DType::f32, {kHidden}));
    return b.op(OpKind::LayerNormalization, {x, scale, bias}, {{"axis", -1}, {"epsilon", 1e-5}});
  }
  ValueId gelu(ValueId x) {  // 0.5 * x * (1 + erf(x / sqrt(2))), as exporters emit it
    ValueId e = b.op(OpKind::Erf, {b.op(OpKind::Div, {x, b.scalar(DType::f32, std::sqrt(2.0))})});
    ValueId one_plus = b.op(OpKind::Add, {e, b.scalar(DType::f32, 1.0)});
    return b.op(OpKind::Mul, {b.op(OpKind::Mul, {x, one_plus}), b.scalar(DType::f32, 0.5)});
  }
  // [B,S,H] -> [B,heads,S,dh] (perm 0,2,1,3) or [B,heads,dh,S] (perm 0,2,3,1)
  ValueId split_heads(ValueId x, std::vector<int64_t> perm) {
    ValueId r = b.op(OpKind::Reshape, {x, b.ints({0, 0, kHeads, kHidden / kHeads})});
    return b.op(OpKind::Transpose, {r}, {{"perm", perm}});
  }
  ValueId attention(ValueId x) {
    ValueId q = split_heads(linear(x, kHidden, kHidden), {0, 2, 1, 3});
    ValueId k = split_heads(linear(x, kHidden, kHidden), {0, 2, 3, 1});
    ValueId v = split_heads(linear(x, kHidden, kHidden), {0, 2, 1, 3});
    ValueId scores = b.op(OpKind::MatMul, {q, k});
    scores = b.op(OpKind::Mul, {scores, b.scalar(DType::f32, 1.0 / std::sqrt(double(kHidden / kHeads)))});
    ValueId probs = b.op(OpKind::Softmax, {scores}, {{"axis", -1}});
    ValueId ctx = b.op(OpKind::Transpose, {b.op(OpKind::MatMul, {probs, v})}, {{"perm", {0, 2, 1, 3}}});
    ctx = b.op(OpKind::Reshape, {ctx, b.ints({0, 0, kHidden})});
    return linear(ctx, kHidden, kHidden);
  }
};

}  // namespace

Graph demo_transformer() {
  Demo d;
  GraphBuilder& b = d.b;
  ValueId ids = b.input("input_ids", DType::i64, Shape{Dim::sym("batch", 1), Dim::sym("seq", 32)});
  // Token embedding plus position embedding gathered by Range(0, seq): the Shape -> Gather -> Range
  // chain folds to a constant once seq is known.
  ValueId tokens = b.op(OpKind::Gather, {d.weight({kVocab, kHidden}, 0.02), ids}, {{"axis", 0}});
  ValueId seq = b.op(OpKind::Gather, {b.op(OpKind::Shape, {ids}), b.scalar(DType::i64, 1)}, {{"axis", 0}});
  ValueId positions = b.op(OpKind::Range, {b.scalar(DType::i64, 0), seq, b.scalar(DType::i64, 1)});
  ValueId x = b.op(OpKind::Add, {tokens, b.op(OpKind::Gather, {d.weight({kMaxSeq, kHidden}, 0.02), positions})});
  for (int64_t l = 0; l < kLayers; ++l) {
    x = b.op(OpKind::Add, {x, d.attention(d.layer_norm(x))});
    x = b.op(OpKind::Add, {x, d.linear(d.gelu(d.linear(d.layer_norm(x), kHidden, kFfn)), kFfn, kHidden)});
  }
  b.output(d.linear(d.layer_norm(x), kHidden, kVocab), "logits");
  return b.build();
}

}  // namespace kiln
