// Which nodes find_row_groups puts into one row kernel, and which it leaves alone.
#include <gtest/gtest.h>

#include "codegen/cpu/emit_row.h"
#include "loops/row_kernel.h"
#include "row_graphs.h"
#include "schedule/fuse_rows.h"

namespace kiln::rows_test {
namespace {

using schedule::find_row_groups;
using schedule::RowGroup;

std::vector<std::string> op_names(const Graph& g, const RowGroup& group) {
  std::vector<std::string> names;
  for (NodeId n : group.nodes) names.emplace_back(op_name(g.nodes[size_t(n)].op));
  return names;
}

TEST(FuseRows, MaskedSoftmaxWithGuardIsOneKernel) {
  Graph g = masked_softmax_graph(12, Dim::sym("seq"));
  auto groups = find_row_groups(g, {});
  ASSERT_EQ(groups.size(), 1u);
  const RowGroup& group = groups[0];
  EXPECT_EQ(op_names(g, group), (std::vector<std::string>{"Where", "Add", "Softmax", "IsNaN", "Where"}));
  EXPECT_EQ(g.value(group.output).name, "probs");
  ASSERT_EQ(group.inputs.size(), 2u);  // scores and the mask; the [1,1,S,S] Where is recomputed per head
  EXPECT_EQ(g.value(group.inputs[0]).name, "scores");
  EXPECT_EQ(g.value(group.inputs[1]).name, "mask");
  EXPECT_EQ(group.kernel.output_kind, loops::RowOutput::elements);
  EXPECT_EQ(group.kernel.row_rank, 3);
  ASSERT_EQ(group.kernel.reductions.size(), 2u);
  EXPECT_EQ(group.kernel.reductions[0].kind, loops::RowReduceKind::Max);
  EXPECT_EQ(group.kernel.reductions[1].kind, loops::RowReduceKind::Sum);
  ASSERT_EQ(group.symbols.size(), 1u);  // seq, from the scores' dim 2
  EXPECT_EQ(group.symbols[0].input, 0);
  EXPECT_EQ(group.symbols[0].dim, 2);
}

TEST(FuseRows, ResidualAddJoinsTheLayerNorm) {
  Graph g = residual_layernorm_graph(Dim::sym("rows"), 64);
  auto groups = find_row_groups(g, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(op_names(g, groups[0]), (std::vector<std::string>{"Add", "LayerNormalization"}));
  EXPECT_EQ(groups[0].inputs.size(), 4u);  // a, b, gamma, beta
  EXPECT_EQ(groups[0].kernel.reductions.size(), 2u);
}

TEST(FuseRows, DecomposedLayerNormIsOneKernelWithTwoReductions) {
  for (bool by_mul : {false, true}) {
    Graph g = decomposed_layernorm_graph(32, by_mul);
    auto groups = find_row_groups(g, {});
    ASSERT_EQ(groups.size(), 1u) << by_mul;
    EXPECT_EQ(groups[0].nodes.size(), 9u) << by_mul;
    EXPECT_EQ(g.value(groups[0].output).name, "y");
    EXPECT_EQ(groups[0].inputs.size(), 3u);  // x, gamma, beta (scalar constants are inlined)
    ASSERT_EQ(groups[0].kernel.reductions.size(), 2u);
    // The variance's body reads the mean: reduction 1 refers to reduction 0.
    EXPECT_NE(loops::to_string(groups[0].kernel).find("r1 = sum("), std::string::npos);
    EXPECT_NE(loops::to_string(groups[0].kernel).find("r0"), std::string::npos);
  }
}

TEST(FuseRows, ReducesOverTrailingAxesOnly) {
  EXPECT_EQ(find_row_groups(reduce_graph(OpKind::ReduceMean, {Dim::fixed(4), Dim::fixed(5)}, {-1}, 0), {}).size(), 1u);
  EXPECT_EQ(find_row_groups(reduce_graph(OpKind::ReduceSum, {Dim::fixed(4), Dim::fixed(3), Dim::fixed(5)}, {2, 1}, 1), {})
                .size(),
            1u);
  // All axes (omitted): one row.
  auto whole = find_row_groups(reduce_graph(OpKind::ReduceMax, {Dim::fixed(4), Dim::fixed(5)}, {}, 0), {});
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].kernel.row_rank, 0);
  EXPECT_EQ(whole[0].kernel.output_kind, loops::RowOutput::rows);
  // A leading axis is no row reduction; a static-1 dim between reduced axes does not matter.
  EXPECT_TRUE(find_row_groups(reduce_graph(OpKind::ReduceSum, {Dim::fixed(4), Dim::fixed(5)}, {0}, 1), {}).empty());
  EXPECT_EQ(find_row_groups(reduce_graph(OpKind::ReduceMin, {Dim::fixed(4), Dim::fixed(1), Dim::fixed(5)}, {-1}, 1), {})
                .size(),
            1u);
  // Softmax over a leading axis is not a row; with static-1 dims after the axis it is.
  EXPECT_TRUE(find_row_groups(softmax_graph({Dim::fixed(4), Dim::fixed(5)}, 0), {}).empty());
  EXPECT_EQ(find_row_groups(softmax_graph({Dim::fixed(4), Dim::fixed(5), Dim::fixed(1)}, 1), {}).size(), 1u);
}

TEST(FuseRows, ProducerUsedOutsideTheGroupIsNotAbsorbed) {
  GraphBuilder b("shared");
  ValueId x = b.input("x", DType::f32, {3, 8});
  ValueId sum = b.op(OpKind::Add, {x, b.scalar(DType::f32, 1.0)});
  b.output(b.op(OpKind::Softmax, {sum}), "y");
  b.output(b.op(OpKind::MatMul, {sum, b.constant("w", random_normal(DType::f32, {8, 2}, 0, 1, 3))}), "z");
  Graph g = finish(b);
  auto groups = find_row_groups(g, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(op_names(g, groups[0]), (std::vector<std::string>{"Softmax"}));
  ASSERT_EQ(groups[0].inputs.size(), 1u);
  EXPECT_EQ(groups[0].inputs[0], sum);
}

TEST(FuseRows, GraphOutputsAreNotAbsorbed) {
  GraphBuilder b("outputs");
  ValueId x = b.input("x", DType::f32, {3, 8});
  ValueId e = b.op(OpKind::Exp, {x});
  b.output(e, "e");  // a producer that is a graph output
  ValueId s = b.op(OpKind::Softmax, {e});
  b.output(s, "s");  // the softmax itself is a graph output too: its consumer must not take it
  b.output(b.op(OpKind::Neg, {s}), "t");
  Graph g = finish(b);
  auto groups = find_row_groups(g, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(op_names(g, groups[0]), (std::vector<std::string>{"Softmax"}));
  EXPECT_EQ(g.value(groups[0].output).name, "s");
}

TEST(FuseRows, ClaimedNodesAreSkipped) {
  Graph g = masked_softmax_graph(2, Dim::fixed(8));
  std::vector<char> claimed(g.nodes.size(), 0);
  NodeId softmax = -1, add = -1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op == OpKind::Softmax) softmax = NodeId(i);
    if (g.nodes[i].op == OpKind::Add) add = NodeId(i);
  }
  claimed[size_t(add)] = 1;
  auto groups = find_row_groups(g, claimed);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(op_names(g, groups[0]), (std::vector<std::string>{"Softmax", "IsNaN", "Where"}));
  claimed[size_t(softmax)] = 1;
  EXPECT_TRUE(find_row_groups(g, claimed).empty());
}

TEST(FuseRows, LayerNormWithStatisticsOutputsStaysANode) {
  GraphBuilder b("ln_stats");
  ValueId x = b.input("x", DType::f32, {3, 8});
  ValueId scale = b.constant("gamma", random_normal(DType::f32, {8}, 1, 0.1, 1));
  auto outs = b.op_multi(OpKind::LayerNormalization, {x, scale}, 2);
  b.output(outs[0], "y");
  b.output(outs[1], "mean");
  Graph g = finish(b);
  EXPECT_TRUE(find_row_groups(g, {}).empty());
}

TEST(FuseRows, LayerNormScaleWithAnotherSymbolStaysANode) {
  GraphBuilder b("ln_sym");
  ValueId x = b.input("x", DType::f32, Shape{Dim::fixed(3), Dim::sym("h")});
  ValueId scale = b.input("gamma", DType::f32, Shape{Dim::sym("k")});  // may differ from h at run time
  b.output(b.op(OpKind::LayerNormalization, {x, scale}), "y");
  Graph g = finish(b);
  EXPECT_TRUE(find_row_groups(g, {}).empty());
}

TEST(FuseRows, DeeplySharedProducersEmitInLinearTime) {
  // v = v + v forty times: as a tree 2^40 leaves; every pass must walk the shared nodes once.
  GraphBuilder b("doubling");
  ValueId v = b.input("x", DType::f32, {2, 8});
  for (int i = 0; i < 40; ++i) v = b.op(OpKind::Add, {v, v});
  b.output(b.op(OpKind::Softmax, {v}), "y");
  Graph g = finish(b);
  auto groups = find_row_groups(g, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].nodes.size(), 41u);
  std::string code = codegen::cpu::emit_row_cpp(groups[0].kernel).source.code;
  EXPECT_NE(code.find("const float v40 = (v39 + v39);"), std::string::npos);
}

TEST(FuseRows, IntegerReductionsStayNodes) {
  GraphBuilder b("ints");
  ValueId x = b.input("x", DType::i64, {3, 8});
  b.output(b.op(OpKind::ReduceSum, {x, b.ints({-1})}), "y");
  Graph g = finish(b);
  EXPECT_TRUE(find_row_groups(g, {}).empty());
}

}  // namespace
}  // namespace kiln::rows_test
