// `kiln profile` with --device cuda through the kiln binary: the argument errors everywhere, and on a
// machine without a usable GPU the clear error a user gets; with one, the report itself (device times,
// the graph replay beside them).
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

}  // namespace
