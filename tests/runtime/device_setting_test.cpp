// The `device` setting: where a session runs, and the errors a user gets for a device kiln cannot use.
#include <gtest/gtest.h>

#include "kiln/errors.h"
#include "kiln/session.h"
#include "runtime/demo_model.h"
#ifdef KILN_HAVE_CUDA
#include "backend/cuda/device_probe.h"
#endif

namespace kiln {
namespace {

std::string error_of(const Options& options, Mode mode) {
  try {
    Session::from_graph(demo_transformer(), mode, options, {{"batch", 1}, {"seq", 4}});
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceSetting, CpuIsTheDefaultAndRunsOnTheHost) {
  Options options;
  EXPECT_EQ(options.device, "cpu");
  Session s = Session::from_graph(demo_transformer(), Mode::compiled, options, {{"batch", 1}, {"seq", 4}});
  std::map<std::string, Tensor> inputs{{"input_ids", Tensor::from_vector<int64_t>(DType::i64, {1, 4}, {1, 2, 3, 4})}};
  for (const auto& [name, t] : s.run(s.to_device(inputs))) EXPECT_TRUE(t.device().is_host()) << name;
}

TEST(DeviceSetting, UnknownDevicesAndBadIndicesAreUserErrors) {
  Options options;
  options.device = "tpu";
  EXPECT_NE(error_of(options, Mode::compiled).find("unknown device 'tpu'"), std::string::npos);
  options.device = "cuda:x";
  EXPECT_NE(error_of(options, Mode::compiled).find("expected cuda:N"), std::string::npos);
  options.device = "cuda";
  EXPECT_NE(error_of(options, Mode::eager).find("compiled mode only"), std::string::npos);
}

// Without a usable GPU, --device cuda says what is missing (the driver, or a device); with one, the
// CUDA session tests (tests/cuda_session) run instead.
TEST(DeviceSetting, CudaWithoutAGpuSaysWhatIsMissing) {
  Options options;
  options.device = "cuda";
#ifdef KILN_HAVE_CUDA
  const backend::cuda::DeviceProbe probe = backend::cuda::probe_devices();
  if (probe.usable) GTEST_SKIP() << "SKIPPED: this machine has a usable GPU (tests/cuda_session covers it)";
  const std::string error = error_of(options, Mode::compiled);
  EXPECT_NE(error.find("cuda"), std::string::npos) << error;
  EXPECT_TRUE(error.find("driver") != std::string::npos || error.find("device") != std::string::npos) << error;
#else
  EXPECT_NE(error_of(options, Mode::compiled).find("built without the CUDA backend"), std::string::npos);
#endif
}

}  // namespace
}  // namespace kiln
