// passes/eliminate_common_subexpressions.cpp as IR text in, IR text out, and the compiled graph
// computing the eager graph's bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <regex>

#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln/session.h"
#include "passes/passes.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

// A mask computed twice from equal constants (as a BERT export does in each layer), what reads it, a
// node differing only in an attribute, and two equal nodes that are both graph outputs.
constexpr const char* kGraph = R"(graph g(%x: f32[2,3], %m: bool[2,3]) -> (%y, %z, %s, %t, %u, %u2) {
  const %ninf: f32[] = [-inf]
  const %ninf2: f32[] = [-inf]
  const %zero: f32[] = [0]
  %a = Where(%m, %ninf, %zero)
  %b = Where(%m, %ninf2, %zero)
  %p = Add(%x, %a)
  %q = Add(%x, %b)
  %r = Mul(%p, %q)
  %y = Relu(%r)
  %z = Relu(%q)
  %s = Softmax(%p) {axis=0}
  %t = Softmax(%q) {axis=1}
  %u = Neg(%x)
  %u2 = Neg(%x)
}
)";

std::string printed(const Graph& g) {
  return std::regex_replace(print_graph(g), std::regex(" @[A-Za-z0-9_/\"]+\n"), "\n");
}

TEST(EliminateCommonSubexpressions, EqualNodesAndConstantsBecomeOne) {
  Graph g = parse_graph(kGraph);
  infer_shapes(g, Options{});
  EXPECT_EQ(eliminate_common_subexpressions(g), 2);  // %b and %q
  EXPECT_EQ(printed(g), R"(graph g(%x: f32[2,3], %m: bool[2,3]) -> (%y, %z, %s, %t, %u, %u2) {
  const %ninf: f32[] = [-inf]
  const %zero: f32[] = [0]
  %a: f32[2,3] = Where(%m, %ninf, %zero)
  %p: f32[2,3] = Add(%x, %a)
  %r: f32[2,3] = Mul(%p, %p)
  %y: f32[2,3] = Relu(%r)
  %z: f32[2,3] = Relu(%p)
  %s: f32[2,3] = Softmax(%p) {axis=0}
  %t: f32[2,3] = Softmax(%p) {axis=1}
  %u: f32[2,3] = Neg(%x)
  %u2: f32[2,3] = Neg(%x)
}
)");
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
}

TEST(EliminateCommonSubexpressions, ConstantsOfOtherBytesOrTypesStayApart) {
  Graph g = parse_graph(R"(graph g(%x: f32[2]) -> (%y, %z, %w) {
  const %a: f32[2] = [1, 2]
  const %b: f32[2] = [1, 3]
  const %c: f32[1,2] = [1, 2]
  %y = Add(%x, %a)
  %z = Add(%x, %b)
  %w = Add(%x, %c)
}
)");
  infer_shapes(g, Options{});
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
  EXPECT_EQ(g.nodes.size(), 3u);
}

TEST(EliminateCommonSubexpressions, CompiledMatchesEagerByteForByte) {
  Options o;
  o.autotune = "off";
  Session eager = Session::from_graph(parse_graph(kGraph), Mode::eager, o);
  Session compiled = Session::from_graph(parse_graph(kGraph), Mode::compiled, o);
  EXPECT_EQ(eager.graph().nodes.size(), 11u);  // eager runs the model's own nodes
  EXPECT_EQ(compiled.graph().nodes.size(), 9u);
  std::map<std::string, Tensor> in = make_inputs(eager.graph(), {}, 4);
  in.at("x").data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
  std::map<std::string, Tensor> a = eager.run(in), b = compiled.run(in);
  for (const char* name : {"y", "z", "s", "t", "u", "u2"}) {
    ASSERT_EQ(a.at(name).nbytes(), b.at(name).nbytes()) << name;
    EXPECT_EQ(std::memcmp(a.at(name).raw(), b.at(name).raw(), a.at(name).nbytes()), 0) << name;
  }
}

}  // namespace
}  // namespace kiln
