#include "backend/cuda/nvrtc.h"

#include <cuda.h>  // CUDA_VERSION: the toolkit kiln was built with
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <charconv>

#include <fmt/ranges.h>

#include "backend/cuda/load_once.h"
#include "support/error.h"

#ifndef KILN_CUDA_ROOT
#define KILN_CUDA_ROOT "/usr/local/cuda"
#endif

namespace kiln::backend::cuda {
namespace {

template <class Fn>
void resolve(void* handle, const std::string& library, const char* symbol, Fn*& out) {
  ::dlerror();
  out = reinterpret_cast<Fn*>(::dlsym(handle, symbol));
  if (!out) {
    const char* err = ::dlerror();
    user_error("device cuda: the NVRTC library {} has no entry point {}: {}", library, symbol,
               err ? err : "unknown dlsym error");
  }
}

std::string result_text(nvrtcResult result) {
  const char* text = nvrtc().nvrtcGetErrorString(result);
  return text ? text : fmt::format("nvrtcResult {}", static_cast<int>(result));
}

// Failures other than the source's own: out of memory, or NVRTC missing its builtins library, are the
// machine's problem; anything else means kiln called NVRTC wrongly.
[[noreturn]] void nvrtc_call_failed(nvrtcResult result, std::string_view call, std::string_view name) {
  std::string message = fmt::format("device cuda: {} of {}: {}", call, name, result_text(result));
  if (result == NVRTC_ERROR_OUT_OF_MEMORY) throw UserError(message);
  if (result == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE) {
    throw UserError(message + " (is libnvrtc-builtins, which NVRTC loads itself, next to " + nvrtc().library + "?)");
  }
  throw InternalError(message);
}

void check_call(nvrtcResult result, std::string_view call, std::string_view name) {
  if (result != NVRTC_SUCCESS) nvrtc_call_failed(result, call, name);
}

// 90 for "sm_90a" / "sm_90"; anything that is not sm_<digits>[a|f] is a caller's bug.
int arch_number(std::string_view arch) {
  std::string_view digits = arch.starts_with("sm_") ? arch.substr(3) : std::string_view();
  const char* end = digits.data() + digits.size();
  int number = 0;
  auto [rest, ec] = std::from_chars(digits.data(), end, number);
  bool suffix_ok = rest == end || (rest + 1 == end && (*rest == 'a' || *rest == 'f'));
  KILN_INTERNAL_CHECK(ec == std::errc() && suffix_ok, "device cuda: '{}' is not a GPU architecture (sm_90, sm_90a)",
                      arch);
  return number;
}

class Program {  // an nvrtcProgram, destroyed on every path out of compile_to_cubin
 public:
  Program(const std::string& source, const std::string& name) : name_(name) {
    check_call(nvrtc().nvrtcCreateProgram(&program_, source.c_str(), name.c_str(), 0, nullptr, nullptr),
               "nvrtcCreateProgram", name);
  }
  ~Program() { nvrtc().nvrtcDestroyProgram(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcProgram get() const { return program_; }
  std::string log() const {
    size_t size = 0;
    check_call(nvrtc().nvrtcGetProgramLogSize(program_, &size), "nvrtcGetProgramLogSize", name_);
    std::string log(size, '\0');
    if (size > 0) check_call(nvrtc().nvrtcGetProgramLog(program_, log.data()), "nvrtcGetProgramLog", name_);
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
    return log;
  }

 private:
  nvrtcProgram program_ = nullptr;
  std::string name_;
};

}  // namespace

std::string toolkit_root() { return KILN_CUDA_ROOT; }

std::vector<std::string> nvrtc_library_candidates() {
  std::string versioned = fmt::format("libnvrtc.so.{}", CUDA_VERSION / 1000);
  std::string folder = toolkit_root() + "/lib64/";
  return {versioned, "libnvrtc.so", folder + versioned, folder + "libnvrtc.so"};
}

NvrtcApi load_nvrtc(const std::vector<std::string>& candidates) {
  void* handle = nullptr;
  std::string tried;
  NvrtcApi api;
  for (const std::string& candidate : candidates) {
    handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      api.library = candidate;
      break;
    }
    const char* err = ::dlerror();
    tried += fmt::format("\n  {}: {}", candidate, err ? err : "unknown dlopen error");
  }
  if (!handle) user_error("device cuda: no NVRTC library (the CUDA toolkit's runtime compiler) found; tried:{}", tried);

  resolve(handle, api.library, "nvrtcVersion", api.nvrtcVersion);
  resolve(handle, api.library, "nvrtcGetErrorString", api.nvrtcGetErrorString);
  resolve(handle, api.library, "nvrtcGetNumSupportedArchs", api.nvrtcGetNumSupportedArchs);
  resolve(handle, api.library, "nvrtcGetSupportedArchs", api.nvrtcGetSupportedArchs);
  resolve(handle, api.library, "nvrtcCreateProgram", api.nvrtcCreateProgram);
  resolve(handle, api.library, "nvrtcDestroyProgram", api.nvrtcDestroyProgram);
  resolve(handle, api.library, "nvrtcCompileProgram", api.nvrtcCompileProgram);
  resolve(handle, api.library, "nvrtcGetProgramLogSize", api.nvrtcGetProgramLogSize);
  resolve(handle, api.library, "nvrtcGetProgramLog", api.nvrtcGetProgramLog);
  resolve(handle, api.library, "nvrtcGetCUBINSize", api.nvrtcGetCUBINSize);
  resolve(handle, api.library, "nvrtcGetCUBIN", api.nvrtcGetCUBIN);

  int count = 0;
  bool described = api.nvrtcVersion(&api.major, &api.minor) == NVRTC_SUCCESS &&
                   api.nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0;
  if (!described) {
    user_error("device cuda: the NVRTC library {} does not say its version or architectures", api.library);
  }
  api.supported_archs.resize(static_cast<size_t>(count));
  if (api.nvrtcGetSupportedArchs(api.supported_archs.data()) != NVRTC_SUCCESS) {
    user_error("device cuda: the NVRTC library {} does not list its architectures", api.library);
  }
  return api;
}

const NvrtcApi& nvrtc() {
  return load_once<NvrtcApi>([] { return load_nvrtc(nvrtc_library_candidates()); });
}

bool nvrtc_available(std::string* why) { return loads(nvrtc, why); }

std::vector<std::string> nvrtc_options(std::string_view arch, const std::vector<std::string>& extra_options) {
  for (const std::string& option : extra_options) {
    bool gives_up_ieee = option.find("fast_math") != std::string::npos ||
                         option.find("fast-math") != std::string::npos || option.ends_with("ftz=true") ||
                         option.ends_with("prec-div=false") || option.ends_with("prec-sqrt=false");
    KILN_INTERNAL_CHECK(!gives_up_ieee, "device cuda: NVRTC option '{}' would give up IEEE semantics (NaN, Inf, "
                        "denormals, rounding) that kiln keeps in every kernel", option);
  }
  std::vector<std::string> options = {fmt::format("--gpu-architecture={}", arch), "-std=c++17", "-default-device"};
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  return options;
}

CompiledCubin compile_to_cubin(std::string_view source, std::string_view name, std::string_view arch,
                               const std::vector<std::string>& extra_options) {
  const NvrtcApi& api = nvrtc();
  int number = arch_number(arch);
  if (std::find(api.supported_archs.begin(), api.supported_archs.end(), number) == api.supported_archs.end()) {
    user_error("device cuda: NVRTC {}.{} ({}) cannot compile for {}; it supports sm_{} to sm_{}", api.major, api.minor,
               api.library, arch, api.supported_archs.front(), api.supported_archs.back());
  }
  CompiledCubin out;
  out.options = nvrtc_options(arch, extra_options);
  std::vector<const char*> option_pointers;
  for (const std::string& option : out.options) option_pointers.push_back(option.c_str());

  auto start = std::chrono::steady_clock::now();
  std::string program_name(name);
  Program program(std::string(source), program_name);
  nvrtcResult compiled =
      api.nvrtcCompileProgram(program.get(), static_cast<int>(option_pointers.size()), option_pointers.data());
  out.log = program.log();
  if (compiled == NVRTC_ERROR_COMPILATION) {
    internal_error("device cuda: generated kernel {} does not compile for {} (NVRTC {}.{}, options {}):\n{}",
                   program_name, arch, api.major, api.minor, fmt::join(out.options, " "), out.log);
  }
  if (compiled != NVRTC_SUCCESS) nvrtc_call_failed(compiled, "nvrtcCompileProgram", program_name);
  size_t size = 0;
  check_call(api.nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize", program_name);
  KILN_INTERNAL_CHECK(size > 0, "device cuda: NVRTC made an empty cubin of {} for {}", program_name, arch);
  out.cubin.resize(size);
  check_call(api.nvrtcGetCUBIN(program.get(), out.cubin.data()), "nvrtcGetCUBIN", program_name);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kiln::backend::cuda
