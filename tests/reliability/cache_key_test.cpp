// Every setting that changes generated code is part of the kernel cache key: flipping it to another
// valid value compiles again (a miss), flipping it back finds the first entry (a hit). The settings
// come from the X-macro table, so a new affects_code setting is covered (or fails here until it is
// given a valid alternate value below). The CPU feature set is part of the key too.
#include <climits>
#include <cstdlib>
#include <gtest/gtest.h>
#include <optional>
#include <sstream>

#include "codegen/cpu/compile_kernels.h"
#include "codegen/cpu/toolchain.h"
#include "reliability_util.h"

namespace kiln::reliability {
namespace {

using codegen::cpu::build_kernels;
using codegen::cpu::BuiltKernel;
using codegen::cpu::compiler_run_count;
using codegen::cpu::CpuFeatures;
using codegen::cpu::detect_cpu_features;
using codegen::cpu::KernelSource;

KernelSource scale_kernel() {
  std::string code = std::string(codegen::cpu::kKernelExportPrelude) +
                     "KILN_EXPORT void scale(float* x, long n) {\n"
                     "#pragma omp parallel for simd\n"
                     "  for (long i = 0; i < n; ++i) x[i] *= 2.0f;\n"
                     "}\n";
  return {"scale", code, {"scale"}};
}

// The same compiler under another name: `cxx` (a name looked up on PATH, or a path) resolved to its
// real path, or else a common alias of it; nullopt if none differs from `cxx`.
std::optional<std::string> other_path_to_compiler(const std::string& cxx) {
  std::vector<fs::path> candidates;
  if (cxx.find('/') != std::string::npos) {
    candidates.push_back(cxx);
  } else if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty()) candidates.push_back(fs::path(dir) / cxx);
  }
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (!fs::exists(c, ec)) continue;
    fs::path real = fs::canonical(c, ec);
    if (!ec && real.string() != cxx) return real.string();
    break;
  }
  for (const char* alias : {"/usr/bin/c++", "/usr/bin/g++"})
    if (alias != cxx && fs::exists(alias)) return std::string(alias);
  return std::nullopt;
}

// Another valid value for a setting, as text for Options::set. Settings needing a particular value
// are listed by name; the rest get one by type. nullopt: none known (the test then asks for one).
std::optional<std::string> explicit_alternate(const std::string& name, const Options& defaults) {
  if (name == "cxx") return other_path_to_compiler(defaults.cxx);
  // A setting with a list of accepted words: the first word that is not its default.
  for (const SettingInfo& s : settings_table()) {
    if (s.name != name) continue;
    std::string accepted = s.accepted;
    size_t colon = accepted.find(": ");
    if (colon == std::string::npos) return std::nullopt;
    std::stringstream words(accepted.substr(colon + 2));
    for (std::string w; words >> w;)
      if (w != s.default_value && !w.ends_with(":N")) return w;
  }
  return std::nullopt;
}
std::optional<std::string> alternate_by_type(int64_t v) { return std::to_string(v == INT64_MAX ? v - 1 : v + 1); }
[[maybe_unused]] std::optional<std::string> alternate_by_type(bool v) { return v ? "0" : "1"; }
[[maybe_unused]] std::optional<std::string> alternate_by_type(double v) { return std::to_string(v * 2 + 1); }
std::optional<std::string> alternate_by_type(const std::string&) { return std::nullopt; }

struct Setting {
  std::string name;
  bool affects_code;
  std::optional<std::string> alternate;
};

std::vector<Setting> all_settings() {
  const Options defaults;
  std::vector<Setting> r;
#define KILN_SETTING(name, type, def, env, affects_code, accepted, help)                                \
  {                                                                                            \
    std::optional<std::string> alt = explicit_alternate(#name, defaults);                      \
    r.push_back({#name, affects_code, alt ? alt : alternate_by_type(defaults.name)});          \
  }
#include "kiln/settings.def"
#undef KILN_SETTING
  return r;
}

// Builds the kernel for this CPU with `o` and reports whether the compiler ran.
struct Build {
  BuiltKernel kernel;
  bool compiled;
};
Build build(const Options& o, const CpuFeatures& features = detect_cpu_features()) {
  uint64_t before = compiler_run_count();
  std::vector<BuiltKernel> built = build_kernels({scale_kernel()}, o, features);
  return {built.at(0), compiler_run_count() != before};
}

TEST(CacheKey, EverySettingThatAffectsCodeIsInTheKey) {
  TempDir dir;
  Options base;
  base.cache_dir = (dir.root() / "cache").string();
  base.compile_jobs = 1;
  Build first = build(base);
  ASSERT_TRUE(first.compiled);
  ASSERT_FALSE(first.kernel.cache_hit);

  int checked = 0;
  for (const Setting& s : all_settings()) {
    if (!s.affects_code) continue;
    SCOPED_TRACE("setting " + s.name);
    ASSERT_TRUE(s.alternate.has_value())
        << "setting '" << s.name << "' changes code: give it a valid alternate value in explicit_alternate()";
    Options flipped = base;
    flipped.set(s.name, *s.alternate);
    EXPECT_NE(flipped.code_key(), base.code_key()) << s.name << "=" << *s.alternate;

    Build miss = build(flipped);
    EXPECT_TRUE(miss.compiled) << s.name << "=" << *s.alternate << " found the default's kernel";
    EXPECT_FALSE(miss.kernel.cache_hit);
    EXPECT_NE(miss.kernel.key, first.kernel.key);

    Build back = build(base);
    EXPECT_FALSE(back.compiled) << "flipping " << s.name << " back must find the first entry";
    EXPECT_TRUE(back.kernel.cache_hit);
    EXPECT_EQ(back.kernel.key, first.kernel.key);

    Build again = build(flipped);  // and the flipped entry stays too
    EXPECT_FALSE(again.compiled);
    EXPECT_EQ(again.kernel.key, miss.kernel.key);
    ++checked;
  }
  std::printf("[ info ] %d affects_code setting(s) flipped\n", checked);
  EXPECT_GT(checked, 0) << "settings.def marks no setting affects_code: cxx at least changes code";
}

// The other direction: a setting that does not change code must not split the cache.
TEST(CacheKey, SettingsThatDoNotAffectCodeLeaveTheKeyAlone) {
  const Options base;
  for (const Setting& s : all_settings()) {
    if (s.affects_code) continue;
    Options flipped = base;
    flipped.set(s.name, s.alternate.value_or("reliability-test"));
    EXPECT_EQ(flipped.code_key(), base.code_key()) << "setting " << s.name;
  }
}

// Kernels for a smaller CPU are different code: different key, a compile of their own, and the entry
// built for this CPU is still found afterwards.
TEST(CacheKey, CpuFeaturesAreInTheKey) {
  TempDir dir;
  Options o;
  o.cache_dir = (dir.root() / "cache").string();
  o.compile_jobs = 1;
  const CpuFeatures host = detect_cpu_features();
  // The biggest tier below this CPU's: AVX2 on an AVX-512 machine, else the baseline.
  const CpuFeatures smaller = host.has_avx512_tier() ? CpuFeatures::avx2_tier() : CpuFeatures::baseline();
  if (smaller == host) GTEST_SKIP() << "this CPU has no vector extension to leave out";

  Build native = build(o, host);
  ASSERT_TRUE(native.compiled);
  Build narrow = build(o, smaller);
  EXPECT_TRUE(narrow.compiled) << "kernels for " << to_string(smaller) << " must not reuse the "
                               << to_string(host) << " entry";
  EXPECT_NE(narrow.kernel.key, native.kernel.key);
  EXPECT_NE(narrow.kernel.command, native.kernel.command) << "the ISA flags differ";
  Build native_again = build(o, host);
  EXPECT_FALSE(native_again.compiled);
  EXPECT_EQ(native_again.kernel.key, native.kernel.key);
  Build narrow_again = build(o, smaller);
  EXPECT_FALSE(narrow_again.compiled);
  EXPECT_EQ(narrow_again.kernel.key, narrow.kernel.key);
}

}  // namespace
}  // namespace kiln::reliability
