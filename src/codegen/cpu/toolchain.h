// The system C++ compiler as kiln uses it for generated kernels: its identity, flags and command line.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "codegen/cpu/cpu_features.h"
#include "kiln/options.h"

namespace kiln::codegen::cpu {

// Generated kernels declare their entry points with this; everything else stays hidden
// (-fvisibility=hidden). Emitters put it at the top of each source.
inline constexpr std::string_view kKernelExportPrelude =
    "#define KILN_EXPORT extern \"C\" __attribute__((visibility(\"default\")))\n";

// The `cxx` setting must be a program name or path: letters, digits and ._+-/ only, not starting
// with '-'. Anything else (spaces, quotes, $, ;, ...) is a user error naming the setting.
void check_compiler_name(std::string_view cxx);

// XXH3-128 (hex) of `<cxx> --version`, run once per process for each cxx value. A compiler that
// cannot be run is a user error.
std::string compiler_identity(const std::string& cxx);
// Tells compiler_identity what `cxx` is without running it (a saved model's kernels were keyed with
// `identity`); a value already known in this process is kept.
void remember_compiler_identity(const std::string& cxx, const std::string& identity);

// Every flag but the files: -O3 -std=c++20 -fPIC -shared -fopenmp -fno-fast-math -fno-math-errno
// -fvisibility=hidden, then the ISA flags for `features`. Never -march=native, never -ffast-math.
std::vector<std::string> compile_flags(const CpuFeatures& features);

// The argv that compiles `source_path` into the shared object `output_path`.
std::vector<std::string> compile_argv(const Options& options, const CpuFeatures& features,
                                      const std::string& source_path, const std::string& output_path);
// The same as one shell-quoted line (for logs and --dump-dir).
std::string compile_command(const Options& options, const CpuFeatures& features, const std::string& source_path,
                            const std::string& output_path);

// Compiler runs (not counting --version) this process has started: lets tests see cache hits.
uint64_t compiler_run_count();
void count_compiler_run();

}  // namespace kiln::codegen::cpu
