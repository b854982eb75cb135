// XXH3-128 content hashes for the kernel cache: keys, .so checksums, compiler identity.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::codegen::cpu {

struct Hash128 {
  uint64_t high = 0;
  uint64_t low = 0;
  // 32 lowercase hex digits, high word first (XXH3's canonical order).
  std::string hex() const;
  bool operator==(const Hash128&) const = default;
};

Hash128 hash_bytes(std::string_view data);

// Hashes a sequence of fields; each is length-prefixed so that ("ab","c") and ("a","bc") differ.
class FieldHasher {
 public:
  FieldHasher();
  ~FieldHasher();
  FieldHasher(const FieldHasher&) = delete;
  FieldHasher& operator=(const FieldHasher&) = delete;
  void add(std::string_view field);
  Hash128 finish() const;

 private:
  void* state_;  // XXH3_state_t, kept out of this header
};

struct FileDigest {
  Hash128 hash;
  uint64_t size = 0;
};
// Hash and size of everything readable from `fd` (read from its current offset to the end);
// nullopt on a read error.
std::optional<FileDigest> digest_fd(int fd);

}  // namespace kiln::codegen::cpu
