// passes/cast_like_as_cast.cpp as IR text in, IR text out, and the rewritten graph computing the same bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <regex>

#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln/session.h"
#include "passes/passes.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

constexpr const char* kGraph = R"(graph g(%x: f32[2,3], %h: f16[3], %n: i64[2,3]) -> (%y, %z) {
  %y = CastLike(%x, %h)
  %z = CastLike(%n, %x)
}
)";

TEST(CastLikeAsCast, BecomesCastToTheSecondInputsType) {
  Graph g = parse_graph(kGraph);
  infer_shapes(g, Options{});
  EXPECT_EQ(cast_like_as_cast(g), 2);
  const std::string out = std::regex_replace(print_graph(g), std::regex(" @[A-Za-z0-9_/\"]+\n"), "\n");
  EXPECT_EQ(out, R"(graph g(%x: f32[2,3], %h: f16[3], %n: i64[2,3]) -> (%y, %z) {
  %y: f16[2,3] = Cast(%x) {to="f16"}
  %z: f32[2,3] = Cast(%n) {to="f32"}
}
)");
  EXPECT_EQ(cast_like_as_cast(g), 0);
}

TEST(CastLikeAsCast, CompiledMatchesEagerByteForByte) {
  Options o;
  o.autotune = "off";
  Session eager = Session::from_graph(parse_graph(kGraph), Mode::eager, o);
  Session compiled = Session::from_graph(parse_graph(kGraph), Mode::compiled, o);
  for (const Node& n : compiled.graph().nodes) EXPECT_NE(n.op, OpKind::CastLike);
  std::map<std::string, Tensor> in = make_inputs(eager.graph(), {}, 4);
  std::map<std::string, Tensor> a = eager.run(in), b = compiled.run(in);
  for (const char* name : {"y", "z"}) {
    ASSERT_EQ(a.at(name).nbytes(), b.at(name).nbytes()) << name;
    EXPECT_EQ(std::memcmp(a.at(name).raw(), b.at(name).raw(), a.at(name).nbytes()), 0) << name;
  }
}

}  // namespace
}  // namespace kiln
