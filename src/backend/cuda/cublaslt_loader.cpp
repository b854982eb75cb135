// Loading cuBLASLt (cublaslt.h): candidates, entry points, the version check, and naming its statuses.
#include <dlfcn.h>


#include "backend/cuda/cublaslt.h"
#include "backend/cuda/nvrtc.h"  // toolkit_root()
#include "backend/cuda/load_once.h"
#include "support/error.h"

namespace kiln::backend::cuda {
namespace {

template <class Fn>
void resolve(void* handle, const std::string& library, const char* symbol, Fn*& out) {
  ::dlerror();
  out = reinterpret_cast<Fn*>(::dlsym(handle, symbol));
  if (!out) {
    const char* err = ::dlerror();
    user_error("device cuda: the cuBLASLt library {} has no entry point {}: {}", library, symbol,
               err ? err : "unknown dlsym error");
  }
}

std::string version_text(size_t version) {
  return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

}  // namespace

bool is_machine_status(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:  // no driver or no usable GPU under cuBLASLt
    case CUBLAS_STATUS_ALLOC_FAILED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_LICENSE_ERROR:
      return true;
    default:
      return false;
  }
}

std::vector<std::string> cublaslt_library_candidates() {
  std::string versioned = fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR);
  std::string folder = toolkit_root() + "/lib64/";
  return {versioned, "libcublasLt.so", folder + versioned, folder + "libcublasLt.so"};
}

CublasLtApi load_cublaslt(const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& candidate : candidates) {
    // RTLD_NODELETE: cuBLASLt may keep driver state and threads of its own; never unmap it.
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle) {
      const char* err = ::dlerror();
      tried += fmt::format("\n  {}: {}", candidate, err ? err : "unknown dlopen error");
      continue;
    }
    CublasLtApi api;
    api.library = candidate;
    resolve(handle, candidate, "cublasLtGetVersion", api.cublasLtGetVersion);
    api.version = api.cublasLtGetVersion();
    if (api.version / 10000 != CUBLAS_VER_MAJOR) {  // an unversioned name may be another toolkit's
      tried += fmt::format("\n  {}: cuBLASLt {}, not the {}.x of the headers kiln was built with", candidate,
                           version_text(api.version), CUBLAS_VER_MAJOR);
      continue;
    }
    resolve(handle, candidate, "cublasLtGetStatusName", api.cublasLtGetStatusName);
    resolve(handle, candidate, "cublasLtGetStatusString", api.cublasLtGetStatusString);
    resolve(handle, candidate, "cublasLtCreate", api.cublasLtCreate);
    resolve(handle, candidate, "cublasLtDestroy", api.cublasLtDestroy);
    resolve(handle, candidate, "cublasLtMatmulDescInit_internal", api.cublasLtMatmulDescInit_internal);
    resolve(handle, candidate, "cublasLtMatmulDescSetAttribute", api.cublasLtMatmulDescSetAttribute);
    resolve(handle, candidate, "cublasLtMatrixLayoutInit_internal", api.cublasLtMatrixLayoutInit_internal);
    resolve(handle, candidate, "cublasLtMatrixLayoutSetAttribute", api.cublasLtMatrixLayoutSetAttribute);
    resolve(handle, candidate, "cublasLtMatmulPreferenceCreate", api.cublasLtMatmulPreferenceCreate);
    resolve(handle, candidate, "cublasLtMatmulPreferenceDestroy", api.cublasLtMatmulPreferenceDestroy);
    resolve(handle, candidate, "cublasLtMatmulPreferenceSetAttribute", api.cublasLtMatmulPreferenceSetAttribute);
    resolve(handle, candidate, "cublasLtMatmulAlgoGetHeuristic", api.cublasLtMatmulAlgoGetHeuristic);
    resolve(handle, candidate, "cublasLtMatmul", api.cublasLtMatmul);
    return api;
  }
  user_error("device cuda: no cuBLASLt {} library (the CUDA toolkit's matmul library) found; tried:{}",
             CUBLAS_VER_MAJOR, tried);
}

const CublasLtApi& cublaslt() {
  return load_once<CublasLtApi>([] { return load_cublaslt(cublaslt_library_candidates()); });
}

bool cublaslt_available(std::string* why) { return loads(cublaslt, why); }

std::string describe_status(cublasStatus_t status) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cublaslt_available()) {
    name = cublaslt().cublasLtGetStatusName(status);
    text = cublaslt().cublasLtGetStatusString(status);
  }
  return fmt::format("{} ({})", name ? name : fmt::format("cublasStatus_t {}", static_cast<int>(status)),
                     text ? text : "no description");
}

void check_cublas(cublasStatus_t status, std::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string message = fmt::format("device cuda: {}: {}", call, describe_status(status));
  if (is_machine_status(status)) throw UserError(message);
  throw InternalError(message);
}

}  // namespace kiln::backend::cuda
