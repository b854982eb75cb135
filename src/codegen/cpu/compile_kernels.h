// The compile driver: generated C++ in, loaded kernels out. Sources are looked up in the kernel cache
// first; misses are compiled in parallel (up to compile_jobs at once) by the system compiler, published
// to the cache, and every kernel is then loaded with dlopen.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/cpu/cpu_features.h"
#include "codegen/cpu/loaded_library.h"
#include "kiln/options.h"

namespace kiln::codegen::cpu {

struct KernelSource {
  std::string name;                       // for messages and logs only (not part of the cache key)
  std::string code;                       // a complete C++ translation unit
  std::vector<std::string> entry_points;  // exported extern "C" symbols the caller will look up
};

// A kernel's shared object in the cache, not loaded.
struct BuiltKernel {
  std::string name;
  std::string key;                  // 32 hex digits
  std::filesystem::path so_path;    // <cache>/<2 hex>/<key>.so
  std::string command;              // the exact compile command that built it
  bool cache_hit = false;           // false: this call ran the compiler for it
};

struct CompiledKernel : BuiltKernel {
  LoadedLibrary library;
  std::vector<std::string> entry_names;
  std::vector<void*> entry_points;  // in KernelSource::entry_points order
  // The address of one of the kernel's entry points (an InternalError for a name it did not list).
  void* entry(std::string_view name) const;
};

// Makes sure every kernel is in the cache (compiling the misses); loads nothing. `features` must be a
// subset of this CPU's (building for a smaller CPU is fine, for a larger one is an InternalError).
// With options.require_cached a kernel not in the cache is a user error (nothing is compiled).
// A compile failure is an InternalError with the compiler's first lines of output and the path of a
// kept copy of the failing source.
std::vector<BuiltKernel> build_kernels(const std::vector<KernelSource>& sources, const Options& options,
                                       const CpuFeatures& features);

// build_kernels, then dlopen each and resolve its entry points (for this CPU's features, or `features`).
std::vector<CompiledKernel> compile_kernels(const std::vector<KernelSource>& sources, const Options& options);
std::vector<CompiledKernel> compile_kernels(const std::vector<KernelSource>& sources, const Options& options,
                                            const CpuFeatures& features);

}  // namespace kiln::codegen::cpu
