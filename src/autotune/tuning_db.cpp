// The tuning database file (see tuning_db.h).
#include "autotune/tuning_db.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "support/error.h"

namespace kiln::autotune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFormat = "kiln-tuning";
constexpr int kVersion = 1;
constexpr std::uintmax_t kMaxFileBytes = 16u << 20;  // far above any real database: a bigger file is foreign

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// The file's text, or nullopt with `why` set.
std::optional<std::string> read_text(const fs::path& db, std::string& why) {
  std::error_code ec;
  if (!fs::is_regular_file(db, ec)) {
    why = fs::exists(db, ec) ? "not a regular file" : "no file";
    return std::nullopt;
  }
  auto size = fs::file_size(db, ec);
  if (ec || size > kMaxFileBytes) {
    why = ec ? ec.message() : "too large";
    return std::nullopt;
  }
  std::ifstream in(db, std::ios::binary);
  if (!in) {
    why = "cannot be read";
    return std::nullopt;
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The parsed database if it is ours (format and version), else nullopt with `why` set.
std::optional<json> parse_db(const std::string& text, std::string& why) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    why = "not JSON (corrupt)";
    return std::nullopt;
  }
  if (!j.is_object() || j.value("format", json()) != kFormat) {
    why = "not a kiln tuning database";
    return std::nullopt;
  }
  const json& v = j["version"];
  if (!v.is_number_integer() || v.get<int64_t>() != kVersion) {
    why = "another version of the tuning database";
    return std::nullopt;
  }
  if (!j.contains("devices") || !j["devices"].is_object()) {
    why = "no devices table";
    return std::nullopt;
  }
  return j;
}

std::optional<SoftmaxCalibration> calibration_of(const json& entry, std::string& why) {
  if (!entry.is_object() || !entry.contains("softmax") || !entry["softmax"].is_object()) {
    why = "no softmax calibration for this device";
    return std::nullopt;
  }
  const json& s = entry["softmax"];
  const json& fused = s.value("max_fused_width", json());
  const json& lib = s.value("library_min_width", json());
  const json& short_lib = s.value("library_max_width", json(0));  // absent in older files: none
  if (!fused.is_number_integer() || fused.get<int64_t>() < 0 || !(lib.is_null() || lib.is_number_integer()) ||
      (lib.is_number_integer() && lib.get<int64_t>() < 1) || !short_lib.is_number_integer() ||
      short_lib.get<int64_t>() < 0) {
    why = "malformed softmax calibration";
    return std::nullopt;
  }
  SoftmaxCalibration c;
  c.max_fused_width = fused.get<int64_t>();
  c.library_min_width = lib.is_null() ? std::numeric_limits<int64_t>::max() : lib.get<int64_t>();
  c.library_max_width = short_lib.get<int64_t>();
  return c;
}

// mkdir -p, mode 0700 for what it creates.
void make_private_dirs(const fs::path& dir) {
  fs::path partial;
  for (const fs::path& part : dir) {
    partial /= part;
    if (::mkdir(partial.c_str(), 0700) == 0) ::chmod(partial.c_str(), 0700);
    else if (errno != EEXIST)
      user_error("tuning database folder '{}': cannot create '{}': {}", dir.string(), partial.string(),
                 std::strerror(errno));
  }
}

void write_all(int fd, const std::string& text, const fs::path& path) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) user_error("tuning database '{}': write failed: {}", path.string(), std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::optional<SoftmaxCalibration> load_softmax_calibration(const fs::path& db, const std::string& device_key,
                                                           std::string* why) {
  std::string reason;
  std::optional<SoftmaxCalibration> result;
  if (auto text = read_text(db, reason)) {
    if (auto j = parse_db(*text, reason)) {
      const json& devices = (*j)["devices"];
      auto it = devices.find(device_key);
      if (it == devices.end()) reason = "no calibration for this device";
      else result = calibration_of(*it, reason);
    }
  }
  if (why) *why = result ? std::string() : reason;
  return result;
}

std::optional<json> load_softmax_measurements(const fs::path& db, const std::string& device_key) {
  std::string reason;
  if (!load_softmax_calibration(db, device_key, &reason)) return std::nullopt;  // only beside a usable calibration
  auto text = read_text(db, reason);
  auto j = text ? parse_db(*text, reason) : std::nullopt;
  if (!j) return std::nullopt;
  const json& m = (*j)["devices"][device_key]["softmax"].value("measured", json());
  if (!m.is_object()) return std::nullopt;
  return m;
}

void store_softmax_calibration(const fs::path& db, const std::string& device_key, const SoftmaxCalibration& c,
                               const json& measured) {
  KILN_INTERNAL_CHECK(c.max_fused_width >= 0 && c.library_min_width >= 1 && c.library_max_width >= 0,
                      "bad calibration {} {} {}", c.max_fused_width, c.library_min_width, c.library_max_width);
  const fs::path dir = db.parent_path().empty() ? fs::path(".") : db.parent_path();
  make_private_dirs(dir);
  // One writer at a time: the lock file stays (removing it would race with a waiting writer).
  const fs::path lock_path = db.string() + ".lock";
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (lock.fd < 0) user_error("tuning database lock '{}': {}", lock_path.string(), std::strerror(errno));
  while (::flock(lock.fd, LOCK_EX) != 0)
    if (errno != EINTR) user_error("tuning database lock '{}': {}", lock_path.string(), std::strerror(errno));

  std::string why;
  json j;
  if (auto text = read_text(db, why))
    if (auto parsed = parse_db(*text, why)) j = std::move(*parsed);
  if (j.is_null()) j = json{{"format", kFormat}, {"version", kVersion}, {"devices", json::object()}};
  json entry = j["devices"].value(device_key, json::object());
  if (!entry.is_object()) entry = json::object();
  entry["softmax"] = {{"max_fused_width", c.max_fused_width},
                      {"library_min_width", c.library_min_width == std::numeric_limits<int64_t>::max()
                                                ? json(nullptr)
                                                : json(c.library_min_width)},
                      {"library_max_width", c.library_max_width},
                      {"measured", measured}};
  j["devices"][device_key] = std::move(entry);

  std::random_device rd;
  const fs::path tmp = fmt::format("{}.tmp.{}.{:08x}", db.string(), ::getpid(), rd());
  {
    Fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (out.fd < 0) user_error("tuning database '{}': cannot create '{}': {}", db.string(), tmp.string(), std::strerror(errno));
    write_all(out.fd, j.dump(1) + "\n", tmp);
    if (::fchmod(out.fd, 0600) != 0 || ::fsync(out.fd) != 0) {
      int e = errno;
      ::unlink(tmp.c_str());
      user_error("tuning database '{}': {}", tmp.string(), std::strerror(e));
    }
  }
  if (::rename(tmp.c_str(), db.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    user_error("tuning database '{}': rename failed: {}", db.string(), std::strerror(e));
  }
}

}  // namespace kiln::autotune
