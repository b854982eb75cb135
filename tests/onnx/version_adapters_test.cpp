// The importer's version table and adapters: every version of every operator kiln reads, and each
// adapter on a model built in code, checked on the graph it imports to (and run where it computes).
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <set>

#include "kiln/session.h"
#include "onnx/op_versions.h"
#include "onnx/version_adapters.h"
#include "onnx_test_util.h"

namespace kiln::testing {
namespace {

using TP = ::onnx::TensorProto;

std::vector<int> versions_of(const OnnxOpVersions& e) {
  std::vector<int> v;
  for (int x : e.versions)
    if (x) v.push_back(x);
  return v;
}

TEST(OnnxOpVersions, TableIsSortedAndSelectsTheNewestVersionNotAboveTheOpset) {
  auto table = onnx_op_table();
  EXPECT_EQ(table.size(), 203u);
  for (size_t i = 1; i < table.size(); ++i) EXPECT_LT(table[i - 1].op, table[i].op);
  const OnnxOpVersions* reshape = onnx_op_versions("Reshape");
  ASSERT_TRUE(reshape);
  EXPECT_EQ(onnx_op_version(*reshape, 4), 1);
  EXPECT_EQ(onnx_op_version(*reshape, 12), 5);
  EXPECT_EQ(onnx_op_version(*reshape, 13), 13);
  EXPECT_EQ(onnx_op_version(*reshape, 28), 25);
  EXPECT_EQ(onnx_op_version(*onnx_op_versions("LayerNormalization"), 16), 0);
  EXPECT_EQ(onnx_op_version(*onnx_op_versions("Upsample"), 9), 9);
  EXPECT_EQ(onnx_op_version(*onnx_op_versions("Upsample"), 10), 0);  // deprecated: Resize
  EXPECT_EQ(onnx_op_versions("FooBar"), nullptr);
}

// Every kiln operator has a row for each ONNX version from the one opset 7 selects (or its first) to
// ONNX's newest, in order, so a model of any opset from 7 to 28 finds its version; an operator read as
// others has rows for a run of ONNX's versions that ends at the newest.
TEST(VersionAdapters, EveryKilnOperatorReadsEveryVersionFromOpset7ToTheNewest) {
  std::set<std::string> with_rows;
  for (const VersionStep& s : version_steps()) with_rows.insert(std::string(s.op));
  for (int i = 0; i < kNumOps; ++i) {
    std::string op(op_name(static_cast<OpKind>(i)));
    EXPECT_TRUE(with_rows.count(op)) << op << " has no version rows";
  }
  for (const std::string& op : with_rows) {
    const OnnxOpVersions* onnx = onnx_op_versions(op);
    ASSERT_TRUE(onnx) << op;
    std::vector<int> all = versions_of(*onnx), read;
    for (const VersionStep& s : version_steps())
      if (s.op == op) read.push_back(s.version);
    int at7 = onnx_op_version(*onnx, kEveryVersionOpset);
    int first = at7 ? at7 : all.front();
    if (!op_from_name(op)) first = std::max(first, read.front());  // read as others: from its oldest row
    std::vector<int> expected;
    for (int v : all)
      if (v >= first) expected.push_back(v);
    EXPECT_EQ(read, expected) << op;
    auto [oldest, newest] = kiln_version_range(op);
    EXPECT_EQ(oldest, first) << op;
    EXPECT_EQ(newest, all.back()) << op;
  }
  // Rows of one operator are contiguous (the lookup walks them as a block).
  std::set<std::string_view> closed;
  std::string_view prev;
  for (const VersionStep& s : version_steps()) {
    if (s.op != prev) {
      EXPECT_FALSE(closed.count(s.op)) << s.op << " rows are split";
      closed.insert(prev);
      prev = s.op;
    }
  }
}

const Tensor& constant_input(const Graph& g, const Node& n, size_t i) {
  EXPECT_TRUE(n.has_input(i)) << op_name(n.op) << " input " << i;
  const Value& v = g.value(n.inputs[i]);
  EXPECT_TRUE(v.constant) << v.name;
  return *v.constant;
}

TEST(VersionAdapters, Clip6AttributesBecomeInputsOfTheInputType) {
  auto m = make_model(10);
  add_input(m, "x", {int64_t{4}});
  auto* c = add_node(m, "Clip", {"x"}, {"y"}, "clip");
  attr_float(c, "min", -1.5f);
  attr_float(c, "max", 2.0f);
  add_output(m, "y");
  Graph g = import_model(m);
  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, OpKind::Clip);
  EXPECT_TRUE(n.attrs.empty());
  EXPECT_EQ(constant_input(g, n, 1).dtype(), DType::f32);
  EXPECT_EQ(constant_input(g, n, 1).as_double(0), -1.5);
  EXPECT_EQ(constant_input(g, n, 2).as_double(0), 2.0);
}

TEST(VersionAdapters, Clip6OfAnUntypedValueGetsItsBoundsThroughCastLike) {
  auto m = make_model(9);
  add_input(m, "x", {int64_t{4}}, TP::DOUBLE);
  add_node(m, "Neg", {"x"}, {"n"});  // n has no declared type
  attr_float(add_node(m, "Clip", {"n"}, {"y"}, "clip"), "max", 0.5f);
  add_output(m, "y");
  Graph g = import_model(m);
  const Node* clip = find_node(g, OpKind::Clip);
  const Node* like = find_node(g, OpKind::CastLike);
  ASSERT_TRUE(clip && like);
  EXPECT_FALSE(clip->has_input(1));
  EXPECT_EQ(clip->inputs[2], like->outputs[0]);
  EXPECT_EQ(like->inputs[1], clip->inputs[0]);
  Session s = Session::from_graph(std::move(g), Mode::eager, Options{});
  auto out = s.run({{"x", Tensor::from_vector<double>(DType::f64, {4}, {-2, -0.25, 1, 3})}});
  const Tensor& y = out.at("y");
  ASSERT_EQ(y.dtype(), DType::f64);
  EXPECT_EQ(y.as_double(0), 0.5);
  EXPECT_EQ(y.as_double(1), 0.25);
  EXPECT_EQ(y.as_double(2), -1);
  EXPECT_EQ(y.as_double(3), -3);
}

TEST(VersionAdapters, Slice1AttributesBecomeInputs) {
  auto m = make_model(9);
  add_input(m, "x", {int64_t{4}, int64_t{6}});
  auto* s = add_node(m, "Slice", {"x"}, {"y"});
  attr_ints(s, "starts", {1, 0});
  attr_ints(s, "ends", {3, 4});
  attr_ints(s, "axes", {0, 1});
  add_output(m, "y");
  Graph g = import_model(m);
  const Node& n = g.nodes[0];
  EXPECT_TRUE(n.attrs.empty());
  EXPECT_EQ(constant_input(g, n, 1).to_int64_vector(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(constant_input(g, n, 2).to_int64_vector(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(constant_input(g, n, 3).to_int64_vector(), (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(n.has_input(4));
}

TEST(VersionAdapters, Pad2AttributesBecomeInputs) {
  auto m = make_model(10);
  add_input(m, "x", {int64_t{2}});
  auto* p = add_node(m, "Pad", {"x"}, {"y"});
  attr_ints(p, "pads", {1, 2});
  attr_float(p, "value", 7.0f);
  add_output(m, "y");
  Graph g = import_model(m);
  const Node& n = g.nodes[0];
  EXPECT_EQ(constant_input(g, n, 1).to_int64_vector(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(constant_input(g, n, 2).as_double(0), 7.0);
  Session s = Session::from_graph(std::move(g), Mode::eager, Options{});
  auto out = s.run({{"x", Tensor::from_vector<float>(DType::f32, {2}, {1, 2})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{7, 1, 2, 7, 7}));
}

TEST(VersionAdapters, UpsampleBecomesResizeWithAsymmetricFloorCoordinates) {
  for (int64_t opset : {7, 9}) {
    auto m = make_model(opset);
    add_input(m, "x", {int64_t{1}, int64_t{1}, int64_t{2}});
    auto* u = add_node(m, "Upsample", opset == 7 ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "s"},
                       {"y"}, "up");
    if (opset == 7) attr_floats(u, "scales", {1, 1, 2});
    else add_f32_init(m, "s", {3}, {1, 1, 2});
    add_output(m, "y");
    Graph g = import_model(m);
    const Node* r = find_node(g, OpKind::Resize);
    ASSERT_TRUE(r) << opset;
    EXPECT_FALSE(r->has_input(1));
    EXPECT_EQ(values(constant_input(g, *r, 2)), (std::vector<double>{1, 1, 2}));
    EXPECT_EQ(r->attr_string("coordinate_transformation_mode", ""), "asymmetric");
    EXPECT_EQ(r->attr_string("nearest_mode", ""), "floor");
    Session s = Session::from_graph(std::move(g), Mode::eager, Options{});
    auto out = s.run({{"x", Tensor::from_vector<float>(DType::f32, {1, 1, 2}, {3, 5})}});
    EXPECT_EQ(values(out.at("y")), (std::vector<double>{3, 3, 5, 5})) << opset;
  }
  auto removed = make_model(10);
  add_input(removed, "x", {int64_t{1}});
  add_node(removed, "Upsample", {"x", "x"}, {"y"}, "up");
  add_output(removed, "y");
  expect_user_error(removed, "operator Upsample was removed from the default domain in opset 10");
}

TEST(VersionAdapters, Resize10GetsAnEmptyRoiAndUpsampleCoordinates) {
  auto m = make_model(10);
  add_input(m, "x", {int64_t{1}, int64_t{4}});
  add_f32_init(m, "s", {2}, {1, 0.5f});
  add_node(m, "Resize", {"x", "s"}, {"y"});
  add_output(m, "y");
  Graph g = import_model(m);
  const Node& r = g.nodes[0];
  ASSERT_EQ(r.inputs.size(), 3u);
  EXPECT_FALSE(r.has_input(1));
  EXPECT_EQ(g.value(r.inputs[2]).name, "s");
  EXPECT_EQ(r.attr_string("coordinate_transformation_mode", ""), "asymmetric");
  Session s = Session::from_graph(std::move(g), Mode::eager, Options{});
  auto out = s.run({{"x", Tensor::from_vector<float>(DType::f32, {1, 4}, {1, 2, 3, 4})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{1, 3}));  // in[floor(i / 0.5)]
}

TEST(VersionAdapters, BatchNormalizationBefore9DropsSpatialAndRefusesItsOtherMeaning) {
  for (int64_t spatial : {1, 0}) {
    auto m = make_model(7);
    add_input(m, "x", {int64_t{1}, int64_t{2}, int64_t{2}});
    for (const char* p : {"s", "b", "mean", "var"}) add_f32_init(m, p, {2}, {1, 0});
    attr_int(add_node(m, "BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"}, "bn"), "spatial", spatial);
    add_output(m, "y");
    if (spatial == 1) {
      Graph g = import_model(m);
      EXPECT_FALSE(g.nodes[0].has_attr("spatial"));
    } else {
      expect_user_error(m, "node 'bn' (BatchNormalization-7): spatial=0");
    }
  }
  auto training = make_model(9);
  add_input(training, "x", {int64_t{1}, int64_t{2}});
  for (const char* p : {"s", "b", "mean", "var"}) add_f32_init(training, p, {2}, {1, 0});
  add_node(training, "BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y", "m"}, "bn");
  add_output(training, "y");
  expect_user_error(training, "the training outputs");
}

TEST(VersionAdapters, DropoutIsIdentityWithAnAllTrueMask) {
  auto m = make_model(13);
  add_input(m, "x", {int64_t{3}});
  add_node(m, "Dropout", {"x"}, {"y", "mask"}, "drop");
  add_output(m, "y");
  add_output(m, "mask");
  Graph g = import_model(m);
  EXPECT_TRUE(find_node(g, OpKind::Identity));
  EXPECT_TRUE(find_node(g, OpKind::ConstantOfShape));
  Session s = Session::from_graph(std::move(g), Mode::eager, Options{});
  auto out = s.run({{"x", Tensor::from_vector<float>(DType::f32, {3}, {1, -2, 3})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{1, -2, 3}));
  EXPECT_EQ(out.at("mask").dtype(), DType::boolean);
  EXPECT_EQ(out.at("mask").to_int64_vector(), (std::vector<int64_t>{1, 1, 1}));

  auto ratio = make_model(10);  // ratio an attribute until 12
  add_input(ratio, "x", {int64_t{3}});
  attr_float(add_node(ratio, "Dropout", {"x"}, {"y"}), "ratio", 0.3f);
  add_output(ratio, "y");
  Graph gr = import_model(ratio);
  EXPECT_EQ(gr.nodes.size(), 1u);
  EXPECT_EQ(gr.nodes[0].op, OpKind::Identity);

  auto train = make_model(13);
  add_input(train, "x", {int64_t{3}});
  add_input(train, "t", {}, TP::BOOL);
  add_node(train, "Dropout", {"x", "", "t"}, {"y"}, "drop");
  add_output(train, "y");
  // training_mode known at run time only: kiln's Dropout checks it then (ratio omitted: 0.5, random).
  Graph gt = import_model(train);
  ASSERT_TRUE(find_node(gt, OpKind::Dropout));
  Session st = Session::from_graph(std::move(gt), Mode::eager, Options{});
  Tensor x3 = Tensor::from_vector<float>(DType::f32, {3}, {1, -2, 3});
  EXPECT_EQ(values(st.run({{"x", x3}, {"t", Tensor::scalar<int>(DType::boolean, 0)}}).at("y")),
            (std::vector<double>{1, -2, 3}));
  try {
    st.run({{"x", x3}, {"t", Tensor::scalar<int>(DType::boolean, 1)}});
    ADD_FAILURE() << "training with the default ratio ran";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("training_mode is true and ratio is 0.5"), std::string::npos) << e.what();
  }

  // A constant training_mode true: ratio 0 is exact, another (or the default) refused at import.
  for (float r : {0.0f, 0.25f}) {
    auto m13 = make_model(13);
    add_input(m13, "x", {int64_t{3}});
    add_f32_init(m13, "r", {}, {r});
    auto* t = m13.mutable_graph()->add_initializer();
    t->set_name("t");
    t->set_data_type(TP::BOOL);
    t->add_int32_data(1);
    add_node(m13, "Dropout", {"x", "r", "t"}, {"y", "mask"}, "drop");
    add_output(m13, "y");
    add_output(m13, "mask");
    if (r != 0) {
      expect_user_error(m13, "training_mode is true and ratio is not 0");
      continue;
    }
    Session s13 = Session::from_graph(import_model(m13), Mode::eager, Options{});
    auto out13 = s13.run({{"x", x3}});
    EXPECT_EQ(values(out13.at("y")), (std::vector<double>{1, -2, 3}));
    EXPECT_EQ(out13.at("mask").to_int64_vector(), (std::vector<int64_t>{1, 1, 1}));
  }
}

TEST(VersionAdapters, ReduceFamilyBecomesReduceSumWithItsPointwiseParts) {
  // opset 13: axes an attribute, moved to ReduceSum's input
  auto m = make_model(13);
  add_input(m, "x", {int64_t{2}, int64_t{2}});
  attr_ints(add_node(m, "ReduceL2", {"x"}, {"l2"}), "axes", {1});
  attr_ints(add_node(m, "ReduceL1", {"x"}, {"l1"}), "axes", {1});
  attr_ints(add_node(m, "ReduceSumSquare", {"x"}, {"ss"}), "axes", {1});
  attr_ints(add_node(m, "ReduceLogSum", {"x"}, {"ls"}), "axes", {0});
  auto* lse = add_node(m, "ReduceLogSumExp", {"x"}, {"lse"});
  attr_ints(lse, "axes", {1});
  attr_int(lse, "keepdims", 0);
  for (const char* o : {"l2", "l1", "ss", "ls", "lse"}) add_output(m, o);
  Graph g = import_model(m);
  const Node* sum = find_node(g, OpKind::ReduceSum);
  ASSERT_TRUE(sum);
  EXPECT_EQ(constant_input(g, *sum, 1).to_int64_vector(), (std::vector<int64_t>{1}));
  EXPECT_TRUE(find_node(g, OpKind::Sqrt) && find_node(g, OpKind::Abs) && find_node(g, OpKind::ReduceMax));
  Session s = Session::from_graph(std::move(g), Mode::eager, Options{});
  // Large enough that exp overflows f32 unless the maximum is taken out first.
  auto out = s.run({{"x", Tensor::from_vector<float>(DType::f32, {2, 2}, {3, -4, 100, 100})}});
  auto near = [](const std::vector<double>& a, const std::vector<double>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4 * std::max(1.0, std::fabs(b[i]))) << i;
  };
  near(values(out.at("l2")), {5, std::sqrt(20000.0)});
  near(values(out.at("l1")), {7, 200});
  near(values(out.at("ss")), {25, 20000});
  near(values(out.at("ls")), {std::log(103.0), std::log(96.0)});
  near(values(out.at("lse")), {3 + std::log1p(std::exp(-7.0)), 100 + std::log(2.0)});
  EXPECT_EQ(out.at("lse").shape(), (std::vector<int64_t>{2}));
}

TEST(VersionAdapters, HardmaxIsOneAtTheFirstMaximumAndOlderVersionsAreRefused) {
  auto m = make_model(13);
  add_input(m, "x", {int64_t{2}, int64_t{3}});
  add_node(m, "Hardmax", {"x"}, {"y"});
  add_output(m, "y");
  Session s = Session::from_graph(import_model(m), Mode::eager, Options{});
  auto out = s.run({{"x", Tensor::from_vector<float>(DType::f32, {2, 3}, {1, 5, 5, -1, -3, -2})}});
  EXPECT_EQ(values(out.at("y")), (std::vector<double>{0, 1, 0, 1, 0, 0}));

  auto old = make_model(11);
  add_input(old, "x", {int64_t{2}, int64_t{3}});
  add_node(old, "Hardmax", {"x"}, {"y"}, "hm");
  add_output(old, "y");
  expect_user_error(old, "node 'hm': Hardmax version 11 (selected by opset 11) is not supported (kiln reads versions 13 to 13)");
}

TEST(VersionAdapters, OpsetsAndVersionsOutsideWhatKilnReadsAreClearErrors) {
  auto late = make_model(13);
  add_input(late, "x", {int64_t{2}, int64_t{3}});
  add_node(late, "LayerNormalization", {"x", "x"}, {"y"}, "ln");
  add_output(late, "y");
  expect_user_error(late, "node 'ln': operator LayerNormalization does not exist in opset 13 (it was added in opset 17)");
  // The newest opset: Reshape-25, Squeeze-25 and Pad-25 read as their opset-18 forms.
  auto m = make_model(28, 14);
  add_input(m, "x", {int64_t{1}, int64_t{4}});
  auto* shape = m.mutable_graph()->add_initializer();
  shape->set_name("shape"), shape->set_data_type(TP::INT64), shape->add_dims(2), shape->add_int64_data(2),
      shape->add_int64_data(2);
  add_node(m, "Reshape", {"x", "shape"}, {"r"});
  add_node(m, "Relu", {"r"}, {"y"});
  add_output(m, "y");
  Graph g = import_model(m);
  EXPECT_EQ(g.nodes.size(), 2u);
}

// Below opset 7 a node reads where its version has a row (Elu-6, GlobalAveragePool-1: the newest form's
// meaning); any other version is refused by name: Add-6 (its broadcast attribute), Elu-1
// (consumed_inputs), Concat-1 (an optional axis).
TEST(VersionAdapters, OpsetsBelow7ReadTheVersionsWithRowsAndRefuseTheOthers) {
  auto m = make_model(6);
  add_input(m, "x", {int64_t{1}, int64_t{2}, int64_t{3}});
  add_node(m, "Elu", {"x"}, {"e"});
  add_node(m, "GlobalAveragePool", {"e"}, {"y"});
  add_output(m, "y");
  Graph g = import_model(m);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, OpKind::Elu);
  auto add6 = make_model(6);
  add_input(add6, "x", {int64_t{2}});
  add_node(add6, "Add", {"x", "x"}, {"y"}, "add");
  add_output(add6, "y");
  expect_user_error(add6, "node 'add': Add version 6 (selected by opset 6) is not supported (kiln reads versions 7 to 14)");
  auto elu1 = make_model(1);
  add_input(elu1, "x", {int64_t{2}});
  add_node(elu1, "Elu", {"x"}, {"y"}, "elu");
  add_output(elu1, "y");
  expect_user_error(elu1, "node 'elu': Elu version 1 (selected by opset 1) is not supported (kiln reads versions 6 to 22)");
  auto none = make_model(0);
  add_input(none, "x", {int64_t{2}});
  add_node(none, "Relu", {"x"}, {"y"});
  add_output(none, "y");
  expect_user_error(none, "ONNX opset 0 is not supported (kiln reads opsets 1 to 28)");
}

}  // namespace
}  // namespace kiln::testing
