#include "onnx/file_util.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include "support/error.h"

namespace kiln {
namespace {

// Closes a descriptor on every path out of a function.
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_file_limited(const std::string& path, int64_t max_bytes, std::string_view what) {
  FdGuard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) user_error("cannot open {} '{}': {}", what, path, std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) user_error("cannot stat {} '{}': {}", what, path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) user_error("{} '{}' is not a regular file", what, path);
  if (st.st_size > max_bytes)
    user_error("{} '{}' is {} bytes, over the limit of {} (max_model_bytes)", what, path,
               static_cast<int64_t>(st.st_size), max_bytes);
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(f.fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) user_error("cannot read {} '{}': {}", what, path, std::strerror(errno));
    if (n == 0) user_error("{} '{}' shrank while being read", what, path);
    done += static_cast<size_t>(n);
  }
  return data;
}

void write_file_atomic(const std::string& path, std::span<const std::string_view> pieces) {
  std::filesystem::path target(path);
  std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  FdGuard f{::mkstemp(tmpl.data())};
  if (f.fd < 0) user_error("cannot create a temporary file beside '{}': {}", path, std::strerror(errno));
  auto fail = [&](const char* step) {
    int err = errno;
    ::unlink(tmpl.c_str());
    user_error("cannot write '{}' ({}): {}", path, step, std::strerror(err));
  };
  for (std::string_view piece : pieces) {
    size_t done = 0;
    while (done < piece.size()) {
      ssize_t n = ::write(f.fd, piece.data() + done, piece.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("write");
      done += static_cast<size_t>(n);
    }
  }
  // mkstemp creates 0600; give the file the usual permissions (subject to the umask).
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(f.fd, 0666 & ~mask) != 0) fail("chmod");
  if (::fdatasync(f.fd) != 0) fail("sync");
  if (::close(f.fd) != 0) {
    f.fd = -1;
    fail("close");
  }
  f.fd = -1;
  if (::rename(tmpl.c_str(), path.c_str()) != 0) fail("rename");
}

}  // namespace kiln
