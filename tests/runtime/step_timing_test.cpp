// The timing seam (DeviceRuntime::mark / elapsed_ms) on the host, and how the executor times a profiled
// run with it: a mark just before and after every step's launch and one wait at the end, never a wait
// per step (a device's launches queue up as in an untimed run). The CUDA runtime's events are checked
// on the GPU machine (tests/cuda_session).
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "backend/cpu/cpu_backend.h"
#include "compiler/compile.h"
#include "kiln/errors.h"
#include "kiln/session.h"
#include "runtime/demo_model.h"
#include "runtime/executor.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

using backend::DeviceRuntime;

TEST(TimingSeam, HostMarksReadTheHostClock) {
  const backend::cpu::CpuBackend cpu;
  const DeviceRuntime& rt = cpu.runtime();
  EXPECT_FALSE(rt.device_clock());
  const auto a = rt.mark();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto b = rt.mark();
  rt.synchronize();
  EXPECT_GE(rt.elapsed_ms(*a, *b), 20.0);  // sleep_for waits at least that long
  EXPECT_LT(rt.elapsed_ms(*a, *b), 5000.0);
  EXPECT_EQ(rt.elapsed_ms(*a, *a), 0.0);
  EXPECT_DOUBLE_EQ(rt.elapsed_ms(*b, *a), -rt.elapsed_ms(*a, *b));  // signed: from, then to
}

TEST(TimingSeam, AMarkOfAnotherRuntimeIsAnInternalError) {
  struct ForeignMark final : DeviceRuntime::Mark {};
  const backend::cpu::CpuBackend cpu;
  const auto mine = cpu.runtime().mark();
  const ForeignMark foreign;
  EXPECT_THROW(cpu.runtime().elapsed_ms(*mine, foreign), InternalError);
  EXPECT_THROW(cpu.runtime().elapsed_ms(foreign, *mine), InternalError);
}

// A stand-in for a device: host memory and the host clock, but it logs every mark and every wait, and
// says its marks are a device clock.
class LoggingRuntime final : public DeviceRuntime {
 public:
  std::shared_ptr<void> allocate(int64_t bytes) const override { return inner_.allocate(bytes); }
  void synchronize() const override { log('s'); }
  std::unique_ptr<Mark> mark() const override {
    log('m');
    return DeviceRuntime::mark();
  }
  bool device_clock() const override { return true; }
  std::string events() const {
    std::lock_guard lock(mutex_);
    return log_;
  }

 private:
  void log(char c) const {
    std::lock_guard lock(mutex_);
    log_ += c;
  }
  backend::cpu::CpuBackend host_;
  const DeviceRuntime& inner_ = host_.runtime();
  mutable std::mutex mutex_;
  mutable std::string log_;
};

// The CPU backend with the logging runtime in place of its own.
class LoggingBackend final : public backend::Backend {
 public:
  std::string name() const override { return "logging-cpu"; }
  std::string device_key(const Options& o) const override { return cpu_.device_key(o); }
  backend::Fusions fusions(const Options& o) const override { return cpu_.fusions(o); }
  schedule::RoutingThresholds routing_thresholds(const Options& o) const override { return cpu_.routing_thresholds(o); }
  bool tunes_gemm(const Graph& g, const schedule::LibraryGroup& group, const Options& o) const override {
    return cpu_.tunes_gemm(g, group, o);
  }
  std::unique_ptr<backend::BackendCompile> start_compile(const Options& o) const override {
    return cpu_.start_compile(o);
  }
  const DeviceRuntime& runtime() const override { return runtime_; }
  const LoggingRuntime& logging_runtime() const { return runtime_; }

 private:
  backend::cpu::CpuBackend cpu_;
  LoggingRuntime runtime_;
};

TEST(StepTiming, AProfiledRunMarksEveryStepAndWaitsOnlyAtTheEnd) {
  Options options;
  options.threads = 2;
  const LoggingBackend backend;
  // Eager: one step per node, nothing to compile.
  const compiler::Executable exe =
      compiler::compile(demo_transformer(), backend, options, Mode::eager, {{"batch", 1}, {"seq", 8}});
  ASSERT_GT(exe.steps.size(), 10u);
  runtime::ArenaPool arenas;
  RunProfile profile;
  runtime::execute(exe, arenas, make_inputs(exe.graph, {}, 1), options, &profile);

  const std::string events = backend.logging_runtime().events();
  const size_t first_wait = events.find('s');
  ASSERT_NE(first_wait, std::string::npos) << "the marks are read after a wait";
  EXPECT_EQ(first_wait, 2 * exe.steps.size()) << "two marks per step, all before the first wait: " << events;
  EXPECT_EQ(events.find('m', first_wait), std::string::npos) << "no mark after the wait: " << events;

  ASSERT_EQ(profile.steps.size(), exe.steps.size());
  EXPECT_TRUE(profile.device_clock) << "the runtime's clock is passed on";
  double sum = 0, previous_end = 0;
  for (const StepProfile& s : profile.steps) {
    EXPECT_GE(s.ms, 0.0) << s.label;
    EXPECT_GE(s.start_ms, previous_end) << s.label << " starts before the step before it ended";
    previous_end = s.start_ms + s.ms;
    sum += s.ms;
  }
  EXPECT_EQ(profile.steps.front().start_ms, 0.0);
  EXPECT_LE(sum, profile.total_ms);
}

TEST(StepTiming, AnUnprofiledRunMarksNothing) {
  Options options;
  options.threads = 1;
  const LoggingBackend backend;
  const compiler::Executable exe =
      compiler::compile(demo_transformer(), backend, options, Mode::eager, {{"batch", 1}, {"seq", 4}});
  runtime::ArenaPool arenas;
  runtime::execute(exe, arenas, make_inputs(exe.graph, {}, 1), options, nullptr);
  EXPECT_EQ(backend.logging_runtime().events(), "s") << "one wait for the run's faults, no marks";
}

TEST(StepTiming, CpuSessionProfileUsesTheHostClock) {
  Options options;
  options.threads = 2;
  Session s = Session::from_graph(demo_transformer(), Mode::eager, options, {{"batch", 1}, {"seq", 8}});
  RunProfile profile;
  s.run(make_inputs(s.graph(), {}, 1), &profile);
  EXPECT_FALSE(profile.device_clock);
  ASSERT_FALSE(profile.steps.empty());
  double sum = 0;
  for (const StepProfile& step : profile.steps) {
    EXPECT_GE(step.ms, 0.0);
    sum += step.ms;
  }
  EXPECT_GT(sum, 0.0);
  EXPECT_LE(sum, profile.total_ms);
}

}  // namespace
}  // namespace kiln
