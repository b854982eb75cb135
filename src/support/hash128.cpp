#include "support/hash128.h"

#define XXH_INLINE_ALL  // header-only: this file's copy is the baseline (SSE2) one
#include <xxhash.h>

#include <new>

namespace kiln {

// hash128_avx2.cpp: the same functions built for AVX2.
Hash128 xxh3_128_avx2(const void* data, size_t bytes);
void* xxh3_stream_new_avx2();
void xxh3_stream_update_avx2(void* state, const void* data, size_t bytes);
Hash128 xxh3_stream_digest_avx2(const void* state);
void xxh3_stream_free_avx2(void* state);

namespace {
bool cpu_has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
}  // namespace

Hash128 xxh3_128(const void* data, size_t bytes) {
  if (cpu_has_avx2()) return xxh3_128_avx2(data, bytes);
  XXH128_hash_t h = XXH3_128bits(data, bytes);
  return {h.high64, h.low64};
}

Xxh3Stream::Xxh3Stream() : avx2_(cpu_has_avx2()) {
  if (avx2_) {
    state_ = xxh3_stream_new_avx2();
  } else {
    XXH3_state_t* s = XXH3_createState();
    if (s) XXH3_128bits_reset(s);
    state_ = s;
  }
  if (!state_) throw std::bad_alloc();
}

Xxh3Stream::~Xxh3Stream() {
  if (avx2_) xxh3_stream_free_avx2(state_);
  else XXH3_freeState(static_cast<XXH3_state_t*>(state_));
}

void Xxh3Stream::update(const void* data, size_t bytes) {
  if (avx2_) xxh3_stream_update_avx2(state_, data, bytes);
  else XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), data, bytes);
}

Hash128 Xxh3Stream::digest() const {
  if (avx2_) return xxh3_stream_digest_avx2(state_);
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state_));
  return {h.high64, h.low64};
}

}  // namespace kiln
