// Pad on the CUDA backend (cuda_nodes.cpp's PadKernel: one padded axis, constant pads and value) against
// the CPU's eager kernel, bit for bit: before, after and both sides, the default zero, -inf, NaN inputs,
// a size-1 axis, f32 and f16; and the shapes it refuses, clearly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "backend/cuda/device_probe.h"
#include "ir/parser.h"
#include "kiln/errors.h"
#include "kiln/session.h"
#include "runtime/inputs.h"

namespace kiln {
namespace {

class CudaPad : public ::testing::Test {
 protected:
  void SetUp() override {
    const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
    if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
  }
  static Session on(const std::string& device, const std::string& text) {
    Options o;
    o.device = device;
    return Session::from_graph(parse_graph(text), Mode::compiled, o);
  }
};

std::string graph(const std::string& type, const std::string& pads, const std::string& value,
                  const std::string& axes = "") {
  auto count = [](const std::string& list) { return std::to_string(std::count(list.begin(), list.end(), ',') + 1); };
  return "graph g(%x: " + type + ") -> (%y) {\n  const %p: i64[" + count(pads) + "] = [" + pads + "]\n" +
         (value.empty() ? "" : "  const %v: " + value + "\n") +
         (axes.empty() ? "" : "  const %a: i64[" + count(axes) + "] = [" + axes + "]\n") + "  %y = Pad(%x, %p, " +
         (value.empty() ? "_" : "%v") + (axes.empty() ? "" : ", %a") + ")\n}\n";
}

TEST_F(CudaPad, MatchesTheCpuBitForBit) {
  struct Case {
    std::string type, pads, value, axes;
  };
  const Case cases[] = {
      {"f32[2,3,5]", "0, 0, 1, 0, 0, 2", "f32[] = [-inf]", ""},  // an attention mask's keys
      {"f32[2,3,5]", "0, 2, 0, 0, 0, 0", "", ""},                // before only, zeros
      {"f32[2,3,5]", "0, 0, 0, 1, 0, 0", "f32[] = [7.5]", ""},   // after only, the outer axis
      {"f32[1,1]", "0, 3, 0, 3", "f32[] = [nan]", ""},           // size-1 dims
      {"f16[4,6]", "0, 1, 0, 1", "f16[] = [-2]", ""},
      {"f32[2,3,5]", "1, 3", "f32[] = [-inf]", "-1"},  // pads of the listed axes only (Pad-18)
  };
  for (const Case& c : cases) {
    const std::string text = graph(c.type, c.pads, c.value, c.axes);
    Session gpu = on("cuda", text), cpu = on("cpu", text);
    for (uint64_t seed : {1, 2, 3}) {  // launch, capture, replay
      std::map<std::string, Tensor> in = make_inputs(cpu.graph(), {}, seed);
      if (in.at("x").dtype() == DType::f32 && in.at("x").numel() > 1)
        in.at("x").data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
      const Tensor want = cpu.run(in).at("y"), got = gpu.run(in).at("y");
      ASSERT_EQ(got.shape(), want.shape()) << text;
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << text << " seed " << seed;
    }
  }
}

TEST_F(CudaPad, TwoPaddedAxesAndCroppingAreRefusedClearly) {
  for (const std::string& pads : {std::string("1, 1, 0, 0"), std::string("0, -1, 0, 0")}) {
    try {
      on("cuda", graph("f32[3,4]", pads, ""));
      ADD_FAILURE() << "accepted pads " << pads;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("the CUDA backend"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kiln
