#include "codegen/cpu/file_io.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/error.h"

namespace kiln::codegen::cpu {

ScopedFd& ScopedFd::operator=(ScopedFd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void ScopedFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

OwnedFile open_own_file(const std::filesystem::path& path, off_t max_bytes) {
  OwnedFile f;
  f.fd = ScopedFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (f.fd.get() < 0) {
    f.error = errno == ENOENT ? "missing" : std::strerror(errno);
    return f;
  }
  struct stat st;
  if (::fstat(f.fd.get(), &st) != 0) f.error = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) f.error = "not a regular file";
  else if (st.st_uid != ::geteuid()) f.error = "owned by another user";
  else if (st.st_mode & (S_IWGRP | S_IWOTH)) f.error = "writable by group or others";
  else if (max_bytes >= 0 && st.st_size > max_bytes) f.error = "too large";
  f.size = st.st_size;
  return f;
}

bool read_all(int fd, std::string& out) {
  char buf[1 << 14];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf, static_cast<size_t>(n));
  }
}

void write_file_synced(const std::filesystem::path& path, std::string_view data) {
  write_private_file(path, data, /*sync=*/true);
}

void write_private_file(const std::filesystem::path& path, std::string_view data, bool sync) {
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) user_error("cannot write '{}': {}", path.string(), std::strerror(errno));
  while (!data.empty()) {
    ssize_t n = ::write(fd.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) user_error("cannot write '{}': {}", path.string(), std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (sync && ::fsync(fd.get()) != 0) user_error("cannot sync '{}': {}", path.string(), std::strerror(errno));
}

void fsync_dir(const std::filesystem::path& dir) {
  ScopedFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0) ::fsync(fd.get());
}

}  // namespace kiln::codegen::cpu
