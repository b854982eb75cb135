// Sessions on the CUDA backend, end to end (the GPU machine; skipped elsewhere with "SKIPPED: ..."): a
// model compiled for the GPU gives the CPU's numbers on every run, from the first (each kernel launched),
// through the second (captured into a CUDA graph) to the replays, whose inputs change between runs;
// device inputs give device outputs that no later run overwrites; runs from several threads take turns.
#include <gtest/gtest.h>

#include <thread>

#include "backend/cuda/device_probe.h"
#include "kiln/errors.h"
#include "kiln/session.h"
#include "runtime/compare.h"
#include "runtime/demo_model.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

class CudaSession : public ::testing::Test {
 protected:
  void SetUp() override {
    const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
    if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
  }
  static Session compiled(const std::string& device, bool graphs = true) {
    Options options;
    options.device = device;
    options.cuda_graphs = graphs;
    return Session::from_graph(demo_transformer(), Mode::compiled, options, {{"batch", 2}, {"seq", 33}});
  }
  static void expect_close(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want,
                           const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (const auto& [name, w] : want) {
      ASSERT_TRUE(got.count(name)) << what << ": no output " << name;
      const Tensor& g = got.at(name);
      ASSERT_TRUE(g.device().is_host()) << what;
      const CloseResult r = all_close(g, w, 1e-4, 1e-5);
      EXPECT_TRUE(r.ok) << what << " output " << name << ": " << r.reason << " (max abs err " << r.max_abs_err << ")";
    }
  }
};

TEST_F(CudaSession, EveryRunFollowsItsInputsThroughCaptureAndReplay) {
  for (bool graphs : {true, false}) {
    Session gpu = compiled("cuda", graphs);
    Session cpu = compiled("cpu");
    for (uint64_t seed = 1; seed <= 5; ++seed) {  // run 1 launches, run 2 captures, runs 3-5 replay
      const std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, seed);
      expect_close(gpu.run(inputs), cpu.run(inputs),
                   "run " + std::to_string(seed) + (graphs ? " (graphs)" : " (launches)"));
    }
    EXPECT_EQ(gpu.stats().graph_captures, graphs ? 1 : 0) << "one capture, then replays";
  }
}

TEST_F(CudaSession, DeviceInputsGiveDeviceOutputsThatLaterRunsLeaveAlone) {
  Session gpu = compiled("cuda");
  Session cpu = compiled("cpu");
  std::vector<std::map<std::string, Tensor>> inputs, outputs;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    inputs.push_back(make_inputs(gpu.graph(), {}, seed));
    outputs.push_back(gpu.run(gpu.to_device(inputs.back())));
    for (const auto& [name, t] : outputs.back()) EXPECT_FALSE(t.device().is_host()) << name << " came back to the host";
  }
  for (size_t i = 0; i < inputs.size(); ++i)  // read after every run: no output is a buffer a later run reused
    expect_close(gpu.to_host(outputs[i]), cpu.run(inputs[i]), "device run " + std::to_string(i + 1));
}

TEST_F(CudaSession, RunsFromManyThreadsTakeTurns) {
  Session gpu = compiled("cuda");
  Session cpu = compiled("cpu");
  std::vector<std::map<std::string, Tensor>> inputs, want, got(8);
  for (uint64_t seed = 1; seed <= got.size(); ++seed) {
    inputs.push_back(make_inputs(gpu.graph(), {}, seed));
    want.push_back(cpu.run(inputs.back()));
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = gpu.run(inputs[i]); });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], "thread " + std::to_string(i));
}

TEST_F(CudaSession, AnInputOfAnotherShapeIsAUserError) {
  Session gpu = compiled("cuda");
  std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, 1);
  gpu.run(inputs);
  gpu.run(inputs);  // captured
  std::map<std::string, Tensor> wrong = inputs;
  wrong.begin()->second = Tensor::empty(wrong.begin()->second.dtype(), {2, 34});
  EXPECT_THROW(gpu.run(wrong), UserError);
  expect_close(gpu.run(inputs), compiled("cpu").run(inputs), "after the refused run");
}

}  // namespace
}  // namespace kiln
