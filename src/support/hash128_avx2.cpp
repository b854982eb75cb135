// Compiled with -mavx2 (CMakeLists.txt) and called only after a run-time CPU check (hash128.cpp).
// It includes nothing but xxhash.h, whose functions are static here: no inline function of another
// header can be compiled for AVX2 in this file and then picked by the linker for the rest of kiln.
#include "support/hash128.h"

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

namespace kiln {

Hash128 xxh3_128_avx2(const void* data, size_t bytes) {
  XXH128_hash_t h = XXH3_128bits(data, bytes);
  return {h.high64, h.low64};
}

}  // namespace kiln
