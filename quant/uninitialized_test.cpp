#include "quant/uninitialized.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace rdrr::quant {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// A freed large block is handed to the next allocation of the same rounded size, and only to that size.
TEST(LargeBlocks, FreedBlockIsReusedForTheSameRoundedSize) {
  const void* first = nullptr;
  {
    UninitVector<float> a(5 * kMiB / sizeof(float));  // 5 MiB: rounded to 6 MiB
    first = a.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % (2 * kMiB), 0u);  // 2 MiB aligned (huge pages)
    a[0] = 1.0f;
  }
  const size_t held = large_block_cache_bytes();
  EXPECT_GE(held, 6 * kMiB);
  UninitVector<double> other(8 * kMiB / sizeof(double));  // another size: not that block
  EXPECT_NE(static_cast<const void*>(other.data()), first);
  UninitVector<float> b(5 * kMiB / sizeof(float) + 100);  // the same rounded size: the same block
  EXPECT_EQ(static_cast<const void*>(b.data()), first);
  EXPECT_EQ(large_block_cache_bytes(), held - 6 * kMiB);
}

TEST(LargeBlocks, CacheStaysWithinItsLimit) {
  {
    UninitVector<uint8_t> huge(kLargeBlockCacheBytes + kMiB);  // never cached
  }
  EXPECT_LE(large_block_cache_bytes(), kLargeBlockCacheBytes);
  for (size_t i = 0; i < 12; ++i) {
    UninitVector<uint8_t> v(kLargeBlockCacheBytes / 8 + i * 2 * kMiB);  // twelve sizes, each freed
    v[0] = 1;
  }
  EXPECT_LE(large_block_cache_bytes(), kLargeBlockCacheBytes);
  EXPECT_GT(large_block_cache_bytes(), kLargeBlockCacheBytes / 2);
}

TEST(LargeBlocks, SmallVectorsAreOrdinaryAllocations) {
  const size_t held = large_block_cache_bytes();
  {
    UninitVector<float> small(1000);
    small[999] = 2.0f;
  }
  EXPECT_EQ(large_block_cache_bytes(), held);
}

}  // namespace
}  // namespace rdrr::quant
