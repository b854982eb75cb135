// The kernel cache: keys, folder permissions, and entries that must never be trusted.
#include <chrono>
#include <functional>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/cpu/kernel_cache.h"
#include "codegen_test_util.h"
#include "kiln/errors.h"

namespace kiln::codegen::cpu::testing {
namespace {

mode_t mode_of(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

TEST(KernelCacheKey, EveryIngredientChangesTheKey) {
  std::vector<std::string> flags = compile_flags(CpuFeatures::avx2_tier());
  std::vector<std::string> more_flags = flags;
  more_flags.push_back("-DX");
  CacheKeyInputs base{"int f();", "identity-a", &flags, CpuFeatures::avx2_tier(), "1.0", "cxx=c++;"};
  std::string k = kernel_cache_key(base);
  EXPECT_EQ(k.size(), 32u);
  EXPECT_EQ(k.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(kernel_cache_key(base), k) << "deterministic";

  std::vector<CacheKeyInputs> variants(6, base);
  variants[0].source = "int g();";
  variants[1].compiler_identity = "identity-b";
  variants[2].flags = &more_flags;
  variants[3].features = CpuFeatures::baseline();
  variants[4].kiln_version = "1.1";
  variants[5].code_key = "cxx=g++;";
  std::set<std::string> keys = {k};
  for (const CacheKeyInputs& v : variants) EXPECT_TRUE(keys.insert(kernel_cache_key(v)).second);

  // Fields are length-prefixed: moving text from one field to the next changes the key.
  CacheKeyInputs shifted = base;
  shifted.source = "int f();identity-a";
  shifted.compiler_identity = "";
  EXPECT_NE(kernel_cache_key(shifted), k);
}

TEST(KernelCacheDir, CreatedPrivateWithParents) {
  TempDir dir;
  fs::path nested = dir.root() / "a" / "b" / "cache";
  mode_t old_umask = ::umask(0277);  // mkdir alone would give 0500: kiln sets 0700 itself
  KernelCache cache(nested);
  ::umask(old_umask);
  EXPECT_EQ(cache.dir(), nested);
  EXPECT_EQ(mode_of(nested), 0700u);
  EXPECT_EQ(mode_of(dir.root() / "a"), 0700u);
  KernelCache again(nested);  // an existing private folder is fine
  EXPECT_EQ(mode_of(nested), 0700u);

  Options o;
  o.cache_dir = "relative/cache";
  EXPECT_TRUE(resolve_cache_dir(o).is_absolute());
}

TEST(KernelCacheDir, DefaultsToXdgCacheHome) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", "/some/xdg", 1);
  EXPECT_EQ(resolve_cache_dir(Options{}), fs::path("/some/xdg/kiln"));
  Options o;
  o.cache_dir = "/explicit/dir";
  EXPECT_EQ(resolve_cache_dir(o), fs::path("/explicit/dir"));  // the setting wins
  if (old) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else ::unsetenv("XDG_CACHE_HOME");
}

TEST(KernelCacheDir, WritableByOthersIsRefused) {
  TempDir dir;
  for (mode_t mode : {0770, 0702, 0777}) {
    fs::path cache = dir.root() / ("c" + std::to_string(mode));
    ASSERT_EQ(::mkdir(cache.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(cache.c_str(), mode), 0);
    try {
      KernelCache c(cache);
      FAIL() << "mode " << std::oct << mode << " accepted";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(cache.string()), std::string::npos) << e.what();
    }
    EXPECT_EQ(mode_of(cache), mode) << "kiln must not quietly change the user's folder";
  }
  // Through the driver: refused before anything is compiled.
  Options o;
  o.cache_dir = (dir.root() / "c504").string();  // 0770 == 504
  uint64_t runs = compiler_run_count();
  EXPECT_THROW(compile_kernels({add_kernel(1)}, o), UserError);
  EXPECT_EQ(compiler_run_count(), runs);
  // A shard folder that others may write is refused as well.
  KernelCache good(dir.cache());
  fs::path shard = dir.cache() / "ab";
  ASSERT_EQ(::mkdir(shard.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(shard.c_str(), 0777), 0);
  EXPECT_THROW(good.lookup("ab" + std::string(30, '0')), UserError);
}

TEST(KernelCacheDir, ForeignOwnerIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  TempDir dir;
  ASSERT_EQ(::mkdir(dir.cache().c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.cache().c_str(), 65534, 65534), 0);
  EXPECT_THROW(KernelCache c(dir.cache()), UserError);
}

// Builds one entry (not loaded), then checks that every kind of damage makes it a miss.
TEST(KernelCacheEntries, DamagedEntriesAreMissesAndRebuilt) {
  TempDir dir;
  Options o = options_for(dir);
  std::vector<BuiltKernel> built = build_kernels({add_kernel(21)}, o, detect_cpu_features());
  KernelCache cache(dir.cache());
  const std::string key = built[0].key;
  const fs::path so = cache.so_path(key), meta = cache.meta_path(key);
  const std::string so_bytes = read_file(so), meta_bytes = read_file(meta);
  ASSERT_GT(so_bytes.size(), 1000u);
  ASSERT_TRUE(cache.lookup(key).has_value());
  EXPECT_EQ(mode_of(so) & 077, 0u);
  EXPECT_EQ(mode_of(meta) & 077, 0u);

  auto edit_meta = [&](const std::function<void(nlohmann::json&)>& f) {
    nlohmann::json j = nlohmann::json::parse(meta_bytes);
    f(j);
    write_file(meta, j.dump());
  };
  struct Damage {
    const char* what;
    std::function<void()> apply;
    const char* reason;  // expected in lookup's explanation
  };
  std::string garbled = so_bytes;
  garbled[garbled.size() / 2] ^= 0x5a;
  std::vector<Damage> damages = {
      {"truncated .so", [&] { write_file(so, so_bytes.substr(0, so_bytes.size() / 2)); }, "size mismatch"},
      {"empty .so", [&] { write_file(so, ""); }, "size mismatch"},
      {"garbled .so byte", [&] { write_file(so, garbled); }, "hash mismatch"},
      {"missing .so", [&] { fs::remove(so); }, ".so: missing"},
      {"missing meta", [&] { fs::remove(meta); }, "meta: missing"},
      {"garbled meta", [&] { write_file(meta, "{\"format\": 1, \"key\": \x01\x02 garbage"); }, "not a JSON object"},
      {"truncated meta", [&] { write_file(meta, meta_bytes.substr(0, meta_bytes.size() / 2)); }, "not a JSON"},
      {"meta not an object", [&] { write_file(meta, "[1,2,3]"); }, "not a JSON object"},
      {"other kiln version", [&] { edit_meta([](auto& j) { j["kiln_version"] = "0.0.0-other"; }); },
       "other kiln version"},
      {"other uid in meta", [&] { edit_meta([](auto& j) { j["uid"] = ::geteuid() + 1; }); }, "other owner"},
      {"other key in meta", [&] { edit_meta([](auto& j) { j["key"] = std::string(32, 'f'); }); }, "key mismatch"},
      {"wrong hash in meta", [&] { edit_meta([](auto& j) { j["so_xxh3"] = std::string(32, '0'); }); },
       "hash mismatch"},
      {"wrong size in meta", [&] { edit_meta([](auto& j) { j["so_size"] = 12; }); }, "size mismatch"},
      {"negative size", [&] { edit_meta([](auto& j) { j["so_size"] = -1; }); }, "no .so size"},
      {"unknown format", [&] { edit_meta([](auto& j) { j["format"] = 99; }); }, "unknown format"},
      {"field of wrong type", [&] { edit_meta([](auto& j) { j["command"] = 5; }); }, "no command"},
      {"group-writable .so", [&] { fs::permissions(so, fs::perms::group_write, fs::perm_options::add); },
       "writable by group"},
      {"meta is a symlink",
       [&] {
         write_file(dir.root() / "elsewhere.meta", meta_bytes);
         fs::remove(meta);
         fs::create_symlink(dir.root() / "elsewhere.meta", meta);
       },
       "meta:"},
  };
  if (::geteuid() == 0) {
    damages.push_back({"foreign-owned .so", [&] { ASSERT_EQ(::chown(so.c_str(), 65534, 65534), 0); },
                       "owned by another user"});
    damages.push_back({"foreign-owned meta", [&] { ASSERT_EQ(::chown(meta.c_str(), 65534, 65534), 0); },
                       "owned by another user"});
  }
  for (const Damage& d : damages) {
    write_file(so, so_bytes);
    write_file(meta, meta_bytes);
    ASSERT_TRUE(cache.lookup(key).has_value()) << "restored before " << d.what;
    d.apply();
    std::string why;
    EXPECT_FALSE(cache.lookup(key, &why).has_value()) << d.what;
    EXPECT_NE(why.find(d.reason), std::string::npos) << d.what << ": " << why;
  }

  // The last damage still in place; through the driver it is a miss that gets rebuilt and loaded.
  write_file(so, garbled);
  uint64_t runs = compiler_run_count();
  std::vector<CompiledKernel> ks = compile_kernels({add_kernel(21)}, o);
  EXPECT_EQ(compiler_run_count(), runs + 1);
  EXPECT_FALSE(ks[0].cache_hit);
  EXPECT_EQ(read_file(so), so_bytes) << "rebuilt from the same source";
  EXPECT_TRUE(cache.lookup(key).has_value());
  EXPECT_EQ(reinterpret_cast<IdFn*>(ks[0].entry("kernel_id"))(), 21);
}

TEST(KernelCacheEntries, StaleStagingFoldersAreSwept) {
  TempDir dir;
  Options o = options_for(dir);
  std::vector<BuiltKernel> built = build_kernels({add_kernel(25)}, o, detect_cpu_features());
  fs::path shard = built[0].so_path.parent_path();
  fs::path stale = shard / ".tmp-left-by-a-killed-compile", fresh = shard / ".tmp-compile-in-progress";
  fs::create_directories(stale / "inner");
  fs::create_directories(fresh);
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(2));
  fs::remove(built[0].so_path.replace_extension(".meta"));  // a miss, so the next call publishes again
  EXPECT_FALSE(build_kernels({add_kernel(25)}, o, detect_cpu_features())[0].cache_hit);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh)) << "a recent staging folder may belong to a live compile";
}

// A valid shared object that is not the one the meta describes is never loaded.
TEST(KernelCacheEntries, SwappedSharedObjectIsNotLoaded) {
  TempDir dir;
  Options o = options_for(dir);
  std::vector<BuiltKernel> built = build_kernels({add_kernel(31), add_kernel(32)}, o, detect_cpu_features());
  fs::copy_file(built[0].so_path, built[1].so_path, fs::copy_options::overwrite_existing);
  uint64_t runs = compiler_run_count();
  std::vector<CompiledKernel> ks = compile_kernels({add_kernel(32)}, o);
  EXPECT_EQ(compiler_run_count(), runs + 1);
  EXPECT_EQ(reinterpret_cast<IdFn*>(ks[0].entry("kernel_id"))(), 32) << "kernel 31's code was loaded";
}

TEST(LoadedLibrary, LoadTwiceMoveAndMissingSymbol) {
  TempDir dir;
  Options o = options_for(dir);
  std::vector<BuiltKernel> built = build_kernels({add_kernel(41)}, o, detect_cpu_features());
  LoadedLibrary a(built[0].so_path);
  LoadedLibrary b(built[0].so_path);
  EXPECT_EQ(a.symbol("kernel_id"), b.symbol("kernel_id"));
  EXPECT_EQ(a.function<IdFn>("kernel_id")(), 41);
  { LoadedLibrary drop = std::move(a); }  // closes one reference
  EXPECT_FALSE(a.is_open());
  LoadedLibrary c;
  c = std::move(b);
  EXPECT_FALSE(b.is_open());
  EXPECT_EQ(c.function<IdFn>("kernel_id")(), 41);  // still mapped through the other reference
  try {
    c.symbol("absent_entry");
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("absent_entry"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(built[0].so_path.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(LoadedLibrary(dir.root() / "missing.so"), InternalError);
}

}  // namespace
}  // namespace kiln::codegen::cpu::testing
