// The CUDA driver API, opened with dlopen("libcuda.so.1") on first use and never linked, so that one kiln
// build runs on machines with and without a GPU. cuda.h gives only the types and the entry points'
// signatures; every entry point is resolved at run time through cuGetProcAddress, at the ABI version of
// the header kiln was built with (cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on; the driver hands
// back the variant that matches).
#pragma once
#include <cuda.h>

#include <string>
#include <string_view>

namespace kiln::backend::cuda {

// The entry points kiln calls, each once in this list. Members are named as the functions (macros of
// cuda.h rename some to their _v2 form, consistently in the declaration and at each use).
#define KILN_CUDA_DRIVER_ENTRY_POINTS(X) \
  X(cuDeviceGetCount)                    \
  X(cuDeviceGet)                         \
  X(cuDeviceGetName)                     \
  X(cuDeviceGetAttribute)                \
  X(cuDeviceTotalMem)                    \
  X(cuDevicePrimaryCtxRetain)            \
  X(cuDevicePrimaryCtxRelease)           \
  X(cuCtxSetCurrent)                     \
  X(cuStreamCreate)                      \
  X(cuStreamDestroy)                     \
  X(cuStreamSynchronize)                 \
  X(cuMemAllocAsync)                     \
  X(cuMemFreeAsync)                      \
  X(cuMemHostAlloc)                      \
  X(cuMemFreeHost)                       \
  X(cuMemcpyHtoDAsync)                   \
  X(cuMemcpyDtoHAsync)                   \
  X(cuMemcpyDtoDAsync)                   \
  X(cuMemsetD8Async)                     \
  X(cuMemAlloc)                          \
  X(cuMemFree)                           \
  X(cuStreamBeginCapture)                \
  X(cuStreamEndCapture)                  \
  X(cuGraphInstantiateWithFlags)         \
  X(cuGraphLaunch)                       \
  X(cuGraphExecDestroy)                  \
  X(cuGraphDestroy)                      \
  X(cuStreamIsCapturing)                 \
  X(cuEventCreate)                       \
  X(cuEventRecord)                       \
  X(cuEventElapsedTime)                  \
  X(cuEventDestroy)                      \
  X(cuModuleLoadData)                    \
  X(cuModuleGetFunction)                 \
  X(cuModuleUnload)                      \
  X(cuLaunchKernel)                      \
  X(cuLaunchKernelEx)

struct DriverApi {
  // Resolved with dlsym: needed before (or to do) the cuGetProcAddress lookups.
  decltype(&::cuGetErrorName) cuGetErrorName = nullptr;
  decltype(&::cuGetErrorString) cuGetErrorString = nullptr;
  decltype(&::cuDriverGetVersion) cuDriverGetVersion = nullptr;
  decltype(&::cuInit) cuInit = nullptr;
  decltype(&::cuGetProcAddress) cuGetProcAddress = nullptr;
#define KILN_CUDA_DECLARE_ENTRY_POINT(name) decltype(&::name) name = nullptr;
  KILN_CUDA_DRIVER_ENTRY_POINTS(KILN_CUDA_DECLARE_ENTRY_POINT)
#undef KILN_CUDA_DECLARE_ENTRY_POINT

  int driver_version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor (13000 is CUDA 13.0)
};

// What the driver must support: the major version of the toolkit kiln was built with. Code from that
// toolkit's NVRTC loads on any driver of the same major version or newer (minor version compatibility),
// not on an older major.
inline constexpr int kMinimumDriverVersion = CUDA_VERSION / 1000 * 1000;
inline constexpr const char* kDriverLibrary = "libcuda.so.1";

// The driver, loaded and initialised (cuInit) on the first call from any thread. No driver library, a
// driver older than kMinimumDriverVersion, or a failing cuInit (no device) is a UserError naming what is
// missing; the failure is kept, so every later call throws the same error without retrying.
const DriverApi& driver();

// driver()'s work on a library of the caller's choosing (tests pass a name that does not exist). Each
// call opens the library anew; the handle is never closed (the driver's threads outlive any owner).
DriverApi load_driver(const std::string& library);

// "13.0" for 13000.
std::string cuda_version_text(int version);

// Throws when `result` is not CUDA_SUCCESS: "<call>: <CUDA_ERROR_NAME> (<driver's description>)". Out of
// memory and a missing or unusable device or driver are UserErrors; anything else is an InternalError
// (kiln passed something wrong, or a kernel it generated faulted).
void check(CUresult result, std::string_view call);

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", from the driver's own tables.
std::string describe_result(const DriverApi& api, CUresult result);

}  // namespace kiln::backend::cuda
