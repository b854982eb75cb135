// Which nodes find_library_groups puts into one library call, and which it refuses.
#include <filesystem>

#include "graphs.h"
#include "library_test_util.h"
#include "onnx/import.h"

namespace kiln::library_test {
namespace {

using schedule::LibraryActivation;
using schedule::LibraryCore;
using Ops = std::vector<std::string>;

TEST(FindLibraryGroups, LinearBiasGeluResidualIsOneGroup) {
  for (Act act : {Act::gelu0, Act::gelu1, Act::gelu2}) {
    Graph g = linear_graph(LinearSpec{.act = act});
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 1u) << static_cast<int>(act);
    const LibraryGroup& grp = groups[0];
    EXPECT_EQ(grp.label, "matmul+bias+gelu+add");
    EXPECT_EQ(grp.nodes.size(), 8u);  // MatMul, Add, 5 GELU nodes, Add
    EXPECT_EQ(grp.act, LibraryActivation::gelu_erf);
    EXPECT_EQ(grp.output, g.outputs[0]);
    ASSERT_EQ(grp.inputs.size(), 4u);  // x, w, bias, residual
    EXPECT_EQ(g.value(grp.inputs[0]).name, "x");
    EXPECT_EQ(g.value(grp.inputs[3]).name, "r");
    EXPECT_EQ(grp.residual, 3);
    EXPECT_TRUE(std::is_sorted(grp.nodes.begin(), grp.nodes.end()));
  }
}

TEST(FindLibraryGroups, OtherActivationsAndReluAfterResidual) {
  struct Case {
    Act act;
    const char* label;
  } cases[] = {{Act::relu, "matmul+bias+relu+add+relu"},
               {Act::tanh, "matmul+bias+tanh+add+relu"},
               {Act::sigmoid, "matmul+bias+sigmoid+add+relu"},
               {Act::gelu_tanh, "matmul+bias+gelu_tanh+add+relu"}};
  for (const Case& c : cases) {
    Graph g = linear_graph(LinearSpec{.act = c.act, .relu_after = true});
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 1u) << c.label;
    EXPECT_EQ(groups[0].label, c.label);
    EXPECT_EQ(groups[0].nodes.size(), g.nodes.size()) << c.label;
  }
}

TEST(FindLibraryGroups, WrongGeluConstantLeavesTheGeluOut) {
  GraphBuilder b("bad_gelu");
  ValueId x = b.input("x", DType::f32, {4, 8});
  ValueId y = b.op(OpKind::MatMul, {x, b.constant("w", random_uniform(DType::f32, {8, 5}, -1, 1, 1))});
  y = b.op(OpKind::Add, {y, b.constant("bias", random_uniform(DType::f32, {5}, -1, 1, 2))});
  b.output(gelu_erf(b, y, 0, 1.4142), "y");  // 1.4142 is not sqrt(2) to 1e-6
  Graph g = inferred(b);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].label, "matmul+bias");
  EXPECT_EQ(op_names(g, groups[0]), (Ops{"MatMul", "Add"}));
}

TEST(FindLibraryGroups, IntermediateWithAnotherUseOrGraphOutputEndsTheGroup) {
  {  // the MatMul's output is also read by a Relu outside
    GraphBuilder b("shared");
    ValueId x = b.input("x", DType::f32, {4, 8});
    ValueId y = b.op(OpKind::MatMul, {x, b.constant("w", random_uniform(DType::f32, {8, 5}, -1, 1, 1))});
    b.output(b.op(OpKind::Add, {y, b.constant("bias", random_uniform(DType::f32, {5}, -1, 1, 2))}), "y");
    b.output(b.op(OpKind::Relu, {y}), "z");
    Graph g = inferred(b);
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(op_names(g, groups[0]), (Ops{"MatMul"}));
  }
  {  // the biased value is a graph output: the activation after it stays out
    GraphBuilder b("output");
    ValueId x = b.input("x", DType::f32, {4, 8});
    ValueId y = b.op(OpKind::MatMul, {x, b.constant("w", random_uniform(DType::f32, {8, 5}, -1, 1, 1))});
    y = b.op(OpKind::Add, {y, b.constant("bias", random_uniform(DType::f32, {5}, -1, 1, 2))});
    b.output(y, "biased");
    b.output(b.op(OpKind::Tanh, {y}), "z");
    Graph g = inferred(b);
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].label, "matmul+bias");
    EXPECT_EQ(g.value(groups[0].output).name, "biased");
  }
  {  // GELU's input also feeds a node outside: no GELU (its input would be needed outside the call)
    GraphBuilder b("gelu_shared");
    ValueId x = b.input("x", DType::f32, {4, 8});
    ValueId y = b.op(OpKind::MatMul, {x, b.constant("w", random_uniform(DType::f32, {8, 5}, -1, 1, 1))});
    b.output(gelu_erf(b, y, 0), "y");
    b.output(b.op(OpKind::Sigmoid, {y}), "z");
    Graph g = inferred(b);
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(op_names(g, groups[0]), (Ops{"MatMul"}));
  }
}

TEST(FindLibraryGroups, BiasMustBeOnePerColumn) {
  // [4, 1] broadcasts per row: not a bias (and not a residual: it is constant).
  for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 1}, std::vector<int64_t>{4, 5}}) {
    GraphBuilder b("bias_shape");
    ValueId x = b.input("x", DType::f32, {4, 8});
    ValueId y = b.op(OpKind::MatMul, {x, b.constant("w", random_uniform(DType::f32, {8, 5}, -1, 1, 1))});
    y = b.op(OpKind::Add, {y, b.constant("c", random_uniform(DType::f32, shape, -1, 1, 2))});
    b.output(b.op(OpKind::Relu, {y}), "y");
    Graph g = inferred(b);
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(op_names(g, groups[0]), (Ops{"MatMul"}));
  }
  for (std::vector<int64_t> shape : {std::vector<int64_t>{1, 5}, std::vector<int64_t>{1}, std::vector<int64_t>{}}) {
    GraphBuilder b("bias_ok");
    ValueId x = b.input("x", DType::f32, {4, 8});
    ValueId y = b.op(OpKind::MatMul, {x, b.constant("w", random_uniform(DType::f32, {8, 5}, -1, 1, 1))});
    b.output(b.op(OpKind::Add, {b.constant("c", random_uniform(DType::f32, shape, -1, 1, 2)), y}), "y");
    Graph g = inferred(b);
    auto groups = groups_of(g);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].label, "matmul+bias");
  }
}

TEST(FindLibraryGroups, ResidualMustHaveTheOutputsShape) {
  GraphBuilder b("bcast_residual");
  ValueId x = b.input("x", DType::f32, {4, 8});
  ValueId r = b.input("r", DType::f32, {1, 5});  // broadcasts: not a residual
  ValueId y = b.op(OpKind::MatMul, {x, b.constant("w", random_uniform(DType::f32, {8, 5}, -1, 1, 1))});
  b.output(b.op(OpKind::Add, {y, r}), "y");
  Graph g = inferred(b);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(op_names(g, groups[0]), (Ops{"MatMul"}));
}

TEST(FindLibraryGroups, ClaimedNodesAreNeverTaken) {
  Graph g = linear_graph(LinearSpec{.act = Act::relu});
  std::vector<char> claimed(g.nodes.size(), 0);
  claimed[0] = 1;  // the MatMul
  EXPECT_TRUE(groups_of(g, claimed).empty());
  claimed.assign(g.nodes.size(), 0);
  claimed[2] = 1;  // the Relu
  auto groups = groups_of(g, claimed);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].label, "matmul+bias");
}

TEST(FindLibraryGroups, BatchedMatmulOnlyWithConsumersAndNonFloatIsLeftAlone) {
  GraphBuilder b("bmm");
  ValueId q = b.input("q", DType::f32, Shape{Dim::sym("batch"), Dim::fixed(3), Dim::fixed(5), Dim::fixed(7)});
  ValueId k = b.input("k", DType::f32, Shape{Dim::sym("batch"), Dim::fixed(3), Dim::fixed(7), Dim::fixed(5)});
  ValueId r = b.input("r", DType::f32, Shape{Dim::sym("batch"), Dim::fixed(3), Dim::fixed(5), Dim::fixed(5)});
  ValueId m = b.input("m", DType::f32, Shape{Dim::sym("batch"), Dim::fixed(1), Dim::fixed(7), Dim::fixed(7)});
  b.output(b.op(OpKind::MatMul, {q, k}), "plain");
  b.output(b.op(OpKind::Add, {b.op(OpKind::MatMul, {k, q}), m}), "broadcast_add");  // m broadcasts: no residual
  b.output(b.op(OpKind::Relu, {b.op(OpKind::Add, {b.op(OpKind::MatMul, {q, k}), r})}), "fused");
  ValueId i = b.input("i", DType::i64, {4, 4});
  b.output(b.op(OpKind::Relu, {b.op(OpKind::MatMul, {i, b.constant("wi", Tensor::empty(DType::i64, {4, 4}))})}), "int");
  Graph g = inferred(b);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].core, LibraryCore::batched_matmul);
  EXPECT_EQ(groups[0].label, "bmm+add+relu");
  EXPECT_EQ(g.value(groups[0].output).name, "fused");
}

TEST(FindLibraryGroups, GemmWithBiasAndTransposes) {
  GraphBuilder b("gemm");
  ValueId x = b.input("x", DType::f32, {6, 8});
  ValueId w = b.constant("w", random_uniform(DType::f32, {5, 8}, -1, 1, 1));
  ValueId c = b.constant("c", random_uniform(DType::f32, {1, 5}, -1, 1, 2));
  ValueId y = b.op(OpKind::Gemm, {x, w, c}, {{"transB", 1}, {"alpha", 0.5}});
  b.output(b.op(OpKind::Sigmoid, {y}), "y");
  ValueId c2 = b.constant("c2", random_uniform(DType::f32, {6, 1}, -1, 1, 3));  // per row: not fusible
  b.output(b.op(OpKind::Gemm, {x, w, c2}, {{"transB", 1}}), "z");
  Graph g = inferred(b);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].label, "gemm+sigmoid");
  EXPECT_EQ(groups[0].inputs.size(), 3u);
}

TEST(FindLibraryGroups, BasicBlockConvBnReluAddRelu) {
  Graph g = basic_block(1, 4, 6, 1);
  auto groups = groups_of(g);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].label, "conv+bn+relu");
  EXPECT_EQ(groups[1].label, "conv+bn+add+relu");
  EXPECT_EQ(groups[0].nodes.size() + groups[1].nodes.size(), g.nodes.size());
  EXPECT_EQ(groups[1].inputs.size(), 7u);  // x, w, 4 BN params, residual
  EXPECT_EQ(groups[1].residual, 6);
}

TEST(FindLibraryGroups, Resnet18FromTheZoo) {
  std::filesystem::path model = std::filesystem::path(KILN_SOURCE_DIR) / "build/zoo/resnet18/resnet18.onnx";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is not there";
  Options o;
  Graph g = import_onnx(model.string(), o);
  prepare_graph(g, {{"batch", 1}}, o);
  auto groups = groups_of(g);
  int conv = 0, gemm = 0, nodes = 0;
  for (const auto& grp : groups) {
    conv += grp.core == LibraryCore::conv;
    gemm += grp.core == LibraryCore::gemm;
    nodes += static_cast<int>(grp.nodes.size());
  }
  EXPECT_EQ(conv, 20);
  EXPECT_EQ(gemm, 1);
  EXPECT_EQ(nodes, 20 + 17 + 8 + 1);  // every Conv, Relu, Add and the Gemm
  EXPECT_EQ(groups[0].label, "conv+relu");
}

}  // namespace
}  // namespace kiln::library_test
