// The kiln command end to end: exit codes, messages, --json, inputs and outputs on disk.
#include <fstream>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "common/processes.h"
#include "kiln/tensor_io.h"
#include <onnx/onnx.pb.h>

namespace {
namespace fs = std::filesystem;

using Result = kiln::test_common::CommandResult;

// Runs kiln with `args` (stderr folded into the output).
Result kiln(const std::string& args) { return kiln::test_common::run_command(std::string(KILN_BINARY) + " " + args + " 2>&1"); }

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kiln_cli_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(Cli, DefaultRunsTheBundledModel) {
  Result r = kiln("run");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("output logits: f32[1,32,1000]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latency: median"), std::string::npos) << r.out;
}

TEST(Cli, TimeChannelPrintsEveryPassAndThePrepare) {
  Result r = kiln("run --iters 1 --warmup 0 --dim seq=8 --set debug=time");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* stage : {"# time infer_shapes_fold: ", "# time fuse_pointwise: ", "# time plan: ", "# time prepare: "})
    EXPECT_NE(r.out.find(stage), std::string::npos) << stage << " in\n" << r.out;
  EXPECT_EQ(kiln("run --iters 1 --warmup 0 --dim seq=8").out.find("# time "), std::string::npos);  // off by default
}

TEST(Cli, JsonHasModeLatencyAndOutputs) {
  Result r = kiln("run --json --iters 3 --dim seq=8");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "compiled");  // the default
  EXPECT_GT(j["latency_ms"].get<double>(), 0.0);
  EXPECT_GT(j["ops"].get<int>(), 10);
  EXPECT_LT(j["kernels"].get<int>(), j["ops"].get<int>());
  EXPECT_GT(j["fused_kernels"].get<int>(), 0);
  EXPECT_GT(j["buffers"].get<int>(), 0);
  EXPECT_GT(j["bytes_moved"].get<int64_t>(), 0);
  ASSERT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0]["name"], "logits");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json({1, 8, 1000}));
  EXPECT_EQ(j["outputs"][0]["dtype"], "f32");
}

TEST(Cli, SavedInputsReproduceOutputs) {
  fs::path d = temp_dir("inputs");
  Result a = kiln("run --seed 7 --save-inputs " + (d / "in").string() + " --output-dir " + (d / "a").string());
  ASSERT_EQ(a.code, 0) << a.out;
  Result b = kiln("run --input input_ids=" + (d / "in" / "input_ids.npy").string() + " --output-dir " +
                  (d / "b").string() + " --mode reference");
  ASSERT_EQ(b.code, 0) << b.out;
  kiln::Tensor x = kiln::read_npy((d / "a" / "logits.npy").string());
  kiln::Tensor y = kiln::read_npy((d / "b" / "logits.npy").string());
  ASSERT_EQ(x.shape(), y.shape());
  EXPECT_EQ(y.dtype(), kiln::DType::f64);
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) worst = std::max(worst, std::abs(x.as_double(i) - y.as_double(i)));
  EXPECT_LT(worst, 1e-4);
  fs::remove_all(d);
}

TEST(Cli, UserErrorsExitOneWithAMessage) {
  for (const std::string& args : {std::string("run /nonexistent/model.onnx"), std::string("run --mode fast"),
                                  std::string("run --iters -1"), std::string("run --dim seq=-3"),
                                  std::string("run --input nope=/tmp/x.npy"), std::string("run --set nope=1")}) {
    Result r = kiln(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("kiln: error: "), std::string::npos) << args << "\n" << r.out;
  }
}

TEST(Cli, MissingDimIsExplained) {
  Result r = kiln("run " + std::string(KILN_SOURCE_DIR) + "/tests/data/zoo/resnet18.onnx");
  EXPECT_EQ(r.code, 1) << r.out;
  // resnet18's weights are not in the repository; either message is a clean user error
  EXPECT_NE(r.out.find("kiln: error: "), std::string::npos) << r.out;
}

TEST(Cli, CheckSummarisesCases) {
  fs::path d = temp_dir("check");
  Result r = kiln("check " + d.string());  // a folder without model.onnx
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("0 passed, 1 failed"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// An ONNX test case folder: y = OP(x) on f32[2], one data set whose expected output is x (what Relu
// gives for [1, 2]).
void write_case(const fs::path& dir, const std::string& op) {
  fs::create_directories(dir / "test_data_set_0");
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("case");
  auto* n = g->add_node();
  n->set_op_type(op);
  n->add_input("x");
  n->add_output("y");
  auto declare = [](::onnx::ValueInfoProto* vi, const char* name) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
  };
  declare(g->add_input(), "x");
  declare(g->add_output(), "y");
  std::ofstream((dir / "model.onnx").string(), std::ios::binary) << m.SerializeAsString();
  kiln::Tensor x = kiln::Tensor::from_vector<float>(kiln::DType::f32, {2}, {1, 2});
  kiln::write_tensor_pb((dir / "test_data_set_0" / "input_0.pb").string(), x, "x");
  kiln::write_tensor_pb((dir / "test_data_set_0" / "output_0.pb").string(), x, "y");
}

TEST(Cli, CheckSkipListNamesEverySkipAndReportsListedCasesThatRun) {
  fs::path d = temp_dir("skips");
  write_case(d / "test_relu", "Relu");
  write_case(d / "test_foo", "FooBar");
  std::string cases = (d / "test_relu").string() + " " + (d / "test_foo").string();
  auto list = [&](const std::string& text) {
    std::ofstream((d / "skips.txt").string()) << "# comment\n" << text;
    return " --skips " + (d / "skips.txt").string() + " ";
  };
  Result plain = kiln("check " + cases);
  EXPECT_EQ(plain.code, 0) << plain.out;
  EXPECT_NE(plain.out.find("1 passed, 0 failed, 1 skipped"), std::string::npos) << plain.out;

  Result listed = kiln("check" + list("test_foo  unsupported operator 'FooBar'\n") + cases);
  EXPECT_EQ(listed.code, 0) << listed.out;
  EXPECT_NE(listed.out.find("1 passed, 0 failed, 1 skipped"), std::string::npos) << listed.out;

  Result unlisted = kiln("check" + list("") + cases);
  EXPECT_EQ(unlisted.code, 1) << unlisted.out;
  EXPECT_NE(unlisted.out.find("FAIL test_foo: skipped but not in the skip list"), std::string::npos) << unlisted.out;

  Result other = kiln("check" + list("test_foo  element type UINT16\n") + cases);
  EXPECT_EQ(other.code, 1) << other.out;
  EXPECT_NE(other.out.find("skipped for another reason than the listed 'element type UINT16'"), std::string::npos)
      << other.out;

  Result rot = kiln("check" + list("test_foo  unsupported operator\ntest_relu  unsupported operator 'Relu'\n") + cases);
  EXPECT_EQ(rot.code, 1) << rot.out;
  EXPECT_NE(rot.out.find("FAIL test_relu: listed as skipped (unsupported operator 'Relu') but passes"), std::string::npos)
      << rot.out;
  fs::remove_all(d);
}

TEST(Cli, SettingsListsTheTable) {
  Result r = kiln("settings");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("max_tensor_bytes"), std::string::npos);
  EXPECT_NE(r.out.find("KILN_THREADS"), std::string::npos);
}

}  // namespace

namespace {

TEST(Cli, RunCompiledWithDumpDirWritesIrAndKernels) {
  fs::path d = temp_dir("dump");
  std::string env = "KILN_CACHE_DIR=" + (d / "cache").string() + " ";
  std::string cmd = std::string(KILN_BINARY) + " run --mode compiled --json --dim seq=8 --dump-dir " + (d / "dump").string();
  FILE* p = popen((env + cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["mode"], "compiled");
  EXPECT_GT(j["fused_kernels"].get<int>(), 0);
  EXPECT_LT(j["kernels"].get<int>(), j["ops"].get<int>());
  // Numbered from the compiler's pass list; the fused plan is IR like every other step.
  const char* dumps[] = {"00_import.ir",         "01_bind_dims.ir",     "02_infer_shapes_fold.ir",
                         "03_cast_like_as_cast.ir", "04_eliminate_common_subexpressions.ir", "05_decompose.ir",
                         "06_route_softmax.txt", "07_fuse_library.ir",  "08_fuse_rows.ir",     "09_fuse_pointwise.ir",
                         "10_plan.txt"};
  for (const char* name : dumps) EXPECT_TRUE(fs::exists(d / "dump" / name)) << name;
  std::ifstream fused(d / "dump" / "09_fuse_pointwise.ir");
  std::string fused_ir((std::istreambuf_iterator<char>(fused)), std::istreambuf_iterator<char>());
  EXPECT_NE(fused_ir.find("  group 0 = "), std::string::npos) << fused_ir;
  EXPECT_NE(fused_ir.find(" in 0\n"), std::string::npos) << fused_ir;
  int sources = 0, commands = 0;
  for (const auto& e : fs::directory_iterator(d / "dump" / "kernels")) {
    sources += e.path().extension() == ".cpp";
    commands += e.path().extension() == ".cmd";
  }
  EXPECT_GT(sources, 0);
  EXPECT_EQ(sources, commands);
  fs::remove_all(d);
}

}  // namespace
