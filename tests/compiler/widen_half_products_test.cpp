// passes/widen_half_products.cpp as IR text in, IR text out, and compiled f16 / bf16 graphs whose
// products run on the CPU's f32 library against the fp64 reference.
#include <gtest/gtest.h>

#include <regex>

#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln/session.h"
#include "passes/passes.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

std::string widened(const std::string& text, int expect) {
  Graph g = parse_graph(text);
  infer_shapes(g, Options{});
  EXPECT_EQ(widen_half_products(g, Options{}), expect);
  std::string out = print_graph(g);
  EXPECT_EQ(print_graph(parse_graph(out)), out) << "the widened IR does not parse back";
  return std::regex_replace(out, std::regex(" @[A-Za-z0-9_/\"]+\n"), "\n");
}

// Two products read %x (one Cast serves both); the weights are constants (converted here); the Add
// between them stays f16.
constexpr const char* kTwoProducts = R"(graph g(%x: f16[2,3]) -> (%y) {
  const %w: f16[3,2] = [1, 2, 3, 4, 5, 6]
  const %v: f16[3,2] = [0.5, -1, 1.5, -2, 2.5, -3]
  %a = MatMul(%x, %w)
  %b = MatMul(%x, %v)
  %y = Add(%a, %b)
}
)";

TEST(WidenHalfProducts, ProductsReadF32AndTheirResultsAreRoundedBack) {
  EXPECT_EQ(widened(kTwoProducts, 2), R"(graph g(%x: f16[2,3]) -> (%y) {
  const %w: f16[3,2] = [1, 2, 3, 4, 5, 6]
  const %v: f16[3,2] = [0.5, -1, 1.5, -2, 2.5, -3]
  const %w_f32: f32[3,2] = [1, 2, 3, 4, 5, 6]
  const %v_f32: f32[3,2] = [0.5, -1, 1.5, -2, 2.5, -3]
  %x_f32: f32[2,3] = Cast(%x) {to="f32"}
  %a_f32: f32[2,2] = MatMul(%x_f32, %w_f32)
  %a: f16[2,2] = Cast(%a_f32) {to="f16"}
  %b_f32: f32[2,2] = MatMul(%x_f32, %v_f32)
  %b: f16[2,2] = Cast(%b_f32) {to="f16"}
  %y: f16[2,2] = Add(%a, %b)
}
)");
}

TEST(WidenHalfProducts, F32GraphsAreLeftAlone) {
  const std::string text = R"(graph g(%x: f32[2,3]) -> (%y) {
  const %w: f32[3,2] = [1, 2, 3, 4, 5, 6]
  %y = MatMul(%x, %w)
}
)";
  Graph g = parse_graph(text);
  infer_shapes(g, Options{});
  const std::string before = print_graph(g);
  EXPECT_EQ(widen_half_products(g, Options{}), 0);
  EXPECT_EQ(print_graph(g), before);
}

// n weights in [-1, 1), different for each seed (exact in f16 and bf16: multiples of 1/16).
std::string values(int n, int seed) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(((i * 37 + seed * 11) % 32 - 16) / 16.0);
  return s + "]";
}

// A bf16 and an f16 block with a Gemm (bias), a Conv (bias) and a MatMul between pointwise ops, compiled
// on the CPU, against the fp64 reference: the low-precision rule, and no product left to a node kernel.
TEST(WidenHalfProducts, CompiledHalfGraphsMeetTheRule) {
  for (const char* t : {"f16", "bf16"}) {
    const std::string text = std::regex_replace(R"(graph g(%x: T[1,4,6,6], %m: T[5,8]) -> (%y, %z) {
  const %k: T[3,4,3,3] = )" + values(108, 1) + R"(
  const %kb: T[3] = [0.25, -0.5, 1]
  const %w: T[8,7] = )" + values(56, 2) + R"(
  const %b: T[7] = )" + values(7, 3) + R"(
  %c = Conv(%x, %k, %kb) {pads=[1,1,1,1]}
  %y = Relu(%c)
  %g = Gemm(%m, %w, %b)
  %z = Tanh(%g)
}
)", std::regex("T\\["), std::string(t) + "[");
    Options o;
    o.autotune = "off";
    Graph parsed = parse_graph(text);
    Session compiled = Session::from_graph(parsed, Mode::compiled, o);
    Session reference = Session::from_graph(parsed, Mode::reference, o);
    for (const Node& n : compiled.graph().nodes) {
      if (n.op == OpKind::MatMul || n.op == OpKind::Gemm || n.op == OpKind::Conv) {
        EXPECT_EQ(compiled.graph().value(n.outputs[0]).type.dtype, DType::f32) << t << ": " << compiled.graph().describe(n);
      }
    }
    EXPECT_GT(compiled.stats().library_kernels, 0) << t;
    std::map<std::string, Tensor> in = make_inputs(compiled.graph(), {}, 7);
    std::map<std::string, Tensor> got = compiled.run(in), want = reference.run(in);
    for (const char* name : {"y", "z"}) {
      const LowPrecisionResult r = low_precision_rule(got.at(name), want.at(name));
      EXPECT_TRUE(r.pass) << t << " " << name << ": " << r.detail;
    }
  }
}

}  // namespace
}  // namespace kiln
