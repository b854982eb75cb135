#include "codegen/cpu/content_hash.h"

#include <cerrno>
#include <fmt/format.h>
#include <unistd.h>

// Header-only xxHash: no link-time dependency, and the XXH_INLINE_ prefix keeps it from clashing with
// a linked libxxhash.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kiln::codegen::cpu {

std::string Hash128::hex() const { return fmt::format("{:016x}{:016x}", high, low); }

Hash128 hash_bytes(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  return {h.high64, h.low64};
}

FieldHasher::FieldHasher() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}

FieldHasher::~FieldHasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void FieldHasher::add(std::string_view field) {
  auto* s = static_cast<XXH3_state_t*>(state_);
  uint64_t size = field.size();
  XXH3_128bits_update(s, &size, sizeof size);
  XXH3_128bits_update(s, field.data(), field.size());
}

Hash128 FieldHasher::finish() const {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state_));
  return {h.high64, h.low64};
}

std::optional<FileDigest> digest_fd(int fd) {
  XXH3_state_t* s = XXH3_createState();
  if (!s) throw std::bad_alloc();
  XXH3_128bits_reset(s);
  FileDigest d;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      XXH3_freeState(s);
      return std::nullopt;
    }
    if (n == 0) break;
    XXH3_128bits_update(s, buf, static_cast<size_t>(n));
    d.size += static_cast<uint64_t>(n);
  }
  XXH128_hash_t h = XXH3_128bits_digest(s);
  XXH3_freeState(s);
  d.hash = {h.high64, h.low64};
  return d;
}

}  // namespace kiln::codegen::cpu
