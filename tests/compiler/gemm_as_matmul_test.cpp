// passes/gemm_as_matmul.cpp as IR text in, IR text out, and the rewritten graph computing what the
// Gemm computed.
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

std::string rewritten(const std::string& text, int expect) {
  Graph g = parse_graph(text);
  infer_shapes(g, Options{});
  EXPECT_EQ(gemm_as_matmul(g), expect);
  std::string out = print_graph(g);
  EXPECT_EQ(print_graph(parse_graph(out)), out) << "the rewritten IR does not parse back";
  return std::regex_replace(out, std::regex(" @[A-Za-z0-9_/\"]+\n"), "\n");
}

// gpt2's Conv1D: flatten, Gemm with a bias, unflatten, then the residual Add.
constexpr const char* kConv1d = R"(graph g(%x: f32[1,2,3]) -> (%y) {
  const %flat: i64[2] = [-1, 3]
  const %back: i64[3] = [1, 2, 3]
  const %w: f32[3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  const %b: f32[3] = [0.5, -0.5, 2]
  %x2 = Reshape(%x, %flat)
  %p = Gemm(%x2, %w, %b)
  %p3 = Reshape(%p, %back)
  %y = Add(%p3, %x)
}
)";

TEST(GemmAsMatmul, AFlattenedGemmWithABiasBecomesMatMulAndAdd) {
  EXPECT_EQ(rewritten(kConv1d, 1), R"(graph g(%x: f32[1,2,3]) -> (%y) {
  const %w: f32[3,3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
  const %"Gemm_1/bias": f32[3] = [0.5, -0.5, 2]
  %"Gemm_1/product": f32[1,2,3] = MatMul(%x, %w)
  %p3: f32[1,2,3] = Add(%"Gemm_1/product", %"Gemm_1/bias")
  %y: f32[1,2,3] = Add(%p3, %x)
}
)");
}

TEST(GemmAsMatmul, TransposedWeightsAreTransposedOnceAndNoBiasMeansNoAdd) {
  EXPECT_EQ(rewritten(R"(graph g(%x: f32[2,2,3]) -> (%y) {
  const %flat: i64[2] = [4, 3]
  const %back: i64[3] = [2, 2, 2]
  const %w: f32[2,3] = [1, 2, 3, 4, 5, 6]
  %x2 = Reshape(%x, %flat)
  %p = Gemm(%x2, %w) {transB=1}
  %y = Reshape(%p, %back)
}
)",
                      1),
            R"(graph g(%x: f32[2,2,3]) -> (%y) {
  const %"Gemm_1/weight": f32[3,2] = [1, 4, 2, 5, 3, 6]
  %y: f32[2,2,2] = MatMul(%x, %"Gemm_1/weight")
}
)");
}

TEST(GemmAsMatmul, WhatItCannotProveStaysAGemm) {
  const char* cases[] = {
      // alpha != 1
      R"(graph g(%x: f32[1,2,3]) -> (%y) {
  const %flat: i64[2] = [2, 3]
  const %back: i64[3] = [1, 2, 2]
  const %w: f32[3,2] = [1, 2, 3, 4, 5, 6]
  %x2 = Reshape(%x, %flat)
  %p = Gemm(%x2, %w) {alpha=2.0}
  %y = Reshape(%p, %back)
}
)",
      // the unflattened shape is not X's leading dims
      R"(graph g(%x: f32[1,2,3]) -> (%y) {
  const %flat: i64[2] = [2, 3]
  const %back: i64[3] = [2, 1, 2]
  const %w: f32[3,2] = [1, 2, 3, 4, 5, 6]
  %x2 = Reshape(%x, %flat)
  %p = Gemm(%x2, %w)
  %y = Reshape(%p, %back)
}
)",
      // the flat product is also read as it is
      R"(graph g(%x: f32[1,2,3]) -> (%y, %p) {
  const %flat: i64[2] = [2, 3]
  const %back: i64[3] = [1, 2, 2]
  const %w: f32[3,2] = [1, 2, 3, 4, 5, 6]
  %x2 = Reshape(%x, %flat)
  %p = Gemm(%x2, %w)
  %y = Reshape(%p, %back)
}
)",
      // B computed, not constant
      R"(graph g(%x: f32[1,2,3], %w: f32[3,2]) -> (%y) {
  const %flat: i64[2] = [2, 3]
  const %back: i64[3] = [1, 2, 2]
  %x2 = Reshape(%x, %flat)
  %p = Gemm(%x2, %w)
  %y = Reshape(%p, %back)
}
)"};
  for (const char* text : cases) {
    Graph g = parse_graph(text);
    infer_shapes(g, Options{});
    EXPECT_EQ(gemm_as_matmul(g), 0) << text;
  }
}

TEST(GemmAsMatmul, TheRewrittenGraphComputesWhatTheGemmDid) {
  Graph original = parse_graph(kConv1d);
  Graph rewritten = parse_graph(kConv1d);
  infer_shapes(rewritten, Options{});
  ASSERT_EQ(gemm_as_matmul(rewritten), 1);
  Session a = Session::from_graph(std::move(original), Mode::eager, Options{}, {});
  Session b = Session::from_graph(std::move(rewritten), Mode::eager, Options{}, {});
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const std::map<std::string, Tensor> inputs = make_inputs(a.graph(), {}, seed);
    const CloseResult r = all_close(b.run(inputs).at("y"), a.run(inputs).at("y"), 1e-6, 1e-6);
    EXPECT_TRUE(r.ok) << r.reason;
  }
}

}  // namespace
}  // namespace kiln
