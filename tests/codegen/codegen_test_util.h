// Shared helpers for the codegen tests: a private temporary cache per test and small test kernels.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

#include "codegen/cpu/compile_kernels.h"
#include "common/temp_dir.h"
#include "codegen/cpu/toolchain.h"
#include "kiln/options.h"

namespace kiln::codegen::cpu::testing {

namespace fs = std::filesystem;

// A fresh folder under the system temp dir, removed with everything in it at the end of the test.
// The cache itself (root() / "cache") is left for kiln to create.
class TempDir : public ::kiln::test_common::TempDir {
 public:
  TempDir() : ::kiln::test_common::TempDir("kiln-codegen-test") {}
  fs::path cache() const { return root() / "cache"; }
};

inline Options options_for(const TempDir& dir) {
  Options o;
  o.cache_dir = dir.cache().string();
  o.compile_jobs = 2;
  return o;
}

// c[i] = a[i] + b[i] with an OpenMP loop, plus kernel_id() returning `id` (so that two variants are
// told apart after loading) and a helper that -fvisibility=hidden must keep out of the symbol table.
inline KernelSource add_kernel(int id = 1) {
  std::ostringstream code;
  code << kKernelExportPrelude
       << "KILN_EXPORT void add(const float* a, const float* b, float* c, long n) {\n"
          "#pragma omp parallel for\n"
          "  for (long i = 0; i < n; ++i) c[i] = a[i] + b[i];\n"
          "}\n"
          "extern \"C\" int hidden_helper() { return 7; }\n"
          "KILN_EXPORT int kernel_id() { return hidden_helper() * 0 + "
       << id << "; }\n";
  return {"add_" + std::to_string(id), code.str(), {"add", "kernel_id"}};
}

using AddFn = void(const float*, const float*, float*, long);
using IdFn = int();

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Replaces a file's bytes (as a new file, mode 0600, like the cache's own files).
inline void write_file(const fs::path& p, const std::string& bytes) {
  std::error_code ec;
  fs::remove(p, ec);
  {
    std::ofstream out(p, std::ios::binary);
    out << bytes;
  }
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
}

}  // namespace kiln::codegen::cpu::testing
