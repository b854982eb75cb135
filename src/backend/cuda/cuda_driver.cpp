#include "backend/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <variant>

#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

// The symbol a name of cuda.h stands for after its macros ("cuGetProcAddress" -> "cuGetProcAddress_v2"):
// the name dlsym must ask for.
#define KILN_CUDA_STRINGIFY(x) #x
#define KILN_CUDA_SYMBOL_NAME(name) KILN_CUDA_STRINGIFY(name)

std::string dl_error_text() {
  const char* err = ::dlerror();
  return err ? err : "unknown dlopen error";
}

template <class Fn>
void resolve_with_dlsym(void* library_handle, const std::string& library, const char* symbol, Fn*& out) {
  ::dlerror();  // clear a stale error
  out = reinterpret_cast<Fn*>(::dlsym(library_handle, symbol));
  if (!out) {
    user_error("device cuda: the CUDA driver {} has no entry point {} (a driver older than CUDA {}?): {}", library,
               symbol, cuda_version_text(kMinimumDriverVersion), dl_error_text());
  }
}

// The variant of `name` at the ABI of the cuda.h kiln was built with, whatever the driver's own version.
template <class Fn>
void resolve_with_proc_address(const DriverApi& api, const char* name, Fn*& out) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult result = api.cuGetProcAddress(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
  if (result != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {
    const char* why = status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? "its version is too old"
                                                                            : "the symbol is not there";
    user_error("device cuda: the CUDA driver (CUDA {}) cannot give {} at CUDA {}: {} ({})",
               cuda_version_text(api.driver_version), name, cuda_version_text(CUDA_VERSION), why,
               describe_result(api, result));
  }
  out = reinterpret_cast<Fn*>(fn);
}

bool is_users_problem(CUresult result) {
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_SYSTEM_NOT_READY:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string cuda_version_text(int version) { return fmt::format("{}.{}", version / 1000, version % 1000 / 10); }

std::string describe_result(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(result, &text);
  return fmt::format("{} ({})", name ? name : fmt::format("CUresult {}", static_cast<int>(result)),
                     text ? text : "no description");
}

DriverApi load_driver(const std::string& library) {
  // RTLD_NODELETE: the driver starts threads of its own; it must stay mapped whatever happens to handles.
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) user_error("device cuda: no CUDA driver on this machine ({}: {})", library, dl_error_text());

  DriverApi api;
  resolve_with_dlsym(handle, library, "cuGetErrorName", api.cuGetErrorName);
  resolve_with_dlsym(handle, library, "cuGetErrorString", api.cuGetErrorString);
  resolve_with_dlsym(handle, library, "cuDriverGetVersion", api.cuDriverGetVersion);
  resolve_with_dlsym(handle, library, "cuInit", api.cuInit);
  resolve_with_dlsym(handle, library, KILN_CUDA_SYMBOL_NAME(cuGetProcAddress), api.cuGetProcAddress);

  CUresult result = api.cuDriverGetVersion(&api.driver_version);
  if (result == CUDA_ERROR_STUB_LIBRARY) {  // a loader path that reaches the toolkit's stubs/ folder
    user_error("device cuda: no CUDA driver on this machine ({} is the CUDA toolkit's stub library, for linking "
               "only)", library);
  }
  if (result != CUDA_SUCCESS) {
    user_error("device cuda: the CUDA driver {} does not say its version: cuDriverGetVersion: {}", library,
               describe_result(api, result));
  }
  if (api.driver_version < kMinimumDriverVersion) {
    user_error("device cuda: the CUDA driver on this machine supports CUDA {}; kiln needs a driver for CUDA {} or "
               "newer (it was built with the CUDA {} toolkit, whose compiled code older drivers cannot load)",
               cuda_version_text(api.driver_version), cuda_version_text(kMinimumDriverVersion),
               cuda_version_text(CUDA_VERSION));
  }
  result = api.cuInit(0);
  if (result != CUDA_SUCCESS) {
    user_error("device cuda: the CUDA driver (CUDA {}) found no usable GPU: cuInit: {}",
               cuda_version_text(api.driver_version), describe_result(api, result));
  }

#define KILN_CUDA_RESOLVE_ENTRY_POINT(name) resolve_with_proc_address(api, #name, api.name);
  KILN_CUDA_DRIVER_ENTRY_POINTS(KILN_CUDA_RESOLVE_ENTRY_POINT)
#undef KILN_CUDA_RESOLVE_ENTRY_POINT
  return api;
}

const DriverApi& driver() {
  // Loaded once (thread-safe initialisation of a function-local static); a failure is kept as its message.
  static const std::variant<DriverApi, std::string> loaded = []() -> std::variant<DriverApi, std::string> {
    try {
      return load_driver(kDriverLibrary);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
  }();
  if (const auto* why = std::get_if<std::string>(&loaded)) throw UserError(*why);
  return std::get<DriverApi>(loaded);
}

void check(CUresult result, std::string_view call) {
  if (result == CUDA_SUCCESS) return;
  std::string message = fmt::format("device cuda: {}: {}", call, describe_result(driver(), result));
  if (is_users_problem(result)) throw UserError(message);
  throw InternalError(message);
}

}  // namespace kiln::backend::cuda
