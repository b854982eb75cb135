// Whether this machine can run kiln's CUDA code, and if not, why: a driver, a GPU it can start, and
// NVRTC able to compile for that GPU. Tests skip with the reason; `--device cuda` will fail with it.
#pragma once
#include <string>
#include <vector>

#include "backend/cuda/cuda_objects.h"

namespace kiln::backend::cuda {

struct DeviceProbe {
  bool usable = false;
  int device = -1;     // the first usable device's index
  std::string reason;  // why not, when !usable ("device cuda: no CUDA driver on this machine (...)")
  int driver_version = 0;           // 0 without a driver
  std::vector<DeviceInfo> devices;  // every device the driver sees, usable or not
  std::string nvrtc;                // "NVRTC 13.0 (libnvrtc.so.13)", empty without it

  std::string summary() const;  // one line: the driver, NVRTC, each device; or the reason
};

// Never throws for what the machine lacks (those become `reason`); a kiln bug still throws.
DeviceProbe probe_devices();

// The usable device of probe_devices(); a UserError with its reason when there is none.
Device usable_device();

}  // namespace kiln::backend::cuda
