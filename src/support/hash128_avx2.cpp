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

void* xxh3_stream_new_avx2() {
  XXH3_state_t* s = XXH3_createState();
  if (s) XXH3_128bits_reset(s);
  return s;
}

void xxh3_stream_update_avx2(void* state, const void* data, size_t bytes) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state), data, bytes);
}

Hash128 xxh3_stream_digest_avx2(const void* state) {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state));
  return {h.high64, h.low64};
}

void xxh3_stream_free_avx2(void* state) { XXH3_freeState(static_cast<XXH3_state_t*>(state)); }

}  // namespace kiln
