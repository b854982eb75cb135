#include "backend/cuda/device_probe.h"

#include <algorithm>

#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/nvrtc.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

// Why kiln cannot run on this device, or empty when it can.
std::string device_shortfall(const DeviceInfo& info, const NvrtcApi& compiler) {
  int arch = info.compute_major * 10 + info.compute_minor;
  const std::vector<int>& archs = compiler.supported_archs;
  if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
    return fmt::format("NVRTC {}.{} cannot compile for {} (it supports sm_{} to sm_{})", compiler.major,
                       compiler.minor, info.arch(), archs.front(), archs.back());
  }
  if (!info.memory_pools) return "it has no stream-ordered memory pools (cuMemAllocAsync)";
  return {};
}

}  // namespace

std::string DeviceProbe::summary() const {
  if (!usable) return reason;
  std::string text = fmt::format("CUDA driver {}, {}", cuda_version_text(driver_version), nvrtc);
  for (const DeviceInfo& info : devices) text += fmt::format("; device {}", info.summary());
  return text;
}

DeviceProbe probe_devices() {
  DeviceProbe probe;
  try {
    probe.driver_version = driver().driver_version;
    int count = device_count();
    for (int i = 0; i < count; ++i) probe.devices.push_back(Device(i).info());
    const NvrtcApi& compiler = nvrtc();
    probe.nvrtc = fmt::format("NVRTC {}.{} ({})", compiler.major, compiler.minor, compiler.library);
    if (probe.devices.empty()) {
      probe.reason = "device cuda: the CUDA driver sees no device";
      return probe;
    }
    std::string shortfalls;
    for (const DeviceInfo& info : probe.devices) {
      std::string why = device_shortfall(info, compiler);
      if (why.empty()) {
        probe.usable = true;
        probe.device = info.index;
        return probe;
      }
      shortfalls += fmt::format("; {}: {}", info.summary(), why);
    }
    probe.reason = "device cuda: no usable GPU" + shortfalls;
  } catch (const UserError& e) {
    probe.reason = e.what();
  }
  return probe;
}

Device usable_device() {
  DeviceProbe probe = probe_devices();
  KILN_USER_CHECK(probe.usable, "{}", probe.reason);
  return Device(probe.device);
}

}  // namespace kiln::backend::cuda
