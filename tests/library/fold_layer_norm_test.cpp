// Which LayerNormalizations find_library_groups folds into the MatMul group after them (where the
// target's folds_layer_norm says yes: the CUDA backend on Hopper), and which it leaves to a row kernel.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ir/parser.h"
#include "library_test_util.h"
#include "passes/passes.h"

namespace kiln::library_test {
namespace {

// bert's pattern: h = LN(x); q = h W + b (the group), then a later product adds h as its residual.
constexpr const char* kBertLike = R"(graph g(%x: bf16[2,5,64], %w: bf16[64,32], %b: bf16[32], %w2: bf16[32,64], %b2: bf16[64], %gamma: bf16[64], %beta: bf16[64]) -> (%o) {
  %h = LayerNormalization(%x, %gamma, %beta) {axis=-1, epsilon=1e-05}
  %p = MatMul(%h, %w)
  %q = Add(%p, %b)
  %p2 = MatMul(%q, %w2)
  %s = Add(%p2, %b2)
  %o = Add(%s, %h)
}
)";

schedule::FusionTarget target(bool folds, int* asked = nullptr) {
  schedule::FusionTarget t;
  t.folds_layer_norm = [folds, asked](const LibraryGroup& g) {
    if (asked) ++*asked;
    EXPECT_GE(g.norm, 0) << "asked about a group without its LayerNorm";
    return folds;
  };
  return t;
}

// The text's inputs named w*, b* and gamma become zero constants (a LayerNorm folds only constant vectors
// into constant weights).
Graph parse(const char* text) {
  Graph g = parse_graph(text);
  std::vector<ValueId> inputs;
  for (ValueId id : g.inputs) {
    Value& v = g.value(id);
    if (v.name[0] != 'w' && v.name[0] != 'b' && v.name != "gamma") {
      inputs.push_back(id);
      continue;
    }
    std::vector<int64_t> dims;
    for (const Dim& d : v.type.shape) dims.push_back(d.value);
    Tensor t = Tensor::empty(v.type.dtype, dims);
    std::memset(t.raw(), 0, t.nbytes());
    v.constant = std::make_shared<const Tensor>(std::move(t));
  }
  g.inputs = inputs;
  infer_shapes(g, Options{});
  return g;
}

std::vector<LibraryGroup> groups_for(const Graph& g, const schedule::FusionTarget& t) {
  return schedule::find_library_groups(g, std::vector<char>(g.nodes.size(), 0), t);
}

ValueId named(const Graph& g, const std::string& name) {
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].name == name) return static_cast<ValueId>(v);
  ADD_FAILURE() << "no value " << name;
  return kNoValue;
}

TEST(FoldLayerNorm, TheProductAfterItTakesItAndHandsOnItsOutput) {
  const Graph g = parse(kBertLike);
  int asked = 0;
  const std::vector<LibraryGroup> groups = groups_for(g, target(true, &asked));
  ASSERT_EQ(groups.size(), 2u);
  const LibraryGroup& first = groups[0];
  EXPECT_EQ(first.label, "layernorm+matmul+bias");
  EXPECT_EQ(op_names(g, first), (std::vector<std::string>{"LayerNormalization", "MatMul", "Add"}));
  ASSERT_GE(first.norm, 0);
  EXPECT_EQ(first.nodes.front(), first.norm);
  EXPECT_EQ(first.inputs[0], named(g, "x")) << "A is the LayerNorm's input";
  EXPECT_EQ(first.inputs.at(size_t(first.norm_scale)), named(g, "gamma"));
  EXPECT_EQ(first.inputs.at(size_t(first.norm_bias)), named(g, "beta"));
  EXPECT_EQ(first.norm_output, named(g, "h")) << "the later residual reads it";
  EXPECT_EQ(first.output, named(g, "q"));
  // The second product is not after a LayerNorm: asked once, about the first.
  EXPECT_EQ(groups[1].norm, -1);
  EXPECT_EQ(groups[1].label, "matmul+bias+add");
  EXPECT_EQ(asked, 1);
}

TEST(FoldLayerNorm, ABackendThatSaysNoKeepsTheLayerNormOut) {
  const Graph g = parse(kBertLike);
  for (const schedule::FusionTarget& t : {target(false), schedule::FusionTarget{}}) {
    const std::vector<LibraryGroup> groups = groups_for(g, t);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].norm, -1);
    EXPECT_EQ(groups[0].label, "matmul+bias");
    EXPECT_EQ(groups[0].inputs[0], named(g, "h"));
  }
}

// Without other readers the LayerNorm's output is not handed on.
TEST(FoldLayerNorm, OnlyReaderMeansNoSecondOutput) {
  const Graph g = parse(R"(graph g(%x: bf16[4,64], %w: bf16[64,32], %gamma: bf16[64]) -> (%q) {
  %h = LayerNormalization(%x, %gamma) {epsilon=1e-05}
  %q = MatMul(%h, %w)
}
)");
  const std::vector<LibraryGroup> groups = groups_for(g, target(true));
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_GE(groups[0].norm, 0);
  EXPECT_EQ(groups[0].norm_output, kNoValue);
  EXPECT_EQ(groups[0].norm_bias, -1) << "no beta: zeros";
}

// What is refused: the group itself reading the LayerNorm's output again (as its residual), a reader of
// it that runs before the group's last node, the output
// a graph output, another axis, f64 statistics (stash_type), its Mean output used, a non-constant scale.
TEST(FoldLayerNorm, RefusedWhereTheFoldWouldChangeWhatRuns) {
  const char* cases[] = {
      // the group's own residual is the LayerNorm's output
      R"(graph g(%x: bf16[4,64], %w: bf16[64,64], %gamma: bf16[64]) -> (%o) {
  %h = LayerNormalization(%x, %gamma) {epsilon=1e-05}
  %q = MatMul(%h, %w)
  %o = Add(%q, %h)
}
)",
      // %r reads %h between the MatMul and its bias Add
      R"(graph g(%x: bf16[4,64], %w: bf16[64,64], %b: bf16[64], %gamma: bf16[64]) -> (%q, %r) {
  %h = LayerNormalization(%x, %gamma) {epsilon=1e-05}
  %p = MatMul(%h, %w)
  %r = Relu(%h)
  %q = Add(%p, %b)
}
)",
      R"(graph g(%x: bf16[4,64], %w: bf16[64,32], %gamma: bf16[64]) -> (%q, %h) {
  %h = LayerNormalization(%x, %gamma) {epsilon=1e-05}
  %q = MatMul(%h, %w)
}
)",
      R"(graph g(%x: bf16[4,64], %w: bf16[64,32], %gamma: bf16[4,64]) -> (%q) {
  %h = LayerNormalization(%x, %gamma) {axis=0, epsilon=1e-05}
  %q = MatMul(%h, %w)
}
)",
      R"(graph g(%x: bf16[4,64], %w: bf16[64,32], %gamma: bf16[64]) -> (%q) {
  %h = LayerNormalization(%x, %gamma) {epsilon=1e-05, stash_type=11}
  %q = MatMul(%h, %w)
}
)",
      R"(graph g(%x: bf16[4,64], %w: bf16[64,32], %gamma: bf16[64]) -> (%q, %m) {
  %h, %m, _ = LayerNormalization(%x, %gamma) {epsilon=1e-05}
  %q = MatMul(%h, %w)
}
)",
      R"(graph g(%x: bf16[4,64], %scale: bf16[64], %w: bf16[64,32]) -> (%q) {
  %h = LayerNormalization(%x, %scale) {epsilon=1e-05}
  %q = MatMul(%h, %w)
}
)",
  };
  for (const char* text : cases) {
    const Graph g = parse(text);
    int asked = 0;
    const std::vector<LibraryGroup> groups = groups_for(g, target(true, &asked));
    for (const LibraryGroup& grp : groups) EXPECT_EQ(grp.norm, -1) << text;
    EXPECT_EQ(asked, 0) << text;
  }
}

}  // namespace
}  // namespace kiln::library_test
