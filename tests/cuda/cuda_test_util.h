// What the CUDA tests share: the fixtures that skip (never pass silently) where NVRTC or a usable GPU
// is missing, and the kernels they compile.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "backend/cuda/device_probe.h"
#include "backend/cuda/nvrtc.h"

namespace kiln::backend::cuda::testing {

// y = a * x + b over n elements, one thread each; n is a 64-bit count so that sizes past 2^31 index right.
inline constexpr const char* kAxpbSource = R"(
extern "C" __global__ void axpb(float a, const float* x, const float* b, float* y, long long n) {
  long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b[i];
}
)";

// The kernels (extern "C" __global__ functions) in a CUDA source that call kiln_grid_prologue() as their
// first statement, which a launch with LaunchConfig::waits_for_prior_grids relies on; each one that does
// not is a test failure naming it and `what`.
inline int kernels_starting_with_the_prologue(std::string_view code, std::string_view what) {
  constexpr std::string_view kKernel = "extern \"C\" __global__", kPrologue = "kiln_grid_prologue();";
  int good = 0;
  for (size_t at = code.find(kKernel); at != std::string_view::npos; at = code.find(kKernel, at + 1)) {
    size_t body = code.find('{', at);
    if (body == std::string_view::npos) break;
    body = code.find_first_not_of(" \t\n\\", body + 1);  // macro bodies continue lines with '\'
    const std::string_view head = code.substr(at, code.find('(', at) - at);
    if (body != std::string_view::npos && code.substr(body, kPrologue.size()) == kPrologue)
      ++good;
    else
      ADD_FAILURE() << what << ": kernel '" << head << "' does not start with " << kPrologue;
  }
  return good;
}

class NvrtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!nvrtc_available(&why)) GTEST_SKIP() << "SKIPPED: NVRTC is not available here: " << why;
  }
};

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    probe_ = probe_devices();
    if (!probe_.usable) GTEST_SKIP() << "SKIPPED: no usable GPU: " << probe_.reason;
  }
  DeviceProbe probe_;
};

}  // namespace kiln::backend::cuda::testing
