// Conv on the CUDA backend (cuda_conv.cpp: im2col and a cuBLASLt product) against the CPU, where the
// columns are padded for cuBLASLt's alignment: a stem of 3 x 7 x 7 = 147 rows, outputs of 8x8, 14x14 and
// 7x7 pixels (196 and 49 are no multiple of 16 bytes in bf16, 49 not in fp32), a 1x1 conv that would
// read x directly; with a bias, a residual and Relu (the group's epilogue) or none (the epilogue only
// drops the padding); a NaN in the input; fp32 and bf16; launched, captured and replayed runs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <limits>

#include "backend/cuda/device_probe.h"
#include "gpu_checks.h"
#include "ir/parser.h"
#include "kiln/session.h"

namespace kiln {
namespace {

using gpu_checks::expect_matches_cpu;
using gpu_checks::with_constant_weights;

class CudaConv : public ::testing::Test {
 protected:
  void SetUp() override {
    const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
    if (!probe.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe.reason;
  }
};

struct ConvCase {
  const char* what;
  std::string text;
  int64_t fan_in;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"stem 7x7 stride 2 over 3 channels (147 rows), bias, Relu",
       R"(graph g(%x: f32[1,3,15,15], %w: f32[8,3,7,7], %b: f32[8]) -> (%y) {
  %c = Conv(%x, %w, %b) {kernel_shape=[7, 7], pads=[3, 3, 3, 3], strides=[2, 2]}
  %y = Relu(%c)
}
)",
       147},
      {"14x14 (196 pixels), bias, residual, Relu, batch 2",
       R"(graph g(%x: f32[2,16,14,14], %w: f32[16,16,3,3], %b: f32[16]) -> (%y) {
  %c = Conv(%x, %w, %b) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
  %s = Add(%c, %x)
  %y = Relu(%s)
}
)",
       144},
      {"7x7 (49 pixels), no bias, no epilogue",
       R"(graph g(%x: f32[1,8,7,7], %w: f32[12,8,3,3]) -> (%y) {
  %y = Conv(%x, %w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}
}
)",
       72},
      {"1x1 on 7x7, stride 1 (a direct product unpadded)",
       R"(graph g(%x: f32[2,8,7,7], %w: f32[4,8,1,1], %b: f32[4]) -> (%y) {
  %y = Conv(%x, %w, %b) {kernel_shape=[1, 1]}
}
)",
       8},
      {"stride 2 down to 7x7 from 14x14, 1x1 and 3x3 side by side",
       R"(graph g(%x: f32[1,8,14,14], %w: f32[16,8,3,3], %w2: f32[16,8,1,1]) -> (%y, %z) {
  %y = Conv(%x, %w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]}
  %z = Conv(%x, %w2) {kernel_shape=[1, 1], strides=[2, 2]}
}
)",
       72},
  };
}

TEST_F(CudaConv, PaddedColumnsMatchTheCpu) {
  for (const ConvCase& c : conv_cases())
    for (const char* precision : {"fp32", "bf16"}) {
      const Graph g = with_constant_weights(parse_graph(c.text), c.fan_in);
      Options options;
      options.device = "cuda";
      options.precision = precision;
      Session gpu = Session::from_graph(g, Mode::compiled, options, {});
      Session cpu = Session::from_graph(g, Mode::compiled, Options{}, {});
      for (uint64_t seed = 1; seed <= 3; ++seed) {  // launched, captured, replayed
        std::map<std::string, Tensor> inputs = make_inputs(gpu.graph(), {}, seed);
        inputs.at("x").data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
        const std::map<std::string, Tensor> got = gpu.run(inputs), want = cpu.run(inputs);
        for (const auto& [name, t] : want)
          expect_matches_cpu(got.at(name), t, precision, fmt::format("{}, {}, seed {}, {}", c.what, precision, seed, name));
      }
    }
}

}  // namespace
}  // namespace kiln
