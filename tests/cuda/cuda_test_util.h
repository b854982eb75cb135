// What the CUDA tests share: the fixtures that skip (never pass silently) where NVRTC or a usable GPU
// is missing, and the kernels they compile.
#pragma once
#include <gtest/gtest.h>

#include <string>

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
