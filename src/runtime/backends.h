// The backend a session compiles for, from the `device` setting: the CPU backend, or the CUDA backend
// where this kiln was built with it.
#pragma once
#include <memory>

#include "backend/backend.h"
#include "kiln/options.h"
#include "kiln/session.h"

namespace kiln::runtime {

// "cpu" (the default), "cuda" or "cuda:N". Reference mode is the CPU's fp64 oracle whatever the device.
// An unknown device, or cuda in a build without the CUDA backend, is a user error.
std::unique_ptr<backend::Backend> make_backend(const Options& options, Mode mode);

// N of "cuda" (0) or "cuda:N"; any other device is a user error.
int cuda_device_index(const std::string& device);

}  // namespace kiln::runtime
