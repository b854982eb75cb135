#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "kiln/graph.h"
#include "kiln/builder.h"
#include "kiln/errors.h"
#include "kiln/session.h"
#include "runtime/compare.h"
#include "runtime/demo_model.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

std::map<std::string, Tensor> demo_inputs(const Session& s, uint64_t seed) { return make_inputs(s.graph(), {}, seed); }

TEST(Session, DemoEagerMatchesReference) {
  Options o;
  Session eager = Session::from_graph(demo_transformer(), Mode::eager, o, {{"batch", 2}, {"seq", 7}});
  Session ref = Session::from_graph(demo_transformer(), Mode::reference, o, {{"batch", 2}, {"seq", 7}});
  auto in = demo_inputs(eager, 3);
  Tensor a = eager.run(in).at("logits");
  Tensor r = ref.run(in).at("logits");
  ASSERT_EQ(r.dtype(), DType::f64);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 7, 1000}));
  CloseResult c = all_close(a, r, 1e-4, 1e-4, true);
  EXPECT_TRUE(c.ok) << c.reason;
}

TEST(Session, ShapeChainsFoldWhenDimsAreKnown) {
  Session s = Session::from_graph(demo_transformer(), Mode::eager, Options{}, {{"batch", 1}, {"seq", 16}});
  for (const Node& n : s.graph().nodes) {
    EXPECT_NE(n.op, OpKind::Shape) << "Shape should fold with static dims";
    EXPECT_NE(n.op, OpKind::Range) << "Range of constants should fold";
  }
}

TEST(Session, RunIsThreadSafeAndDeterministic) {
  Session s = Session::from_graph(demo_transformer(), Mode::eager, Options{}, {{"batch", 1}, {"seq", 16}});
  auto in = demo_inputs(s, 5);
  Tensor serial = s.run(in).at("logits");
  std::vector<std::thread> threads;
  std::vector<int> identical(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      bool all = true;
      for (int i = 0; i < 1000; ++i) {  // 8 threads x 1000 runs, each bit-identical to the serial run
        Tensor out = s.run(in).at("logits");
        all = all && std::memcmp(out.raw(), serial.raw(), serial.nbytes()) == 0;
      }
      identical[static_cast<size_t>(t)] = all;
    });
  for (auto& t : threads) t.join();
  for (int ok : identical) EXPECT_TRUE(ok);
}

TEST(Session, InputErrorsAreUserErrors) {
  Session s = Session::from_graph(demo_transformer(), Mode::eager, Options{}, {{"batch", 1}, {"seq", 4}});
  auto in = demo_inputs(s, 1);
  EXPECT_THROW(s.run({}), UserError);  // missing input
  auto wrong_dtype = in;
  wrong_dtype["input_ids"] = Tensor::empty(DType::f32, {1, 4});
  EXPECT_THROW(s.run(wrong_dtype), UserError);
  auto wrong_rank = in;
  wrong_rank["input_ids"] = Tensor::empty(DType::i64, {4});
  EXPECT_THROW(s.run(wrong_rank), UserError);
  auto extra = in;
  extra["nope"] = Tensor::empty(DType::f32, {1});
  EXPECT_THROW(s.run(extra), UserError);
  auto bad_index = in;
  bad_index["input_ids"] = Tensor::from_vector<int64_t>(DType::i64, {1, 4}, {0, 1, 2, 5000});
  EXPECT_THROW(s.run(bad_index), UserError);  // a token id past the embedding table
}

TEST(Session, OutputsDoNotAliasConstants) {
  GraphBuilder b("const_out");
  ValueId x = b.input("x", DType::f32, {2});
  ValueId c = b.constant("c", Tensor::from_vector<float>(DType::f32, {2}, {1.0f, 2.0f}));
  b.output(b.op(OpKind::Identity, {c}), "y");
  b.output(b.op(OpKind::Relu, {x}), "z");
  Session s = Session::from_graph(b.build(), Mode::eager, Options{}, {});
  auto out = s.run({{"x", Tensor::from_vector<float>(DType::f32, {2}, {-1.0f, 1.0f})}});
  out["y"].data<float>()[0] = 42.0f;
  auto again = s.run({{"x", Tensor::from_vector<float>(DType::f32, {2}, {-1.0f, 1.0f})}});
  EXPECT_EQ(again["y"].data<float>()[0], 1.0f);
  EXPECT_EQ(again["z"].data<float>()[0], 0.0f);
}

TEST(Inputs, UnboundSymbolsAreNamed) {
  GraphBuilder b("sym");
  ValueId x = b.input("x", DType::f32, Shape{Dim::sym("n"), Dim::fixed(3)});
  b.output(b.op(OpKind::Relu, {x}), "y");
  Graph g = b.build();
  try {
    resolve_dims(g, {}, {});
    FAIL() << "expected a user error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--dim n="), std::string::npos) << e.what();
  }
  EXPECT_EQ(resolve_dims(g, {}, {{"n", 5}}).at("n"), 5);
}

TEST(Inputs, TokenIdsStayInsideTheTable) {
  Session s = Session::from_graph(demo_transformer(), Mode::eager, Options{}, {{"batch", 2}, {"seq", 64}});
  Tensor ids = make_inputs(s.graph(), {}, 9).at("input_ids");
  int64_t hi = 0;
  for (int64_t i = 0; i < ids.numel(); ++i) hi = std::max(hi, ids.data<int64_t>()[i]);
  EXPECT_LT(hi, 1000);
  EXPECT_GT(hi, 100);  // drawn over the table, not stuck at 0/1
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(Session, ReferenceModeWidensUnfoldedFloatConstants) {
  GraphBuilder b("const_float");
  ValueId x = b.input("x", DType::f32, {2});
  ValueId c = b.op(OpKind::Constant, {}, {{"value_float", 0.1}});
  b.output(b.op(OpKind::Add, {x, c}), "y");
  Options o;
  o.constant_fold_bytes = 0;  // keep the Constant node, as a too-large constant would stay
  Session s = Session::from_graph(b.build(), Mode::reference, o, {});
  Tensor y = s.run({{"x", Tensor::from_vector<double>(DType::f32, {2}, {1.0, 2.0})}}).at("y");
  ASSERT_EQ(y.dtype(), DType::f64);
  EXPECT_EQ(y.data<double>()[0], 1.0 + 0.1);  // 0.1 as a double, not 0.1f widened
}

}  // namespace
}  // namespace kiln
