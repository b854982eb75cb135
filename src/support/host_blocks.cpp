#include "support/host_blocks.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace kiln::support {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCaching = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif
#else
constexpr bool kCaching = true;
#endif

struct Block {
  void* data;
  size_t bytes;
};

class Cache {
 public:
  // The smallest cached block of `bytes` to twice that, taken out of the cache; {nullptr, 0} if none.
  Block take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto best = blocks_.end();
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
      if (it->bytes >= bytes && it->bytes / 2 <= bytes && (best == blocks_.end() || it->bytes < best->bytes)) best = it;
    if (best == blocks_.end()) return {nullptr, 0};
    const Block found = *best;
    total_ -= found.bytes;
    blocks_.erase(best);
    return found;
  }

  // Keeps the block (at most kMaxCachedBytes), freeing the oldest ones past the limits.
  void give(void* data, size_t bytes) {
    std::vector<void*> drop;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_.push_back({data, bytes});
      total_ += bytes;
      while (blocks_.size() > kMaxCachedBlocks || total_ > kMaxCachedBytes) {
        drop.push_back(blocks_.front().data);
        total_ -= blocks_.front().bytes;
        blocks_.erase(blocks_.begin());
      }
    }
    for (void* p : drop) std::free(p);
  }

  void clear() {
    std::vector<Block> drop;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      drop.swap(blocks_);
      total_ = 0;
    }
    for (const Block& b : drop) std::free(b.data);
  }

  HostBlockCacheState state() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {blocks_.size(), total_};
  }

 private:
  std::mutex mutex_;
  std::vector<Block> blocks_;  // oldest first
  size_t total_ = 0;
};

// Never destroyed: tensors may outlive static destruction at exit.
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

// A fresh block from the system; when there is none, what the cache holds may be what is missing.
void* allocate(size_t size) {
  void* p = std::aligned_alloc(64, size);
  if (!p) {
    cache().clear();
    p = std::aligned_alloc(64, size);
  }
  return p;
}

}  // namespace

std::shared_ptr<void> host_block(size_t bytes) {
  const size_t size = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  if (!kCaching || size < kMinCachedBlockBytes || size > kMaxCachedBytes) {
    void* p = allocate(size);
    if (!p) return nullptr;
    return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  }
  Block block = cache().take(size);
  if (!block.data) block = {allocate(size), size};
  if (!block.data) return nullptr;
  // The block goes back as the size it is (a reused one may be larger than this request).
  return std::shared_ptr<void>(block.data, [capacity = block.bytes](void* q) { cache().give(q, capacity); });
}

void release_cached_host_blocks() { cache().clear(); }

bool host_block_cache_enabled() { return kCaching; }

HostBlockCacheState host_block_cache_state() { return cache().state(); }

}  // namespace kiln::support
