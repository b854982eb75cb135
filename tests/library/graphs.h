// Small graphs for the library-call tests: a Linear layer with the consumers exporters emit after it,
// and ResNet's basic block.
#pragma once
#include <cmath>
#include <numbers>

#include "kiln/builder.h"
#include "passes/passes.h"

namespace kiln::library_test {

// The erf GELU of x in three exporter orderings: 0: (x * (1 + erf(x / sqrt2))) * 0.5 (BERT);
// 1: (0.5 * x) * (1 + erf(x * (1/sqrt2))); 2: x * ((erf(x / sqrt2) + 1) * 0.5). `sqrt2` lets a test
// pass a wrong constant.
inline ValueId gelu_erf(GraphBuilder& b, ValueId x, int form, double sqrt2 = std::sqrt(2.0)) {
  ValueId t = form == 1 ? b.op(OpKind::Mul, {x, b.scalar(DType::f32, 1.0 / sqrt2)})
                        : b.op(OpKind::Div, {x, b.scalar(DType::f32, sqrt2)});
  ValueId e = b.op(OpKind::Erf, {t});
  ValueId one = b.scalar(DType::f32, 1.0), half = b.scalar(DType::f32, 0.5);
  if (form == 0) return b.op(OpKind::Mul, {b.op(OpKind::Mul, {x, b.op(OpKind::Add, {e, one})}), half});
  if (form == 1) return b.op(OpKind::Mul, {b.op(OpKind::Mul, {half, x}), b.op(OpKind::Add, {one, e})});
  return b.op(OpKind::Mul, {x, b.op(OpKind::Mul, {b.op(OpKind::Add, {e, one}), half})});
}

// GPT-2's tanh GELU: (x * 0.5) * (1 + tanh((x + 0.044715 * x^3) * sqrt(2/pi))).
inline ValueId gelu_tanh(GraphBuilder& b, ValueId x) {
  ValueId h = b.op(OpKind::Mul, {x, b.scalar(DType::f32, 0.5)});
  ValueId cube = b.op(OpKind::Pow, {x, b.scalar(DType::f32, 3.0)});
  ValueId s = b.op(OpKind::Add, {x, b.op(OpKind::Mul, {cube, b.scalar(DType::f32, 0.044715)})});
  ValueId t = b.op(OpKind::Tanh, {b.op(OpKind::Mul, {s, b.scalar(DType::f32, std::sqrt(2.0 / std::numbers::pi))})});
  return b.op(OpKind::Mul, {h, b.op(OpKind::Add, {t, b.scalar(DType::f32, 1.0)})});
}

// silu: Mul(x, Sigmoid(x)); hard_swish: HardSwish as the decompose pass writes it.
enum class Act { none, relu, tanh, sigmoid, gelu0, gelu1, gelu2, gelu_tanh, silu, hard_swish };

inline ValueId activation(GraphBuilder& b, ValueId x, Act a) {
  switch (a) {
    case Act::none: return x;
    case Act::relu: return b.op(OpKind::Relu, {x});
    case Act::tanh: return b.op(OpKind::Tanh, {x});
    case Act::sigmoid: return b.op(OpKind::Sigmoid, {x});
    case Act::gelu0: return gelu_erf(b, x, 0);
    case Act::gelu1: return gelu_erf(b, x, 1);
    case Act::gelu2: return gelu_erf(b, x, 2);
    case Act::gelu_tanh: return gelu_tanh(b, x);
    case Act::silu: return b.op(OpKind::Mul, {x, b.op(OpKind::Sigmoid, {x})});
    case Act::hard_swish: {
      auto scalar = [&](float v) { return b.constant(Tensor::scalar(DType::f32, v)); };
      ValueId h = b.op(OpKind::Add, {b.op(OpKind::Mul, {x, scalar(1.f / 6.f)}), scalar(0.5f)});
      return b.op(OpKind::Mul, {x, b.op(OpKind::Max, {b.op(OpKind::Min, {h, scalar(1.f)}), scalar(0.f)})});
    }
  }
  return x;
}

// x [a_dims..] @ W [K, N] (+ bias [N], bias first as exporters emit it) -> act -> (+ residual) -> (relu).
struct LinearSpec {
  std::vector<int64_t> a_dims{3, 8};  // last dim is K
  int64_t N = 6;
  bool bias = true;
  Act act = Act::gelu0;
  bool residual = true;
  bool relu_after = false;
  uint64_t seed = 1;
};

inline Graph linear_graph(const LinearSpec& s) {
  GraphBuilder b("linear");
  int64_t K = s.a_dims.back();
  ValueId x = b.input("x", DType::f32, s.a_dims);
  ValueId w = b.constant("w", random_uniform(DType::f32, {K, s.N}, -1.0, 1.0, s.seed));
  ValueId y = b.op(OpKind::MatMul, {x, w});
  if (s.bias) y = b.op(OpKind::Add, {b.constant("bias", random_uniform(DType::f32, {s.N}, -1.0, 1.0, s.seed + 1)), y});
  y = activation(b, y, s.act);
  if (s.residual) {
    std::vector<int64_t> out = s.a_dims;
    out.back() = s.N;
    y = b.op(OpKind::Add, {y, b.input("r", DType::f32, out)});
  }
  if (s.relu_after) y = b.op(OpKind::Relu, {y});
  b.output(y, "y");
  Graph g = b.build();
  infer_shapes(g, Options{});
  return g;
}

// ResNet's basic block: relu(bn(conv(relu(bn(conv(x))))) + x), 3x3 convs with pads 1.
inline Graph basic_block(int64_t n, int64_t c, int64_t hw, uint64_t seed) {
  GraphBuilder b("block");
  ValueId x = b.input("x", DType::f32, {n, c, hw, hw});
  auto conv_bn = [&](ValueId in, uint64_t s) {
    ValueId w = b.constant(random_uniform(DType::f32, {c, c, 3, 3}, -0.3, 0.3, s));
    ValueId y = b.op(OpKind::Conv, {in, w}, {{"pads", {1, 1, 1, 1}}, {"kernel_shape", {3, 3}}});
    return b.op(OpKind::BatchNormalization,
                {y, b.constant(random_uniform(DType::f32, {c}, 0.5, 1.5, s + 1)),
                 b.constant(random_uniform(DType::f32, {c}, -0.5, 0.5, s + 2)),
                 b.constant(random_uniform(DType::f32, {c}, -0.5, 0.5, s + 3)),
                 b.constant(random_uniform(DType::f32, {c}, 0.5, 1.5, s + 4))},
                {{"epsilon", 1e-5}});
  };
  ValueId h = b.op(OpKind::Relu, {conv_bn(x, seed)});
  ValueId y = b.op(OpKind::Relu, {b.op(OpKind::Add, {conv_bn(h, seed + 10), x})});
  b.output(y, "y");
  Graph g = b.build();
  infer_shapes(g, Options{});
  return g;
}

}  // namespace kiln::library_test
