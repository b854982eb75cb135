// Timings (report only, never asserted): each pattern as one library call against its nodes run
// eagerly one by one, median of 20 in the same process; and whole zoo models run node by node with
// the library groups substituted (a local harness, not the session). Runs only with
// KILN_LIBRARY_BENCH=1 (KILN_LIBRARY_BENCH_MODELS=resnet18,bert picks the models).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>

#include "graphs.h"
#include "library_test_util.h"
#include "onnx/import.h"
#include "runtime/compare.h"
#include "runtime/inputs.h"

namespace kiln::library_test {
namespace {

bool bench_enabled() {
  const char* e = std::getenv("KILN_LIBRARY_BENCH");
  return e && std::string(e) == "1";
}

// Medians of `a` and `b` timed alternately (a, b, a, b, ...), so that load from other processes on
// the machine falls on both alike.
std::pair<double, double> paired_median_ms(int reps, const std::function<void()>& a, const std::function<void()>& b) {
  a();  // warm: primitives, packed weights
  b();
  std::vector<double> ta, tb;
  auto time = [](const std::function<void()>& f) {
    auto s = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
  };
  for (int i = 0; i < reps; ++i) {
    ta.push_back(time(a));
    tb.push_back(time(b));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

void compare_pattern(const std::string& name, const Graph& g) {
  auto groups = groups_of(g);
  ASSERT_FALSE(groups.empty()) << name;
  const LibraryGroup& grp = groups.back();
  std::mt19937 rng(1);
  std::map<ValueId, Tensor> in;
  for (ValueId v : grp.inputs)
    if (!g.value(v).constant) in[v] = random_f32(static_dims(g.value(v).type.shape), rng);
  auto kernel = backend::cpu::build_library_kernel(g, grp, Options{});
  auto ins = kernel_inputs(g, grp, in);
  auto [fused, eager] = paired_median_ms(
      20, [&] { kernel->run(ins, int64_t{1} << 34); }, [&] { run_nodes(g, grp, in, false); });
  std::printf("%-44s %-28s fused %8.3f ms  eager %zu nodes %8.3f ms  (x%.2f)\n", name.c_str(), grp.label.c_str(),
              fused, grp.nodes.size(), eager, eager / fused);
}

TEST(LibraryBench, Patterns) {
  if (!bench_enabled()) GTEST_SKIP() << "set KILN_LIBRARY_BENCH=1";
  compare_pattern("bert FFN [128,768]x[768,3072]+bias+GELU",
                  linear_graph(LinearSpec{.a_dims = {1, 128, 768}, .N = 3072, .act = Act::gelu0, .residual = false}));
  compare_pattern("bert out [128,3072]x[3072,768]+bias+add",
                  linear_graph(LinearSpec{.a_dims = {1, 128, 3072}, .N = 768, .act = Act::none, .residual = true}));
  compare_pattern("bert qkv [128,768]x[768,768]+bias",
                  linear_graph(LinearSpec{.a_dims = {1, 128, 768}, .N = 768, .act = Act::none, .residual = false}));
  compare_pattern("vit FFN [197,768]x[768,3072]+bias+GELU",
                  linear_graph(LinearSpec{.a_dims = {1, 197, 768}, .N = 3072, .act = Act::gelu0, .residual = false}));
  compare_pattern("vit out [197,3072]x[3072,768]+bias+add",
                  linear_graph(LinearSpec{.a_dims = {1, 197, 3072}, .N = 768, .act = Act::none, .residual = true}));
  compare_pattern("vit qkv [197,768]x[768,768]+bias",
                  linear_graph(LinearSpec{.a_dims = {1, 197, 768}, .N = 768, .act = Act::none, .residual = false}));
  for (int64_t c : {64, 128, 256, 512}) {
    int64_t hw = 56 * 64 / c;
    Graph g = basic_block(1, c, hw, 1);
    auto groups = groups_of(g);
    std::string shape = std::to_string(c) + "x" + std::to_string(hw) + "x" + std::to_string(hw);
    // Both groups of the block: conv+bn+relu, conv+bn+add+relu.
    for (size_t k = 0; k < groups.size(); ++k) {
      std::mt19937 rng(2);
      std::map<ValueId, Tensor> in;
      for (ValueId v : groups[k].inputs)
        if (!g.value(v).constant) in[v] = random_f32(static_dims(g.value(v).type.shape), rng);
      auto kernel = backend::cpu::build_library_kernel(g, groups[k], Options{});
      auto ins = kernel_inputs(g, groups[k], in);
      auto [fused, eager] = paired_median_ms(
          20, [&] { kernel->run(ins, int64_t{1} << 34); }, [&] { run_nodes(g, groups[k], in, false); });
      std::printf("%-44s %-28s fused %8.3f ms  eager %zu nodes %8.3f ms  (x%.2f)\n",
                  ("resnet block conv3x3 " + shape).c_str(), groups[k].label.c_str(), fused, groups[k].nodes.size(),
                  eager, eager / fused);
    }
  }
}

// Runs g node by node; a group's kernel runs at its last node and its other nodes are skipped.
std::vector<Tensor> run_graph(const Graph& g, const std::vector<LibraryGroup>& groups,
                              const std::vector<std::unique_ptr<backend::cpu::LibraryKernel>>& kernels,
                              const std::map<std::string, Tensor>& inputs) {
  std::vector<int> at(g.nodes.size(), -1);
  std::vector<char> skip(g.nodes.size(), 0);
  for (size_t k = 0; k < groups.size(); ++k) {
    for (NodeId n : groups[k].nodes) skip[size_t(n)] = 1;
    at[size_t(groups[k].nodes.back())] = static_cast<int>(k);
  }
  std::vector<Tensor> slots(g.values.size());
  for (ValueId v : g.inputs) slots[size_t(v)] = inputs.at(g.value(v).name);
  auto get = [&](ValueId v) -> const Tensor* {
    if (v == kNoValue) return nullptr;
    return g.value(v).constant ? g.value(v).constant.get() : &slots[size_t(v)];
  };
  NodeRunOptions o;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (at[i] >= 0) {
      std::vector<const Tensor*> ins;
      for (ValueId v : groups[size_t(at[i])].inputs) ins.push_back(get(v));
      slots[size_t(groups[size_t(at[i])].output)] = kernels[size_t(at[i])]->run(ins, o.max_tensor_bytes);
      continue;
    }
    if (skip[i]) continue;
    const Node& n = g.nodes[i];
    std::vector<const Tensor*> ins;
    for (ValueId v : n.inputs) ins.push_back(get(v));
    std::vector<Tensor> outs = run_node(n, ins, o);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] != kNoValue) slots[size_t(n.outputs[k])] = std::move(outs[k]);
  }
  std::vector<Tensor> r;
  for (ValueId v : g.outputs) r.push_back(slots[size_t(v)]);
  return r;
}

void bench_model(const std::string& model, const std::map<std::string, int64_t>& dims, int reps) {
  std::filesystem::path path = std::filesystem::path(KILN_SOURCE_DIR) / "build/zoo" / model / (model + ".onnx");
  if (!std::filesystem::exists(path)) {
    std::printf("%s: %s is not there\n", model.c_str(), path.c_str());
    return;
  }
  Options o;
  Graph g = import_onnx(path.string(), o);
  prepare_graph(g, dims, o);
  auto groups = groups_of(g);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<backend::cpu::LibraryKernel>> kernels;
  size_t grouped = 0;
  std::map<std::string, int> labels;
  for (const auto& grp : groups) {
    kernels.push_back(backend::cpu::build_library_kernel(g, grp, o));
    grouped += grp.nodes.size();
    ++labels[grp.label];
  }
  double build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto inputs = make_inputs(g, {}, 4);
  std::vector<LibraryGroup> none;
  std::vector<std::unique_ptr<backend::cpu::LibraryKernel>> no_kernels;
  std::vector<Tensor> want = run_graph(g, none, no_kernels, inputs);
  std::vector<Tensor> got = run_graph(g, groups, kernels, inputs);
  for (size_t i = 0; i < want.size(); ++i) {
    CloseResult c = all_close(got[i], want[i], 1e-3, 1e-3);
    EXPECT_TRUE(c.ok) << model << " output " << i << ": " << c.reason;
  }
  auto [eager, fused] = paired_median_ms(
      reps, [&] { run_graph(g, none, no_kernels, inputs); }, [&] { run_graph(g, groups, kernels, inputs); });
  std::ostringstream kinds;
  for (const auto& [label, count] : labels) kinds << " " << label << " x" << count;
  std::printf("%s: %zu nodes; %zu library groups take %zu nodes -> %zu steps; build %.0f ms\n  groups:%s\n"
              "  node-by-node eager %.2f ms, with library groups %.2f ms (x%.2f), median of %d\n",
              model.c_str(), g.nodes.size(), groups.size(), grouped, g.nodes.size() - grouped + groups.size(), build_ms,
              kinds.str().c_str(), eager, fused, eager / fused, reps);
}

TEST(LibraryBench, ZooModels) {
  if (!bench_enabled()) GTEST_SKIP() << "set KILN_LIBRARY_BENCH=1";
  const char* which = std::getenv("KILN_LIBRARY_BENCH_MODELS");
  std::string models = which ? which : "resnet18";
  if (models.find("resnet18") != std::string::npos) bench_model("resnet18", {{"batch", 1}}, 20);
  if (models.find("vit") != std::string::npos) bench_model("vit", {{"batch", 1}}, 10);
  if (models.find("bert") != std::string::npos) bench_model("bert", {{"batch", 1}, {"seq", 128}}, 10);
}

}  // namespace
}  // namespace kiln::library_test
