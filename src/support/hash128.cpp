#include "support/hash128.h"

#define XXH_INLINE_ALL  // header-only: this file's copy is the baseline (SSE2) one
#include <xxhash.h>

namespace kiln {

Hash128 xxh3_128_avx2(const void* data, size_t bytes);  // hash128_avx2.cpp

Hash128 xxh3_128(const void* data, size_t bytes) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return xxh3_128_avx2(data, bytes);
  XXH128_hash_t h = XXH3_128bits(data, bytes);
  return {h.high64, h.low64};
}

}  // namespace kiln
