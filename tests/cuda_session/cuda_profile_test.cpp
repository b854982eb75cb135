// Profiling on the CUDA backend (the GPU machine; skipped elsewhere with "SKIPPED: ..."): a profiled run
// times every step with events on the session's stream, never replays the captured graph, and gives the
// CPU's numbers; the runtime refuses to record an event while its stream is being captured.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_runtime.h"
#include "backend/cuda/device_probe.h"
#include "kiln/errors.h"
#include "kiln/session.h"
#include "runtime/compare.h"
#include "runtime/demo_model.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

class CudaProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
    if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
  }
  static Session demo(const std::string& device) {
    Options options;
    options.device = device;
    return Session::from_graph(demo_transformer(), Mode::compiled, options, {{"batch", 2}, {"seq", 33}});
  }
};

TEST_F(CudaProfile, EveryStepGetsADeviceTimeWithinTheRun) {
  Session gpu = demo("cuda");
  const std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, 1);
  gpu.run(inputs);  // first use: modules load, cuBLASLt plans are made
  for (int run = 0; run < 3; ++run) {
    RunProfile profile;
    gpu.run(inputs, &profile);
    SCOPED_TRACE("profiled run " + std::to_string(run));
    EXPECT_TRUE(profile.device_clock);
    ASSERT_FALSE(profile.steps.empty());
    double sum = 0, previous_end = 0;
    for (const StepProfile& s : profile.steps) {
      EXPECT_GE(s.ms, 0.0) << s.label;
      // One stream: a step starts after the one before it ended (events hold 0.5 us; floats round).
      EXPECT_GE(s.start_ms, previous_end - 1e-3) << s.label;
      previous_end = s.start_ms + s.ms;
      sum += s.ms;
    }
    EXPECT_GT(sum, 0.0) << "the kernels took some device time";
    EXPECT_LE(sum, profile.total_ms) << "steps lie inside the run's host wall time";
    EXPECT_LE(previous_end, profile.total_ms + 1e-3);
  }
}

TEST_F(CudaProfile, AProfiledRunLaunchesEveryKernelBesideTheCapturedGraph) {
  Session gpu = demo("cuda");
  Session cpu = demo("cpu");
  for (uint64_t seed = 1; seed <= 4; ++seed) {  // launch, capture, then profiled runs between replays
    const std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, seed);
    RunProfile profile;
    const bool profiled = seed >= 3;
    const std::map<std::string, Tensor> got = profiled ? gpu.run(inputs, &profile) : gpu.run(inputs);
    if (profiled) {
      EXPECT_FALSE(profile.steps.empty());
    }
    const std::map<std::string, Tensor> want = cpu.run(inputs);
    for (const auto& [name, w] : want) {
      const CloseResult r = all_close(got.at(name), w, 1e-4, 1e-5);
      EXPECT_TRUE(r.ok) << "run " << seed << " output " << name << ": " << r.reason;
    }
    const std::map<std::string, Tensor> replayed = gpu.run(inputs);  // the graph still replays after a profile
    for (const auto& [name, w] : want) EXPECT_TRUE(all_close(replayed.at(name), w, 1e-4, 1e-5).ok) << name;
  }
  EXPECT_EQ(gpu.stats().graph_captures, 1) << "profiled runs are not captured and do not disturb the graph";
}

TEST_F(CudaProfile, NoEventIsRecordedWhileTheStreamIsCaptured) {
  const backend::cuda::CudaRuntime rt(0, Options{});
  EXPECT_TRUE(rt.device_clock());
  rt.begin_capture();
  EXPECT_THROW(rt.mark(), InternalError);
  rt.abort_capture();
  const auto a = rt.mark();
  const auto b = rt.mark();
  rt.synchronize();
  const double ms = rt.elapsed_ms(*a, *b);
  EXPECT_GE(ms, 0.0);
  EXPECT_LT(ms, 1000.0);
}

}  // namespace
}  // namespace kiln
