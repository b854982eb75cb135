// The zoo through the same compiler on a second backend (tests/common/interpreter_backend.h: the fp64
// reference as a backend, its kernels interpreting their groups): every fusion pass runs with no change
// to schedule/, and the outputs match kiln's reference mode. The weights come from the manifest
// (scripts/make_zoo_weights.py, which needs python3-numpy).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "common/interpreter_backend.h"
#include "common/zoo_models.h"
#include "compiler/compile.h"
#include "onnx/import.h"
#include "runtime/compare.h"
#include "runtime/executor.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

using test_common::ZooModel;

class SecondBackendZoo : public ::testing::TestWithParam<ZooModel> {};

TEST_P(SecondBackendZoo, RunsThroughTheSameCompilerAndMatchesTheReference) {
  const ZooModel& c = GetParam();
  std::string why;
  const std::filesystem::path path = test_common::zoo_model(c.name, why);
  if (path.empty()) {
    if (why.rfind("SKIPPED", 0) == 0) GTEST_SKIP() << why;
    FAIL() << why;
  }
  Options options;
  options.threads = 2;
  testing_backend::InterpreterBackend backend;
  compiler::Executable exe =
      compiler::compile(import_onnx(path.string(), options), backend, options, Mode::compiled, c.dims);

  // The fusion passes ran on this backend: its groups are in the IR and became its kernels.
  testing_backend::InterpreterCounts& counts = backend.counts();
  const int groups = counts.library_groups + counts.generated_groups;
  EXPECT_EQ(static_cast<int>(exe.graph.groups.size()), groups);
  EXPECT_GT(counts.library_groups, 0);
  if (c.has_rows) {
    bool any_row = false;
    for (const FusionGroup& grp : exe.graph.groups) any_row = any_row || grp.kind == "row";
    EXPECT_TRUE(any_row);
  }
  if (c.has_generated) {
    EXPECT_GT(counts.generated_groups, 0);
  }
  int grouped_nodes = 0;
  for (const Node& n : exe.graph.nodes) grouped_nodes += n.group >= 0;
  EXPECT_EQ(grouped_nodes + counts.nodes, static_cast<int>(exe.graph.nodes.size()));

  std::map<std::string, Tensor> inputs = make_inputs(exe.graph, {}, 1);
  runtime::ArenaPool arenas;
  std::map<std::string, Tensor> got = runtime::execute(exe, arenas, inputs, options, nullptr);
  EXPECT_EQ(counts.group_launches, groups);

  Session reference = Session::load_onnx(path.string(), Mode::reference, options, c.dims);
  std::map<std::string, Tensor> want = reference.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    // Each group rounds its output to f32, where the reference stays in f64 throughout.
    CloseResult r = all_close(got.at(name), w, 1e-3, 1e-3, /*allow_widen=*/true);
    EXPECT_TRUE(r.ok) << c.name << " output " << name << ": " << r.reason << " (max abs err " << r.max_abs_err << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, SecondBackendZoo, ::testing::ValuesIn(test_common::zoo_models()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kiln
