// Large host buffers kept for reuse once their tensors are freed. A model's outputs are fresh tensors on
// every run (the caller owns them), and glibc hands a freed block at the top of its heap back to the
// system, so the next run's output faults its pages in again: bert's 15.6 MB of logits cost ~2,500
// page faults a run, 38 ms of a 90 ms run on a machine whose faults are slow (docs/PERFORMANCE.md).
// Blocks of at least kMinCachedBlockBytes go back to a small cache instead, and the next request of a
// size they fit is served from it. Thread-safe. Under AddressSanitizer nothing is cached, so a use
// after free is still reported.
#pragma once
#include <cstddef>
#include <memory>

namespace kiln::support {

inline constexpr size_t kMinCachedBlockBytes = size_t{1} << 20;
// At most this much is held back from the system (a gpt2's logits are 25.7 MB).
inline constexpr size_t kMaxCachedBlocks = 8;
inline constexpr size_t kMaxCachedBytes = size_t{64} << 20;

// A 64-byte aligned block of at least `bytes` (contents unspecified); null when out of memory (after
// the cache has given back what it held). Its last owner gives it back to the cache when it is large
// enough, else to the system.
std::shared_ptr<void> host_block(size_t bytes);

// Gives every cached block back to the system.
void release_cached_host_blocks();

// Whether freed blocks are kept (not under AddressSanitizer), and what the cache holds now (tests).
bool host_block_cache_enabled();
struct HostBlockCacheState {
  size_t blocks = 0, bytes = 0;
};
HostBlockCacheState host_block_cache_state();

}  // namespace kiln::support
