// The execution plan: which steps run, which buffers intermediates share, and that runs that reuse a
// session's arenas (one after another, and from several threads at once) give the same results.
#include <gtest/gtest.h>

#include <cmath>
#include <omp.h>

#include <thread>

#include "kiln/graph.h"
#include "kiln/builder.h"
#include "kiln/session.h"
#include "ops/node_runner.h"
#include "passes/passes.h"
#include "runtime/compare.h"
#include "compiler/plan.h"

namespace kiln {
namespace {

// x -> Exp -> a -> Neg -> b -> Tanh -> c -> Reshape (view) -> d -> Sigmoid -> y, all eager nodes.
Graph chain_graph() {
  GraphBuilder b("chain");
  ValueId x = b.input("x", DType::f32, {4, 6});
  ValueId a = b.op(OpKind::Exp, {x});
  ValueId bb = b.op(OpKind::Neg, {a});
  ValueId c = b.op(OpKind::Tanh, {bb});
  ValueId d = b.op(OpKind::Reshape, {c, b.ints({24})});
  b.output(b.op(OpKind::Sigmoid, {d}), "y");
  return b.build();
}

struct Planned {
  Graph g;
  std::vector<compiler::Step> steps;
  compiler::MemoryPlan memory;
};

Planned plan(Graph g) {
  infer_shapes(g, Options{});
  Planned p;
  std::vector<int> step_of_node;
  p.steps = compiler::make_steps(g, {}, step_of_node);
  p.memory = compiler::plan_memory(g, p.steps);
  p.g = std::move(g);
  return p;
}

ValueId node_output(const Graph& g, size_t node) { return g.nodes[node].outputs[0]; }

TEST(Plan, DeadBuffersAreReusedAndViewsShareTheirInput) {
  Planned p = plan(chain_graph());
  const Graph& g = p.g;
  ASSERT_EQ(p.steps.size(), 5u);
  EXPECT_EQ(p.steps[3].kind, compiler::StepKind::view);
  ValueId a = node_output(g, 0), b = node_output(g, 1), c = node_output(g, 2), d = node_output(g, 3);
  ValueId y = node_output(g, 4);
  // a dies when Neg has run, so Tanh's c takes a's slot; b and c are live together.
  EXPECT_GE(p.memory.slot_of[size_t(a)], 0);
  EXPECT_EQ(p.memory.slot_of[size_t(c)], p.memory.slot_of[size_t(a)]);
  EXPECT_NE(p.memory.slot_of[size_t(b)], p.memory.slot_of[size_t(c)]);
  EXPECT_EQ(p.memory.slot_of[size_t(d)], -1);  // a view: it reads c's buffer
  EXPECT_EQ(p.memory.slot_of[size_t(y)], -1);  // a graph output leaves the run: never planned
  EXPECT_EQ(p.memory.slot_bytes.size(), 2u);
  EXPECT_EQ(p.memory.planned_bytes, 3 * 24 * 4);
  compiler::PlanStats st = compiler::plan_stats(g, p.steps, p.memory);
  EXPECT_EQ(st.kernels, 4);
  EXPECT_EQ(st.views, 1);
  EXPECT_EQ(st.bytes_moved, 8 * 24 * 4);  // 4 kernels, each reads and writes 96 bytes
}

TEST(Plan, AValueWhoseViewIsAGraphOutputIsNotPlanned) {
  GraphBuilder b("escape");
  ValueId x = b.input("x", DType::f32, {2, 3});
  ValueId e = b.op(OpKind::Exp, {x});
  b.output(b.op(OpKind::Flatten, {e}), "flat");
  b.output(b.op(OpKind::Neg, {e}), "neg");
  Planned p = plan(b.build());
  EXPECT_EQ(p.memory.slot_of[size_t(node_output(p.g, 0))], -1);
  EXPECT_EQ(p.memory.arena_bytes, 0);
}

TEST(Plan, SymbolicSizesAreAllocatedAtRunTime) {
  GraphBuilder b("sym");
  ValueId x = b.input("x", DType::f32, Shape{Dim::sym("n"), Dim::fixed(3)});
  b.output(b.op(OpKind::Neg, {b.op(OpKind::Exp, {x})}), "y");
  Planned p = plan(b.build());
  EXPECT_EQ(p.memory.slot_of[size_t(node_output(p.g, 0))], -1);
  EXPECT_EQ(compiler::plan_stats(p.g, p.steps, p.memory).bytes_moved, -1);
}

TEST(Plan, LibraryCallsWriteIntoPlannedBuffers) {
  // x -> MatMul(W) + bias -> Relu (one library call) -> h -> Tanh -> y: h lives in the arena.
  GraphBuilder b("library");
  ValueId x = b.input("x", DType::f32, {5, 8});
  ValueId w = b.constant("w", random_uniform(DType::f32, {8, 6}, -1, 1, 1));
  ValueId bias = b.constant("bias", random_uniform(DType::f32, {6}, -1, 1, 2));
  ValueId h = b.op(OpKind::Relu, {b.op(OpKind::Add, {b.op(OpKind::MatMul, {x, w}), bias})});
  b.output(b.op(OpKind::Tanh, {h}), "y");
  Graph g = b.build();
  Options o;
  o.set("autotune", "off");
  Session s = Session::from_graph(g, Mode::compiled, o);
  EXPECT_EQ(s.stats().library_kernels, 1);
  EXPECT_EQ(s.stats().buffers, 1);
  EXPECT_GE(s.stats().arena_bytes, 5 * 6 * 4);
  std::map<std::string, Tensor> in = {{"x", random_uniform(DType::f32, {5, 8}, -1, 1, 3)}};
  Session reference = Session::from_graph(g, Mode::reference, o);
  for (int run = 0; run < 2; ++run) {  // the second run reuses the arena
    CloseResult r = all_close(convert_tensor(s.run(in).at("y"), DType::f64), reference.run(in).at("y"), 1e-5, 1e-5);
    EXPECT_TRUE(r.ok) << r.reason;
  }
}

TEST(Plan, TheThreadsSettingHoldsForTheRunAndIsRestored) {
  // A program that embeds kiln keeps its own OpenMP thread count; kiln's setting applies inside.
  const int before = omp_get_max_threads();
  omp_set_num_threads(3);
  std::map<std::string, Tensor> in = {{"x", random_uniform(DType::f32, {4, 6}, -1, 1, 5)}};
  Options one;
  one.threads = 1;
  Session s = Session::from_graph(chain_graph(), Mode::compiled, one);
  EXPECT_EQ(omp_get_max_threads(), 3);
  RunProfile profile;
  Tensor y1 = s.run(in, &profile).at("y");
  EXPECT_EQ(profile.threads, 1);
  EXPECT_EQ(omp_get_max_threads(), 3);
  Options four;
  four.threads = 4;
  Tensor y4 = Session::from_graph(chain_graph(), Mode::compiled, four).run(in, &profile).at("y");
  EXPECT_EQ(profile.threads, 4);
  EXPECT_EQ(omp_get_max_threads(), 3);
  Session::from_graph(chain_graph(), Mode::compiled, Options{}).run(in, &profile);
  EXPECT_EQ(profile.threads, 3);  // no setting: the caller's count
  CloseResult r = all_close(y1, y4, 0, 0);  // elementwise kernels: the same bits on any thread count
  EXPECT_TRUE(r.ok) << r.reason;
  omp_set_num_threads(before);
}

TEST(Plan, RunsThatReuseArenasGiveTheSameResultsAlsoFromManyThreads) {
  Session s = Session::from_graph(chain_graph(), Mode::eager, Options{}, {});
  EXPECT_EQ(s.stats().buffers, 2);
  auto input = [](double shift) {
    std::vector<double> v(24);
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) + shift);
    return std::map<std::string, Tensor>{{"x", Tensor::from_vector<double>(DType::f32, {4, 6}, v)}};
  };
  std::vector<Tensor> want;
  for (int k = 0; k < 8; ++k) want.push_back(s.run(input(k)).at("y").clone());
  std::vector<std::thread> threads;
  std::vector<int> bad(8, 0);
  for (int k = 0; k < 8; ++k)
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 50; ++rep)
        if (!all_close(s.run(input(k)).at("y"), want[size_t(k)], 0, 0).ok) bad[size_t(k)]++;
    });
  for (auto& t : threads) t.join();
  for (int k = 0; k < 8; ++k) EXPECT_EQ(bad[size_t(k)], 0) << "thread " << k;
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(Profile, EveryStepIsTimedAndEveryNodeHasItsStep) {
  Session s = Session::from_graph(chain_graph(), Mode::eager, Options{}, {});
  std::vector<double> v(24, 0.5);
  std::map<std::string, Tensor> in{{"x", Tensor::from_vector<double>(DType::f32, {4, 6}, v)}};
  RunProfile p;
  auto out = s.run(in, &p);
  ASSERT_EQ(p.steps.size(), 5u);  // 4 kernels and the Reshape view
  size_t nodes = 0;
  double sum = 0;
  for (const StepProfile& st : p.steps) {
    nodes += st.source_nodes.size();
    EXPECT_EQ(st.source_nodes.size(), st.source_ops.size());
    EXPECT_GE(st.ms, 0.0);
    sum += st.ms;
  }
  EXPECT_EQ(nodes, s.graph().nodes.size());
  EXPECT_EQ(p.steps[3].kind, "view");
  EXPECT_EQ(p.steps[3].source_ops, std::vector<std::string>{"Reshape"});
  EXPECT_EQ(p.steps[0].output_type, "f32[4,6]");
  EXPECT_GE(p.total_ms, sum);
  EXPECT_TRUE(all_close(out.at("y"), s.run(in).at("y"), 0, 0).ok);
}

}  // namespace
}  // namespace kiln
