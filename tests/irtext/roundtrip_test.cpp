// Round trips: graphs made with the builder print, parse back and print identically.
#include <limits>
#include <random>

#include "irtext_helpers.h"

namespace kiln {
namespace {
using namespace testing_irtext;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const Node& node_named(const Graph& g, std::string_view name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + std::string(name));
}

TEST(IrTextRoundTrip, AllAttributeKinds) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {Dim::sym("batch", 4), Dim::fixed(3)});
  Tensor f16_attr = Tensor::from_vector<double>(DType::f16, {3}, {0.1, -kInf, 65504});
  Tensor bool_attr = Tensor::from_vector<int>(DType::boolean, {2, 1}, {1, 0});
  Attrs attrs = {
      {"i", -7},
      {"i_max", std::numeric_limits<int64_t>::max()},
      {"i_min", std::numeric_limits<int64_t>::min()},
      {"f_half", 0.5},
      {"f_one", 1.0},
      {"f_tenth", 0.1},
      {"f_tiny", 5e-324},
      {"f_huge", 1.7976931348623157e308},
      {"f_negzero", -0.0},
      {"f_nan", kNaN},
      {"f_neg_nan", -kNaN},
      {"f_ninf", -kInf},
      {"s", "quote\" backslash\\ newline\n tab\t ctrl\x01 utf8 \xc3\xa9"},
      {"s_empty", ""},
      {"ints", {1, -2, 3}},
      {"ints_empty", std::vector<int64_t>{}},
      {"floats", {1.0, -2.5, kInf, kNaN, 1e-7}},
      {"floats_empty", std::vector<double>{}},
      {"strings", {"a", "", "c d"}},
      {"strings_empty", std::vector<std::string>{}},
      {"t_f32", Tensor::from_vector<float>(DType::f32, {2}, {1.5f, -0.0f})},
      {"t_i64_scalar", Tensor::scalar<int64_t>(DType::i64, -3)},
      {"t_f16", f16_attr},
      {"t_bool", bool_attr},
      {"t_empty", Tensor::empty(DType::i32, {0, 5})},
      {"weird key!", 1},
  };
  ValueId y = b.op(OpKind::Identity, {x}, attrs);
  b.output(y);
  Graph g = b.build();
  Graph back = expect_round_trip(g);
  ASSERT_EQ(back.nodes.size(), 1u);
  const Node& n0 = g.nodes[0];
  const Node& n1 = back.nodes[0];
  ASSERT_EQ(n0.attrs.size(), n1.attrs.size());
  for (const auto& [k, a] : n0.attrs) {
    ASSERT_TRUE(n1.has_attr(k)) << k;
    EXPECT_TRUE(same_attr(a, n1.attrs.find(k)->second)) << k;
  }
  // Float attributes stay floats even when integral.
  EXPECT_EQ(n1.attr_float("f_one", 0), 1.0);
  EXPECT_TRUE(std::signbit(n1.attr_float("f_negzero", 0)));
}

TEST(IrTextRoundTrip, SymbolicDimsWithHints) {
  GraphBuilder b("dims");
  ValueId x = b.input("x", DType::f32, {Dim::sym("batch", 4), Dim::sym("seq", 128), Dim::fixed(768)});
  ValueId m = b.input("m", DType::i64, {Dim::sym("batch"), Dim::sym("unk__0 weird", 3), Dim{}, Dim::fixed(0)});
  ValueId s = b.input("s", DType::boolean, Shape{});
  ValueId y = b.op(OpKind::Relu, {x});
  b.set_type(y, TensorType{DType::f32, {Dim::sym("batch", 4), Dim::sym("seq"), Dim::fixed(768)}});
  b.output(y);
  b.output(m);
  b.output(s);
  Graph g = b.build();
  std::string text = print_graph(g);
  EXPECT_NE(text.find("%x: f32[batch~4,seq~128,768]"), std::string::npos) << text;
  EXPECT_NE(text.find("i64[batch,\"unk__0 weird\"~3,?,0]"), std::string::npos) << text;
  Graph back = expect_round_trip(g);
  const Value& bx = back.value(back.inputs[0]);
  EXPECT_EQ(bx.type.shape[1].symbol, "seq");
  EXPECT_EQ(bx.type.shape[1].hint, 128);
  EXPECT_EQ(back.value(back.inputs[1]).type, g.value(m).type);
  EXPECT_EQ(back.value(back.outputs[0]).type, g.value(y).type);
}

TEST(IrTextRoundTrip, OmittedInputsAndOutputs) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {4, 6});
  ValueId hi = b.scalar(DType::f32, 6.0, "hi");
  ValueId c = b.op(OpKind::Clip, {x, kNoValue, hi});
  auto parts = b.op_named(OpKind::Split, {c}, {"first", "", "third"}, {{"axis", 1}, {"num_outputs", 3}}, "split");
  EXPECT_EQ(parts[1], kNoValue);
  auto ln = b.op_named(OpKind::LayerNormalization, {parts[0]}, {"", "", ""});  // every output omitted
  EXPECT_EQ(ln.size(), 3u);
  b.output(parts[2]);
  Graph g = b.build();
  g.add_node(OpKind::Identity, {x}, {});  // a node without outputs at all
  std::string text = print_graph(g);
  EXPECT_NE(text.find("Clip(%x, _, %hi)"), std::string::npos) << text;
  EXPECT_NE(text.find("%first, _, %third = Split(%Clip_0)"), std::string::npos) << text;
  EXPECT_NE(text.find("_, _, _ = LayerNormalization(%first)"), std::string::npos) << text;
  Graph back = expect_round_trip(g);
  const Node& split = node_named(back, "split");
  ASSERT_EQ(split.outputs.size(), 3u);
  EXPECT_EQ(split.outputs[1], kNoValue);
  EXPECT_EQ(back.nodes[0].inputs[1], kNoValue);
  EXPECT_TRUE(back.nodes.back().outputs.empty());
}

TEST(IrTextRoundTrip, WeirdAndClashingNames) {
  Graph g;
  g.name = "my graph/v1";
  ValueId a = g.add_value("onnx::MatMul_123", TensorType{DType::f32, {Dim::fixed(2)}});
  ValueId b = g.add_value("", TensorType{DType::f32, {Dim::fixed(2)}});
  ValueId c = g.add_value("x", TensorType{DType::f32, {Dim::fixed(2)}});
  g.inputs = {a, b, c};
  g.add_node(OpKind::Add, {a, b}, {"x"});                 // clashes with the input named x
  g.add_node(OpKind::Mul, {c, 1}, {"x.1"}, "");           // the name a clash would pick next
  g.add_node(OpKind::Sub, {2, 3}, {"%\"quoted\" \\ name\n"}, "/model/layers.0/Sub");
  g.add_node(OpKind::Neg, {5}, {"123"}, "Neg_7");         // a custom name that looks like a default
  g.outputs = {5, 6};
  verify_graph(g, "test");
  std::string text = print_graph(g);
  EXPECT_NE(text.find("graph \"my graph/v1\"("), std::string::npos) << text;
  EXPECT_NE(text.find("%\"onnx::MatMul_123\""), std::string::npos) << text;
  EXPECT_NE(text.find("%123 = Neg("), std::string::npos) << text;
  EXPECT_NE(text.find("@Neg_7"), std::string::npos) << text;
  EXPECT_NE(text.find("@\"/model/layers.0/Sub\""), std::string::npos) << text;
  Graph back = expect_round_trip(g);
  // Every value keeps its name unless it was empty or clashed.
  EXPECT_EQ(back.value(back.inputs[0]).name, "onnx::MatMul_123");
  EXPECT_FALSE(back.value(back.inputs[1]).name.empty());
  EXPECT_EQ(back.value(back.inputs[2]).name, "x");
  EXPECT_EQ(back.value(back.nodes[2].outputs[0]).name, "%\"quoted\" \\ name\n");
  std::set<std::string> names;
  for (const Value& v : back.values) EXPECT_TRUE(names.insert(v.name).second) << v.name;
}

TEST(IrTextRoundTrip, SpecialFloatConstants) {
  GraphBuilder b;
  std::vector<double> specials = {kNaN, -kNaN, kInf, -kInf, 0.0, -0.0, 0.1, 1e-45, 3.4028234663852886e38, -1.0};
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    std::string name = fmt::format("c_{}", dtype_name(dt));
    b.output(b.constant(name, Tensor::from_vector<double>(dt, {2, 5}, specials)));
  }
  Graph g = b.build();
  std::string text = print_graph(g);
  EXPECT_NE(text.find("const %c_f32: f32[2,5] = [nan, -nan, inf, -inf, 0, -0, 0.1, 1e-45, 3.4028235e+38, -1]"),
            std::string::npos)
      << text;
  Graph back = expect_round_trip(g);
  for (size_t i = 0; i < g.values.size(); ++i)
    EXPECT_TRUE(same_tensor(*g.values[i].constant, *back.values[i].constant)) << g.values[i].name;
}

// Every f16 and bf16 bit pattern, and random f32/f64 bit patterns, survive exactly (NaN payloads aside).
TEST(IrTextRoundTrip, EveryHalfAndRandomFloatBits) {
  Graph g;
  for (DType dt : {DType::f16, DType::bf16}) {
    Tensor t = Tensor::empty(dt, {65536});
    for (int i = 0; i < 65536; ++i) t.data<uint16_t>()[i] = static_cast<uint16_t>(i);
    g.add_constant(fmt::format("all_{}", dtype_name(dt)), t);
  }
  std::mt19937_64 rng(7);
  Tensor f = Tensor::empty(DType::f32, {20000});
  for (int i = 0; i < 20000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    std::memcpy(&f.data<float>()[i], &bits, 4);
  }
  Tensor d = Tensor::empty(DType::f64, {20000});
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    std::memcpy(&d.data<double>()[i], &bits, 8);
  }
  g.add_constant("rand_f32", f);
  g.add_constant("rand_f64", d);
  for (ValueId v = 0; v < 4; ++v) g.outputs.push_back(v);
  std::string elided = print_graph(g);
  EXPECT_NE(elided.find("<elided 131072 bytes fnv="), std::string::npos);
  EXPECT_LT(elided.size(), 1000u);
  Graph back = expect_round_trip(g);
  ASSERT_EQ(back.values.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_tensor(*g.values[i].constant, *back.values[i].constant)) << i;
}

TEST(IrTextRoundTrip, IntegerAndBoolConstants) {
  GraphBuilder b;
  b.output(b.ints({std::numeric_limits<int64_t>::min(), -1, 0, std::numeric_limits<int64_t>::max()}, "i64"));
  b.output(b.constant("i32", Tensor::from_vector<int64_t>(DType::i32, {3}, {INT32_MIN, 0, INT32_MAX})));
  b.output(b.constant("i8", Tensor::from_vector<int>(DType::i8, {2}, {-128, 127})));
  b.output(b.constant("u8", Tensor::from_vector<int>(DType::u8, {2}, {0, 255})));
  b.output(b.constant("bool", Tensor::from_vector<int>(DType::boolean, {3}, {1, 0, 1})));
  b.output(b.constant("empty", Tensor::empty(DType::f32, {3, 0})));
  b.output(b.scalar(DType::i64, 42, "answer"));
  Graph g = b.build();
  std::string text = print_graph(g);
  EXPECT_NE(text.find("const %bool: bool[3] = [true, false, true]"), std::string::npos) << text;
  EXPECT_NE(text.find("const %empty: f32[3,0] = []"), std::string::npos) << text;
  EXPECT_NE(text.find("const %answer: i64[] = [42]"), std::string::npos) << text;
  Graph back = expect_round_trip(g);
  for (size_t i = 0; i < g.values.size(); ++i)
    EXPECT_TRUE(same_tensor(*g.values[i].constant, *back.values[i].constant)) << g.values[i].name;
}

TEST(IrTextRoundTrip, ElidedConstantsAreRefused) {
  GraphBuilder b;
  ValueId w = b.constant("w", random_uniform(DType::f32, {4, 5}, -1, 1, 3));
  b.output(b.op(OpKind::Neg, {w}));
  Graph g = b.build();
  std::string text = print_graph(g);
  EXPECT_NE(text.find("const %w: f32[4,5] = <elided 80 bytes fnv="), std::string::npos) << text;
  try {
    parse_graph(text);
    FAIL() << "elided text parsed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("IR text 2:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("inline_all"), std::string::npos) << e.what();
  }
  PrintOptions wide;
  wide.max_inline_elements = 20;
  EXPECT_NO_THROW(parse_graph(print_graph(g, wide)));
  expect_round_trip(g);
}

TEST(IrTextRoundTrip, ExternalDataComesBackFromTheDataSource) {
  GraphBuilder b;
  ValueId w = b.constant("w", random_uniform(DType::f32, {4, 5}, -1, 1, 3));
  ValueId v = b.constant("v", random_uniform(DType::bf16, {3, 7}, -1, 1, 4));
  b.output(b.op(OpKind::Neg, {w}));
  b.output(b.op(OpKind::Neg, {v}));
  Graph g = b.build();
  std::vector<Tensor> data;
  PrintOptions external;
  external.external_data = [&](const Tensor& t) {
    data.push_back(t);
    return static_cast<int64_t>(data.size() - 1);
  };
  const std::string text = print_graph(g, external);
  EXPECT_NE(text.find("const %w: f32[4,5] = <data 0>"), std::string::npos) << text;
  EXPECT_NE(text.find("const %v: bf16[3,7] = <data 1>"), std::string::npos) << text;
  ASSERT_EQ(data.size(), 2u);

  std::vector<TensorType> asked;
  DataSource source = [&](int64_t index, const TensorType& type) {
    asked.push_back(type);
    if (index < 0 || index >= static_cast<int64_t>(data.size())) user_error("no section {}", index);
    return data[size_t(index)];
  };
  Graph back = parse_graph(text, source);
  EXPECT_EQ(print_graph(back, all_values()), print_graph(g, all_values()));
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(type_string(asked[1]), "bf16[3,7]");

  // Without a source `<data N>` is refused like an elided constant; a bad index names the line.
  EXPECT_THROW(parse_graph(text), UserError);
  std::string bad = text;
  bad.replace(bad.find("<data 1>"), 8, "<data 9>");
  try {
    parse_graph(bad, source);
    FAIL() << "a missing data section parsed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("data section 9: no section 9"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("IR text 3:"), std::string::npos) << e.what();
  }
  bad.replace(bad.find("<data 9>"), 8, "<blob 1>");
  EXPECT_THROW(parse_graph(bad, source), UserError);
}

TEST(IrTextRoundTrip, ConstantTypeDiffersFromTensor) {
  Graph g;
  ValueId c = g.add_constant("c", Tensor::from_vector<float>(DType::f32, {2}, {1, 2}));
  g.value(c).type = TensorType{DType::f32, {Dim::sym("n", 2)}};  // declared symbolically
  ValueId u = g.add_constant("u", Tensor::from_vector<int64_t>(DType::i64, {1}, {5}));
  g.value(u).type = TensorType{};  // not known
  g.outputs = {c, u};
  verify_graph(g, "test");
  std::string text = print_graph(g);
  EXPECT_NE(text.find("const %c: f32[n~2] = f32[2] [1, 2]"), std::string::npos) << text;
  EXPECT_NE(text.find("const %u: ? = i64[1] [5]"), std::string::npos) << text;
  Graph back = expect_round_trip(g);
  EXPECT_EQ(back.value(0).type, g.value(0).type);
  EXPECT_EQ(back.value(1).type, TensorType{});
  EXPECT_TRUE(same_tensor(*back.value(1).constant, *g.value(1).constant));
}

TEST(IrTextRoundTrip, InputWithDefaultValue) {
  Graph g;
  ValueId x = g.add_constant("x", Tensor::from_vector<float>(DType::f32, {2}, {3, 4}));
  g.inputs = {x};
  g.add_node(OpKind::Relu, {x}, {"y"});
  g.outputs = {1};
  std::string text = print_graph(g);
  EXPECT_NE(text.find("graph main(%x: f32[2] = [3, 4]) -> (%y)"), std::string::npos) << text;
  Graph back = expect_round_trip(g);
  ASSERT_EQ(back.inputs.size(), 1u);
  EXPECT_TRUE(back.value(back.inputs[0]).constant);
}

TEST(IrTextRoundTrip, NodeNamesOnlyWhenNotDefault) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::f32, {2});
  ValueId y = b.op(OpKind::Relu, {x});
  ValueId z = b.op(OpKind::Neg, {y}, {}, "my_neg");
  ValueId e = b.op(OpKind::Exp, {z}, {}, "Relu_0");  // another node's default name
  b.output(e);
  Graph g = b.build();
  std::string text = print_graph(g);
  EXPECT_NE(text.find("%Relu_0 = Relu(%x)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("= Neg(%Relu_0) @my_neg\n"), std::string::npos) << text;
  EXPECT_NE(text.find("= Exp(%my_neg) @Relu_0\n"), std::string::npos) << text;
  Graph back = expect_round_trip(g);
  EXPECT_EQ(back.nodes[0].name, "Relu_0");
  EXPECT_EQ(back.nodes[1].name, "my_neg");
  EXPECT_EQ(back.nodes[2].name, "Relu_0");
}

TEST(IrTextParse, HandWrittenText) {
  Graph g = parse_graph(R"(
    // a comment line
    graph main(%input_ids: i64[batch,seq~128], %"onnx::x": f32[batch,seq,2]) -> (%a, %logits) {
      const %w: f32[2,2] = [1, 2.5, -3e2, nan]   // comment after a statement
      %y: f32[batch,seq,2] = MatMul(%"onnx::x", %w)
      %a: f32[batch], %b = Split(%y, _) {axis=0, num_outputs=2}
      %logits = Softmax(%b) {axis=-1, names=["p", "q"], empty=[], scales=floats[1, 2], alpha=1e-3, t=i64[2] [7, 8]}
        @"soft max"
    })");
  EXPECT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.value(g.inputs[0]).type.shape[1].hint, 128);
  const Value& w = g.value(*g.find_value("w"));
  ASSERT_TRUE(w.constant);
  EXPECT_EQ(w.constant->data<float>()[2], -300.0f);
  EXPECT_TRUE(std::isnan(w.constant->data<float>()[3]));
  const Node& split = g.nodes[1];
  EXPECT_EQ(split.inputs[1], kNoValue);
  EXPECT_EQ(split.attr_int("num_outputs", 0), 2);
  EXPECT_EQ(g.value(split.outputs[1]).type, TensorType{});
  const Node& sm = g.nodes[2];
  EXPECT_EQ(sm.name, "soft max");
  EXPECT_EQ(sm.attr_int("axis", 0), -1);
  EXPECT_EQ(sm.attr_ints("empty"), std::vector<int64_t>{});
  EXPECT_EQ(sm.attr_floats("scales"), (std::vector<double>{1, 2}));
  EXPECT_EQ(sm.attr_float("alpha", 0), 1e-3);
  EXPECT_EQ(sm.attr_tensor("t")->to_int64_vector(), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(g.outputs.size(), 2u);
  EXPECT_NO_THROW(verify_graph(g, "parse"));
  expect_round_trip(g);
}

}  // namespace
}  // namespace kiln
