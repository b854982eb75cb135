// Decompositions: the rule table parses, registers once, and each rule computes what the op's eager
// kernel does (against the fp64 reference), NaN and infinities included.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "kiln/graph.h"
#include "kiln/builder.h"
#include "kiln/errors.h"
#include "kiln/session.h"
#include "lower/decompose.h"
#include "ops/node_runner.h"
#include "runtime/compare.h"

namespace kiln {
namespace {

TEST(Decompose, EveryRuleParsesAndRegistersOnce) {
  std::vector<lower::DecompositionRule> rules = lower::decomposition_rules();
  ASSERT_GE(rules.size(), 5u);
  lower::DecompositionTable table;
  lower::register_decompositions(table);
  lower::register_decompositions(table);  // a second registration changes nothing
  for (const auto& r : rules) {
    EXPECT_TRUE(table.has(r.op)) << r.text;
    EXPECT_EQ(table.describe(r.op), "rule: " + r.text);
  }
  lower::DecompositionRule leaky = lower::parse_rule("LeakyRelu(x; alpha=0.01) = Where(Less(x, 0), Mul(x, alpha), x)");
  EXPECT_EQ(leaky.op, OpKind::LeakyRelu);
  ASSERT_EQ(leaky.attrs.size(), 1u);
  EXPECT_EQ(leaky.attrs[0].second, 0.01);
  EXPECT_EQ(leaky.body.op, OpKind::Where);
}

TEST(Decompose, MalformedRulesAreInternalErrors) {
  for (const char* bad : {"Relu(x) = Max(x, y)", "Relu(x) = Nope(x)", "Relu(x) = x", "Relu(x = Neg(x)",
                          "Relu(x) = Neg(x) extra"})
    EXPECT_THROW(lower::parse_rule(bad), InternalError) << bad;
}

Options private_cache() {
  Options o;
  o.cache_dir = (std::filesystem::temp_directory_path() / ("kiln_decompose_test_" + std::to_string(getpid()))).string();
  return o;
}

struct Case {
  OpKind op;
  int inputs;
  Attrs attrs;
};

TEST(Decompose, CompiledMatchesTheReferenceAndTheOpIsGone) {
  Options o = private_cache();
  std::vector<Case> cases = {{OpKind::LeakyRelu, 1, {{"alpha", 0.3}}},
                             {OpKind::LeakyRelu, 1, {}},
                             {OpKind::HardSigmoid, 1, {{"alpha", 0.25}, {"beta", 0.4}}},
                             {OpKind::HardSwish, 1, {}},
                             {OpKind::Clip, 3, {}},
                             {OpKind::Sum, 2, {}}};
  for (const Case& c : cases) {
    for (int64_t cols : {1, 17}) {
      GraphBuilder b("d");
      std::vector<ValueId> ins = {b.input("x", DType::f32, {3, cols})};
      if (c.op == OpKind::Clip) ins = {ins[0], b.scalar(DType::f32, -1.5), b.scalar(DType::f32, 2.0)};
      if (c.op == OpKind::Sum) ins.push_back(b.input("y", DType::f32, {1, cols}));
      // Relu after the op, so that the decomposed nodes fuse into one generated kernel.
      b.output(b.op(OpKind::Neg, {b.op(c.op, ins, c.attrs)}), "out");
      Graph g = b.build();
      Session compiled = Session::from_graph(g, Mode::compiled, o, {});
      Session reference = Session::from_graph(g, Mode::reference, o, {});
      for (const Node& n : compiled.graph().nodes) EXPECT_NE(n.op, c.op) << op_name(c.op) << " was not decomposed";
      EXPECT_EQ(compiled.stats().kernels, 1) << op_name(c.op);
      std::vector<double> xs(static_cast<size_t>(3 * cols)), ys(static_cast<size_t>(cols));
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(double(i) * 1.3) * 5.0;
      for (size_t i = 0; i < ys.size(); ++i) ys[i] = std::cos(double(i)) * 3.0;
      xs[0] = NAN;
      if (xs.size() > 2) xs[1] = INFINITY, xs[2] = -INFINITY;
      std::map<std::string, Tensor> in{{"x", Tensor::from_vector<double>(DType::f32, {3, cols}, xs)}};
      if (c.op == OpKind::Sum) in["y"] = Tensor::from_vector<double>(DType::f32, {1, cols}, ys);
      Tensor got = convert_tensor(compiled.run(in).at("out"), DType::f64);
      CloseResult r = all_close(got, reference.run(in).at("out"), 1e-6, 1e-6);
      EXPECT_TRUE(r.ok) << op_name(c.op) << " cols=" << cols << ": " << r.reason;
    }
  }
  std::filesystem::remove_all(o.cache_dir);
}

}  // namespace
}  // namespace kiln
