// GraphBuilder: the documented example, naming, attribute conversions, misuse.
#include "irtext_helpers.h"

namespace kiln {
namespace {
using namespace testing_irtext;

TEST(GraphBuilder, Mlp) {
  GraphBuilder b("mlp");
  std::vector<float> vals(16 * 8);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<float>(i) / 8;
  ValueId x = b.input("x", DType::f32, {Dim::sym("batch", 4), Dim::fixed(16)});
  ValueId w = b.constant("w", Tensor::from_vector<float>(DType::f32, {16, 8}, vals));
  ValueId y = b.op(OpKind::MatMul, {x, w});
  ValueId z = b.op(OpKind::Softmax, {y}, {{"axis", Attribute{int64_t{-1}}}});
  b.output(z, "probs");
  Graph g = b.build();
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.name, "mlp");
  EXPECT_EQ(g.value(y).name, "MatMul_0");
  EXPECT_EQ(g.value(g.outputs[0]).name, "probs");
  EXPECT_EQ(g.nodes[1].attr_int("axis", 0), -1);
  EXPECT_EQ(g.value(y).producer, 0);
  std::string text = print_graph(g);
  EXPECT_EQ(text,
            "graph mlp(%x: f32[batch~4,16]) -> (%probs) {\n"
            "  const %w: f32[16,8] = <elided 512 bytes fnv=" +
                text.substr(text.find("fnv=") + 4, 16) +
                ">\n"
                "  %MatMul_0 = MatMul(%x, %w)\n"
                "  %probs = Softmax(%MatMul_0) {axis=-1}\n"
                "}\n");
  expect_round_trip(g);
}

TEST(GraphBuilder, AttributeConversions) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2, 3});
  ValueId t = b.op(OpKind::Transpose, {x},
                   {{"perm", {1, 0}},
                    {"i", 3},
                    {"big", int64_t{1} << 40},
                    {"u", 7u},
                    {"f", 0.25},
                    {"ff", 0.5f},
                    {"s", "linear"},
                    {"ss", std::string("nearest")},
                    {"fl", {1.0, 2.5}},
                    {"strs", {"a", "b"}},
                    {"i64s", {int64_t{1} << 40, int64_t{2}}},
                    {"tensor", Tensor::scalar<float>(DType::f32, 2)}});
  const Node& n = b.graph().nodes[0];
  EXPECT_EQ(n.attr_ints("perm"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(n.attr_int("i", 0), 3);
  EXPECT_EQ(n.attr_int("big", 0), int64_t{1} << 40);
  EXPECT_EQ(n.attr_int("u", 0), 7);
  EXPECT_EQ(n.attr_float("f", 0), 0.25);
  EXPECT_EQ(n.attr_float("ff", 0), 0.5);
  EXPECT_EQ(n.attr_string("s", ""), "linear");
  EXPECT_EQ(n.attr_string("ss", ""), "nearest");
  EXPECT_EQ(n.attr_floats("fl"), (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(std::get<std::vector<std::string>>(n.attrs.find("strs")->second.value), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(n.attr_ints("i64s"), (std::vector<int64_t>{int64_t{1} << 40, 2}));
  ASSERT_NE(n.attr_tensor("tensor"), nullptr);
  b.output(t);
  expect_round_trip(b.build());
}

TEST(GraphBuilder, MultiOutputAndHelpers) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {4, 6});
  auto parts = b.op_multi(OpKind::Split, {x, b.ints({2, 4})}, 2, {{"axis", 1}});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(b.value(parts[0]).name, "Split_0.0");
  EXPECT_EQ(b.value(parts[1]).name, "Split_0.1");
  auto named = b.op_named(OpKind::Split, {x}, {"left", "", "right"}, {{"num_outputs", 3}});
  EXPECT_EQ(named[1], kNoValue);
  EXPECT_EQ(b.value(named[2]).name, "right");
  ValueId s = b.scalar(DType::f32, 2.5);
  EXPECT_EQ(b.value(s).constant->data<float>()[0], 2.5f);
  EXPECT_EQ(b.value(s).type.rank(), 0);
  ValueId k = b.op(OpKind::Mul, {parts[0], s});
  b.set_type(k, TensorType{DType::f32, {Dim::fixed(4), Dim::fixed(2)}});
  b.output(k, "scaled");
  b.output(named[0]);
  Graph g = b.build();
  EXPECT_EQ(g.value(k).type.rank(), 2);
  EXPECT_EQ(g.value(k).name, "scaled");
  expect_round_trip(g);
}

TEST(GraphBuilder, GeneratedNamesStayUnique) {
  GraphBuilder b;
  ValueId x = b.input("Relu_0", DType::f32, {2});  // takes the name the first node's output would get
  ValueId y = b.op(OpKind::Relu, {x});
  EXPECT_EQ(b.value(y).name, "Relu_0.1");
  ValueId c1 = b.constant(Tensor::scalar<float>(DType::f32, 1));
  ValueId c2 = b.constant(Tensor::scalar<float>(DType::f32, 2));
  EXPECT_NE(b.value(c1).name, b.value(c2).name);
  b.output(y);
  expect_round_trip(b.build());
}

TEST(GraphBuilder, MisuseIsAnInternalError) {
  {
    GraphBuilder b;
    b.input("x", DType::f32, {2});
    EXPECT_THROW(b.input("x", DType::f32, {2}), InternalError);  // duplicate name
    EXPECT_THROW(b.op(OpKind::Relu, {5}), InternalError);          // no such value
    EXPECT_THROW(b.output(9), InternalError);
    EXPECT_THROW(b.op(OpKind::Relu, {0}, {{"a", 1}, {"a", 2}}), InternalError);
  }
  {
    GraphBuilder b;
    ValueId x = b.input("x", DType::f32, {2});
    b.output(b.op(OpKind::Relu, {x}));
    Graph g = b.build();
    EXPECT_THROW(b.input("y", DType::f32, {2}), InternalError);  // used after build
  }
}

TEST(GraphBuilder, RandomTensorsAreDeterministic) {
  Tensor a = random_uniform(DType::f32, {1000}, -0.5, 0.5, 42);
  Tensor b = random_uniform(DType::f32, {1000}, -0.5, 0.5, 42);
  Tensor c = random_uniform(DType::f32, {1000}, -0.5, 0.5, 43);
  EXPECT_TRUE(same_tensor(a, b));
  EXPECT_FALSE(same_tensor(a, c));
  double sum = 0;
  for (int i = 0; i < 1000; ++i) {
    float v = a.data<float>()[i];
    EXPECT_GE(v, -0.5f);
    EXPECT_LE(v, 0.5f);
    sum += v;
  }
  EXPECT_LT(std::fabs(sum / 1000), 0.05);
  Tensor n = random_normal(DType::f64, {4000}, 1.0, 2.0, 5);
  double mean = 0, var = 0;
  for (int i = 0; i < 4000; ++i) mean += n.data<double>()[i] / 4000;
  for (int i = 0; i < 4000; ++i) var += (n.data<double>()[i] - mean) * (n.data<double>()[i] - mean) / 4000;
  EXPECT_NEAR(mean, 1.0, 0.15);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.15);
  Tensor h = random_normal(DType::f16, {3, 3}, 0, 1, 1);
  EXPECT_EQ(h.dtype(), DType::f16);
}

}  // namespace
}  // namespace kiln
