// Small POSIX file helpers for the kernel cache: owned descriptors, checked opens, synced writes.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace kiln::codegen::cpu {

class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ~ScopedFd() { reset(); }
  ScopedFd(ScopedFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  ScopedFd& operator=(ScopedFd&& o) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  void reset();

 private:
  int fd_;
};

struct OwnedFile {
  ScopedFd fd;
  off_t size = 0;
  std::string error;  // empty when the file is usable
};
// Opens a regular file (not through a symlink) that this user owns and nobody else may write;
// `max_bytes` >= 0 also caps its size. Problems are reported in `error`, never thrown.
OwnedFile open_own_file(const std::filesystem::path& path, off_t max_bytes);

// Reads from fd to the end; false on a read error.
bool read_all(int fd, std::string& out);

// Creates or replaces `path` (mode 0600) with `data` and fsyncs it; a user error if that fails.
void write_file_synced(const std::filesystem::path& path, std::string_view data);
// The same, fsynced only when `sync` is true.
void write_private_file(const std::filesystem::path& path, std::string_view data, bool sync);

// fsync of a folder, so that renames into it survive a crash; failures are ignored (best effort).
void fsync_dir(const std::filesystem::path& dir);

}  // namespace kiln::codegen::cpu
