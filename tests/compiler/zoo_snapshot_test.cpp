// Replay of the code the zoo compiles to (tinygrad's process replay): for each zoo model, the fused IR,
// the plan, every generated kernel's C++ and kiln's GEMM template source of every tuned group are kept
// under tests/data/snapshots/<model>/; a change to any of them fails here with the file and the first
// differing line. A change that is meant: run scripts/update_snapshots.sh and explain the diff in the
// commit. The compile runs the CPU backend's plan (its fusions, routes and GEMM rule) without compiling
// or tuning anything: the kernels are interpreted, never run here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/library_kernel.h"
#include "common/interpreter_backend.h"
#include "common/zoo_models.h"
#include "compiler/compile.h"
#include "ir/printer.h"
#include "onnx/import.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using Files = std::map<std::string, std::string>;  // path under the model's folder -> content

// The CPU backend's plan, with the sources it would compile recorded instead of compiled.
class SnapshotBackend final : public backend::Backend {
 public:
  explicit SnapshotBackend(Files& files) : files_(files) {}
  std::string name() const override { return "snapshot"; }
  std::string device_key(const Options& o) const override { return cpu_.device_key(o); }
  backend::Fusions fusions(const Options& o) const override { return cpu_.fusions(o); }
  schedule::RoutingThresholds routing_thresholds(const Options&) const override {
    return schedule::default_routing_thresholds();  // a machine's calibration must not change the snapshot
  }
  bool tunes_gemm(const Graph& g, const schedule::LibraryGroup& grp, const Options& o) const override {
    return cpu_.tunes_gemm(g, grp, o);
  }
  std::unique_ptr<backend::BackendCompile> start_compile(const Options&) const override {
    return std::make_unique<Compile>(files_, counts_);
  }
  const backend::DeviceRuntime& runtime() const override { return cpu_.runtime(); }

 private:
  class Named final : public backend::Kernel {
   public:
    Named(std::unique_ptr<backend::Kernel> k, std::string name) : k_(std::move(k)), name_(std::move(name)) {}
    std::vector<Tensor> launch(const backend::LaunchArgs& a) const override { return k_->launch(a); }
    std::string name() const override { return name_; }

   private:
    std::unique_ptr<backend::Kernel> k_;
    std::string name_;
  };

  class Compile final : public backend::BackendCompile {
   public:
    Compile(Files& files, testing_backend::InterpreterCounts& counts) : files_(files), counts_(counts) {}
    std::unique_ptr<backend::Kernel> library_kernel(const Graph& g, const schedule::LibraryGroup& grp) override {
      if (auto src = backend::cpu::gemm_template_source(g, grp, codegen::cpu::CpuFeatures::avx512_tier())) {
        std::string name = "gemm/" + src->name + ".cpp";
        for (int k = 2; files_.count(name) && files_[name] != src->code; ++k)  // same sizes, other epilogue
          name = fmt::format("gemm/{}_{}.cpp", src->name, k);
        files_[name] = src->code;
      }
      return std::make_unique<testing_backend::GroupInterpreter>(g, grp.nodes, grp.inputs, grp.output, counts_);
    }
    std::vector<std::unique_ptr<backend::Kernel>> generated_kernels(
        const Graph& g, const std::vector<backend::GeneratedGroup>& groups) override {
      std::vector<std::unique_ptr<backend::Kernel>> kernels;
      for (const backend::GeneratedGroup& grp : groups) {
        codegen::cpu::PointwiseSource src = backend::cpu::emit_generated(grp);
        files_["kernels/" + src.source.name + ".cpp"] = src.source.code;
        kernels.push_back(std::make_unique<Named>(
            std::make_unique<testing_backend::GroupInterpreter>(g, grp.nodes, grp.inputs, grp.output, counts_),
            src.source.name));
      }
      return kernels;
    }
    std::unique_ptr<backend::Kernel> node_kernel(const Graph&, const Node&) override { return nullptr; }
    backend::TuningStats finish() override { return {}; }

   private:
    Files& files_;
    testing_backend::InterpreterCounts& counts_;
  };

  backend::cpu::CpuBackend cpu_;
  Files& files_;
  mutable testing_backend::InterpreterCounts counts_;
};

Files snapshot_of(const fs::path& model, const std::map<std::string, int64_t>& dims) {
  Files files;
  SnapshotBackend backend(files);
  Options options;
  options.threads = 2;
  compiler::Executable exe = compiler::compile(import_onnx(model.string(), options), backend, options, Mode::compiled, dims);
  files["fused.ir"] = print_graph(exe.graph);
  files["plan.txt"] = compiler::plan_text(exe.graph, exe.steps, exe.memory);
  return files;
}

Files read_folder(const fs::path& dir) {
  Files files;
  if (!fs::exists(dir)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    files[fs::relative(e.path(), dir).string()] = text.str();
  }
  return files;
}

std::string first_difference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "same lines";
    if (la != lb || more_a != more_b)
      return fmt::format("line {}:\n  kept: {}\n  now:  {}", line, more_a ? la : "<end>", more_b ? lb : "<end>");
  }
}

class ZooSnapshot : public ::testing::TestWithParam<test_common::ZooModel> {};

TEST_P(ZooSnapshot, GeneratedCodeAndPlanAreUnchanged) {
  std::string why;
  const fs::path model = test_common::zoo_model(GetParam().name, why);
  if (model.empty()) {
    if (why.rfind("SKIPPED", 0) == 0) GTEST_SKIP() << why;
    FAIL() << why;
  }
  const Files got = snapshot_of(model, GetParam().dims);
  const fs::path kept_dir = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "snapshots" / GetParam().name;
  if (const char* update = std::getenv("KILN_UPDATE_SNAPSHOTS"); update && std::string(update) == "1") {
    fs::remove_all(kept_dir);
    for (const auto& [name, text] : got) {
      fs::create_directories((kept_dir / name).parent_path());
      std::ofstream(kept_dir / name, std::ios::binary) << text;
    }
    GTEST_SKIP() << "SKIPPED: KILN_UPDATE_SNAPSHOTS=1 wrote " << got.size() << " files to " << kept_dir;
  }
  const Files kept = read_folder(kept_dir);
  ASSERT_FALSE(kept.empty()) << "no snapshot in " << kept_dir << " (scripts/update_snapshots.sh makes it)";
  EXPECT_GT(got.count("fused.ir") + got.count("plan.txt"), 1u);
  for (const auto& [name, text] : kept) {
    auto it = got.find(name);
    if (it == got.end()) ADD_FAILURE() << GetParam().name << ": " << name << " is no longer generated";
    else if (it->second != text) ADD_FAILURE() << GetParam().name << ": " << name << " changed at " << first_difference(text, it->second);
  }
  for (const auto& [name, text] : got)
    if (!kept.count(name)) ADD_FAILURE() << GetParam().name << ": " << name << " is new (" << text.size() << " bytes)";
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooSnapshot, ::testing::ValuesIn(test_common::zoo_models()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kiln
