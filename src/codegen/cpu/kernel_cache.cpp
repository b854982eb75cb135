#include "codegen/cpu/kernel_cache.h"

#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <pwd.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/cpu/content_hash.h"
#include "codegen/cpu/file_io.h"
#include "support/error.h"

namespace kiln::codegen::cpu {
namespace fs = std::filesystem;
namespace {

constexpr int kMetaFormat = 1;
constexpr off_t kMaxMetaBytes = 64 << 10;

bool is_key(const std::string& key) {
  return key.size() == 32 && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

void check_key(const std::string& key) {
  KILN_INTERNAL_CHECK(is_key(key), "kernel cache: '{}' is not a 32-hex-digit key", key);
}

// The cache holds code kiln will run, so only its owner may write to it.
void check_private_dir(const fs::path& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    user_error("kernel cache directory '{}': {}", dir.string(), std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) user_error("kernel cache directory '{}' is not a directory", dir.string());
  if (st.st_uid != ::geteuid())
    user_error("kernel cache directory '{}' belongs to uid {}, not to you (uid {}): refusing to load code "
               "from it (set cache_dir / KILN_CACHE_DIR to a folder of your own)",
               dir.string(), st.st_uid, ::geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    user_error("kernel cache directory '{}' is writable by group or others (mode {:04o}): refusing to load "
               "code from it (chmod 700 it, or set cache_dir / KILN_CACHE_DIR elsewhere)",
               dir.string(), st.st_mode & 07777);
}

// mkdir -p with mode 0700 for every folder it creates.
void make_private_dirs(const fs::path& dir) {
  fs::path partial;
  for (const fs::path& part : dir) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) == 0) {
      ::chmod(partial.c_str(), 0700);  // whatever the umask took away
    } else if (errno != EEXIST) {
      user_error("kernel cache directory '{}': cannot create '{}': {}", dir.string(), partial.string(),
                 std::strerror(errno));
    }
  }
}

std::string random_hex() {
  std::random_device rd;
  uint64_t r = (uint64_t{rd()} << 32) ^ rd();
  return fmt::format("{:016x}", r);
}

std::string file_safe(std::string_view name) {
  std::string s;
  for (char c : name.substr(0, 64)) s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return s.empty() ? "kernel" : s;
}

// Staging folders left behind by a process killed mid-compile. An hour is far longer than any compile,
// so a folder that old belongs to no live compile.
void sweep_stale_staging(const fs::path& shard) {
  std::error_code ec;
  const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (fs::directory_iterator it(shard, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(".tmp-", 0) != 0) continue;
    std::error_code entry_ec;
    fs::file_time_type written = fs::last_write_time(it->path(), entry_ec);
    if (!entry_ec && written < cutoff) fs::remove_all(it->path(), entry_ec);
  }
}

}  // namespace

std::string kernel_cache_key(const CacheKeyInputs& in) {
  KILN_INTERNAL_CHECK(in.flags != nullptr, "kernel_cache_key: no flags given");
  FieldHasher h;
  h.add("kiln-cpu-kernel-v1");
  h.add(in.source);
  h.add(in.compiler_identity);
  h.add(std::to_string(in.flags->size()));
  for (const std::string& f : *in.flags) h.add(f);
  h.add(to_string(in.features));
  h.add(in.kiln_version);
  h.add(in.code_key);
  return h.finish().hex();
}

fs::path resolve_cache_dir(const Options& options) {
  if (!options.cache_dir.empty()) return fs::absolute(options.cache_dir);
  // The documented default location is the one place codegen reads the environment.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') return fs::path(xdg) / "kiln";
  const char* home = std::getenv("HOME");
  if (!home || home[0] != '/') {
    struct passwd* pw = ::getpwuid(::geteuid());
    home = pw ? pw->pw_dir : nullptr;
  }
  if (!home || home[0] != '/')
    user_error("no folder for the kernel cache: set cache_dir (KILN_CACHE_DIR), XDG_CACHE_HOME or HOME");
  return fs::path(home) / ".cache" / "kiln";
}

KernelCache::KernelCache(fs::path dir, bool durable)
    : dir_(fs::absolute(std::move(dir)).lexically_normal()), durable_(durable) {
  if (!dir_.has_filename()) dir_ = dir_.parent_path();  // drop a trailing '/'
  make_private_dirs(dir_);
  check_private_dir(dir_);
}

fs::path KernelCache::shard_dir(const std::string& key, bool create) const {
  check_key(key);
  fs::path shard = dir_ / key.substr(0, 2);
  if (create && ::mkdir(shard.c_str(), 0700) == 0) ::chmod(shard.c_str(), 0700);
  if (create || fs::exists(shard)) check_private_dir(shard);
  return shard;
}

fs::path KernelCache::so_path(const std::string& key) const {
  check_key(key);
  return dir_ / key.substr(0, 2) / (key + ".so");
}

fs::path KernelCache::meta_path(const std::string& key) const {
  check_key(key);
  return dir_ / key.substr(0, 2) / (key + ".meta");
}

std::optional<KernelCache::Entry> KernelCache::lookup(const std::string& key, std::string* why_missed) const {
  auto miss = [&](std::string why) -> std::optional<Entry> {
    if (why_missed) *why_missed = std::move(why);
    return std::nullopt;
  };
  shard_dir(key, false);
  const uid_t me = ::geteuid();

  std::string meta_text;
  {
    OwnedFile meta = open_own_file(meta_path(key), kMaxMetaBytes);
    if (!meta.error.empty()) return miss("meta: " + meta.error);
    if (!read_all(meta.fd.get(), meta_text)) return miss("meta: read error");
  }
  nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) return miss("meta: not a JSON object");
  auto field = [&](const char* name) -> const nlohmann::json* {
    auto it = meta.find(name);
    return it == meta.end() ? nullptr : &*it;
  };
  const nlohmann::json* format = field("format");
  const nlohmann::json* meta_key = field("key");
  const nlohmann::json* version = field("kiln_version");
  const nlohmann::json* uid = field("uid");
  const nlohmann::json* so_hash = field("so_xxh3");
  const nlohmann::json* so_size = field("so_size");
  const nlohmann::json* command = field("command");
  if (!format || !format->is_number_integer() || *format != kMetaFormat) return miss("meta: unknown format");
  if (!meta_key || !meta_key->is_string() || *meta_key != key) return miss("meta: key mismatch");
  if (!version || !version->is_string() || *version != KILN_VERSION) return miss("meta: other kiln version");
  if (!uid || !uid->is_number_unsigned() || uid->get<uint64_t>() != me) return miss("meta: other owner");
  if (!so_hash || !so_hash->is_string()) return miss("meta: no .so hash");
  if (!so_size || !so_size->is_number_unsigned()) return miss("meta: no .so size");
  if (!command || !command->is_string()) return miss("meta: no command");

  OwnedFile so = open_own_file(so_path(key), -1);
  if (!so.error.empty()) return miss(".so: " + so.error);
  if (static_cast<uint64_t>(so.size) != so_size->get<uint64_t>()) return miss(".so: size mismatch");
  std::optional<FileDigest> digest = digest_fd(so.fd.get());
  if (!digest) return miss(".so: read error");
  if (digest->size != so_size->get<uint64_t>() || digest->hash.hex() != so_hash->get<std::string>())
    return miss(".so: hash mismatch");
  return Entry{so_path(key), command->get<std::string>()};
}

fs::path KernelCache::make_staging_dir(const std::string& key) const {
  fs::path shard = shard_dir(key, true);
  for (int attempt = 0; attempt < 16; ++attempt) {
    fs::path staging = shard / fmt::format(".tmp-{}-{}-{}", key, ::getpid(), random_hex());
    if (::mkdir(staging.c_str(), 0700) == 0) return staging;
    if (errno != EEXIST)
      user_error("kernel cache: cannot create '{}': {}", staging.string(), std::strerror(errno));
  }
  internal_error("kernel cache: no unique staging folder in '{}'", shard.string());
}

fs::path KernelCache::publish(const std::string& key, const fs::path& staged_so, const std::string& command) const {
  fs::path shard = shard_dir(key, true);
  // Only the owner may change the .so (an umask of 002 would otherwise leave it group-writable).
  ScopedFd so(::open(staged_so.c_str(), O_RDONLY | O_CLOEXEC));
  if (so.get() < 0 || ::fchmod(so.get(), 0700) != 0 || (durable_ && ::fsync(so.get()) != 0))
    user_error("kernel cache: cannot finish '{}': {}", staged_so.string(), std::strerror(errno));
  std::optional<FileDigest> digest = digest_fd(so.get());
  if (!digest) user_error("kernel cache: cannot read '{}': {}", staged_so.string(), std::strerror(errno));
  so.reset();

  nlohmann::json meta = {{"format", kMetaFormat},
                         {"key", key},
                         {"kiln_version", KILN_VERSION},
                         {"uid", static_cast<uint64_t>(::geteuid())},
                         {"so_xxh3", digest->hash.hex()},
                         {"so_size", digest->size},
                         {"command", command}};
  fs::path staged_meta = staged_so.parent_path() / (key + ".meta");
  write_private_file(staged_meta, meta.dump(1) + "\n", durable_);

  // The .so first, the meta last: a reader that finds the meta finds the complete .so it describes.
  fs::path final_so = so_path(key);
  if (::rename(staged_so.c_str(), final_so.c_str()) != 0)
    user_error("kernel cache: cannot rename into '{}': {}", final_so.string(), std::strerror(errno));
  if (::rename(staged_meta.c_str(), meta_path(key).c_str()) != 0)
    user_error("kernel cache: cannot rename into '{}': {}", meta_path(key).string(), std::strerror(errno));
  if (durable_) fsync_dir(shard);
  sweep_stale_staging(shard);
  return final_so;
}

fs::path KernelCache::keep_failed_source(const std::string& name, const std::string& key, std::string_view source,
                                         std::string_view compiler_output) const {
  check_key(key);
  fs::path failed = dir_ / "failed";
  if (::mkdir(failed.c_str(), 0700) == 0) ::chmod(failed.c_str(), 0700);
  check_private_dir(failed);
  fs::path base = failed / (file_safe(name) + "-" + key);
  fs::path cpp = base;
  cpp += ".cpp";
  fs::path log = base;
  log += ".log";
  write_file_synced(cpp, source);
  write_file_synced(log, compiler_output);
  return cpp;
}

}  // namespace kiln::codegen::cpu
