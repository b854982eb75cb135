// Compiling, caching and loading generated kernels end to end.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <set>
#include <thread>
#include <vector>

#include "codegen/cpu/kernel_cache.h"
#include "codegen_test_util.h"
#include "kiln/errors.h"

namespace kiln::codegen::cpu::testing {
namespace {

void expect_add_works(const CompiledKernel& k) {
  const long n = 1003;  // odd, so a vector remainder runs too
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (long i = 0; i < n; ++i) {
    a[i] = 0.5f * static_cast<float>(i);
    b[i] = 1000.0f - static_cast<float>(i);
  }
  a[5] = NAN;
  b[6] = INFINITY;
  reinterpret_cast<AddFn*>(k.entry("add"))(a.data(), b.data(), c.data(), n);
  for (long i = 0; i < n; ++i) {
    if (i == 5) EXPECT_TRUE(std::isnan(c[i]));
    else if (i == 6) EXPECT_EQ(c[i], INFINITY);
    else ASSERT_EQ(c[i], a[i] + b[i]) << "at " << i;
  }
}

TEST(CompileKernels, CompilesLoadsRunsThenHitsTheCache) {
  TempDir dir;
  Options o = options_for(dir);
  uint64_t runs = compiler_run_count();
  std::vector<CompiledKernel> first = compile_kernels({add_kernel(1)}, o);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(compiler_run_count(), runs + 1);
  EXPECT_FALSE(first[0].cache_hit);
  EXPECT_EQ(first[0].name, "add_1");
  EXPECT_EQ(first[0].key.size(), 32u);
  EXPECT_TRUE(fs::exists(first[0].so_path));
  EXPECT_EQ(first[0].so_path, dir.cache() / first[0].key.substr(0, 2) / (first[0].key + ".so"));
  EXPECT_TRUE(fs::exists(dir.cache() / first[0].key.substr(0, 2) / (first[0].key + ".meta")));
  EXPECT_NE(first[0].command.find("-fno-fast-math"), std::string::npos) << first[0].command;
  EXPECT_EQ(first[0].command.find("-ffast-math"), std::string::npos) << first[0].command;
  EXPECT_EQ(first[0].command.find("-march"), std::string::npos) << first[0].command;
  expect_add_works(first[0]);
  EXPECT_EQ(reinterpret_cast<IdFn*>(first[0].entry("kernel_id"))(), 1);
  // -fvisibility=hidden: only the KILN_EXPORT entry points are visible.
  EXPECT_EQ(first[0].library.find_symbol("hidden_helper"), nullptr);
  EXPECT_THROW(first[0].entry("not_listed"), InternalError);
  // The staging folder is gone once the entry is published.
  for (const auto& e : fs::directory_iterator(first[0].so_path.parent_path()))
    EXPECT_EQ(e.path().filename().string().rfind(".tmp-", 0), std::string::npos) << e.path();

  std::vector<CompiledKernel> second = compile_kernels({add_kernel(1)}, o);
  EXPECT_EQ(compiler_run_count(), runs + 1) << "a cache hit must not run the compiler";
  EXPECT_TRUE(second[0].cache_hit);
  EXPECT_EQ(second[0].key, first[0].key);
  EXPECT_EQ(second[0].command, first[0].command);  // recorded in the meta
  expect_add_works(second[0]);

  // An entry point the library lacks is a clear InternalError naming it (a cache hit: no compile).
  KernelSource wrong = add_kernel(1);
  wrong.entry_points.push_back("no_such_entry");
  try {
    compile_kernels({wrong}, o);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_entry"), std::string::npos) << e.what();
  }
  EXPECT_EQ(compiler_run_count(), runs + 1);
}

// The OpenMP runtime a kernel brings in must outlive the kernel: its idle worker threads still run
// runtime code after the last kernel is closed.
TEST(CompileKernels, OpenMPRuntimeStaysLoadedAfterTheLastKernelCloses) {
  TempDir dir;
  Options o = options_for(dir);
  {
    std::vector<CompiledKernel> ks = compile_kernels({add_kernel(3)}, o);
    expect_add_works(ks[0]);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // idle workers spin in libgomp meanwhile
  void* gomp = ::dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(gomp, nullptr) << "libgomp was unloaded while its worker threads live";
  if (gomp) ::dlclose(gomp);
}

TEST(CompileKernels, EachKeyIngredientMisses) {
  TempDir dir;
  Options o = options_for(dir);
  const CpuFeatures avx2 = CpuFeatures::avx2_tier();
  if (!avx2.subset_of(detect_cpu_features())) GTEST_SKIP() << "this CPU has no AVX2";
  uint64_t runs = compiler_run_count();
  std::vector<CompiledKernel> base = compile_kernels({add_kernel(1)}, o, avx2);
  EXPECT_NE(base[0].command.find("-mavx2"), std::string::npos);
  EXPECT_EQ(base[0].command.find("-mavx512f"), std::string::npos);
  EXPECT_EQ(compiler_run_count(), runs + 1);

  std::set<std::string> keys = {base[0].key};
  auto expect_miss = [&](std::vector<CompiledKernel> got, const char* what) {
    EXPECT_FALSE(got[0].cache_hit) << what;
    EXPECT_TRUE(keys.insert(got[0].key).second) << what << ": key seen before";
    expect_add_works(got[0]);
  };
  expect_miss(compile_kernels({add_kernel(2)}, o, avx2), "source");
  EXPECT_EQ(compiler_run_count(), runs + 2);

  Options other_cxx = o;
  other_cxx.cxx = "g++";  // the cxx setting is code-affecting: it is in Options::code_key()
  ASSERT_NE(other_cxx.code_key(), o.code_key());
  expect_miss(compile_kernels({add_kernel(1)}, other_cxx, avx2), "cxx setting");
  EXPECT_EQ(compiler_run_count(), runs + 3);

  std::vector<CompiledKernel> plain = compile_kernels({add_kernel(1)}, o, CpuFeatures::baseline());
  EXPECT_EQ(plain[0].command.find("-mavx"), std::string::npos) << plain[0].command;
  expect_miss(std::move(plain), "cpu features");
  EXPECT_EQ(compiler_run_count(), runs + 4);

  // Nothing changed: a hit again.
  EXPECT_TRUE(compile_kernels({add_kernel(1)}, o, avx2)[0].cache_hit);
  EXPECT_EQ(compiler_run_count(), runs + 4);
}

TEST(CompileKernels, BatchCompilesMissesInParallelAndSharesDuplicates) {
  TempDir dir;
  Options o = options_for(dir);
  uint64_t runs = compiler_run_count();
  std::vector<CompiledKernel> ks = compile_kernels({add_kernel(11), add_kernel(12), add_kernel(13), add_kernel(12)}, o);
  ASSERT_EQ(ks.size(), 4u);
  EXPECT_EQ(compiler_run_count(), runs + 3) << "the duplicate is compiled once";
  EXPECT_EQ(ks[1].so_path, ks[3].so_path);
  int want[] = {11, 12, 13, 12};
  for (size_t i = 0; i < ks.size(); ++i)
    EXPECT_EQ(reinterpret_cast<IdFn*>(ks[i].entry("kernel_id"))(), want[i]) << i;
  expect_add_works(ks[2]);
}

TEST(CompileKernels, CompileErrorIsInternalErrorWithMessageAndKeptSource) {
  TempDir dir;
  Options o = options_for(dir);
  KernelSource bad{"broken_kernel", "extern \"C\" void f() { this_is_not_declared(1); }\n", {"f"}};
  uint64_t runs = compiler_run_count();
  std::string message;
  try {
    compile_kernels({add_kernel(1), bad}, o);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    message = e.what();
  }
  EXPECT_EQ(compiler_run_count(), runs + 2);
  EXPECT_NE(message.find("broken_kernel"), std::string::npos) << message;
  EXPECT_NE(message.find("this_is_not_declared"), std::string::npos) << message;  // the compiler's own words
  size_t at = message.find("source kept at ");
  ASSERT_NE(at, std::string::npos) << message;
  size_t from = at + std::string("source kept at ").size();
  fs::path kept = message.substr(from, message.find('\n', from) - from);
  EXPECT_EQ(read_file(kept), bad.code);
  // Nothing was published for the broken kernel; the good one in the same batch was.
  size_t published = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.cache()))
    published += e.path().extension() == ".meta";
  EXPECT_EQ(published, 1u);
}

TEST(CompileKernels, CompilerSettingIsValidated) {
  TempDir dir;
  Options o = options_for(dir);
  uint64_t runs = compiler_run_count();
  for (const char* bad : {"g++ -O0", "c++;rm", "$(cc)", "`cc`", "-fsyntax-only", "", "cc|x", "a\nb", "c'c"}) {
    o.cxx = bad;
    EXPECT_THROW(compile_kernels({add_kernel(1)}, o), UserError) << bad;
  }
  o.cxx = "/nonexistent/kiln-test-compiler";
  try {
    compile_kernels({add_kernel(1)}, o);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/kiln-test-compiler"), std::string::npos) << e.what();
  }
  o = options_for(dir);
  o.compile_jobs = -1;
  EXPECT_THROW(compile_kernels({add_kernel(1)}, o), UserError);
  EXPECT_EQ(compiler_run_count(), runs);
}

TEST(CompileKernels, FlagsAreExplicitAndNeverFastMath) {
  for (const CpuFeatures& f : {CpuFeatures::baseline(), CpuFeatures::avx2_tier(), CpuFeatures::avx512_tier(),
                               detect_cpu_features()}) {
    std::vector<std::string> flags = compile_flags(f);
    for (const char* banned : {"-ffast-math", "-funsafe-math-optimizations", "-march=native", "-mtune=native",
                               "-Ofast"})
      EXPECT_EQ(std::count(flags.begin(), flags.end(), banned), 0) << banned;
    for (const char* needed : {"-O3", "-std=c++20", "-fPIC", "-shared", "-fopenmp", "-fno-fast-math",
                               "-fvisibility=hidden"})
      EXPECT_EQ(std::count(flags.begin(), flags.end(), needed), 1) << needed;
  }
  std::vector<std::string> avx512 = isa_flags(CpuFeatures::avx512_tier());
  EXPECT_EQ(avx512, (std::vector<std::string>{"-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mfma",
                                              "-mavx2"}));
  EXPECT_EQ(isa_flags(CpuFeatures::avx2_tier()), (std::vector<std::string>{"-mavx2", "-mfma"}));
  EXPECT_TRUE(isa_flags(CpuFeatures::baseline()).empty());
  CpuFeatures partial = CpuFeatures::avx512_tier();
  partial.avx512bw = false;  // an incomplete AVX-512 set falls back to the AVX2 tier
  EXPECT_EQ(isa_flags(partial), isa_flags(CpuFeatures::avx2_tier()));

  Options o;
  o.cxx = "/usr/bin/c++";
  std::string cmd = compile_command(o, CpuFeatures::avx2_tier(), "/tmp/my dir/k.cpp", "/tmp/out.so");
  EXPECT_EQ(cmd, "/usr/bin/c++ -O3 -std=c++20 -fPIC -shared -fopenmp -fno-fast-math -fno-math-errno -fvisibility=hidden "
                 "-mavx2 -mfma '/tmp/my dir/k.cpp' -o /tmp/out.so");
  EXPECT_EQ(to_string(CpuFeatures::baseline()), "baseline");
  EXPECT_EQ(to_string(CpuFeatures::avx2_tier()), "avx2,fma");
}

}  // namespace
}  // namespace kiln::codegen::cpu::testing
