// `kiln profile` and `kiln bench` with --device cuda through the kiln binary: the argument errors
// everywhere, and on a machine without a usable GPU the clear error a user gets; with one, the reports
// themselves (device times, the graph replay beside them, PyTorch's times from a stand-in interpreter).
#include <gtest/gtest.h>

#include "bench/bench_cli.h"
#ifdef KILN_HAVE_CUDA
#include "backend/cuda/device_probe.h"
#endif

namespace {
using namespace bench_cli;

bool gpu_usable() {
#ifdef KILN_HAVE_CUDA
  return kiln::backend::cuda::probe_devices().usable;
#else
  return false;
#endif
}

class DeviceCli : public BenchCli {
 protected:
  // An executable stand-in for python3: `probe` is what it prints for the probe (python -c ...); run as
  // the peer script it records its arguments in args.txt and prints `lines`.
  std::string fake_python(const std::string& probe, const std::string& lines = "") {
    const std::string path = file("python3");
    std::ofstream(path) << "#!/bin/sh\n"
                        << "if [ \"$1\" = -c ]; then echo '" << probe << "'; exit 0; fi\n"
                        << "echo \"$@\" > " << file("args.txt") << "\n"
                        << "cat <<'EOF'\n" << lines << "EOF\n";
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }
  // A model kiln calls resnet18 (the tiny one under that name), which the PyTorch peer builds at batch 1.
  std::string resnet18() {
    fs::create_directories(dir_ / "resnet18");
    const std::string path = (dir_ / "resnet18" / "resnet18.onnx").string();
    fs::copy_file(model(), path, fs::copy_options::overwrite_existing);
    return path;
  }
  static void expect_no_gpu_error(const Result& r) {
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_TRUE(contains(r.out, "kiln: error: device cuda")) << r.out;
    EXPECT_FALSE(contains(r.out, "internal")) << r.out;
  }
};

TEST_F(DeviceCli, ProfileTimesTheDeviceOrSaysWhyItCannot) {
  Result r = kiln("profile " + model() + " --device cuda --dim batch=3 --iters 3 --trace " + file("trace.json") +
                  " --json " + file("profile.json") + " --html " + file("profile.html"));
  if (!gpu_usable()) return expect_no_gpu_error(r);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "per-kernel times are stream launches")) << r.out;
  EXPECT_TRUE(contains(r.out, "graph replay")) << r.out;
  const json prof = read_json(file("profile.json"));
  EXPECT_EQ(prof["device"], "cuda");
  EXPECT_EQ(prof["graph_captures"], 1);
  EXPECT_GT(prof["replay_e2e_ms"].get<double>(), 0.0);
  EXPECT_GT(prof["launch_e2e_ms"].get<double>(), 0.0);
  EXPECT_EQ(prof["replay_runs"], 3);
  ASSERT_GT(prof["steps"].get<int>(), 0);
  EXPECT_LE(prof["op_table"]["compiled_table_ms"].get<double>(), prof["launch_e2e_ms"].get<double>() + 1e-6);
  // The trace: every device step inside its run, at its device offset.
  const json trace = read_json(file("trace.json"));
  std::map<int, std::pair<double, double>> run_span;  // run -> [ts, end] of the profiled process (pid 1)
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["pid"] == 1 && e["cat"] == "run")
      run_span[e["args"]["run"].get<int>()] = {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
  ASSERT_EQ(run_span.size(), 3u);
  int steps = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 1 || e["cat"] == "run") continue;
    const auto [start, end] = run_span.at(e["args"]["run"].get<int>());
    EXPECT_GE(e["ts"].get<double>(), start - 1.0) << e.dump();
    EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), end + 1.0) << e.dump();
    ++steps;
  }
  EXPECT_EQ(steps, 3 * prof["steps"].get<int>());
  EXPECT_TRUE(contains(read_text(file("profile.html")), "stream launches"));
}

TEST_F(DeviceCli, ProfileOnADeviceHasNoEagerMode) {
  Result r = kiln("profile " + model() + " --device cuda --mode eager --dim batch=2");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "compiled mode only")) << r.out;
}

TEST_F(DeviceCli, BenchRunsOnTheDeviceOrSaysWhyItCannot) {
  Result r = kiln("bench " + model() + " --device cuda --dim batch=3 --iters 3 --warmup 2 --json " + file("b.json") +
                  " --html " + file("b.html"));
  if (!gpu_usable()) {
    expect_no_gpu_error(r);
    EXPECT_FALSE(contains(r.out, "[bench tiny]")) << "must refuse before running anything: " << r.out;
    return;
  }
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "| model | sizes | kiln cuda ms | torch eager ms")) << r.out;
  const json doc = read_json(file("b.json"));
  EXPECT_EQ(doc["device"], "cuda");
  const json& rec = doc["records"][0];
  EXPECT_GT(rec["compiled_ms"].get<double>(), 0.0);
  EXPECT_TRUE(rec["eager_ms"].is_null()) << "no eager side on a device";
  EXPECT_EQ(rec["times_ms"]["compiled"].size(), 3u);
  EXPECT_EQ(rec["accuracy"], "pass") << rec.dump(2);
  EXPECT_EQ(rec["accuracy_baseline"], "kiln eager on the CPU");
  EXPECT_EQ(rec["graph_captures"], 1);
  EXPECT_FALSE(rec["top_kernels"].empty());
  EXPECT_TRUE(contains(read_text(file("b.html")), "kiln on cuda"));
}

TEST_F(DeviceCli, PeersOnTheWrongSideAreUserErrors) {
  Result r = kiln("bench " + model() + " --peer torch");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "use it with --device cuda")) << r.out;
  r = kiln("bench " + model() + " --device cuda --peer ort");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "ONNX Runtime is a CPU peer")) << r.out;
}

TEST_F(DeviceCli, PeerTorchWithoutTorchIsAUserErrorBeforeAnyWork) {
  Result r = kiln("bench " + model() + " --device cuda --peer torch --python " + file("no/python3"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "not an executable")) << r.out;

  const std::string no_torch = fake_python(R"({"torch": null, "why": "ModuleNotFoundError: No module named torch"})");
  r = kiln("bench " + model() + " --device cuda --peer torch --python " + no_torch);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "PyTorch is not installed")) << r.out;
  EXPECT_TRUE(contains(r.out, "pip install torch")) << r.out;
  EXPECT_FALSE(contains(r.out, "[bench tiny]")) << "must refuse before running anything: " << r.out;

  const std::string cpu_torch = fake_python(R"({"torch": "2.0.0+cpu", "cuda": false, "transformers": "4.0"})");
  r = kiln("bench " + model() + " --device cuda --peer torch --python " + cpu_torch);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "sees no GPU")) << r.out;
}

TEST_F(DeviceCli, PeerTorchWithThisMachinesPython) {
  if (system("python3 -c 'import torch' >/dev/null 2>&1") == 0)
    GTEST_SKIP() << "SKIPPED: python3 here has torch (PeerTorchTimesSitBesideKilns covers it on a GPU)";
  if (system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "SKIPPED: no python3 on PATH";
  Result r = kiln("bench " + model() + " --device cuda --peer torch");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "--peer torch: PyTorch is not installed")) << r.out;
}

TEST_F(DeviceCli, PeerTorchTimesSitBesideKilns) {
  if (!gpu_usable()) GTEST_SKIP() << "SKIPPED: no usable GPU (the torch plumbing is tested in torch_peer_test.cpp)";
  const std::string python = fake_python(
      R"({"torch": "9.9.9-fake", "cuda": true, "gpu": "Fake GPU", "transformers": "0"})",
      R"({"model": "resnet18", "dtype": "fp32", "mode": "eager", "median_ms": 2.5, "min_ms": 2.0, "compile_s": null}
{"model": "resnet18", "dtype": "fp32", "mode": "default", "median_ms": 1.5, "min_ms": 1.0, "compile_s": 3.0}
{"model": "resnet18", "dtype": "fp32", "mode": "reduce-overhead", "median_ms": null, "error": "RuntimeError: fake"}
model        dtype     eager
)");
  Result r = kiln("bench " + resnet18() + " " + model() + " --device cuda --dim batch=1 --iters 2 --warmup 2 "
                  "--peer torch --python " + python + " --json " + file("t.json") + " --html " + file("t.html"));
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string args = read_text(file("args.txt"));
  EXPECT_TRUE(contains(args, "--models resnet18 ")) << args;
  EXPECT_TRUE(contains(args, "--dtypes fp32 --modes eager,default,reduce-overhead --iters 2 --warmup 2")) << args;
  const json doc = read_json(file("t.json"));
  EXPECT_TRUE(contains(doc["peer"].get<std::string>(), "PyTorch 9.9.9-fake on Fake GPU")) << doc["peer"];
  ASSERT_EQ(doc["records"].size(), 2u);
  const json& res = doc["records"][0];
  EXPECT_EQ(res["torch_best_mode"], "default") << res.dump(2);
  EXPECT_NEAR(res["torch_vs_kiln"].get<double>(), 1.5 / res["compiled_ms"].get<double>(), 1e-9);
  EXPECT_TRUE(res["torch"]["reduce-overhead"]["error"].is_string());
  EXPECT_TRUE(contains(doc["records"][1]["torch_error"].get<std::string>(), "no PyTorch model 'tiny'"));
  EXPECT_TRUE(contains(r.out, "best torch / kiln")) << r.out;
  EXPECT_TRUE(contains(read_text(file("t.html")), "Best PyTorch mode / kiln"));
}

}  // namespace
