#include "runtime/backends.h"

#include <charconv>

#include "backend/cpu/cpu_backend.h"
#include "support/error.h"
#ifdef KILN_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace kiln::runtime {

int cuda_device_index(const std::string& device) {
  if (device == "cuda") return 0;
  if (!device.starts_with("cuda:")) user_error("unknown device '{}': expected cpu, cuda or cuda:N", device);
  int index = 0;
  const char* first = device.data() + 5;
  const char* last = device.data() + device.size();
  auto [end, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || end != last || index < 0) user_error("device '{}': expected cuda:N with N >= 0", device);
  return index;
}

std::unique_ptr<backend::Backend> make_backend(const Options& options, Mode mode) {
  const std::string& device = options.device;
  if (device == "cpu" || mode == Mode::reference) return std::make_unique<backend::cpu::CpuBackend>(mode == Mode::reference);
  if (device == "cuda" || device.starts_with("cuda:")) {
    const int index = cuda_device_index(device);
    if (mode == Mode::eager)
      user_error("device '{}': the CUDA backend runs compiled mode only (a GPU has no eager kernels)", device);
#ifdef KILN_HAVE_CUDA
    return std::make_unique<backend::cuda::CudaBackend>(index, options);
#else
    user_error("device '{}': this kiln was built without the CUDA backend (no CUDA toolkit at build time)", device);
#endif
  }
  user_error("unknown device '{}': expected cpu, cuda or cuda:N", device);
}

}  // namespace kiln::runtime
