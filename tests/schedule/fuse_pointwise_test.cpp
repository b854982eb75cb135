// Pointwise fusion: which nodes group, and that compiled sessions match eager ones, also at two sizes
// of a symbolic dimension with one compile.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "kiln/graph.h"
#include "kiln/builder.h"
#include "kiln/session.h"
#include "runtime/compare.h"
#include "runtime/demo_model.h"
#include "runtime/inputs.h"
#include "passes/passes.h"
#include "schedule/fuse_pointwise.h"

namespace kiln {
namespace {

Options test_options() {
  Options o;
  o.cache_dir = (std::filesystem::temp_directory_path() / ("kiln_fuse_test_" + std::to_string(getpid()))).string();
  return o;
}

// x: f32[n, 8]; y = gelu(x + b) (erf form, 5 pointwise nodes after the Add); z = Relu(x) is a second output.
Graph gelu_graph() {
  GraphBuilder b("gelu");
  ValueId x = b.input("x", DType::f32, Shape{Dim::sym("n"), Dim::fixed(8)});
  ValueId bias = b.constant("bias", random_normal(DType::f32, {8}, 0.0, 1.0, 3));
  ValueId v = b.op(OpKind::Add, {x, bias});
  ValueId e = b.op(OpKind::Erf, {b.op(OpKind::Div, {v, b.scalar(DType::f32, std::sqrt(2.0))})});
  ValueId y = b.op(OpKind::Mul, {b.op(OpKind::Mul, {v, b.op(OpKind::Add, {e, b.scalar(DType::f32, 1.0)})}),
                                 b.scalar(DType::f32, 0.5)});
  b.output(y, "y");
  b.output(b.op(OpKind::Relu, {x}), "z");
  return b.build();
}

TEST(FusePointwise, BiasGeluIsOneGroupWithTheSharedOperandInside) {
  Graph g = gelu_graph();
  infer_shapes(g, Options{});
  auto groups = schedule::find_pointwise_groups(g);
  ASSERT_EQ(groups.size(), 1u);
  // The bias Add's output is used twice (by Div and by Mul), both inside the group: it is computed
  // in the kernel. Relu(x) makes another output and stays a node.
  EXPECT_EQ(groups[0].nodes.size(), 6u);
  EXPECT_EQ(g.value(groups[0].output).name, "y");
  ASSERT_EQ(groups[0].inputs.size(), 2u);   // x and the bias
  ASSERT_EQ(groups[0].symbols.size(), 1u);  // n, read from the input at run time
}

TEST(FusePointwise, AValueUsedOutsideTheGroupStaysANode) {
  GraphBuilder b("shared");
  ValueId x = b.input("x", DType::f32, {3, 5});
  ValueId e = b.op(OpKind::Exp, {x});
  b.output(b.op(OpKind::Neg, {b.op(OpKind::Tanh, {e})}), "y");
  b.output(b.op(OpKind::Relu, {b.op(OpKind::Neg, {e})}), "z");  // a second group reads e too
  Graph g = b.build();
  infer_shapes(g, Options{});
  auto groups = schedule::find_pointwise_groups(g);
  ASSERT_EQ(groups.size(), 2u);
  for (const auto& group : groups) {
    EXPECT_EQ(group.nodes.size(), 2u);
    ASSERT_EQ(group.inputs.size(), 1u);
    EXPECT_EQ(group.inputs[0], e);
  }
}

// Attention's head split: [s, h*d] -> Reshape [s, h, d] -> Transpose [h, s, d] -> Mul by a scale.
// The Transpose and the Mul become one kernel that reads the reshaped buffer through the permutation.
Graph head_split_graph() {
  GraphBuilder b("heads");
  ValueId x = b.input("x", DType::f32, Shape{Dim::sym("s"), Dim::fixed(12)});
  ValueId r = b.op(OpKind::Reshape, {x, b.ints({0, 3, 4})});
  ValueId t = b.op(OpKind::Transpose, {r}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  b.output(b.op(OpKind::Sigmoid, {b.op(OpKind::Mul, {t, b.scalar(DType::f32, 0.125)})}), "y");
  return b.build();
}

TEST(FusePointwise, TransposeJoinsItsConsumersAndMatchesEager) {
  Graph g = head_split_graph();
  infer_shapes(g, Options{});
  auto groups = schedule::find_pointwise_groups(g);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].nodes.size(), 3u);  // Transpose, Mul, Sigmoid (the Reshape is a view)
  Options o = test_options();
  Session eager = Session::from_graph(head_split_graph(), Mode::eager, o, {});
  Session compiled = Session::from_graph(head_split_graph(), Mode::compiled, o, {});
  for (int64_t s : {1, 7, 300}) {
    std::vector<double> vals(static_cast<size_t>(s * 12));
    for (size_t i = 0; i < vals.size(); ++i) vals[i] = std::cos(double(i) * 0.7) * 9.0;
    vals[1] = NAN, vals[2] = -INFINITY;
    std::map<std::string, Tensor> in{{"x", Tensor::from_vector<double>(DType::f32, {s, 12}, vals)}};
    CloseResult r = all_close(compiled.run(in).at("y"), eager.run(in).at("y"), 1e-6, 1e-6);
    EXPECT_TRUE(r.ok) << "s=" << s << ": " << r.reason;
  }
  std::filesystem::remove_all(o.cache_dir);
}

TEST(FusePointwise, CompiledMatchesEagerAtTwoSizesWithOneCompile) {
  Options o = test_options();
  Session eager = Session::from_graph(gelu_graph(), Mode::eager, o, {});
  Session compiled = Session::from_graph(gelu_graph(), Mode::compiled, o, {});
  EXPECT_EQ(compiled.stats().fused_kernels, 1);
  EXPECT_LT(compiled.stats().kernels, eager.stats().kernels);
  for (int64_t n : {1, 37, 5000}) {
    std::vector<double> vals(static_cast<size_t>(n * 8));
    for (size_t i = 0; i < vals.size(); ++i) vals[i] = std::sin(double(i)) * 4.0;
    if (n > 1) vals[3] = NAN, vals[5] = INFINITY, vals[6] = -INFINITY;
    std::map<std::string, Tensor> in{{"x", Tensor::from_vector<double>(DType::f32, {n, 8}, vals)}};
    auto a = eager.run(in), b = compiled.run(in);
    for (const char* name : {"y", "z"}) {
      CloseResult r = all_close(b.at(name), a.at(name), 1e-6, 1e-6);
      EXPECT_TRUE(r.ok) << name << " n=" << n << ": " << r.reason;
    }
  }
  std::filesystem::remove_all(o.cache_dir);
}

TEST(FusePointwise, BroadcastProducersAreNotRecomputed) {
  // a: [4,1] -> Exp -> Add with x [4,6]: Exp's output shape differs from the Add's, so Exp stays a node.
  GraphBuilder b("bcast");
  ValueId a = b.input("a", DType::f32, {4, 1});
  ValueId x = b.input("x", DType::f32, {4, 6});
  ValueId t = b.op(OpKind::Tanh, {b.op(OpKind::Add, {x, b.op(OpKind::Exp, {a})})});
  b.output(t, "t");
  Graph g = b.build();
  infer_shapes(g, Options{});
  auto groups = schedule::find_pointwise_groups(g);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].nodes.size(), 2u);  // Add and Tanh
}

TEST(FusePointwise, DemoTransformerCompiledMatchesEager) {
  Options o = test_options();
  Session eager = Session::from_graph(demo_transformer(), Mode::eager, o, {{"batch", 2}, {"seq", 9}});
  Session compiled = Session::from_graph(demo_transformer(), Mode::compiled, o, {{"batch", 2}, {"seq", 9}});
  EXPECT_GT(compiled.stats().fused_kernels, 0);
  auto in = make_inputs(eager.graph(), {}, 4);
  CloseResult r = all_close(compiled.run(in).at("logits"), eager.run(in).at("logits"), 1e-5, 1e-5);
  EXPECT_TRUE(r.ok) << r.reason;
  std::filesystem::remove_all(o.cache_dir);
}

}  // namespace
}  // namespace kiln
