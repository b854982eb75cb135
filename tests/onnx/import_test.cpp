// Graph building, attributes and the opset-18 rewrites of the ONNX importer, on models built in code.
#include <gtest/gtest.h>

#include <set>

#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

using TP = ::onnx::TensorProto;

TEST(OnnxImport, BuildsValuesNodesAndTypes) {
  auto m = make_model();
  add_input(m, "x", {std::string("batch"), std::monostate{}, int64_t{3}});
  add_f32_init(m, "w", {3}, {1, 2, 3});
  auto* n = add_node(m, "Add", {"x", "w"}, {"y"}, "add");
  (void)n;
  add_output(m, "y", {std::string("batch"), std::monostate{}, int64_t{3}});
  Graph g = import_model(m);

  ASSERT_EQ(g.inputs.size(), 1u);
  const Value& x = g.value(g.inputs[0]);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(type_string(x.type), "f32[batch,_in0_1,3]");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, OpKind::Add);
  EXPECT_EQ(g.nodes[0].name, "add");
  const Value& w = g.value(g.nodes[0].inputs[1]);
  ASSERT_TRUE(w.constant);
  EXPECT_EQ(w.constant->data<float>()[2], 3.0f);
  EXPECT_EQ(type_string(w.type), "f32[3]");
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0], g.nodes[0].outputs[0]);
  EXPECT_EQ(type_string(g.value(g.outputs[0]).type), "f32[batch,_out0_1,3]");
}

TEST(OnnxImport, InitializerListedAsInputIsAConstant) {
  auto m = make_model(11, 3);
  add_input(m, "x", {int64_t{3}});
  add_input(m, "w", {int64_t{3}});
  add_f32_init(m, "w", {3}, {1, 2, 3});
  add_node(m, "Mul", {"x", "w"}, {"y"});
  add_output(m, "y");
  Graph g = import_model(m);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "x");
  EXPECT_TRUE(g.value(g.nodes[0].inputs[1]).constant);
}

TEST(OnnxImport, SortsNodesTopologicallyAndKeepsOrderOtherwise) {
  auto m = make_model();
  add_input(m, "x", {int64_t{2}});
  add_node(m, "Neg", {"b"}, {"y"}, "third");
  add_node(m, "Relu", {"x"}, {"a"}, "first");
  add_node(m, "Abs", {"a"}, {"b"}, "second");
  add_node(m, "Exp", {"x"}, {"z"}, "independent");
  add_output(m, "y");
  add_output(m, "z");
  Graph g = import_model(m);
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[0].name, "first");
  EXPECT_EQ(g.nodes[1].name, "second");
  EXPECT_EQ(g.nodes[2].name, "third");
  EXPECT_EQ(g.nodes[3].name, "independent");
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId o : g.nodes[i].outputs) EXPECT_EQ(g.value(o).producer, static_cast<NodeId>(i));
}

TEST(OnnxImport, EmptyInputNameIsAnOmittedOptionalInput) {
  auto m = make_model();
  add_input(m, "x", {int64_t{2}});
  add_f32_init(m, "hi", {}, {1});
  add_node(m, "Clip", {"x", "", "hi"}, {"y", ""});
  add_output(m, "y");
  Graph g = import_model(m);
  const Node& n = g.nodes[0];
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[1], kNoValue);
  EXPECT_FALSE(n.has_input(1));
  EXPECT_TRUE(n.has_input(2));
  ASSERT_EQ(n.outputs.size(), 2u);
  EXPECT_EQ(n.outputs[1], kNoValue);
}

TEST(OnnxImport, ConvertsEveryAttributeKind) {
  auto m = make_model();
  add_input(m, "x", {int64_t{2}});
  auto* n = add_node(m, "Identity", {"x"}, {"y"}, "id");
  attr_int(n, "i", -7);
  attr_ints(n, "is", {1, -2});
  auto* a = n->add_attribute();
  a->set_name("f"), a->set_type(::onnx::AttributeProto::FLOAT), a->set_f(0.1f);
  a = n->add_attribute();
  a->set_name("fs"), a->set_type(::onnx::AttributeProto::FLOATS), a->add_floats(1.5f), a->add_floats(-2.f);
  a = n->add_attribute();
  a->set_name("s"), a->set_type(::onnx::AttributeProto::STRING), a->set_s("linear");
  a = n->add_attribute();
  a->set_name("ss"), a->set_type(::onnx::AttributeProto::STRINGS), a->add_strings("a"), a->add_strings("b");
  a = n->add_attribute();
  a->set_name("t"), a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::INT64);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->add_int64_data(5);
  a->mutable_t()->add_int64_data(-6);
  add_output(m, "y");
  Graph g = import_model(m);
  const Node& node = g.nodes[0];
  EXPECT_EQ(node.attr_int("i", 0), -7);
  EXPECT_EQ(node.attr_ints("is"), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(node.attr_float("f", 0), static_cast<double>(0.1f));
  EXPECT_EQ(node.attr_floats("fs"), (std::vector<double>{1.5, -2}));
  EXPECT_EQ(node.attr_string("s", ""), "linear");
  EXPECT_EQ(std::get<std::vector<std::string>>(node.attrs.at("ss").value), (std::vector<std::string>{"a", "b"}));
  const Tensor* t = node.attr_tensor("t");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->dtype(), DType::i64);
  EXPECT_EQ(t->to_int64_vector(), (std::vector<int64_t>{5, -6}));
}

TEST(OnnxImport, TypedFieldInitializers) {
  auto m = make_model();
  auto* h = m.mutable_graph()->add_initializer();
  h->set_name("h"), h->set_data_type(TP::FLOAT16), h->add_dims(2);
  h->add_int32_data(float_to_half(1.5f)), h->add_int32_data(float_to_half(-2.0f));
  auto* b = m.mutable_graph()->add_initializer();
  b->set_name("b"), b->set_data_type(TP::BOOL), b->add_dims(2), b->add_int32_data(1), b->add_int32_data(0);
  auto* d = m.mutable_graph()->add_initializer();
  d->set_name("d"), d->set_data_type(TP::DOUBLE), d->add_double_data(1e300);  // scalar
  auto* u = m.mutable_graph()->add_initializer();
  u->set_name("u"), u->set_data_type(TP::UINT8), u->add_dims(1), u->add_int32_data(200);
  auto* e = m.mutable_graph()->add_initializer();
  e->set_name("e"), e->set_data_type(TP::FLOAT), e->add_dims(0), e->add_dims(4);  // zero-size, no data
  for (const char* name : {"h", "b", "d", "u", "e"}) {
    add_node(m, "Identity", {name}, {std::string(name) + "_y"});
    add_output(m, std::string(name) + "_y");
  }
  Graph g = import_model(m);
  auto constant = [&](const char* name) { return g.value(*g.find_value(name)).constant; };
  EXPECT_EQ(constant("h")->as_double(0), 1.5);
  EXPECT_EQ(constant("h")->as_double(1), -2.0);
  EXPECT_EQ(constant("b")->as_int64(0), 1);
  EXPECT_EQ(constant("b")->as_int64(1), 0);
  EXPECT_EQ(constant("d")->rank(), 0);
  EXPECT_EQ(constant("d")->as_double(0), 1e300);
  EXPECT_EQ(constant("u")->as_int64(0), 200);
  EXPECT_EQ(constant("e")->numel(), 0);
  EXPECT_EQ(constant("e")->shape(), (std::vector<int64_t>{0, 4}));
}

// i16 and u16 values travel in int32_data, u32 and u64 in uint64_data; each is checked against its range.
TEST(OnnxImport, TypedFieldsOfTheWideIntegerTypes) {
  auto m = make_model();
  auto* s = m.mutable_graph()->add_initializer();
  s->set_name("s"), s->set_data_type(TP::INT16), s->add_dims(2), s->add_int32_data(-32768), s->add_int32_data(7);
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w"), w->set_data_type(TP::UINT16), w->add_dims(1), w->add_int32_data(65535);
  auto* u = m.mutable_graph()->add_initializer();
  u->set_name("u"), u->set_data_type(TP::UINT32), u->add_dims(1), u->add_uint64_data(4294967295u);
  auto* l = m.mutable_graph()->add_initializer();
  l->set_name("l"), l->set_data_type(TP::UINT64), l->add_dims(1), l->add_uint64_data(~uint64_t{0});
  for (const char* name : {"s", "w", "u", "l"}) {
    add_node(m, "Identity", {name}, {std::string(name) + "_y"});
    add_output(m, std::string(name) + "_y");
  }
  Graph g = import_model(m);
  auto constant = [&](const char* name) { return g.value(*g.find_value(name)).constant; };
  EXPECT_EQ(constant("s")->dtype(), DType::i16);
  EXPECT_EQ(constant("s")->as_int64(0), -32768);
  EXPECT_EQ(constant("s")->as_int64(1), 7);
  EXPECT_EQ(constant("w")->data<uint16_t>()[0], 65535);
  EXPECT_EQ(constant("u")->data<uint32_t>()[0], 4294967295u);
  EXPECT_EQ(constant("l")->data<uint64_t>()[0], ~uint64_t{0});
  EXPECT_THROW(constant("l")->as_int64(0), UserError);  // past int64: never read as a wrong shape value
  // Out of range, or in another type's field: refused.
  auto bad = [](int type, bool in_uint64, uint64_t v) {
    auto b = make_model();
    auto* t = b.mutable_graph()->add_initializer();
    t->set_name("t"), t->set_data_type(type), t->add_dims(1);
    if (in_uint64) t->add_uint64_data(v);
    else t->add_int32_data(static_cast<int32_t>(v));
    add_node(b, "Identity", {"t"}, {"y"});
    add_output(b, "y");
    return b;
  };
  expect_user_error(bad(TP::UINT32, true, uint64_t{1} << 32), "does not fit u32");
  expect_user_error(bad(TP::INT16, false, 40000), "does not fit i16");
  expect_user_error(bad(TP::UINT16, false, static_cast<uint64_t>(-1)), "does not fit u16");
  expect_user_error(bad(TP::UINT64, false, 1), "wrong typed field");
  expect_user_error(bad(TP::FLOAT, true, 1), "wrong typed field");
}

TEST(OnnxImport, Opset11AxesAttributesBecomeInputs) {
  auto m = make_model(11);
  add_input(m, "x", {int64_t{2}, int64_t{3}});
  attr_ints(add_node(m, "Unsqueeze", {"x"}, {"u"}, "unsq"), "axes", {0});
  attr_ints(add_node(m, "Squeeze", {"u"}, {"s"}, "sq"), "axes", {0});
  attr_ints(add_node(m, "ReduceMax", {"s"}, {"r"}, "rmax"), "axes", {-1});
  add_node(m, "ReduceSum", {"s"}, {"all"}, "rsum_all");  // no axes: stays without input 1
  auto* split = add_node(m, "Split", {"x"}, {"a", "b"}, "split");
  attr_int(split, "axis", 1);
  attr_ints(split, "split", {1, 2});
  add_output(m, "r");
  add_output(m, "all");
  add_output(m, "a");
  add_output(m, "b");
  Graph g = import_model(m);
  auto input1 = [&](OpKind op) {
    const Node* n = find_node(g, op);
    EXPECT_TRUE(n);
    EXPECT_EQ(n->attrs.count("axes") + n->attrs.count("split"), 0u);
    EXPECT_TRUE(n->has_input(1)) << op_name(op);
    const Value& v = g.value(n->inputs[1]);
    EXPECT_TRUE(v.constant);
    EXPECT_EQ(v.constant->dtype(), DType::i64);
    return v.constant->to_int64_vector();
  };
  EXPECT_EQ(input1(OpKind::Unsqueeze), (std::vector<int64_t>{0}));
  EXPECT_EQ(input1(OpKind::Squeeze), (std::vector<int64_t>{0}));
  EXPECT_EQ(input1(OpKind::ReduceMax), (std::vector<int64_t>{-1}));
  EXPECT_EQ(input1(OpKind::Split), (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(find_node(g, OpKind::ReduceSum)->has_input(1));
  // Generated constant names are unique.
  std::set<std::string> names;
  for (const Value& v : g.values) EXPECT_TRUE(names.insert(v.name).second) << v.name;
}

TEST(OnnxImport, Opset17ReduceMeanAxesBecomeInputButOpset18IsUntouched) {
  for (int64_t opset : {17, 18}) {
    auto m = make_model(opset);
    add_input(m, "x", {int64_t{2}, int64_t{3}});
    if (opset == 17) attr_ints(add_node(m, "ReduceMean", {"x"}, {"y"}), "axes", {1});
    else add_node(m, "ReduceMean", {"x", "axes"}, {"y"});
    if (opset == 18) {
      auto* t = m.mutable_graph()->add_initializer();
      t->set_name("axes"), t->set_data_type(TP::INT64), t->add_dims(1), t->add_int64_data(1);
    }
    add_output(m, "y");
    Graph g = import_model(m);
    ASSERT_EQ(g.nodes.size(), 1u);
    ASSERT_TRUE(g.nodes[0].has_input(1));
    EXPECT_EQ(g.value(g.nodes[0].inputs[1]).constant->to_int64_vector(), (std::vector<int64_t>{1}));
    EXPECT_FALSE(g.nodes[0].has_attr("axes"));
  }
}

TEST(OnnxImport, SplitWithoutSizesGetsNumOutputsBefore18) {
  auto m = make_model(13);
  add_input(m, "x", {int64_t{4}});
  add_node(m, "Split", {"x"}, {"a", "b"});
  add_output(m, "a");
  add_output(m, "b");
  Graph g = import_model(m);
  EXPECT_EQ(g.nodes[0].attr_int("num_outputs", -1), 2);
  EXPECT_FALSE(g.nodes[0].has_input(1));
}

TEST(OnnxImport, AxesBothAttributeAndInputIsAUserError) {
  auto m = make_model(11);
  add_input(m, "x", {int64_t{2}});
  attr_ints(add_node(m, "Unsqueeze", {"x", "x"}, {"y"}, "u"), "axes", {0});
  add_output(m, "y");
  expect_user_error(m, "node 'u' (Unsqueeze-11): 'axes' is given both");
}

TEST(OnnxImport, LegacySoftmaxOverLastAxisIsKept) {
  auto m = make_model(11);
  add_input(m, "x", {int64_t{2}, int64_t{5}});
  add_node(m, "Softmax", {"x"}, {"y"}, "sm");  // default axis 1 == last axis of a rank-2 input
  add_output(m, "y");
  Graph g = import_model(m);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].attr_int("axis", 0), -1);
}

TEST(OnnxImport, LegacySoftmaxOverMiddleAxisIsRewritten) {
  auto m = make_model(12);
  add_input(m, "x", {int64_t{2}, int64_t{3}, int64_t{4}});
  attr_int(add_node(m, "LogSoftmax", {"x"}, {"y"}, "lsm"), "axis", 1);
  add_node(m, "Relu", {"y"}, {"z"});
  add_output(m, "z");
  Graph g = import_model(m);
  ASSERT_EQ(g.nodes.size(), 5u);
  const Node* flatten = find_node(g, OpKind::Flatten);
  const Node* lsm = find_node(g, OpKind::LogSoftmax);
  const Node* shape = find_node(g, OpKind::Shape);
  const Node* reshape = find_node(g, OpKind::Reshape);
  ASSERT_TRUE(flatten && lsm && shape && reshape);
  ValueId x = g.inputs[0];
  EXPECT_EQ(flatten->inputs[0], x);
  EXPECT_EQ(flatten->attr_int("axis", 0), 1);
  EXPECT_EQ(lsm->inputs[0], flatten->outputs[0]);
  EXPECT_EQ(lsm->attr_int("axis", 0), -1);
  EXPECT_EQ(shape->inputs[0], x);
  EXPECT_EQ(reshape->inputs[0], lsm->outputs[0]);
  EXPECT_EQ(reshape->inputs[1], shape->outputs[0]);
  EXPECT_EQ(g.value(reshape->outputs[0]).name, "y");
  EXPECT_EQ(find_node(g, OpKind::Relu)->inputs[0], reshape->outputs[0]);
  // Order stays topological.
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId in : g.nodes[i].inputs)
      if (in != kNoValue && g.value(in).producer >= 0) {
        EXPECT_LT(g.value(in).producer, static_cast<NodeId>(i));
      }
}

TEST(OnnxImport, LegacySoftmaxOfUnknownRankIsRewritten) {
  auto m = make_model(11);
  add_input(m, "x", {int64_t{2}, int64_t{3}});
  add_node(m, "Relu", {"x"}, {"r"});  // r has no declared type: rank unknown at import
  add_node(m, "Softmax", {"r"}, {"y"});
  add_output(m, "y");
  Graph g = import_model(m);
  EXPECT_EQ(g.nodes.size(), 5u);
  EXPECT_TRUE(find_node(g, OpKind::Flatten));
}

TEST(OnnxImport, Opset13SoftmaxIsUntouched) {
  auto m = make_model(13);
  add_input(m, "x", {int64_t{2}, int64_t{3}, int64_t{4}});
  attr_int(add_node(m, "Softmax", {"x"}, {"y"}), "axis", 1);
  add_output(m, "y");
  Graph g = import_model(m);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].attr_int("axis", 0), 1);
}

TEST(OnnxImport, ValueInfoGivesTypesToNodeOutputs) {
  auto m = make_model();
  add_input(m, "x", {int64_t{2}});
  add_node(m, "Relu", {"x"}, {"r"});
  add_node(m, "Neg", {"r"}, {"y"});
  set_value_info(m.mutable_graph()->add_value_info(), "r", TP::FLOAT, {std::string("n")});
  add_output(m, "y");
  Graph g = import_model(m);
  EXPECT_EQ(type_string(g.value(*g.find_value("r")).type), "f32[n]");
}

TEST(OnnxImport, UserErrorsNameTheProblem) {
  auto unknown = make_model();
  add_input(unknown, "x", {int64_t{2}});
  add_node(unknown, "FooBar", {"x"}, {"y"}, "foo");
  add_output(unknown, "y");
  expect_user_error(unknown, "node 'foo': unsupported operator 'FooBar'");

  auto domain = make_model();
  add_input(domain, "x", {int64_t{2}});
  add_node(domain, "FusedMatMul", {"x", "x"}, {"y"})->set_domain("com.microsoft");
  add_output(domain, "y");
  expect_user_error(domain, "unsupported operator com.microsoft::FusedMatMul");

  auto sub = make_model();
  add_input(sub, "c", {}, TP::BOOL);
  add_node(sub, "If", {"c"}, {"y"}, "branch");
  add_output(sub, "y");
  expect_user_error(sub, "node 'branch' (If): has no attribute 'then_branch'");

  auto loop = make_model();
  add_input(loop, "c", {}, TP::BOOL);
  add_node(loop, "Loop", {"", "c"}, {"y"}, "loop");
  add_output(loop, "y");
  expect_user_error(loop, "node 'loop' (Loop): has no attribute 'body'");

  for (int64_t opset : {0, 29}) {
    auto m = make_model(opset);
    add_input(m, "x", {int64_t{2}});
    add_node(m, "Relu", {"x"}, {"y"});
    add_output(m, "y");
    expect_user_error(m, fmt::format("opset {} is not supported", opset));
  }

  auto cycle = make_model();
  add_input(cycle, "x", {int64_t{2}});
  add_node(cycle, "Add", {"x", "b"}, {"a"}, "n1");
  add_node(cycle, "Relu", {"a"}, {"b"}, "n2");
  add_output(cycle, "b");
  expect_user_error(cycle, "has a cycle");

  auto dangling = make_model();
  add_input(dangling, "x", {int64_t{2}});
  add_node(dangling, "Add", {"x", "ghost"}, {"y"}, "adder");
  add_output(dangling, "y");
  expect_user_error(dangling, "node 'adder' (Add): input 'ghost' is not produced");

  auto dup = make_model();
  add_input(dup, "x", {int64_t{2}});
  add_node(dup, "Relu", {"x"}, {"y"});
  add_node(dup, "Neg", {"x"}, {"y"});
  add_output(dup, "y");
  expect_user_error(dup, "value name 'y' is defined twice");

  auto missing_out = make_model();
  add_input(missing_out, "x", {int64_t{2}});
  add_node(missing_out, "Relu", {"x"}, {"y"});
  add_output(missing_out, "z");
  expect_user_error(missing_out, "graph output 'z' is not produced");
}

TEST(OnnxImport, CycleMessageNamesNodeAndValue) {
  auto m = make_model();
  add_input(m, "x", {int64_t{2}});
  add_node(m, "Add", {"x", "y"}, {"y"}, "selfish");
  add_output(m, "y");
  expect_user_error(m, "node 'selfish' (Add): input 'y'");
}

TEST(OnnxImport, CycleMessageNamesANodeOnTheCycle) {
  auto m = make_model();
  add_input(m, "x", {int64_t{2}});
  add_node(m, "Neg", {"a"}, {"y"}, "downstream");  // waits on the cycle but is not part of it
  add_node(m, "Add", {"x", "b"}, {"a"}, "n1");
  add_node(m, "Relu", {"a"}, {"b"}, "n2");
  add_output(m, "y");
  try {
    import_model(m);
    ADD_FAILURE() << "imported a cycle";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find("downstream"), std::string::npos) << msg;
    EXPECT_TRUE(msg.find("node 'n1' (Add): input 'b'") != std::string::npos ||
                msg.find("node 'n2' (Relu): input 'a'") != std::string::npos)
        << msg;
  }
}

TEST(OnnxImport, SmallFileCannotDeclareAHugeTensor) {
  // 1 GiB declared, 4 bytes present: rejected by the size check before anything is allocated.
  auto m = make_model();
  add_f32_init(m, "w", {int64_t{1} << 28}, {1});
  add_node(m, "Relu", {"w"}, {"y"});
  add_output(m, "y");
  expect_user_error(m, "raw_data has 4 bytes");
  m.mutable_graph()->mutable_initializer(0)->clear_raw_data();
  m.mutable_graph()->mutable_initializer(0)->add_float_data(1);
  expect_user_error(m, "has 1 values");
}

TEST(OnnxImport, LimitsFromOptions) {
  auto m = make_model();
  add_input(m, "x", {int64_t{2}});
  add_f32_init(m, "w", {2}, {1, 2});
  add_node(m, "Add", {"x", "w"}, {"a"});
  add_node(m, "Relu", {"a"}, {"y"});
  add_output(m, "y");
  Options few_nodes;
  few_nodes.max_nodes = 1;
  expect_user_error(m, "max_nodes", ".", few_nodes);
  Options small;
  small.max_tensor_bytes = 7;
  expect_user_error(m, "max_tensor_bytes", ".", small);
  Options low_rank;
  low_rank.max_rank = 0;
  expect_user_error(m, "max_rank", ".", low_rank);
  EXPECT_NO_THROW(import_model(m));
}

TEST(OnnxImport, FileLevelChecks) {
  TempDir dir;
  auto m = make_model();
  add_input(m, "x", {int64_t{2}});
  add_node(m, "Relu", {"x"}, {"y"});
  add_output(m, "y");
  std::string bytes = m.SerializeAsString();
  write_bytes(dir.file("ok.onnx"), bytes);
  EXPECT_EQ(import_onnx(dir.file("ok.onnx"), Options{}).nodes.size(), 1u);

  Options tiny;
  tiny.max_model_bytes = static_cast<int64_t>(bytes.size()) - 1;
  EXPECT_THROW(import_onnx(dir.file("ok.onnx"), tiny), UserError);
  EXPECT_THROW(import_onnx(dir.file("absent.onnx"), Options{}), UserError);
  EXPECT_THROW(import_onnx(dir.path().string(), Options{}), UserError);  // a directory
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    // Every prefix is rejected as a user error (most fail to parse, the rest fail validation).
    write_bytes(dir.file("cut.onnx"), bytes.substr(0, cut));
    EXPECT_THROW(import_onnx(dir.file("cut.onnx"), Options{}), UserError) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace kiln::testing
