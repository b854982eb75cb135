// passes/merge_sibling_matmuls.cpp as IR text in, IR text out, and the merged graph computing what the
// siblings computed.
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

std::string merged(const std::string& text, int expect_sets) {
  Graph g = parse_graph(text);
  infer_shapes(g, Options{});
  EXPECT_EQ(merge_sibling_matmuls(g), expect_sets);
  std::string out = print_graph(g);
  EXPECT_EQ(print_graph(parse_graph(out)), out) << "the merged IR does not parse back";
  return std::regex_replace(out, std::regex(" @[A-Za-z0-9_/\"]+\n"), "\n");
}

constexpr const char* kThreeWithBias = R"(graph g(%x: f32[2,3]) -> (%q, %k, %v) {
  const %wq: f32[3,2] = [1, 2, 3, 4, 5, 6]
  const %wk: f32[3,1] = [7, 8, 9]
  const %wv: f32[3,2] = [-1, -2, -3, -4, -5, -6]
  const %bq: f32[2] = [0.5, 1.5]
  const %bk: f32[1] = [2.5]
  const %bv: f32[2] = [3.5, 4.5]
  %mq = MatMul(%x, %wq)
  %q = Add(%bq, %mq)
  %mk = MatMul(%x, %wk)
  %k = Add(%mk, %bk)
  %mv = MatMul(%x, %wv)
  %v = Add(%bv, %mv)
}
)";

TEST(MergeSiblingMatmuls, ThreeProjectionsWithBiasesBecomeOneProductOneAddAndASplit) {
  EXPECT_EQ(merged(kThreeWithBias, 1), R"(graph g(%x: f32[2,3]) -> (%q, %k, %v) {
  const %"MatMul_0/merged/weight": f32[3,5] = [1, 2, 7, -1, -2, 3, 4, 8, -3, -4, 5, 6, 9, -5, -6]
  const %"MatMul_0/merged/bias": f32[5] = [0.5, 1.5, 2.5, 3.5, 4.5]
  const %"MatMul_0/merged/sizes": i64[3] = [2, 1, 2]
  %"MatMul_0/merged/product": f32[2,5] = MatMul(%x, %"MatMul_0/merged/weight")
  %"MatMul_0/merged/biased": f32[2,5] = Add(%"MatMul_0/merged/product", %"MatMul_0/merged/bias")
  %q: f32[2,2], %k: f32[2,1], %v: f32[2,2] = Split(%"MatMul_0/merged/biased", %"MatMul_0/merged/sizes") {axis=1}
}
)");
}

TEST(MergeSiblingMatmuls, TheMergedGraphComputesWhatTheSiblingsDid) {
  Graph original = parse_graph(kThreeWithBias);
  Graph rewritten = parse_graph(kThreeWithBias);
  infer_shapes(rewritten, Options{});
  ASSERT_EQ(merge_sibling_matmuls(rewritten), 1);
  Session a = Session::from_graph(std::move(original), Mode::eager, Options{}, {});
  Session b = Session::from_graph(std::move(rewritten), Mode::eager, Options{}, {});
  const std::map<std::string, Tensor> inputs = make_inputs(a.graph(), {}, 7);
  const std::map<std::string, Tensor> want = a.run(inputs), got = b.run(inputs);
  for (const char* name : {"q", "k", "v"}) {
    const CloseResult r = all_close(got.at(name), want.at(name), 1e-6, 1e-6);
    EXPECT_TRUE(r.ok) << name << ": " << r.reason;
  }
}

TEST(MergeSiblingMatmuls, WithoutBiasesTheProductsSplitDirectly) {
  const std::string out = merged(R"(graph g(%x: f32[4,3]) -> (%a, %b) {
  const %w1: f32[3,1] = [1, 2, 3]
  const %w2: f32[3,1] = [4, 5, 6]
  %a = MatMul(%x, %w1)
  %b = MatMul(%x, %w2)
}
)",
                                 1);
  EXPECT_NE(out.find("%a: f32[4,1], %b: f32[4,1] = Split(%\"MatMul_0/merged/product\""), std::string::npos) << out;
  EXPECT_EQ(out.find("Add("), std::string::npos) << out;
}

TEST(MergeSiblingMatmuls, WhatDoesNotMatchStaysAsItWas) {
  // A weight that is an input, one of another K, a bias Add whose product is also read elsewhere, and a
  // lone product: nothing to merge.
  const std::string text = R"(graph g(%x: f32[2,3], %w: f32[3,2], %y: f32[2,4]) -> (%a, %b, %c, %d, %m) {
  const %w1: f32[3,2] = [1, 2, 3, 4, 5, 6]
  const %w4: f32[4,2] = [1, 2, 3, 4, 5, 6, 7, 8]
  const %b1: f32[2] = [1, 2]
  %a = MatMul(%x, %w)
  %m = MatMul(%x, %w1)
  %b = Add(%m, %b1)
  %c = MatMul(%y, %w4)
  %d = Relu(%x)
}
)";
  Graph g = parse_graph(text);
  infer_shapes(g, Options{});
  const std::string before = print_graph(g);
  EXPECT_EQ(merge_sibling_matmuls(g), 0);
  EXPECT_EQ(print_graph(g), before);
}

TEST(MergeSiblingMatmuls, SiblingsWithAndWithoutBiasMergeByForm) {
  const std::string out = merged(R"(graph g(%x: f32[2,3]) -> (%a, %b, %c, %d) {
  const %w1: f32[3,1] = [1, 2, 3]
  const %w2: f32[3,1] = [4, 5, 6]
  const %w3: f32[3,1] = [7, 8, 9]
  const %w4: f32[3,1] = [1, 1, 1]
  const %b3: f32[1] = [1]
  const %b4: f32[1] = [2]
  %a = MatMul(%x, %w1)
  %b = MatMul(%x, %w2)
  %m3 = MatMul(%x, %w3)
  %c = Add(%m3, %b3)
  %m4 = MatMul(%x, %w4)
  %d = Add(%m4, %b4)
}
)",
                                 2);
  EXPECT_NE(out.find("%a: f32[2,1], %b: f32[2,1] = Split("), std::string::npos) << out;
  EXPECT_NE(out.find("%c: f32[2,1], %d: f32[2,1] = Split("), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln
