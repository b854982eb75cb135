// schedule/fuse_attention.h: which chains become one attention group, read through which
// permutations, with which scale, mask and guard; bert's plan on a backend with attention kernels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/zoo_models.h"
#include "ir/parser.h"
#include "onnx/import.h"
#include "passes/passes.h"
#include "schedule/fuse_attention.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using schedule::AttentionGroup;

std::vector<AttentionGroup> groups_of(const std::string& text) {
  Graph g = parse_graph(text);
  infer_shapes(g, Options{});
  return schedule::find_attention_groups(g, {});
}

// The exporter's form: [B,S,H,D] views transposed, each side scaled, an additive mask, the NaN guard,
// and the Transpose back to [B,S,H,D].
constexpr const char* kExported = R"(graph g(%q: f32[1,7,2,8], %k: f32[1,7,2,8], %v: f32[1,7,2,8], %m: f32[1,1,7,7]) -> (%y) {
  const %c: f32[] = [0.5]
  const %z: f32[] = [0]
  %qt = Transpose(%q) {perm=[0, 2, 1, 3]}
  %kt = Transpose(%k) {perm=[0, 2, 3, 1]}
  %vt = Transpose(%v) {perm=[0, 2, 1, 3]}
  %qs = Mul(%qt, %c)
  %ks = Mul(%kt, %c)
  %s = MatMul(%qs, %ks)
  %sm = Add(%s, %m)
  %p = Softmax(%sm) {axis=-1}
  %n = IsNaN(%p)
  %pg = Where(%n, %z, %p)
  %o = MatMul(%pg, %vt)
  %y = Transpose(%o) {perm=[0, 2, 1, 3]}
}
)";

TEST(FuseAttention, TheExportedChainIsOneGroupReadThroughItsTransposes) {
  const std::vector<AttentionGroup> groups = groups_of(kExported);
  ASSERT_EQ(groups.size(), 1u);
  const AttentionGroup& a = groups[0];
  EXPECT_EQ(a.nodes.size(), 12u) << "every node of the chain";
  EXPECT_EQ(a.q_perm, (std::array<int, 4>{0, 2, 1, 3}));
  EXPECT_EQ(a.k_perm, (std::array<int, 4>{0, 2, 1, 3})) << "K^T's [0,2,3,1] read as K [B,H,Sk,D]";
  EXPECT_EQ(a.v_perm, (std::array<int, 4>{0, 2, 1, 3}));
  EXPECT_EQ(a.out_perm, (std::array<int, 4>{0, 2, 1, 3}));
  EXPECT_DOUBLE_EQ(a.scale, 0.25);
  EXPECT_TRUE(a.guard);
  EXPECT_NE(a.mask, kNoValue);
  EXPECT_EQ(a.head_dim, 8);
}

TEST(FuseAttention, PlainTensorsAndNoMaskAreAGroupToo) {
  const std::vector<AttentionGroup> groups = groups_of(R"(graph g(%q: f32[2,3,5,4], %kt: f32[2,3,4,6], %v: f32[2,3,6,4]) -> (%o) {
  %s = MatMul(%q, %kt)
  %p = Softmax(%s) {axis=-1}
  %o = MatMul(%p, %v)
}
)");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].k_perm, (std::array<int, 4>{0, 1, 3, 2}));
  EXPECT_EQ(groups[0].mask, kNoValue);
  EXPECT_FALSE(groups[0].guard);
  EXPECT_DOUBLE_EQ(groups[0].scale, 1.0);
}

// Exporters of `scores / sqrt(d)` scale the product, not its operands: a Mul or a Div by a scalar
// constant between the MatMul and the mask (or the Softmax) joins the group as its scale.
TEST(FuseAttention, AScaleAfterTheProductIsTheGroupsScale) {
  const std::string head = R"(graph g(%q: f32[1,2,7,8], %kt: f32[1,2,8,7], %v: f32[1,2,7,8], %m: f32[1,1,7,7]) -> (%y) {
  const %c: f32[] = [8]
  %s = MatMul(%q, %kt)
)";
  const std::string tail = "  %p = Softmax(%sm) {axis=-1}\n  %y = MatMul(%p, %v)\n}\n";
  struct Form {
    std::string scaled;
    double scale;
    size_t nodes;
  };
  for (const Form& f : {Form{"  %ss = Div(%s, %c)\n  %sm = Add(%ss, %m)\n", 0.125, 5},
                        Form{"  %ss = Mul(%c, %s)\n  %sm = Add(%m, %ss)\n", 8.0, 5},
                        Form{"  %sm = Div(%s, %c)\n", 0.125, 4}}) {
    const std::vector<AttentionGroup> groups = groups_of(head + f.scaled + tail);
    ASSERT_EQ(groups.size(), 1u) << f.scaled;
    EXPECT_DOUBLE_EQ(groups[0].scale, f.scale) << f.scaled;
    EXPECT_EQ(groups[0].nodes.size(), f.nodes) << f.scaled;
  }
  // c / scores is no scale; a zero divisor is left to the unfused chain.
  EXPECT_TRUE(groups_of(head + "  %sm = Div(%c, %s)\n" + tail).empty());
  std::string zero = head + "  %sm = Div(%s, %c)\n" + tail;
  zero.replace(zero.find("[8]"), 3, "[0]");
  EXPECT_TRUE(groups_of(zero).empty());
}

TEST(FuseAttention, WhatAnotherNodeReadsStaysOutside) {
  // The probabilities are a graph output: no group (they would never be written).
  EXPECT_TRUE(groups_of(R"(graph g(%q: f32[1,2,5,4], %kt: f32[1,2,4,5], %v: f32[1,2,5,4]) -> (%o, %p) {
  %s = MatMul(%q, %kt)
  %p = Softmax(%s) {axis=-1}
  %o = MatMul(%p, %v)
}
)").empty());
  // A Transpose read elsewhere too is not absorbed: its output is read as it is.
  const std::vector<AttentionGroup> groups = groups_of(R"(graph g(%q: f32[1,5,2,4], %kt: f32[1,2,4,5], %v: f32[1,2,5,4]) -> (%o, %qt) {
  %qt = Transpose(%q) {perm=[0, 2, 1, 3]}
  %s = MatMul(%qt, %kt)
  %p = Softmax(%s) {axis=-1}
  %o = MatMul(%p, %v)
}
)");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].q_perm, (std::array<int, 4>{0, 1, 2, 3}));
  // A softmax over another axis, or a head dim past 128, is no attention kernel's.
  EXPECT_TRUE(groups_of(R"(graph g(%q: f32[1,2,5,4], %kt: f32[1,2,4,5], %v: f32[1,2,5,4]) -> (%o) {
  %s = MatMul(%q, %kt)
  %p = Softmax(%s) {axis=2}
  %o = MatMul(%p, %v)
}
)").empty());
  EXPECT_TRUE(groups_of(R"(graph g(%q: f32[1,1,5,129], %kt: f32[1,1,129,5], %v: f32[1,1,5,129]) -> (%o) {
  %s = MatMul(%q, %kt)
  %p = Softmax(%s) {axis=-1}
  %o = MatMul(%p, %v)
}
)").empty());
}

// bert (the zoo graph, zero weights of the right size): its 12 layers are 12 groups, each with the mask
// and the guard, scaled by 1/sqrt(64).
// gpt2's form: one [B,S,3*H*D] product split along its last axis, each part reshaped to [B,S,H,D].
std::string split_qkv(const char* sizes, const char* reshape_dims) {
  return std::string(R"(graph g(%x: f32[1,7,48], %m: f32[1,1,7,7]) -> (%y) {
  const %sizes: i64[3] = )") + sizes + R"(
  const %shape: i64[4] = )" + reshape_dims + R"(
  %q, %k, %v = Split(%x, %sizes) {axis=2}
  %q4 = Reshape(%q, %shape)
  %k4 = Reshape(%k, %shape)
  %v4 = Reshape(%v, %shape)
  %qt = Transpose(%q4) {perm=[0, 2, 1, 3]}
  %kt = Transpose(%k4) {perm=[0, 2, 3, 1]}
  %vt = Transpose(%v4) {perm=[0, 2, 1, 3]}
  %s = MatMul(%qt, %kt)
  %sm = Add(%s, %m)
  %p = Softmax(%sm) {axis=-1}
  %o = MatMul(%p, %vt)
  %y = Transpose(%o) {perm=[0, 2, 1, 3]}
}
)";
}

TEST(FuseAttention, QKAndVAreReadAsColumnsOfTheSplitTheyCameFrom) {
  const std::vector<AttentionGroup> groups = groups_of(split_qkv("[16, 16, 16]", "[1, 7, 2, 8]"));
  ASSERT_EQ(groups.size(), 1u);
  const AttentionGroup& a = groups[0];
  EXPECT_EQ(a.nodes.size(), 12u) << "the Split and the three Reshapes too";
  EXPECT_EQ(a.q, a.k);
  EXPECT_EQ(a.q, a.v);
  EXPECT_EQ(a.q_slice.column, 0);
  EXPECT_EQ(a.k_slice.column, 16);
  EXPECT_EQ(a.v_slice.column, 32);
  EXPECT_EQ(a.q_slice.heads, 2);
  EXPECT_EQ(a.v_slice.heads, 2);
  EXPECT_EQ(a.head_dim, 8);
  EXPECT_EQ(a.k_perm, (std::array<int, 4>{0, 2, 1, 3}));
}

TEST(FuseAttention, APartAnotherNodeReadsIsItsOwnOperandAndTheSplitStays) {
  std::string text = split_qkv("[16, 16, 16]", "[1, 7, 2, 8]");
  text.replace(text.find("-> (%y)"), 7, "-> (%y, %k)");  // K's part is an output of the graph too
  const std::vector<AttentionGroup> groups = groups_of(text);
  ASSERT_EQ(groups.size(), 1u);
  const AttentionGroup& a = groups[0];
  EXPECT_EQ(a.q_slice.column, 0);
  EXPECT_EQ(a.k_slice.column, -1) << "K is its Reshape's output";
  EXPECT_EQ(a.v_slice.column, 32);
  EXPECT_NE(a.q, a.k);
  EXPECT_EQ(a.nodes.size(), 10u) << "neither the Split nor K's Reshape";
}

TEST(FuseAttention, ASplitAlongAnotherAxisIsNotReadThrough) {
  const std::vector<AttentionGroup> groups = groups_of(R"(graph g(%x: f32[3,7,16], %m: f32[1,1,7,7]) -> (%y) {
  const %sizes: i64[3] = [1, 1, 1]
  const %shape: i64[4] = [1, 7, 2, 8]
  %q, %k, %v = Split(%x, %sizes) {axis=0}
  %q4 = Reshape(%q, %shape)
  %k4 = Reshape(%k, %shape)
  %v4 = Reshape(%v, %shape)
  %qt = Transpose(%q4) {perm=[0, 2, 1, 3]}
  %kt = Transpose(%k4) {perm=[0, 2, 3, 1]}
  %vt = Transpose(%v4) {perm=[0, 2, 1, 3]}
  %s = MatMul(%qt, %kt)
  %p = Softmax(%s) {axis=-1}
  %o = MatMul(%p, %vt)
  %y = Transpose(%o) {perm=[0, 2, 1, 3]}
}
)");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].q_slice.column, -1);
  EXPECT_EQ(groups[0].v_slice.column, -1);
}

TEST(FuseAttention, BertHasOneGroupPerLayer) {
  const fs::path dir = fs::temp_directory_path() / ("kiln_attention_plan_" + std::to_string(getpid()));
  const fs::path model = test_common::zoo_graph_with_zero_weights("bert", dir);
  ASSERT_FALSE(model.empty()) << "no zoo graph in tests/data/zoo";
  Options options;
  Graph g = import_onnx(model.string(), options);
  prepare_graph(g, {{"batch", 1}, {"seq", 128}}, options);
  const std::vector<AttentionGroup> groups = schedule::find_attention_groups(g, {});
  EXPECT_EQ(groups.size(), 12u);
  for (const AttentionGroup& a : groups) {
    EXPECT_TRUE(a.guard);
    EXPECT_NE(a.mask, kNoValue);
    EXPECT_NEAR(a.scale, 0.125, 1e-6);
    EXPECT_EQ(a.head_dim, 64);
    EXPECT_EQ(a.out_perm, (std::array<int, 4>{0, 2, 1, 3})) << "the Transpose back is in the group";
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
