// passes/integer_matmuls.cpp as IR text in, IR text out (the DequantizeLinear arithmetic as the importer
// writes it), what it leaves alone, and the rewritten graph against the float one and an fp64 product.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>

#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln/builder.h"
#include "kiln/session.h"
#include "passes/passes.h"

namespace kiln {
namespace {

std::string rewritten(const std::string& text, int expect) {
  Graph g = parse_graph(text);
  EXPECT_EQ(integer_matmuls(g, Options{}), expect);  // before inference, as compile runs it
  infer_shapes(g, Options{});
  PrintOptions all;
  all.inline_all = true;
  std::string out = print_graph(g, all);
  EXPECT_EQ(print_graph(parse_graph(out), all), out) << "the rewritten IR does not parse back";
  return std::regex_replace(out, std::regex(" @[A-Za-z0-9_/\"]+\n"), "\n");
}

// DequantizeLinear(a, a_scale, a_zp) and DequantizeLinear(w, w_scale, w_zp) as the importer writes them,
// then their MatMul. The weight's parameters ({W_PARAMS}), the nodes that shape them ({W_SHAPE}) and the
// values its Casts read ({WZ}, {WS}) are filled in per case.
const std::string kQdq = R"(graph g(%a: u8[2,3,8]) -> (%y) {
  const %w: i8[8,4] = [1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16, 127, -128, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
  {W_PARAMS}
  const %a_scale: f32[] = [0.05]
  const %a_zp: u8[] = [128]
  %ac = Cast(%a) {to="f32"}
  %azc = Cast(%a_zp) {to="f32"}
  %as = Sub(%ac, %azc)
  %asc = Cast(%a_scale) {to="f32"}
  %am = Mul(%as, %asc)
  %adq = CastLike(%am, %a_scale)
  %wc = Cast(%w) {to="f32"}
  {W_SHAPE}
  %wzc = Cast({WZ}) {to="f32"}
  %ws = Sub(%wc, %wzc)
  %wsc = Cast({WS}) {to="f32"}
  %wm = Mul(%ws, %wsc)
  %wdq = CastLike(%wm, %w_scale)
  %y = MatMul(%adq, %wdq)
}
)";

std::string qdq(const std::string& params, const std::string& shape, bool reshaped) {
  std::string s = kQdq;
  for (auto [key, text] : {std::pair{"W_PARAMS", params}, {"W_SHAPE", shape}, {"WZ", std::string(reshaped ? "%wzr" : "%w_zp")},
                           {"WS", std::string(reshaped ? "%wsr" : "%w_scale")}})
    s = std::regex_replace(s, std::regex("\\{" + std::string(key) + "\\}"), text);
  return s;
}

const std::string kPerTensor = qdq(R"(const %w_scale: f32[] = [0.02]
  const %w_zp: i8[] = [0])",
                                   "", false);
// Per column (axis 1): the parameters reshaped to [1, N], as the importer's along-axis form.
const std::string kPerColumn = qdq(R"(const %w_scale: f32[4] = [0.02, 0.03, 0.04, 0.5]
  const %w_zp: i8[4] = [0, 0, 0, 0]
  const %axis_shape: i64[2] = [1, -1])",
                                   R"(%wzr = Reshape(%w_zp, %axis_shape)
  %wsr = Reshape(%w_scale, %axis_shape))", true);

TEST(IntegerMatmuls, APerTensorQdqProductBecomesMatMulIntegerTimesTheScales) {
  EXPECT_EQ(rewritten(kPerTensor, 1), R"(graph g(%a: u8[2,3,8]) -> (%y) {
  const %w: i8[8,4] = [1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16, 127, -128, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
  const %"y/a_zero_point": u8[] = [128]
  const %"y/scales": f32[] = [0.001]
  %"y/sums": i32[2,3,4] = MatMulInteger(%a, %w, %"y/a_zero_point")
  %"y/sums_f32": f32[2,3,4] = Cast(%"y/sums") {to="f32"}
  %y: f32[2,3,4] = Mul(%"y/sums_f32", %"y/scales")
}
)");
}

TEST(IntegerMatmuls, APerColumnWeightScaleBecomesOneScaleAColumn) {
  EXPECT_EQ(rewritten(kPerColumn, 1), R"(graph g(%a: u8[2,3,8]) -> (%y) {
  const %w: i8[8,4] = [1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16, 127, -128, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
  const %"y/a_zero_point": u8[] = [128]
  const %"y/scales": f32[4] = [0.001, 0.0015, 0.002, 0.025]
  %"y/sums": i32[2,3,4] = MatMulInteger(%a, %w, %"y/a_zero_point")
  %"y/sums_f32": f32[2,3,4] = Cast(%"y/sums") {to="f32"}
  %y: f32[2,3,4] = Mul(%"y/sums_f32", %"y/scales")
}
)");
}

TEST(IntegerMatmuls, WhatItCannotProveStaysAFloatProduct) {
  const std::string cases[] = {
      // a weight zero point that is not 0
      qdq(R"(const %w_scale: f32[] = [0.02]
  const %w_zp: i8[] = [3])",
          "", false),
      // per row of the weight (axis 0): not one scale per output column
      qdq(R"(const %w_scale: f32[8] = [1, 1, 1, 1, 1, 1, 1, 2]
  const %w_zp: i8[8] = [0, 0, 0, 0, 0, 0, 0, 0]
  const %axis_shape: i64[2] = [-1, 1])",
          "%wzr = Reshape(%w_zp, %axis_shape)\n  %wsr = Reshape(%w_scale, %axis_shape)", true),
      // an infinite scale
      qdq(R"(const %w_scale: f32[] = [inf]
  const %w_zp: i8[] = [0])",
          "", false),
      // a NaN scale
      qdq(R"(const %w_scale: f32[] = [nan]
  const %w_zp: i8[] = [0])",
          "", false),
  };
  for (const std::string& text : cases) {
    Graph g = parse_graph(text);
    EXPECT_EQ(integer_matmuls(g, Options{}), 0) << text;
  }
  // A computed weight (attention's activation x activation products stay float here).
  Graph g = parse_graph(R"(graph g(%a: u8[2,8], %b: i8[8,4]) -> (%y) {
  const %s: f32[] = [0.5]
  %ac = Cast(%a) {to="f32"}
  %am = Mul(%ac, %s)
  %bc = Cast(%b) {to="f32"}
  %bm = Mul(%bc, %s)
  %y = MatMul(%am, %bm)
}
)");
  EXPECT_EQ(integer_matmuls(g, Options{}), 0);
  // A u8 weight, and a float activation.
  for (const char* text : {R"(graph g(%a: u8[2,8]) -> (%y) {
  const %w: u8[8,2] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
  const %s: f32[] = [0.5]
  %ac = Cast(%a) {to="f32"}
  %am = Mul(%ac, %s)
  %wc = Cast(%w) {to="f32"}
  %wm = Mul(%wc, %s)
  %y = MatMul(%am, %wm)
}
)",
                           R"(graph g(%a: f32[2,8]) -> (%y) {
  const %w: i8[8,2] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
  const %s: f32[] = [0.5]
  %am = Mul(%a, %s)
  %wc = Cast(%w) {to="f32"}
  %wm = Mul(%wc, %s)
  %y = MatMul(%am, %wm)
}
)"}) {
    Graph h = parse_graph(text);
    EXPECT_EQ(integer_matmuls(h, Options{}), 0) << text;
  }
}

// A DequantizeLinear in the importer's form, built: Mul(Sub(Cast<f32>(q), Cast<f32>(zp)), Cast<f32>(scale)).
ValueId dequantize(GraphBuilder& b, ValueId q, double scale, double zero_point, DType zp_type) {
  auto f32 = [&](ValueId v) { return b.op(OpKind::Cast, {v}, {{"to", Attribute{std::string("f32")}}}); };
  ValueId shifted = b.op(OpKind::Sub, {f32(q), f32(b.scalar(zp_type, zero_point))});
  return b.op(OpKind::Mul, {shifted, f32(b.scalar(DType::f32, scale))});
}

TEST(IntegerMatmuls, AnI8ActivationAndADequantizeReadElsewhere) {
  GraphBuilder b;
  ValueId a = b.input("a", DType::i8, {3, 16});
  ValueId w = b.constant("w", Tensor::from_vector<double>(DType::i8, {16, 5}, std::vector<double>(80, -3)));
  ValueId adq = dequantize(b, a, 0.5, -7, DType::i8);
  b.output(b.op(OpKind::MatMul, {adq, dequantize(b, w, 0.25, 0, DType::i8)}), "y");
  b.output(b.op(OpKind::Relu, {adq}), "other");  // the dequantized activation has a reader of its own
  Graph g = b.build();
  ASSERT_EQ(integer_matmuls(g, Options{}), 1);
  infer_shapes(g, Options{});
  int integer = 0, relu_reads_dq = 0;
  for (const Node& n : g.nodes) {
    integer += n.op == OpKind::MatMulInteger;
    if (n.op == OpKind::MatMulInteger) {
      EXPECT_EQ(g.value(n.inputs.at(2)).constant->dtype(), DType::i8);
    }
    relu_reads_dq += n.op == OpKind::Relu && g.value(n.inputs[0]).producer >= 0 &&
                     g.nodes[size_t(g.value(n.inputs[0]).producer)].op == OpKind::Mul;
  }
  EXPECT_EQ(integer, 1);
  EXPECT_EQ(relu_reads_dq, 1) << "the DequantizeLinear another node reads stays";
}

TEST(IntegerMatmuls, APerRowScaleOfASquareWeightAndALongKStayFloat) {
  // [4, 4] weight, scale per row (Reshape to [-1, 1]): as many values as columns, along the wrong axis.
  {
    GraphBuilder b;
    ValueId a = b.input("a", DType::u8, {2, 4});
    ValueId w = b.constant("w", Tensor::from_vector<double>(DType::i8, {4, 4}, std::vector<double>(16, 2)));
    auto f32 = [&](ValueId v) { return b.op(OpKind::Cast, {v}, {{"to", Attribute{std::string("f32")}}}); };
    ValueId rows = b.op(OpKind::Reshape, {b.constant("s", Tensor::from_vector<double>(DType::f32, {4}, {1, 2, 3, 4})),
                                          b.ints({-1, 1})});
    ValueId wdq = b.op(OpKind::Mul, {f32(w), f32(rows)});
    b.output(b.op(OpKind::MatMul, {dequantize(b, a, 0.5, 3, DType::u8), wdq}), "y");
    Graph g = b.build();
    EXPECT_EQ(integer_matmuls(g, Options{}), 0);
  }
  // K = 65,794: i32 sums of (a - zp) * w could overflow.
  {
    GraphBuilder b;
    const int64_t k = 65794;
    ValueId a = b.input("a", DType::u8, {1, k});
    ValueId w = b.constant("w", Tensor::from_vector<double>(DType::i8, {k, 1}, std::vector<double>(size_t(k), -128)));
    b.output(b.op(OpKind::MatMul, {dequantize(b, a, 0.5, 0, DType::u8), dequantize(b, w, 0.5, 0, DType::i8)}), "y");
    Graph g = b.build();
    EXPECT_EQ(integer_matmuls(g, Options{}), 0);
  }
  // A scales' product that underflows f32 (1e-23 * 1e-23): the float product keeps what it would lose.
  {
    GraphBuilder b;
    ValueId a = b.input("a", DType::u8, {2, 4});
    ValueId w = b.constant("w", Tensor::from_vector<double>(DType::i8, {4, 3}, std::vector<double>(12, 5)));
    b.output(b.op(OpKind::MatMul, {dequantize(b, a, 1e-23, 0, DType::u8), dequantize(b, w, 1e-23, 0, DType::i8)}), "y");
    Graph g = b.build();
    EXPECT_EQ(integer_matmuls(g, Options{}), 0);
  }
}

// The rewritten product against the float one (eager, f32 sums of the dequantized operands) and an fp64
// product: both within f32 rounding of the exact value.
TEST(IntegerMatmuls, TheRewrittenGraphComputesTheProductOfTheDequantizedOperands) {
  for (const std::string* text : {&kPerTensor, &kPerColumn}) {
    Graph rewritten_graph = parse_graph(*text);
    ASSERT_EQ(integer_matmuls(rewritten_graph, Options{}), 1);
    Session before = Session::from_graph(parse_graph(*text), Mode::eager, Options{}, {});
    Session after = Session::from_graph(std::move(rewritten_graph), Mode::eager, Options{}, {});
    const Graph g = parse_graph(*text);
    const Tensor& w = *g.value(*g.find_value("w")).constant;
    const Tensor& ws = *g.value(*g.find_value("w_scale")).constant;
    std::mt19937 rng(3);
    for (int trial = 0; trial < 3; ++trial) {
      Tensor a = Tensor::empty(DType::u8, {2, 3, 8});
      for (int64_t i = 0; i < a.numel(); ++i) a.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256);
      if (trial == 2)
        for (int64_t i = 0; i < a.numel(); ++i) a.data<uint8_t>()[i] = i % 2 ? 255 : 0;  // the extremes
      const Tensor y0 = before.run({{"a", a}}).at("y"), y1 = after.run({{"a", a}}).at("y");
      ASSERT_EQ(y1.shape(), y0.shape());
      for (int64_t r = 0; r < 6; ++r)
        for (int64_t n = 0; n < 4; ++n) {
          double exact = 0, magnitude = 0;
          for (int64_t k = 0; k < 8; ++k) {
            const double term = (a.as_double(r * 8 + k) - 128) * 0.05f * w.as_double(k * 4 + n) * ws.as_double(ws.numel() == 1 ? 0 : n);
            exact += term;
            magnitude += std::fabs(term);
          }
          // The integer sum is exact, then scaled once (two f32 roundings); the float one rounds each sum.
          EXPECT_NEAR(y1.as_double(r * 4 + n), exact, 2.5e-7 * std::fabs(exact)) << r << "," << n;
          EXPECT_NEAR(y0.as_double(r * 4 + n), exact, 1e-6 * magnitude) << r << "," << n;
        }
    }
  }
}

}  // namespace
}  // namespace kiln
