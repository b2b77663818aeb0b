#include "runtime/range_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace rdrr::runtime {
namespace {

TEST(RangeAllocator, AlignsAndFillsFirstFit) {
  RangeAllocator a(1024);
  EXPECT_EQ(a.allocate(10, 1), 0u);
  EXPECT_EQ(a.allocate(10, 256), 256u);  // aligned up; [10, 256) stays free
  EXPECT_EQ(a.allocate(100, 4), 12u);    // first fit goes back into the gap
  EXPECT_EQ(a.used_bytes(), 120u);
  EXPECT_FALSE(a.allocate(2000, 1).has_value());
}

TEST(RangeAllocator, FreeCoalescesNeighbours) {
  RangeAllocator a(300);
  const uint64_t x = *a.allocate(100, 1);
  const uint64_t y = *a.allocate(100, 1);
  const uint64_t z = *a.allocate(100, 1);
  EXPECT_FALSE(a.allocate(1, 1).has_value());
  a.free(x, 100);
  a.free(z, 100);
  EXPECT_EQ(a.free_range_count(), 2u);
  a.free(y, 100);
  EXPECT_EQ(a.free_range_count(), 1u);
  EXPECT_EQ(a.largest_free_bytes(), 300u);
  EXPECT_EQ(a.used_bytes(), 0u);
}

TEST(RangeAllocator, RandomAllocFreeNeverOverlaps) {
  std::mt19937 rng(7);
  RangeAllocator a(1 << 20);
  struct Live {
    uint64_t off, size;
  };
  std::vector<Live> live;
  for (int step = 0; step < 4000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const uint64_t size = 1 + rng() % 5000;
      const uint64_t align = uint64_t{1} << (rng() % 9);
      if (auto off = a.allocate(size, align)) {
        ASSERT_EQ(*off % align, 0u);
        ASSERT_LE(*off + size, a.capacity_bytes());
        for (const Live& l : live) ASSERT_TRUE(*off + size <= l.off || l.off + l.size <= *off);
        live.push_back({*off, size});
      }
    } else {
      const size_t i = rng() % live.size();
      a.free(live[i].off, live[i].size);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  for (const Live& l : live) a.free(l.off, l.size);
  EXPECT_EQ(a.used_bytes(), 0u);
  EXPECT_EQ(a.free_range_count(), 1u);
}

}  // namespace
}  // namespace rdrr::runtime
