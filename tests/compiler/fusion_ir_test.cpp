// The fusion passes and the router, tested as IR text in, IR text out (as XLA's HLO-text and MLIR's lit
// tests are): the compiled graph prints its fusion groups (`group N = kind "label"`, nodes `in N`),
// and that text parses back. The compiles run on the interpreter backend (tests/common), which builds
// no code, so what is checked is the compiler's plan alone.
#include <gtest/gtest.h>

#include "common/interpreter_backend.h"
#include "compiler/compile.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace kiln {
namespace {

std::string fused_ir(const std::string& text, const std::map<std::string, std::string>& settings = {}) {
  Options options;
  for (const auto& [k, v] : settings) options.set(k, v);
  testing_backend::InterpreterBackend backend;
  compiler::Executable exe = compiler::compile(parse_graph(text), backend, options, Mode::compiled);
  std::string out = print_graph(exe.graph);
  EXPECT_EQ(print_graph(parse_graph(out)), out) << "the fused IR does not parse back";
  return out;
}

// The tail takes a scalar Mul (the backend tunes every GEMM); a node that reads the running value
// twice ends it.
TEST(FusionIr, MatmulBiasReluAndItsTailAreOneLibraryGroup) {
  EXPECT_EQ(fused_ir(R"(graph g(%x: f32[3,2]) -> (%y) {
  const %w: f32[2,2] = [1, 2, 3, 4]
  const %b: f32[2] = [0.5, -0.5]
  const %c: f32[] = [2]
  %mm = MatMul(%x, %w)
  %a = Add(%mm, %b)
  %r = Relu(%a)
  %t = Mul(%r, %c)
  %y = Mul(%t, %t)
}
)"),
            R"(graph g(%x: f32[3,2]) -> (%y) {
  const %w: f32[2,2] = [1, 2, 3, 4]
  const %b: f32[2] = [0.5, -0.5]
  const %c: f32[] = [2]
  group 0 = library "matmul+bias+relu+mul"
  %mm: f32[3,2] = MatMul(%x, %w) in 0
  %a: f32[3,2] = Add(%mm, %b) in 0
  %r: f32[3,2] = Relu(%a) in 0
  %t: f32[3,2] = Mul(%r, %c) in 0
  %y: f32[3,2] = Mul(%t, %t)
}
)");
}

TEST(FusionIr, MaskedSoftmaxWithItsGuardIsOneRowGroup) {
  EXPECT_EQ(fused_ir(R"(graph g(%x: f32[2,5], %m: f32[2,5]) -> (%y) {
  %s = Add(%x, %m)
  %p = Softmax(%s) {axis=-1}
  %n = IsNaN(%p)
  %z = Sub(%p, %p)
  %y = Where(%n, %z, %p)
}
)"),
            R"(graph g(%x: f32[2,5], %m: f32[2,5]) -> (%y) {
  group 0 = row "add+softmax+isnan+sub+where"
  %s: f32[2,5] = Add(%x, %m) in 0
  %p: f32[2,5] = Softmax(%s) {axis=-1} in 0
  %n: bool[2,5] = IsNaN(%p) in 0
  %z: f32[2,5] = Sub(%p, %p) in 0
  %y: f32[2,5] = Where(%n, %z, %p) in 0
}
)");
}

// By default a 64-wide softmax is fused with its producer; under softmax_max_fuse_width=32 the router
// sends it to the library alone and the Exp runs on its own.
TEST(FusionIr, TheRouterSendsAWideSoftmaxToTheLibraryWhenTheSettingSaysSo) {
  const std::string text = R"(graph g(%x: f32[2,64]) -> (%y) {
  %e = Exp(%x)
  %y = Softmax(%e) {axis=-1}
}
)";
  EXPECT_EQ(fused_ir(text), R"(graph g(%x: f32[2,64]) -> (%y) {
  group 0 = row "exp+softmax"
  %e: f32[2,64] = Exp(%x) in 0
  %y: f32[2,64] = Softmax(%e) {axis=-1} in 0
}
)");
  EXPECT_EQ(fused_ir(text, {{"softmax_max_fuse_width", "32"}}), R"(graph g(%x: f32[2,64]) -> (%y) {
  group 0 = library "softmax"
  %e: f32[2,64] = Exp(%x)
  %y: f32[2,64] = Softmax(%e) {axis=-1} in 0
}
)");
}

// A graph output is not inlined: Tanh stays a node of its own.
TEST(FusionIr, APointwiseChainIsOneGroupAndAGraphOutputStaysOut) {
  EXPECT_EQ(fused_ir(R"(graph g(%x: f32[4]) -> (%y, %t) {
  %t = Tanh(%x)
  %e = Exp(%t)
  %y = Neg(%e)
}
)"),
            R"(graph g(%x: f32[4]) -> (%y, %t) {
  group 0 = pointwise "exp+neg"
  %t: f32[4] = Tanh(%x)
  %e: f32[4] = Exp(%t) in 0
  %y: f32[4] = Neg(%e) in 0
}
)");
}

// A fused dump compiled again: its groups are dropped and planned afresh, to the same plan.
TEST(FusionIr, AGraphThatArrivesWithGroupsIsPlannedAfresh) {
  const std::string fused = fused_ir(R"(graph g(%x: f32[4]) -> (%y) {
  %e = Exp(%x)
  %y = Neg(%e)
}
)");
  EXPECT_EQ(fused_ir(fused), fused);
}

}  // namespace
}  // namespace kiln
