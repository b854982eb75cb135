// CUDA C++ the Hopper (sm_90a) kernels share, put after the scalar preamble: the TMA tensor map type,
// mbarriers, TMA box copies, wgmma matrix descriptors and the wgmma fence / commit / wait.
#pragma once
#include <string>

namespace kiln::backend::cuda {

std::string hopper_device_helpers();

}  // namespace kiln::backend::cuda
