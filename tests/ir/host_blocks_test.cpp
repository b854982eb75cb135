// support/host_blocks.h: large freed host blocks are reused by the next request they fit (the same
// memory, no new pages), small ones and oversized ones go back to the system, the cache keeps to its
// limits, and a tensor made from a reused block still starts as zeros.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kiln/tensor.h"
#include "support/host_blocks.h"

namespace kiln::support {
namespace {

class HostBlocks : public testing::Test {
 protected:
  void SetUp() override {
    if (!host_block_cache_enabled()) GTEST_SKIP() << "SKIPPED: no caching under AddressSanitizer (by design)";
    release_cached_host_blocks();  // each test starts from an empty cache
    EXPECT_EQ(host_block_cache_state().blocks, 0u);
  }
};

TEST_F(HostBlocks, AFreedLargeBlockServesTheNextRequestItFits) {
  const size_t mb = size_t{1} << 20;
  void* first = nullptr;
  {
    std::shared_ptr<void> a = host_block(3 * mb);
    ASSERT_NE(a, nullptr);
    first = a.get();
  }
  EXPECT_EQ(host_block_cache_state().blocks, 1u);
  EXPECT_EQ(host_block_cache_state().bytes, 3 * mb);
  std::shared_ptr<void> b = host_block(3 * mb - 100);  // rounds to the same block
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(host_block_cache_state().blocks, 0u);
  b.reset();
  std::shared_ptr<void> smaller = host_block(mb);  // less than half of it: a block of its own
  EXPECT_NE(smaller.get(), first);
  std::shared_ptr<void> again = host_block(2 * mb);  // 3 MB serves 2 MB (at most twice the request)
  EXPECT_EQ(again.get(), first);
}

TEST_F(HostBlocks, SmallAndOversizedBlocksAreNotKept) {
  const HostBlockCacheState before = host_block_cache_state();
  host_block(kMinCachedBlockBytes - 64).reset();
  EXPECT_EQ(host_block_cache_state().blocks, before.blocks);
  std::shared_ptr<void> huge = host_block(kMaxCachedBytes + 64);
  ASSERT_NE(huge, nullptr);
  huge.reset();
  EXPECT_LE(host_block_cache_state().bytes, kMaxCachedBytes);
}

TEST_F(HostBlocks, TheCacheKeepsToItsLimits) {
  std::vector<std::shared_ptr<void>> blocks;
  for (size_t i = 0; i < 2 * kMaxCachedBlocks; ++i) blocks.push_back(host_block(kMinCachedBlockBytes * (1 + i % 3)));
  blocks.clear();
  const HostBlockCacheState held = host_block_cache_state();
  EXPECT_LE(held.blocks, kMaxCachedBlocks);
  EXPECT_LE(held.bytes, kMaxCachedBytes);
  EXPECT_GT(held.blocks, 0u);
}

TEST_F(HostBlocks, ATensorOnAReusedBlockStartsAsZeros) {
  const int64_t n = int64_t(kMinCachedBlockBytes / sizeof(float)) * 11 + 4096;
  void* first = nullptr;
  {
    Tensor t = Tensor::empty(DType::f32, {n});
    first = t.data<float>();
    std::memset(t.data<float>(), 0x7f, size_t(n) * sizeof(float));
  }
  Tensor u = Tensor::empty(DType::f32, {n});
  EXPECT_EQ(static_cast<void*>(u.data<float>()), first);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(u.data<float>()[i], 0.0f) << i;
}

}  // namespace
}  // namespace kiln::support
