// The driver layer. The loader and the probe's answer run everywhere; the rest needs a usable GPU and
// skips with "SKIPPED: <why>" without one.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <random>

#include "backend/cuda/cuda_driver.h"
#include "cuda_test_util.h"
#include "kiln/errors.h"

namespace kiln::backend::cuda::testing {
namespace {

TEST(DriverLoader, AMissingDriverIsAUserErrorNamingTheLibrary) {
  try {
    load_driver("libkiln-no-such-cuda.so.1");
    FAIL() << "loaded a driver that does not exist";
  } catch (const UserError& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("device cuda: no CUDA driver on this machine (libkiln-no-such-cuda.so.1: ", 0), 0u)
        << message;
  }
}

// A driver library that loads but does not work: the toolkit's stub, which answers every call with
// CUDA_ERROR_STUB_LIBRARY (what a loader path reaching stubs/ gives). Loaded in a child process: its
// soname is libcuda.so.1, so in this process every later dlopen("libcuda.so.1") would find the stub.
TEST(DriverLoader, TheToolkitsStubIsNoDriver) {
  std::string stub = toolkit_root() + "/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "SKIPPED: the toolkit has no stub driver at " << stub;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        try {
          load_driver(stub);
        } catch (const UserError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(0);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(0),
      "device cuda: no CUDA driver on this machine \\(.*stubs/libcuda\\.so is the CUDA toolkit's stub library, "
      "for linking only\\)");
}

TEST(DeviceProbe, SaysWhetherAGpuIsUsableAndIfNotWhy) {
  DeviceProbe probe = probe_devices();
  std::cout << "probe: " << probe.summary() << "\n";
  if (probe.usable) {
    EXPECT_TRUE(probe.reason.empty()) << probe.reason;
    ASSERT_GE(probe.device, 0);
    ASSERT_LT(probe.device, static_cast<int>(probe.devices.size()));
    EXPECT_GE(probe.driver_version, kMinimumDriverVersion);
    EXPECT_FALSE(probe.nvrtc.empty());
  } else {
    EXPECT_EQ(probe.reason.rfind("device cuda: ", 0), 0u) << probe.reason;
    EXPECT_EQ(probe.summary(), probe.reason);
    EXPECT_THROW(usable_device(), UserError);
    // The driver's failure is kept: each call says the same thing.
    if (probe.driver_version == 0) {
      std::string first, second;
      try { driver(); } catch (const UserError& e) { first = e.what(); }
      try { driver(); } catch (const UserError& e) { second = e.what(); }
      EXPECT_FALSE(first.empty());
      EXPECT_EQ(first, second);
    }
  }
}

TEST_F(GpuTest, TheProbeFindsTheDeviceAndItsArchitecture) {
  const DeviceInfo& info = probe_.devices.at(static_cast<size_t>(probe_.device));
  std::cout << "device " << info.summary() << "; CUDA driver " << cuda_version_text(probe_.driver_version) << "\n";
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GT(info.total_memory, int64_t{1} << 30);
  EXPECT_TRUE(info.memory_pools);
  if (info.name.find("H200") != std::string::npos || info.name.find("H100") != std::string::npos) {
    EXPECT_EQ(info.arch(), "sm_90");
  }
  EXPECT_THROW(Device(static_cast<int>(probe_.devices.size())), UserError);
}

// The fp64 reference of one element, and how far an f32 result may be from it: a fused multiply-add
// rounds once, a separate multiply and add twice (each half an ulp of |a x| + |b| at most), and a
// subnormal result is exact to its spacing, 2^-149 (flushing it to zero would fail).
void expect_axpb_matches(float a, std::span<const float> x, std::span<const float> b, std::span<const float> y) {
  int mismatches = 0;
  for (size_t i = 0; i < y.size() && mismatches < 10; ++i) {
    double product = static_cast<double>(a) * x[i];
    double reference = product + b[i];
    double tolerance = std::ldexp(std::abs(product) + std::abs(b[i]), -23) + std::ldexp(1.0, -149);
    bool ok;
    if (std::isnan(reference)) ok = std::isnan(y[i]);
    else if (std::isinf(reference)) ok = y[i] == reference;
    else ok = std::abs(y[i] - reference) <= tolerance;
    if (!ok) {
      ++mismatches;
      ADD_FAILURE() << "y[" << i << "] = " << y[i] << ", reference " << reference << " (x " << x[i] << ", b " << b[i]
                    << ")";
    }
  }
}

TEST_F(GpuTest, AxpbRunsOnAStreamAndMatchesTheFp64Reference) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  CompiledCubin compiled = compile_to_cubin(kAxpbSource, "axpb.cu", device.info().arch());
  Module module(context, compiled.cubin);
  Function axpb = module.function("axpb");
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float a = -2.75f;
  std::mt19937 random(42);
  std::uniform_real_distribution<float> uniform(-1000.0f, 1000.0f);

  for (long long n : {1LL, 31LL, 1000003LL}) {  // none a multiple of the block size
    SCOPED_TRACE("n = " + std::to_string(n));
    size_t bytes = static_cast<size_t>(n) * sizeof(float);
    PinnedBuffer x_host(context, bytes), b_host(context, bytes), y_host(context, bytes);
    std::span<float> x = x_host.as<float>(), b = b_host.as<float>(), y = y_host.as<float>();
    for (long long i = 0; i < n; ++i) {
      x[i] = uniform(random);
      b[i] = uniform(random);
      y[i] = 12345.0f;  // uploaded too, so that an element the kernel skips shows
      switch (i % 97) {
        case 3: x[i] = nan; break;
        case 5: x[i] = inf; break;
        case 7: x[i] = -inf; break;
        case 11: x[i] = inf; b[i] = inf; break;  // a < 0: a x + b = -inf + inf = NaN
        case 13: b[i] = inf; break;
        case 17: b[i] = -inf; break;
        case 19: x[i] = -0.0f; b[i] = -0.0f; break;
        case 23: x[i] = 1e-40f; b[i] = 0.0f; break;  // subnormal in and out: no flush to zero
      }
    }
    DeviceBuffer x_dev(stream, bytes), b_dev(stream, bytes), y_dev(stream, bytes);
    copy_to_device(stream, x_dev, x_host, bytes);
    copy_to_device(stream, b_dev, b_host, bytes);
    copy_to_device(stream, y_dev, y_host, bytes);
    const unsigned block = 256;
    LaunchConfig config{{static_cast<unsigned>((n + block - 1) / block)}, {block}};
    launch(stream, axpb, config, a, x_dev.ptr(), b_dev.ptr(), y_dev.ptr(), n);
    copy_to_host(stream, y_host, y_dev, bytes);
    stream.synchronize();
    expect_axpb_matches(a, x, b, y);
  }
}

TEST_F(GpuTest, OutOfMemoryIsAnErrorWithTheDriversMessage) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  const size_t petabyte = size_t{1} << 50;
  try {
    DeviceBuffer huge(stream, petabyte);
    stream.synchronize();
    FAIL() << "allocated a petabyte";
  } catch (const UserError& e) {
    std::string message = e.what();
    std::cout << message << "\n";
    EXPECT_NE(message.find("cuMemAllocAsync(1125899906842624 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << message;
  }
  // The context survives: a small allocation still works.
  DeviceBuffer small(stream, 1024);
  EXPECT_NE(small.ptr(), CUdeviceptr{0});
  stream.synchronize();
}

TEST_F(GpuTest, AMissingKernelIsAnInternalErrorNamingIt) {
  Device device(probe_.device);
  Context context(device);
  Module module(context, compile_to_cubin(kAxpbSource, "axpb.cu", device.info().arch()).cubin);
  try {
    module.function("no_such_kernel");
    FAIL() << "found a kernel that is not there";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("cuModuleGetFunction(no_such_kernel): CUDA_ERROR_NOT_FOUND"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(GpuTest, ZeroByteBuffersHoldNothingAndCopyNothing) {
  Device device(probe_.device);
  Context context(device);
  Stream stream(context);
  DeviceBuffer empty_dev(stream, 0);
  PinnedBuffer empty_host(context, 0);
  EXPECT_EQ(empty_dev.ptr(), CUdeviceptr{0});
  EXPECT_EQ(empty_host.data(), nullptr);
  copy_to_device(stream, empty_dev, empty_host, 0);
  EXPECT_THROW(copy_to_device(stream, empty_dev, empty_host, 4), InternalError);
  stream.synchronize();
}

}  // namespace
}  // namespace kiln::backend::cuda::testing
