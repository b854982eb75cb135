// If with subgraphs (src/onnx/import.cpp, src/ops/control, src/passes/inline_constant_ifs.cpp): models
// built in code. A constant cond is inlined (no If left), a run-time one runs the branch it picks in
// eager, compiled and reference mode; branches read outer values, nest, and may differ in shape. Then
// the refusals, each with its message.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "kiln/session.h"
#include "onnx_test_util.h"
#include "passes/passes.h"

namespace kiln::testing {
namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::TensorProto;

// A branch: nodes (op, inputs, outputs), then its outputs (undeclared unless `elem` is given).
struct BranchNode {
  std::string op;
  std::vector<std::string> ins, outs;
};
GraphProto branch(const std::string& name, const std::vector<BranchNode>& nodes, const std::vector<std::string>& outs,
                  int elem = 0) {
  GraphProto g;
  g.set_name(name);
  for (const auto& bn : nodes) {
    auto* n = g.add_node();
    n->set_op_type(bn.op);
    n->set_name(name + "_" + bn.op + std::to_string(g.node_size()));
    for (const auto& i : bn.ins) n->add_input(i);
    for (const auto& o : bn.outs) n->add_output(o);
  }
  for (const auto& o : outs) {
    auto* vi = g.add_output();
    vi->set_name(o);
    if (elem) vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  return g;
}

::onnx::NodeProto* add_if(::onnx::ModelProto& m, const std::string& cond, std::vector<std::string> outs,
                          const GraphProto& then_g, const GraphProto& else_g, const std::string& name = "if") {
  auto* n = add_node(m, "If", {cond}, std::move(outs), name);
  attr_graph(n, "then_branch", then_g);
  attr_graph(n, "else_branch", else_g);
  return n;
}

void bool_init(::onnx::ModelProto& m, const std::string& name, bool v) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(TensorProto::BOOL);
  t->add_int32_data(v ? 1 : 0);
}

// y = If(c) then x * 2 (a branch initializer) else -x: x is read from the outer graph.
::onnx::ModelProto runtime_cond_model() {
  auto m = make_model(13);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{3}});
  GraphProto then_g = branch("then", {{"Mul", {"x", "two"}, {"t"}}}, {"t"});
  f32_init(then_g, "two", {}, {2.0f});
  GraphProto else_g = branch("else", {{"Neg", {"x"}, {"e"}}}, {"e"});
  add_if(m, "c", {"y"}, then_g, else_g);
  add_output(m, "y", {int64_t{3}});
  return m;
}

TEST(IfImport, OuterValuesBecomeInputsOfTheNodeAndTheBranches) {
  Graph g = import_model(runtime_cond_model());
  const Node* n = find_node(g, OpKind::If);
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->inputs.size(), 2u);  // cond, then the captured x
  EXPECT_EQ(g.value(n->inputs[1]).name, "x");
  EXPECT_EQ(n->attr_graph("then_branch").inputs.size(), 1u);
  EXPECT_EQ(n->attr_graph("else_branch").inputs.size(), 1u);
  std::string text = print_graph(g);
  EXPECT_NE(text.find("then_branch=graph then("), std::string::npos) << text;
  // The text parses back to a graph that prints the same and computes the same.
  Graph back = parse_graph(text);
  EXPECT_EQ(print_graph(back), text);
  Session s = Session::from_graph(std::move(back), Mode::eager, Options{});
  EXPECT_EQ(values(s.run({{"c", flag(false)}, {"x", f32({3}, {1.5f, -2.0f, 4.0f})}}).at("y")),
            (std::vector<double>{-1.5, 2.0, -4.0}));
}

// Subgraphs nest in IR text as deep as the importer allows, and no deeper.
TEST(IfImport, IrTextRefusesSubgraphsNestedPastTheImportersLimit) {
  auto nested = [](int depth) {
    const std::string leaf = "graph b(%c: bool[], %x: f32[2]) -> (%y) {\n  %y: f32[2] = Relu(%x)\n}";
    std::string g = leaf;
    for (int d = 0; d < depth; ++d)
      g = "graph b(%c: bool[], %x: f32[2]) -> (%y) {\n  %y: f32[2] = If(%c, %c, %x) {else_branch=" + leaf +
          ", then_branch=" + g + "}\n}";
    return g;
  };
  EXPECT_NO_THROW(parse_graph(nested(16)));
  try {
    parse_graph(nested(17));
    ADD_FAILURE() << "parsed 17 nested subgraphs";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("subgraphs nested more than 16 deep"), std::string::npos) << e.what();
  }
}

TEST(IfImport, RuntimeCondTakesEitherBranchInEveryMode) {
  for (Mode mode : kModes) {
    Session s = Session::from_graph(import_model(runtime_cond_model()), mode, Options{});
    Tensor x = f32({3}, {1.5f, -2.0f, 4.0f});
    EXPECT_EQ(values(s.run({{"c", flag(true)}, {"x", x}}).at("y")), (std::vector<double>{3.0, -4.0, 8.0}));
    EXPECT_EQ(values(s.run({{"c", flag(false)}, {"x", x}}).at("y")), (std::vector<double>{-1.5, 2.0, -4.0}));
  }
}

TEST(IfImport, ConstantCondIsReplacedByItsBranch) {
  for (bool taken : {true, false}) {
    auto m = runtime_cond_model();
    m.mutable_graph()->mutable_input()->DeleteSubrange(0, 1);  // c becomes a constant
    bool_init(m, "c", taken);
    Graph g = import_model(m);
    prepare_graph(g, {}, Options{});
    std::string text = print_graph(g);
    EXPECT_EQ(find_node(g, OpKind::If), nullptr) << text;
    EXPECT_EQ(text.find("If("), std::string::npos) << text;
    EXPECT_NE(find_node(g, taken ? OpKind::Mul : OpKind::Neg), nullptr) << text;
    EXPECT_EQ(find_node(g, taken ? OpKind::Neg : OpKind::Mul), nullptr) << text;
    for (Mode mode : kModes) {
      Session s = Session::from_graph(import_model(m), mode, Options{});
      std::vector<double> want = taken ? std::vector<double>{2, 4, -6} : std::vector<double>{-1, -2, 3};
      EXPECT_EQ(values(s.run({{"x", f32({3}, {1, 2, -3})}}).at("y")), want);
    }
  }
}

// A cond that folds from a shape (Shape -> Gather -> Equal) is decided at compile time as well.
TEST(IfImport, CondFoldedFromAShapeIsInlined) {
  auto m = make_model(13);
  add_input(m, "x", {int64_t{4}});
  add_node(m, "Shape", {"x"}, {"s"});
  auto* k = m.mutable_graph()->add_initializer();
  k->set_name("four");
  k->set_data_type(TensorProto::INT64);
  k->add_dims(1);
  k->add_int64_data(4);
  add_node(m, "Equal", {"s", "four"}, {"eq"});
  add_node(m, "Squeeze", {"eq"}, {"c"});
  add_if(m, "c", {"y"}, branch("then", {{"Relu", {"x"}, {"t"}}}, {"t"}), branch("else", {{"Neg", {"x"}, {"e"}}}, {"e"}));
  add_output(m, "y", {int64_t{4}});
  Graph g = import_model(m);
  prepare_graph(g, {}, Options{});
  EXPECT_EQ(find_node(g, OpKind::If), nullptr) << print_graph(g);
  EXPECT_NE(find_node(g, OpKind::Relu), nullptr) << print_graph(g);
  Session s = Session::from_graph(import_model(m), Mode::compiled, Options{});
  EXPECT_EQ(values(s.run({{"x", f32({4}, {-1, 2, -3, 4})}}).at("y")), (std::vector<double>{0, 2, 0, 4}));
}

// If(c1) then If(c2) then x + w else x - w, else w: the inner branches read x and w two levels up.
::onnx::ModelProto nested_model() {
  auto m = make_model(16);
  add_input(m, "c1", {}, TensorProto::BOOL);
  add_input(m, "c2", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{2}});
  add_f32_init(m, "w", {2}, {10.0f, 20.0f});
  GraphProto inner_then = branch("inner_then", {{"Add", {"x", "w"}, {"a"}}}, {"a"});
  GraphProto inner_else = branch("inner_else", {{"Sub", {"x", "w"}, {"b"}}}, {"b"});
  GraphProto outer_then = branch("outer_then", {}, {"inner"});
  auto* inner = outer_then.add_node();
  inner->set_op_type("If");
  inner->set_name("inner_if");
  inner->add_input("c2");
  inner->add_output("inner");
  attr_graph(inner, "then_branch", inner_then);
  attr_graph(inner, "else_branch", inner_else);
  GraphProto outer_else = branch("outer_else", {{"Identity", {"w"}, {"wc"}}}, {"wc"});
  add_if(m, "c1", {"y"}, outer_then, outer_else, "outer_if");
  add_output(m, "y", {int64_t{2}});
  return m;
}

TEST(IfImport, NestedIfReadsValuesTwoLevelsUp) {
  Graph g = import_model(nested_model());
  const Node* outer = find_node(g, OpKind::If);
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->inputs.size(), 4u);  // c1, then c2, x, w (what either branch reads)
  for (Mode mode : kModes) {
    Session s = Session::from_graph(import_model(nested_model()), mode, Options{});
    Tensor x = f32({2}, {1, 2});
    auto run = [&](bool c1, bool c2) { return values(s.run({{"c1", flag(c1)}, {"c2", flag(c2)}, {"x", x}}).at("y")); };
    EXPECT_EQ(run(true, true), (std::vector<double>{11, 22}));
    EXPECT_EQ(run(true, false), (std::vector<double>{-9, -18}));
    EXPECT_EQ(run(false, true), (std::vector<double>{10, 20}));
    EXPECT_EQ(run(false, false), (std::vector<double>{10, 20}));
  }
}

TEST(IfImport, NestedConstantCondsAreAllInlined) {
  auto m = nested_model();
  m.mutable_graph()->mutable_input()->DeleteSubrange(0, 2);
  bool_init(m, "c1", true);
  bool_init(m, "c2", false);
  Graph g = import_model(m);
  prepare_graph(g, {}, Options{});
  EXPECT_EQ(find_node(g, OpKind::If), nullptr) << print_graph(g);
  EXPECT_NE(find_node(g, OpKind::Sub), nullptr) << print_graph(g);
  Session s = Session::from_graph(import_model(m), Mode::eager, Options{});
  EXPECT_EQ(values(s.run({{"x", f32({2}, {5, 5})}}).at("y")), (std::vector<double>{-5, -15}));
}

// then: x ([3]); else: Concat(x, x) ([6]): the output's size is known at run time only.
TEST(IfImport, BranchesOfDifferentShapesGiveAFreshDim) {
  auto m = make_model(13);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{3}});
  GraphProto else_g = branch("else", {{"Concat", {"x", "x"}, {"xx"}}}, {"xx"});
  attr_int(else_g.mutable_node(0), "axis", 0);
  add_if(m, "c", {"y"}, branch("then", {}, {"x"}), else_g);
  add_node(m, "Mul", {"y", "y"}, {"sq"});  // a node after it: its size comes from the If's at run time
  add_node(m, "Relu", {"sq"}, {"z"});
  add_output(m, "y");
  add_output(m, "z");
  Graph g = import_model(m);
  prepare_graph(g, {}, Options{});
  const TensorType& y = g.value(g.outputs[0]).type;
  ASSERT_EQ(y.rank(), 1);
  EXPECT_FALSE(y.shape[0].is_static()) << type_string(y);
  for (Mode mode : kModes) {
    Session s = Session::from_graph(import_model(m), mode, Options{});
    Tensor x = f32({3}, {1, 2, 3});
    Tensor a = s.run({{"c", flag(true)}, {"x", x}}).at("y");
    EXPECT_EQ(a.shape(), (std::vector<int64_t>{3}));
    EXPECT_EQ(values(a), (std::vector<double>{1, 2, 3}));
    auto out = s.run({{"c", flag(false)}, {"x", x}});
    EXPECT_EQ(out.at("y").shape(), (std::vector<int64_t>{6}));
    EXPECT_EQ(values(out.at("y")), (std::vector<double>{1, 2, 3, 1, 2, 3}));
    EXPECT_EQ(values(out.at("z")), (std::vector<double>{1, 4, 9, 1, 4, 9}));
    EXPECT_EQ(values(s.run({{"c", flag(true)}, {"x", x}}).at("z")), (std::vector<double>{1, 4, 9}));
  }
}

// A size the chosen branch cannot know (NonZero inside it) gets a symbol of the outer graph's own,
// never one the outer graph already uses for another size.
TEST(IfImport, SymbolsMadeInABranchDoNotClashWithTheOuterGraphs) {
  auto m = make_model(13);
  add_input(m, "x", {int64_t{4}});
  bool_init(m, "c", true);
  add_node(m, "NonZero", {"x"}, {"nz"});
  add_if(m, "c", {"y"}, branch("then", {{"NonZero", {"x"}, {"t"}}}, {"t"}), branch("else", {{"NonZero", {"x"}, {"e"}}}, {"e"}));
  add_output(m, "nz");
  add_output(m, "y");
  Graph g = import_model(m);
  infer_shapes(g, Options{});  // no folding: the If stays, typed by the branch it takes
  ASSERT_NE(find_node(g, OpKind::If), nullptr);
  const TensorType& nz = g.value(g.outputs[0]).type;
  const TensorType& y = g.value(g.outputs[1]).type;
  ASSERT_EQ(nz.rank(), 2);
  ASSERT_EQ(y.rank(), 2);
  ASSERT_FALSE(nz.shape[1].is_static());
  ASSERT_FALSE(y.shape[1].is_static());
  EXPECT_NE(nz.shape[1].symbol, y.shape[1].symbol) << type_string(nz) << " " << type_string(y);
}

// A branch may read a value the outer graph computes after the If in the file's order.
TEST(IfImport, BranchReadsAValueDefinedLaterInTheFile) {
  auto m = make_model(13);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{2}});
  add_if(m, "c", {"y"}, branch("then", {{"Neg", {"z"}, {"t"}}}, {"t"}), branch("else", {}, {"z"}));
  add_node(m, "Relu", {"x"}, {"z"});
  add_output(m, "y", {int64_t{2}});
  Session s = Session::from_graph(import_model(m), Mode::eager, Options{});
  Tensor x = f32({2}, {-1, 3});
  EXPECT_EQ(values(s.run({{"c", flag(true)}, {"x", x}}).at("y")), (std::vector<double>{0, -3}));
  EXPECT_EQ(values(s.run({{"c", flag(false)}, {"x", x}}).at("y")), (std::vector<double>{0, 3}));
}

// ---- refusals ----

TEST(IfImport, SavedModelsRefuseIf) {
  TempDir dir;
  try {
    Session::compile_to_file(import_model(runtime_cond_model()), Mode::compiled, Options{}, {}, dir.file("m.kiln"));
    ADD_FAILURE() << "saved a model with an If";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("a saved model cannot hold If nodes"), std::string::npos) << e.what();
  }
}

TEST(IfImport, UnknownOuterNameIsAUserError) {
  auto m = runtime_cond_model();
  m.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g()->mutable_node(0)->set_input(0, "nope");
  expect_user_error(m, "a branch reads 'nope'");
}

TEST(IfImport, BranchReadingTheIfsOwnOutputIsACycle) {
  auto m = runtime_cond_model();
  m.mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g()->mutable_node(0)->set_input(0, "y");
  expect_user_error(m, "cycle");
}

TEST(IfImport, OutputCountsMustMatch) {
  auto m = runtime_cond_model();
  auto* then_g = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  then_g->add_output()->set_name("x");
  expect_user_error(m, "then_branch has 2 outputs, but the node has 1");
}

TEST(IfImport, DeclaredElementTypesMustAgree) {
  auto m = make_model(13);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{2}});
  add_input(m, "i", {int64_t{2}}, TensorProto::INT64);
  add_if(m, "c", {"y"}, branch("then", {}, {"x"}, TensorProto::FLOAT), branch("else", {}, {"i"}, TensorProto::INT64));
  add_output(m, "y");
  expect_user_error(m, "output 0 is f32 in then_branch but i64 in else_branch");
}

TEST(IfImport, InferredElementTypesMustAgree) {
  auto m = make_model(13);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{2}});
  add_input(m, "i", {int64_t{2}}, TensorProto::INT64);
  add_if(m, "c", {"y"}, branch("then", {}, {"x"}), branch("else", {}, {"i"}));
  add_output(m, "y");
  try {
    Session::from_graph(import_model(m), Mode::eager, Options{});
    ADD_FAILURE() << "branches of different element types compiled";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is f32 in then_branch but i64 in else_branch"), std::string::npos) << e.what();
  }
}

TEST(IfImport, BranchesOfDifferentRanksAreUnsupported) {
  auto m = make_model(13);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{2}});
  add_input(m, "x2", {int64_t{2}, int64_t{2}});
  add_if(m, "c", {"y"}, branch("then", {}, {"x"}), branch("else", {}, {"x2"}));
  add_output(m, "y");
  EXPECT_THROW(Session::from_graph(import_model(m), Mode::eager, Options{}), UnsupportedError);
}

TEST(IfImport, CondMustBeOneBool) {
  auto m = runtime_cond_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  EXPECT_THROW(
      {
        try {
          Session::from_graph(import_model(m), Mode::eager, Options{});
        } catch (const UserError& e) {
          EXPECT_NE(std::string(e.what()).find("cond must be bool"), std::string::npos) << e.what();
          throw;
        }
      },
      UserError);
  auto two = runtime_cond_model();
  auto* dims = two.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->add_dim()->set_dim_value(2);
  EXPECT_THROW(Session::from_graph(import_model(two), Mode::eager, Options{}), UserError);
}

TEST(IfImport, BranchWithInputsMissingBranchOrExtraAttributeIsRefused) {
  auto with_inputs = runtime_cond_model();
  set_value_info(with_inputs.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g()->add_input(), "q",
                 TensorProto::FLOAT, {int64_t{1}});
  expect_user_error(with_inputs, "If branches take none");
  auto missing = runtime_cond_model();
  missing.mutable_graph()->mutable_node(0)->mutable_attribute()->DeleteSubrange(1, 1);
  expect_user_error(missing, "has no attribute 'else_branch'");
  auto extra = runtime_cond_model();
  attr_int(extra.mutable_graph()->mutable_node(0), "depth", 1);
  expect_user_error(extra, "has attribute 'depth', which If does not have");
}

TEST(IfImport, DeepNestingIsBounded) {
  // 41 Ifs, each the then_branch of the one above it (deeper than protobuf parses from a file).
  GraphProto g = branch("leaf", {{"Identity", {"x"}, {"o0"}}}, {"o0"});
  for (int d = 1; d <= 40; ++d) {
    GraphProto up = branch("level" + std::to_string(d), {}, {"o" + std::to_string(d)});
    auto* n = up.add_node();
    n->set_op_type("If");
    n->set_name("if" + std::to_string(d));
    n->add_input("c");
    n->add_output("o" + std::to_string(d));
    attr_graph(n, "then_branch", g);
    attr_graph(n, "else_branch", branch("e", {}, {"x"}));
    g = up;
  }
  auto m = make_model(13);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{1}});
  add_if(m, "c", {"y"}, g, branch("e", {}, {"x"}));
  add_output(m, "y");
  expect_user_error(m, "nest deeper than 16 levels");
}

TEST(IfImport, GraphsOnOtherOpsStayRefused) {
  auto relu = make_model(13);
  add_input(relu, "x", {int64_t{1}});
  attr_graph(add_node(relu, "Relu", {"x"}, {"y"}), "g", branch("b", {}, {"x"}));
  add_output(relu, "y");
  try {
    import_model(relu);
    ADD_FAILURE() << "a graph attribute on Relu was read";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("subgraphs are not supported"), std::string::npos) << e.what();
  }
}

TEST(IfImport, EveryVersionReads) {
  for (int64_t opset : {1, 11, 13, 16, 19, 21}) {
    auto m = runtime_cond_model();
    m.mutable_opset_import(0)->set_version(opset);
    if (opset < 7) {  // Mul-1 and Neg-1 have attributes kiln does not read: use Identity branches
      auto* n = m.mutable_graph()->mutable_node(0);
      *n->mutable_attribute(0)->mutable_g() = branch("then", {}, {"x"});
      *n->mutable_attribute(1)->mutable_g() = branch("else", {{"Identity", {"x"}, {"e"}}}, {"e"});
    }
    Session s = Session::from_graph(import_model(m), Mode::eager, Options{});
    Tensor y = s.run({{"c", flag(false)}, {"x", f32({3}, {1, 2, 3})}}).at("y");
    EXPECT_EQ(values(y), opset < 7 ? (std::vector<double>{1, 2, 3}) : (std::vector<double>{-1, -2, -3})) << opset;
  }
}

}  // namespace
}  // namespace kiln::testing
