// The saved model's checksum: xxh3_128 (AVX2 where the CPU has it) gives XXH3-128's value, as the
// baseline build of the library computes it, for every length class of the algorithm.
#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <random>
#include <vector>

#include "support/hash128.h"

namespace kiln {
namespace {

TEST(Hash128, EqualsTheBaselineXxh3AtEveryLength) {
  std::mt19937_64 rng(11);
  std::vector<unsigned char> bytes((8 << 20) + 129);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng());
  // 0-16, 17-128, 129-240 and the long loop (stripes, blocks, a partial last stripe), at odd offsets.
  for (size_t n : {size_t{0}, size_t{1}, size_t{16}, size_t{17}, size_t{128}, size_t{129}, size_t{240}, size_t{241},
                   size_t{1024}, size_t{1025}, size_t{65537}, bytes.size() - 1}) {
    const unsigned char* p = bytes.data() + (n == bytes.size() - 1 ? 1 : 3);
    XXH128_hash_t want = XXH3_128bits(p, n);
    Hash128 got = xxh3_128(p, n);
    EXPECT_EQ(got.high, want.high64) << n << " bytes";
    EXPECT_EQ(got.low, want.low64) << n << " bytes";
  }
  // In pieces of any size, the same value.
  Xxh3Stream stream;
  for (size_t at = 0, piece = 1; at < bytes.size(); at += piece, piece = piece * 3 + 7)
    stream.update(bytes.data() + at, std::min(piece, bytes.size() - at));
  EXPECT_EQ(stream.digest(), xxh3_128(bytes.data(), bytes.size()));
  // A changed byte changes it.
  Hash128 a = xxh3_128(bytes.data(), bytes.size());
  bytes[bytes.size() / 2] ^= 1;
  Hash128 b = xxh3_128(bytes.data(), bytes.size());
  EXPECT_TRUE(a.high != b.high || a.low != b.low);
}

}  // namespace
}  // namespace kiln
