// The on-disk cache of compiled kernels, addressed by content.
//
// Layout: <dir>/<2 hex>/<32 hex>.so and <32 hex>.meta (JSON: key, kiln version, uid, the .so's XXH3-128
// and size, the compile command). An entry is published by renaming the .so and then the meta into
// place, so a reader sees either no meta (a miss) or a meta that describes a complete .so. Anything
// that does not check out (missing, truncated, garbled, foreign owner or version, hash mismatch) is a
// miss and gets rebuilt; it is never loaded. The directory must be the user's own and not writable by
// anyone else: the cache holds code kiln will run.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/cpu/cpu_features.h"
#include "kiln/options.h"

namespace kiln::codegen::cpu {

// Everything that changes the bytes of a compiled kernel; the key is XXH3-128 of all of it (32 hex).
struct CacheKeyInputs {
  std::string_view source;
  std::string_view compiler_identity;  // hash of `<cxx> --version`
  const std::vector<std::string>* flags = nullptr;
  CpuFeatures features;
  std::string_view kiln_version = KILN_VERSION;
  std::string_view code_key;  // Options::code_key()
};
std::string kernel_cache_key(const CacheKeyInputs& inputs);

// Options::cache_dir, or else $XDG_CACHE_HOME/kiln, or else ~/.cache/kiln; always absolute.
std::filesystem::path resolve_cache_dir(const Options& options);

class KernelCache {
 public:
  // Creates `dir` (mode 0700, and missing parents too) or checks the existing one: a directory not
  // owned by this user, or writable by group or others, is a user error that names it.
  // `durable` false: publish() skips its fsyncs (a throwaway folder, such as a saved model's unpacked
  // kernels, need not survive a crash).
  explicit KernelCache(std::filesystem::path dir, bool durable = true);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path so_path(const std::string& key) const;
  std::filesystem::path meta_path(const std::string& key) const;

  struct Entry {
    std::filesystem::path so_path;
    std::string command;  // the command that built it
  };
  // A verified entry, or nullopt (a miss); `why_missed` (if given) says what did not check out.
  std::optional<Entry> lookup(const std::string& key, std::string* why_missed = nullptr) const;

  // A fresh private folder beside the entry, for one compile's source and output (pid + random name).
  std::filesystem::path make_staging_dir(const std::string& key) const;

  // Moves `staged_so` into place as the entry for `key` and writes its meta last. Safe against other
  // processes publishing the same key at the same time: every rename is atomic and the contents agree.
  std::filesystem::path publish(const std::string& key, const std::filesystem::path& staged_so,
                                const std::string& command) const;

  // Keeps a failing kernel's source (and the compiler's output) for the error message; returns its path.
  std::filesystem::path keep_failed_source(const std::string& name, const std::string& key,
                                           std::string_view source, std::string_view compiler_output) const;

 private:
  std::filesystem::path shard_dir(const std::string& key, bool create) const;
  std::filesystem::path dir_;
  bool durable_ = true;
};

}  // namespace kiln::codegen::cpu
