#include "onnx/external_data.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <onnx/onnx.pb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/checked_math.h"
#include "support/error.h"
#include "support/page_out.h"

namespace kiln {

// A read-only mapping of a whole file; unmapped when the last tensor using it goes away.
class MappedFile {
 public:
  MappedFile(const void* data, int64_t size) : data_(data), size_(size) {
    note_file_mapping(data_, static_cast<size_t>(size_));
  }
  ~MappedFile() {
    if (!data_) return;
    forget_file_mapping(data_);
    ::munmap(const_cast<void*>(data_), static_cast<size_t>(size_));
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(data_); }
  int64_t size() const { return size_; }

 private:
  const void* data_;
  int64_t size_;
};

namespace {

int64_t parse_non_negative(const std::string& text, const std::string& key, const std::string& what) {
  int64_t v = -1;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end || v < 0)
    user_error("{}: external data '{}' is '{}', not a non-negative integer", what, key, text);
  return v;
}

// True if `path` equals `dir` or lies below it (both canonical, compared component by component).
bool is_inside(const std::filesystem::path& dir, const std::filesystem::path& path) {
  auto d = dir.begin(), p = path.begin();
  for (; d != dir.end(); ++d, ++p) {
    if (d->empty()) continue;  // a trailing separator yields an empty last component
    if (p == path.end() || *d != *p) return false;
  }
  return true;
}

}  // namespace

void check_external_location(const std::string& location, const std::string& what) {
  if (location.empty()) user_error("{}: external data has no 'location'", what);
  if (location.find('\0') != std::string::npos) user_error("{}: external data location contains a NUL byte", what);
  if (location.front() == '/' || location.front() == '\\')
    user_error("{}: external data location '{}' is an absolute path; it must be relative to the model's folder",
               what, location);
  // Split on both separators so that Windows-style "..\\x" is caught too.
  size_t start = 0;
  while (start <= location.size()) {
    size_t sep = location.find_first_of("/\\", start);
    if (sep == std::string::npos) sep = location.size();
    if (location.compare(start, sep - start, "..") == 0 && sep - start == 2)
      user_error("{}: external data location '{}' has a '..' component; it must stay inside the model's folder",
                 what, location);
    start = sep + 1;
  }
}

ExternalData::ExternalData(std::filesystem::path base_dir) : base_dir_(std::move(base_dir)) {
  std::error_code ec;
  canonical_dir_ = std::filesystem::canonical(base_dir_.empty() ? "." : base_dir_, ec);
  if (ec) user_error("cannot resolve the model folder '{}': {}", base_dir_.string(), ec.message());
}

ExternalData::~ExternalData() = default;

std::shared_ptr<const MappedFile> ExternalData::map_file(const std::string& location, const std::string& what) {
  check_external_location(location, what);
  std::error_code ec;
  std::filesystem::path full = std::filesystem::weakly_canonical(canonical_dir_ / location, ec);
  if (ec) user_error("{}: cannot resolve external data '{}': {}", what, location, ec.message());
  if (!is_inside(canonical_dir_, full))
    user_error("{}: external data '{}' resolves to '{}', outside the model's folder '{}'", what, location,
               full.string(), canonical_dir_.string());
  auto it = files_.find(full.string());
  if (it != files_.end()) return it->second;

  int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) user_error("{}: cannot open external data file '{}': {}", what, location, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    user_error("{}: external data '{}' is not a regular file", what, location);
  }
  const void* data = nullptr;
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      user_error("{}: cannot map external data '{}': {}", what, location, std::strerror(err));
    }
    data = p;
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  auto file = std::make_shared<const MappedFile>(data, static_cast<int64_t>(st.st_size));
  files_.emplace(full.string(), file);
  return file;
}

Tensor ExternalData::load(const ::onnx::TensorProto& proto, DType dtype, const std::vector<int64_t>& dims,
                          int64_t nbytes, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  bool seen_location = false, seen_offset = false, seen_length = false;
  for (const auto& kv : proto.external_data()) {
    auto once = [&](bool& seen) {
      if (seen) user_error("{}: external data key '{}' appears twice", what, kv.key());
      seen = true;
    };
    if (kv.key() == "location") {
      once(seen_location);
      location = kv.value();
    } else if (kv.key() == "offset") {
      once(seen_offset);
      offset = parse_non_negative(kv.value(), "offset", what);
    } else if (kv.key() == "length") {
      once(seen_length);
      length = parse_non_negative(kv.value(), "length", what);
    }
    // "checksum" and keys from newer ONNX versions are ignored.
  }
  if (!seen_location) user_error("{}: external data has no 'location'", what);
  auto file = map_file(location, what);

  if (offset > file->size())
    user_error("{}: external data offset {} is past the end of '{}' ({} bytes)", what, offset, location,
               file->size());
  if (length < 0) length = file->size() - offset;
  int64_t end = checked_add(offset, length, what + " external data offset + length");
  if (end > file->size())
    user_error("{}: external data [{}, {}) runs past the end of '{}' ({} bytes)", what, offset, end, location,
               file->size());
  if (length != nbytes)
    user_error("{}: external data length {} does not match the tensor's {} bytes", what, length, nbytes);

  if (nbytes == 0) return Tensor::empty(dtype, dims);
  const unsigned char* src = file->bytes() + offset;
  bool aligned = reinterpret_cast<uintptr_t>(src) % dtype_size(dtype) == 0;
  bool needs_fixup = false;
  if (dtype == DType::boolean)  // bytes other than 0/1 are not valid bools: normalise in a copy
    for (int64_t i = 0; i < nbytes && !needs_fixup; ++i) needs_fixup = src[i] > 1;
  if (aligned && !needs_fixup) {
    std::shared_ptr<const void> owner(file, file->bytes());
    return Tensor::wrap(dtype, dims, std::move(owner), const_cast<unsigned char*>(src));
  }
  Tensor t = Tensor::empty(dtype, dims);
  std::memcpy(t.raw(), src, static_cast<size_t>(nbytes));
  if (needs_fixup)
    for (int64_t i = 0; i < nbytes; ++i) static_cast<unsigned char*>(t.raw())[i] = src[i] ? 1 : 0;
  return t;
}

}  // namespace kiln
