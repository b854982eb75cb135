// The backend seam, checked on the source tree: nothing the compiler's target-neutral layers include
// (directly or through other headers) comes from a backend, a vendor library or the code generators.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
const fs::path kSrc = fs::path(KILN_SOURCE_DIR) / "src";

struct Include {
  std::string path;
  bool system;  // <...>
};

std::vector<Include> includes_of(const fs::path& file) {
  static const std::regex directive(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  std::vector<Include> found;
  std::ifstream in(file);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, directive)) found.push_back({m[2].str(), m[1].str() == "<"});
  return found;
}

// A header from a backend, a library binding, a code generator, a kernel template, the autotuner, or a
// vendor library itself.
bool forbidden(const Include& inc) {
  static const std::vector<std::string> folders = {"backend/", "codegen/", "kernels/", "templates/", "autotune/",
                                                   "compiler/", "runtime/"};
  static const std::vector<std::string> vendors = {"dnnl", "oneapi/", "cblas", "openblas", "cuda", "nvrtc", "cublas",
                                                   "cudnn", "omp.h", "sqlite3", "dlfcn.h"};
  for (const std::string& f : (inc.system ? vendors : folders))
    if (inc.path.rfind(f, 0) == 0) return true;
  return false;
}

// Every forbidden header a file reaches through quoted includes under src/ (and include/), with the
// chain that reaches it.
void walk(const fs::path& file, const std::string& chain, std::set<std::string>& seen, std::vector<std::string>& bad) {
  for (const Include& inc : includes_of(file)) {
    const std::string step = chain + " -> " + inc.path;
    if (forbidden(inc)) {
      bad.push_back(step);
      continue;
    }
    if (inc.system || !seen.insert(inc.path).second) continue;
    for (const fs::path& root : {kSrc, kSrc.parent_path() / "include"})
      if (fs::exists(root / inc.path)) walk(root / inc.path, step, seen, bad);
  }
}

TEST(IncludeGraph, TargetNeutralLayersReachNoBackendHeader) {
  int files = 0;
  std::vector<std::string> bad;
  for (const char* layer : {"ir", "passes", "lower", "loops", "schedule"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kSrc / layer)) {
      if (!entry.is_regular_file()) continue;
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp" && ext != ".def") continue;
      ++files;
      std::set<std::string> seen;
      walk(entry.path(), fs::relative(entry.path(), kSrc).string(), seen, bad);
    }
  }
  EXPECT_GT(files, 50);  // the walk found the tree
  for (const std::string& chain : bad) ADD_FAILURE() << "includes a backend header: " << chain;
}

// The checker itself: a forbidden header is found through a chain of ordinary ones.
TEST(IncludeGraph, TheCheckerFindsAHeaderReachedThroughAnother) {
  EXPECT_TRUE(forbidden({"codegen/cpu/emit_row.h", false}));
  EXPECT_TRUE(forbidden({"oneapi/dnnl/dnnl.hpp", true}));
  EXPECT_FALSE(forbidden({"loops/row_kernel.h", false}));
  EXPECT_FALSE(forbidden({"vector", true}));
  std::set<std::string> seen;
  std::vector<std::string> bad;
  walk(kSrc / "backend" / "cpu" / "cpu_backend.cpp", "cpu_backend.cpp", seen, bad);
  EXPECT_FALSE(bad.empty());  // the CPU backend reaches the code generator, as it should
}

}  // namespace
