// NVRTC, the CUDA C++ compiler as a library, opened with dlopen on first use (never linked): CUDA C++
// source to a cubin for one GPU architecture. It needs no GPU, so kernels compile on any machine that
// has the toolkit's library. nvrtc.h gives only the types and signatures.
#pragma once
#include <nvrtc.h>

#include <string>
#include <string_view>
#include <vector>

namespace kiln::backend::cuda {

struct NvrtcApi {
  decltype(&::nvrtcVersion) nvrtcVersion = nullptr;
  decltype(&::nvrtcGetErrorString) nvrtcGetErrorString = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) nvrtcGetNumSupportedArchs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) nvrtcGetSupportedArchs = nullptr;
  decltype(&::nvrtcCreateProgram) nvrtcCreateProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) nvrtcDestroyProgram = nullptr;
  decltype(&::nvrtcCompileProgram) nvrtcCompileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) nvrtcGetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) nvrtcGetProgramLog = nullptr;
  decltype(&::nvrtcGetCUBINSize) nvrtcGetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) nvrtcGetCUBIN = nullptr;

  std::string library;              // the name that opened it ("libnvrtc.so.13")
  int major = 0, minor = 0;         // nvrtcVersion
  std::vector<int> supported_archs;  // 75, 80, ..., 90, ... (sm_XX numbers)
};

// The CUDA toolkit kiln was built with (the KILN_CUDA_ROOT of cmake/cuda.cmake, "/usr/local/cuda").
std::string toolkit_root();

// Where NVRTC is looked for, in order: the soname of the toolkit kiln was built with
// ("libnvrtc.so.13"), the unversioned name, then the same two in that toolkit's library folder (for
// machines whose loader path does not include it).
std::vector<std::string> nvrtc_library_candidates();

// NVRTC, loaded on the first call from any thread. No library among the candidates is a UserError that
// names each one tried and why it failed; the failure is kept and thrown again on each later call.
const NvrtcApi& nvrtc();

// nvrtc()'s work on candidate names of the caller's choosing (tests pass names that do not exist).
NvrtcApi load_nvrtc(const std::vector<std::string>& candidates);

// Whether NVRTC loads here; when it does not, `why` gets the reason (for tests that skip).
bool nvrtc_available(std::string* why = nullptr);

struct CompiledCubin {
  std::vector<char> cubin;           // an ELF image for cuModuleLoadData
  std::string log;                   // NVRTC's log (warnings; empty when it had nothing to say)
  std::vector<std::string> options;  // exactly what NVRTC was given, for dumps
  double seconds = 0;                // wall time of the compile
};

// The options compile_to_cubin passes: --gpu-architecture=<arch>, -std=c++17, -default-device, then
// `extra_options`. Never fast math: an extra option that would give up IEEE semantics
// (--use_fast_math, --ftz=true, --prec-div=false, --prec-sqrt=false) is an InternalError.
std::vector<std::string> nvrtc_options(std::string_view arch, const std::vector<std::string>& extra_options);

// Compiles CUDA C++ `source` (named `name` in the log, e.g. "kernel_1a2b.cu") for `arch` ("sm_90a",
// "sm_90"). Generated code that does not compile is a kiln bug: an InternalError carrying NVRTC's log.
// An architecture this NVRTC does not support, and a missing NVRTC, are UserErrors.
CompiledCubin compile_to_cubin(std::string_view source, std::string_view name, std::string_view arch,
                               const std::vector<std::string>& extra_options = {});

}  // namespace kiln::backend::cuda
