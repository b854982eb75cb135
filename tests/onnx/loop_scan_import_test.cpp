// Loop and Scan with bodies (src/onnx/import.cpp, src/ops/control/loop_op.cpp, scan_op.cpp): models
// built in code, each run in eager, compiled and reference mode against a loop written out here. Loop
// by trip count, by cond, by both, with an early exit, a carried value that grows, scan outputs, outer
// values read by the body, nesting with If, the iteration bound; Scan 9+ with axes and directions and
// Scan-8 with its batch axis and sequence_lens. Then the refusals, each with its message.
#include <gtest/gtest.h>

#include <functional>

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

struct Step {
  std::string op;
  std::vector<std::string> ins, outs;
  std::vector<std::pair<std::string, int64_t>> ints = {};
};
// A body: its inputs (names only: the node gives their types), nodes, outputs.
GraphProto body(const std::string& name, const std::vector<std::string>& inputs, const std::vector<Step>& steps,
                const std::vector<std::string>& outs) {
  GraphProto g;
  g.set_name(name);
  for (const auto& i : inputs) g.add_input()->set_name(i);
  for (const auto& s : steps) {
    auto* n = g.add_node();
    n->set_op_type(s.op);
    n->set_name(name + "_" + s.op + std::to_string(g.node_size()));
    for (const auto& i : s.ins) n->add_input(i);
    for (const auto& o : s.outs) n->add_output(o);
    for (const auto& [a, v] : s.ints) attr_int(n, a, v);
  }
  for (const auto& o : outs) g.add_output()->set_name(o);
  return g;
}

void i64_init(GraphProto& g, const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t x : v) t->add_int64_data(x);
}

Tensor i64(int64_t v) { return Tensor::scalar<int64_t>(DType::i64, v); }

// The same outputs in every mode.
void expect_runs(const ::onnx::ModelProto& m, const std::map<std::string, Tensor>& in,
                 const std::map<std::string, std::pair<std::vector<int64_t>, std::vector<double>>>& want,
                 const Options& options = Options{}) {
  for (Mode mode : kModes) {
    SCOPED_TRACE(static_cast<int>(mode));
    Session s = Session::from_graph(import_model(m), mode, options);
    auto out = s.run(in);
    for (const auto& [name, w] : want) {
      EXPECT_EQ(out.at(name).shape(), w.first) << name;
      std::vector<double> got = values(out.at(name));
      ASSERT_EQ(got.size(), w.second.size()) << name;
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], w.second[i], 1e-5) << name << "[" << i << "]";
    }
  }
}

// ---- Loop ----

// y, sq = Loop(M, cond, x): each iteration x += i (the iteration number), scan output x * x.
::onnx::ModelProto counted_model(bool with_cond) {
  auto m = make_model(13);
  add_input(m, "M", {}, TensorProto::INT64);
  if (with_cond) add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{2}});
  GraphProto b = body("body", {"i", "cin", "xin"},
                      {{"Identity", {"cin"}, {"cout"}}, {"Cast", {"i"}, {"fi"}, {{"to", TensorProto::FLOAT}}},
                       {"Add", {"xin", "fi"}, {"xout"}}, {"Mul", {"xout", "xout"}, {"sq"}}},
                      {"cout", "xout", "sq"});
  attr_graph(add_node(m, "Loop", {"M", with_cond ? "c" : "", "x"}, {"y", "scan"}, "loop"), "body", b);
  add_output(m, "y");
  add_output(m, "scan");
  return m;
}

// The loop written out: x += i, then record x * x.
std::pair<std::vector<double>, std::vector<double>> counted_by_hand(std::vector<double> x, int64_t trips) {
  std::vector<double> scan;
  for (int64_t i = 0; i < trips; ++i)
    for (double& v : x) {
      v += static_cast<double>(i);
      scan.push_back(v * v);
    }
  return {x, scan};
}

TEST(LoopImport, TripCountOnlyInEveryMode) {
  for (int64_t trips : {0, 1, 4}) {
    auto [y, scan] = counted_by_hand({1, -2}, trips);
    expect_runs(counted_model(false), {{"M", i64(trips)}, {"x", f32({2}, {1, -2})}},
                {{"y", {{2}, y}}, {"scan", {{trips, 2}, scan}}});
  }
}

TEST(LoopImport, BodyAndCapturesBecomeInputsAndTheIrTextRoundTrips) {
  Graph g = import_model(counted_model(false));
  const Node* n = find_node(g, OpKind::Loop);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->inputs.size(), 3u);
  EXPECT_EQ(n->inputs[1], kNoValue);  // cond omitted
  EXPECT_EQ(n->attr_int("captures", -1), 0);
  EXPECT_EQ(n->attr_graph("body").inputs.size(), 3u);
  std::string text = print_graph(g);
  Graph back = parse_graph(text);
  EXPECT_EQ(print_graph(back), text);
  Session s = Session::from_graph(std::move(back), Mode::eager, Options{});
  auto out = s.run({{"M", i64(3)}, {"x", f32({2}, {1, -2})}});
  EXPECT_EQ(values(out.at("y")), counted_by_hand({1, -2}, 3).first);
}

// x, sums = Loop("", c, x) reading `limit` from the outer graph: x *= 2 while sum(x) < limit.
::onnx::ModelProto while_model(bool counted) {
  auto m = make_model(13);
  if (counted) add_input(m, "M", {}, TensorProto::INT64);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{2}});
  add_input(m, "limit", {int64_t{1}});
  GraphProto b = body("body", {"i", "cin", "xin"},
                      {{"Mul", {"xin", "two"}, {"xout"}}, {"ReduceSum", {"xout"}, {"s"}},
                       {"Less", {"s", "limit"}, {"cout"}}},
                      {"cout", "xout", "s"});
  f32_init(b, "two", {}, {2.0f});
  attr_graph(add_node(m, "Loop", {counted ? "M" : "", "c", "x"}, {"y", "sums"}, "loop"), "body", b);
  add_output(m, "y");
  add_output(m, "sums");
  return m;
}

std::pair<std::vector<double>, std::vector<double>> while_by_hand(std::vector<double> x, bool cond, double limit,
                                                                  int64_t trips) {
  std::vector<double> sums;
  for (int64_t i = 0; cond && (trips < 0 || i < trips); ++i) {
    double s = 0;
    for (double& v : x) s += (v *= 2);
    sums.push_back(s);
    cond = s < limit;
  }
  return {x, sums};
}

TEST(LoopImport, CondOnlyReadsAnOuterValue) {
  Graph g = import_model(while_model(false));
  const Node* n = find_node(g, OpKind::Loop);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attr_int("captures", -1), 1);
  EXPECT_EQ(g.value(n->inputs.back()).name, "limit");
  for (bool c : {true, false}) {
    auto [y, sums] = while_by_hand({1, 1}, c, 20, -1);
    EXPECT_EQ(sums.size(), c ? 4u : 0u);
    expect_runs(while_model(false), {{"c", flag(c)}, {"x", f32({2}, {1, 1})}, {"limit", f32({1}, {20})}},
                {{"y", {{2}, y}}, {"sums", {{int64_t(sums.size()), 1}, sums}}});
  }
}

TEST(LoopImport, TripCountAndCondEndItWhicheverComesFirst) {
  for (int64_t trips : {2, 10}) {  // 2: the count ends it; 10: cond does, after 4 iterations
    auto [y, sums] = while_by_hand({1, 1}, true, 20, trips);
    EXPECT_EQ(sums.size(), trips == 2 ? 2u : 4u);
    expect_runs(while_model(true),
                {{"M", i64(trips)}, {"c", flag(true)}, {"x", f32({2}, {1, 1})}, {"limit", f32({1}, {20})}},
                {{"y", {{2}, y}}, {"sums", {{int64_t(sums.size()), 1}, sums}}});
  }
}

TEST(LoopImport, ACarriedValueThatGrowsGetsAFreshDim) {
  auto m = make_model(13);
  add_input(m, "M", {}, TensorProto::INT64);
  add_input(m, "x", {int64_t{1}});
  GraphProto b = body("body", {"i", "cin", "xin"},
                      {{"Identity", {"cin"}, {"cout"}}, {"Concat", {"xin", "one"}, {"xout"}, {{"axis", 0}}}},
                      {"cout", "xout"});
  f32_init(b, "one", {1}, {1.0f});
  attr_graph(add_node(m, "Loop", {"M", "", "x"}, {"y"}, "loop"), "body", b);
  add_node(m, "Neg", {"y"}, {"z"});  // a node after it sizes itself at run time
  add_output(m, "z");
  Graph g = import_model(m);
  prepare_graph(g, {}, Options{});
  const TensorType& z = g.value(g.outputs[0]).type;
  ASSERT_EQ(z.rank(), 1);
  EXPECT_FALSE(z.shape[0].is_static()) << type_string(z);
  for (int64_t trips : {0, 3}) {
    std::vector<double> want{-5};
    for (int64_t i = 0; i < trips; ++i) want.push_back(-1);
    expect_runs(m, {{"M", i64(trips)}, {"x", f32({1}, {5})}}, {{"z", {{1 + trips}, want}}});
  }
}

TEST(LoopImport, AConstantTripCountSizesTheScanOutputs) {
  auto m = counted_model(false);
  m.mutable_graph()->mutable_input()->DeleteSubrange(0, 1);
  i64_init(*m.mutable_graph(), "M", {}, {3});
  Graph g = import_model(m);
  prepare_graph(g, {}, Options{});
  const TensorType& scan = g.value(g.outputs[1]).type;
  EXPECT_EQ(type_string(scan), "f32[3,2]");
}

// The body holds an If reading x0 from the outer graph, two levels up: x += x0 for i < 2, else x -= x0.
TEST(LoopImport, IfInLoopReadsValuesTwoLevelsUp) {
  auto m = make_model(13);
  add_input(m, "M", {}, TensorProto::INT64);
  add_input(m, "x", {int64_t{2}});
  add_input(m, "x0", {int64_t{2}});
  GraphProto b = body("body", {"i", "cin", "xin"}, {{"Identity", {"cin"}, {"cout"}}, {"Less", {"i", "two"}, {"early"}}},
                      {"cout", "xout"});
  i64_init(b, "two", {}, {2});
  auto* ifn = b.add_node();
  ifn->set_op_type("If");
  ifn->set_name("if");
  ifn->add_input("early");
  ifn->add_output("xout");
  attr_graph(ifn, "then_branch", body("then", {}, {{"Add", {"xin", "x0"}, {"t"}}}, {"t"}));
  attr_graph(ifn, "else_branch", body("else", {}, {{"Sub", {"xin", "x0"}, {"e"}}}, {"e"}));
  attr_graph(add_node(m, "Loop", {"M", "", "x"}, {"y"}, "loop"), "body", b);
  add_output(m, "y");
  std::vector<double> x{1, 2}, x0{10, 100};
  for (int64_t i = 0; i < 5; ++i)
    for (size_t k = 0; k < 2; ++k) x[k] += i < 2 ? x0[k] : -x0[k];
  expect_runs(m, {{"M", i64(5)}, {"x", f32({2}, {1, 2})}, {"x0", f32({2}, {10, 100})}}, {{"y", {{2}, x}}});
}

TEST(LoopImport, LoopInIfRunsInTheTakenBranch) {
  auto m = make_model(13);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "M", {}, TensorProto::INT64);
  add_input(m, "x", {int64_t{2}});
  GraphProto b = body("body", {"i", "cin", "xin"},
                      {{"Identity", {"cin"}, {"cout"}}, {"Cast", {"i"}, {"fi"}, {{"to", TensorProto::FLOAT}}},
                       {"Add", {"xin", "fi"}, {"xout"}}, {"Mul", {"xout", "xout"}, {"sq"}}},
                      {"cout", "xout", "sq"});
  GraphProto then_g = body("then", {}, {}, {"ty"});
  auto* loop = then_g.add_node();
  loop->set_op_type("Loop");
  loop->set_name("inner");
  for (const char* i : {"M", "", "x"}) loop->add_input(i);
  loop->add_output("ty");
  loop->add_output("tscan");
  attr_graph(loop, "body", b);
  auto* ifn = add_node(m, "If", {"c"}, {"y"}, "if");
  attr_graph(ifn, "then_branch", then_g);
  attr_graph(ifn, "else_branch", body("else", {}, {{"Neg", {"x"}, {"e"}}}, {"e"}));
  add_output(m, "y");
  expect_runs(m, {{"c", flag(true)}, {"M", i64(3)}, {"x", f32({2}, {1, -2})}},
              {{"y", {{2}, counted_by_hand({1, -2}, 3).first}}});
  expect_runs(m, {{"c", flag(false)}, {"M", i64(3)}, {"x", f32({2}, {1, -2})}}, {{"y", {{2}, {-1, 2}}}});
}

// No trip count and a cond the body keeps true: ONNX runs it forever; kiln stops at max_loop_iterations.
TEST(LoopImport, ALoopThatNeverEndsHitsTheIterationBound) {
  auto m = make_model(13);
  add_input(m, "c", {}, TensorProto::BOOL);
  add_input(m, "x", {int64_t{1}});
  attr_graph(add_node(m, "Loop", {"", "c", "x"}, {"y"}, "forever"), "body",
             body("body", {"i", "cin", "xin"}, {{"Identity", {"cin"}, {"cout"}}, {"Neg", {"xin"}, {"xout"}}},
                  {"cout", "xout"}));
  add_output(m, "y");
  Options options;
  options.set("max_loop_iterations", "1000");
  for (Mode mode : kModes) {
    Session s = Session::from_graph(import_model(m), mode, options);
    // 999 iterations stop by cond: the bound counts iterations, not runs.
    try {
      s.run({{"c", flag(true)}, {"x", f32({1}, {1})}});
      ADD_FAILURE() << "a loop without end returned";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("still running after 1000 iterations"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("max_loop_iterations"), std::string::npos) << e.what();
    }
    EXPECT_EQ(values(s.run({{"c", flag(false)}, {"x", f32({1}, {1})}}).at("y")), (std::vector<double>{1}));
  }
}

// ---- Scan ----

// Scan 9+: states (sum [2], prod [2]); the scan input x [2, 4] read along axis 1 in reverse; scan
// outputs the running sum along axis 1 (forward) and the running product along axis 0 (reverse).
TEST(ScanImport, AxesDirectionsAndSeveralStatesInEveryMode) {
  for (int64_t opset : {9, 11, 16}) {
    auto m = make_model(opset);
    add_input(m, "s0", {int64_t{2}});
    add_input(m, "p0", {int64_t{2}});
    add_input(m, "x", {int64_t{2}, int64_t{4}});
    GraphProto b = body("body", {"s", "p", "col"},
                        {{"Add", {"s", "col"}, {"s2"}}, {"Mul", {"p", "col"}, {"p2"}},
                         {"Identity", {"s2"}, {"so"}}, {"Identity", {"p2"}, {"po"}}},
                        {"s2", "p2", "so", "po"});
    auto* n = add_node(m, "Scan", {"s0", "p0", "x"}, {"s", "p", "sums", "prods"}, "scan");
    attr_graph(n, "body", b);
    attr_int(n, "num_scan_inputs", 1);
    attr_ints(n, "scan_input_axes", {opset >= 11 ? -1 : 1});
    attr_ints(n, "scan_input_directions", {1});
    attr_ints(n, "scan_output_axes", {1, 0});
    attr_ints(n, "scan_output_directions", {0, 1});
    for (const char* o : {"s", "p", "sums", "prods"}) add_output(m, o);
    const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<double> s{0.5, -1}, p{1, 2};
    std::vector<std::vector<double>> sums, prods;  // per iteration
    for (int t = 0; t < 4; ++t) {
      const int col = 3 - t;  // reverse
      for (int k = 0; k < 2; ++k) {
        s[size_t(k)] += x[size_t(k * 4 + col)];
        p[size_t(k)] *= x[size_t(k * 4 + col)];
      }
      sums.push_back(s);
      prods.push_back(p);
    }
    std::vector<double> sums_out(8), prods_out(8);
    for (int t = 0; t < 4; ++t)
      for (int k = 0; k < 2; ++k) {
        sums_out[size_t(k * 4 + t)] = sums[size_t(t)][size_t(k)];          // [2, 4]: axis 1
        prods_out[size_t((3 - t) * 2 + k)] = prods[size_t(t)][size_t(k)];  // [4, 2]: axis 0, reversed
      }
    SCOPED_TRACE(opset);
    expect_runs(m, {{"s0", f32({2}, {0.5f, -1})}, {"p0", f32({2}, {1, 2})}, {"x", f32({2, 4}, x)}},
                {{"s", {{2}, s}}, {"p", {{2}, p}}, {"sums", {{2, 4}, sums_out}}, {"prods", {{4, 2}, prods_out}}});
  }
}

// Scan-8: a batch axis first; each entry scanned along axis 1 for its sequence_lens entry, in reverse,
// the rest of its scan output zeros.
TEST(ScanImport, Scan8BatchesWithSequenceLengths) {
  auto m = make_model(8);
  add_input(m, "lens", {int64_t{2}}, TensorProto::INT64);
  add_input(m, "init", {int64_t{2}, int64_t{2}});
  add_input(m, "x", {int64_t{2}, int64_t{3}, int64_t{2}});
  GraphProto b = body("body", {"sum", "next"}, {{"Add", {"sum", "next"}, {"s2"}}, {"Identity", {"s2"}, {"so"}}},
                      {"s2", "so"});
  auto* n = add_node(m, "Scan", {"lens", "init", "x"}, {"y", "z"}, "scan");
  attr_graph(n, "body", b);
  attr_int(n, "num_scan_inputs", 1);
  attr_ints(n, "directions", {1});
  add_output(m, "y");
  add_output(m, "z");
  const std::vector<float> init{1, 2, 3, 4}, x{1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60};
  const std::vector<int64_t> lens{3, 2};
  std::vector<double> y(4), z(12, 0.0);
  for (int bt = 0; bt < 2; ++bt) {
    double s[2] = {init[size_t(bt * 2)], init[size_t(bt * 2 + 1)]};
    for (int64_t t = 0; t < lens[size_t(bt)]; ++t) {
      const int64_t at = lens[size_t(bt)] - 1 - t;
      for (int k = 0; k < 2; ++k) {
        s[k] += x[size_t(bt * 6 + at * 2 + k)];
        z[size_t(bt * 6 + t * 2 + k)] = s[k];
      }
    }
    y[size_t(bt * 2)] = s[0];
    y[size_t(bt * 2 + 1)] = s[1];
  }
  expect_runs(m,
              {{"lens", Tensor::from_vector<int64_t>(DType::i64, {2}, lens)},
               {"init", f32({2, 2}, init)},
               {"x", f32({2, 3, 2}, x)}},
              {{"y", {{2, 2}, y}}, {"z", {{2, 3, 2}, z}}});
}

// ---- refusals ----

TEST(LoopImport, WrongBodyInputOrOutputCountsAreUserErrors) {
  auto outs = counted_model(false);
  outs.mutable_graph()->mutable_node(0)->add_output("extra");
  expect_user_error(outs, "body has 3 outputs, but the node has 3");
  auto ins = counted_model(false);
  ins.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g()->add_input()->set_name("more");
  expect_user_error(ins, "body has 4 inputs, but Loop's body takes 3");
}

TEST(LoopImport, ACarriedValueThatChangesTypeIsAUserError) {
  auto m = counted_model(false);
  auto* b = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  b->mutable_node(2)->set_op_type("Cast");  // xout = Cast(xin, fi): the inputs do not matter, the type does
  b->mutable_node(2)->clear_input();
  b->mutable_node(2)->add_input("xin");
  attr_int(b->mutable_node(2), "to", TensorProto::INT64);
  b->mutable_node(3)->set_input(0, "fi");
  b->mutable_node(3)->set_input(1, "fi");
  try {
    Session::from_graph(import_model(m), Mode::eager, Options{});
    ADD_FAILURE() << "compiled";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("loop-carried value 0 goes into the body as f32 but comes out i64"),
              std::string::npos) << e.what();
  }
}

TEST(LoopImport, TripCountMustBeOneInteger) {
  auto m = counted_model(false);
  set_value_info(m.mutable_graph()->mutable_input(0), "M", TensorProto::INT64, {int64_t{2}});
  try {
    Session::from_graph(import_model(m), Mode::eager, Options{});
    ADD_FAILURE() << "compiled";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("M (the trip count) must hold one element"), std::string::npos) << e.what();
  }
}

TEST(ScanImport, AxisOutOfRangeIsAUserError) {
  auto m = make_model(11);
  add_input(m, "s0", {int64_t{2}});
  add_input(m, "x", {int64_t{2}, int64_t{4}});
  auto* n = add_node(m, "Scan", {"s0", "x"}, {"s"}, "scan");
  attr_graph(n, "body", body("body", {"s", "col"}, {{"Add", {"s", "col"}, {"s2"}}}, {"s2"}));
  attr_int(n, "num_scan_inputs", 1);
  attr_ints(n, "scan_input_axes", {2});
  add_output(m, "s");
  try {
    Session::from_graph(import_model(m), Mode::eager, Options{});
    ADD_FAILURE() << "compiled";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("scan_input_axes[0] is 2, out of range for rank 2"), std::string::npos)
        << e.what();
  }
  auto count = make_model(11);
  *count.mutable_graph() = m.graph();
  count.mutable_graph()->mutable_node(0)->mutable_attribute(1)->set_i(3);
  expect_user_error(count, "num_scan_inputs must be 1 to 2");
}

TEST(LoopImport, SavedModelsAndHalfPrecisionRefuseLoopAndScan) {
  TempDir dir;
  try {
    Session::compile_to_file(import_model(counted_model(false)), Mode::compiled, Options{}, {}, dir.file("m.kiln"));
    ADD_FAILURE() << "saved a model with a Loop";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("a saved model cannot hold Loop nodes"), std::string::npos) << e.what();
  }
  Graph g = import_model(counted_model(false));
  try {
    narrow_floats(g, Options{}, DType::bf16);
    ADD_FAILURE() << "narrowed a Loop body";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("does not narrow Loop bodies"), std::string::npos) << e.what();
  }
}

TEST(LoopImport, EveryVersionReads) {
  for (int64_t opset : {11, 13, 16, 19, 21}) {
    auto m = counted_model(false);
    m.mutable_opset_import(0)->set_version(opset);
    Session s = Session::from_graph(import_model(m), Mode::eager, Options{});
    EXPECT_EQ(values(s.run({{"M", i64(2)}, {"x", f32({2}, {1, -2})}}).at("y")), counted_by_hand({1, -2}, 2).first)
        << opset;
  }
}

}  // namespace
}  // namespace kiln::testing
