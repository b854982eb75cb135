#include "codegen/cpu/loaded_library.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <string>

#include "support/error.h"

namespace kiln::codegen::cpu {
namespace {

// Kernels built with -fopenmp bring in the OpenMP runtime when the process has not linked it. Its
// worker threads outlive every kernel, so the runtime must stay mapped after the last kernel's dlclose
// (else the idle workers crash): mark whichever runtime is loaded as never to be unloaded.
void pin_openmp_runtime() {
  for (const char* name : {"libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so"}) {
    if (void* h = ::dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) ::dlclose(h);
  }
}

}  // namespace

LoadedLibrary::LoadedLibrary(const std::filesystem::path& path) : path_(std::filesystem::absolute(path)) {
  handle_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* err = ::dlerror();
    internal_error("cannot load kernel library '{}': {}", path_.string(), err ? err : "unknown dlopen error");
  }
  pin_openmp_runtime();
}

LoadedLibrary::~LoadedLibrary() { close(); }

LoadedLibrary::LoadedLibrary(LoadedLibrary&& o) noexcept : handle_(o.handle_), path_(std::move(o.path_)) {
  o.handle_ = nullptr;
}

LoadedLibrary& LoadedLibrary::operator=(LoadedLibrary&& o) noexcept {
  if (this != &o) {
    close();
    handle_ = o.handle_;
    path_ = std::move(o.path_);
    o.handle_ = nullptr;
  }
  return *this;
}

void LoadedLibrary::close() noexcept {
  if (handle_) ::dlclose(handle_);
  handle_ = nullptr;
}

void* LoadedLibrary::find_symbol(std::string_view name) const noexcept {
  if (!handle_) return nullptr;
  std::string n(name);
  ::dlerror();  // clear a stale error
  return ::dlsym(handle_, n.c_str());
}

void* LoadedLibrary::symbol(std::string_view name) const {
  KILN_INTERNAL_CHECK(handle_, "symbol '{}' looked up in a library that is not loaded", name);
  void* p = find_symbol(name);
  if (!p) {
    const char* err = ::dlerror();
    internal_error("kernel library '{}' has no entry point '{}' (was it exported with "
                   "visibility(\"default\") and extern \"C\"?){}{}",
                   path_.string(), name, err ? ": " : "", err ? err : "");
  }
  return p;
}

std::vector<std::filesystem::path> loaded_cache_objects(const std::filesystem::path& dir) {
  struct Walk {
    std::string prefix;
    std::vector<std::filesystem::path> found;
  } walk{(std::filesystem::absolute(dir).lexically_normal() / "").string(), {}};
  ::dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        auto* w = static_cast<Walk*>(data);
        std::string_view name = info->dlpi_name ? info->dlpi_name : "";
        if (name.starts_with(w->prefix) && name.ends_with(".so")) w->found.emplace_back(name);
        return 0;
      },
      &walk);
  std::sort(walk.found.begin(), walk.found.end());
  walk.found.erase(std::unique(walk.found.begin(), walk.found.end()), walk.found.end());
  return walk.found;
}

}  // namespace kiln::codegen::cpu
