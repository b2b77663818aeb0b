#include "runtime/hazard.h"

#include <gtest/gtest.h>

namespace rdrr::runtime {
namespace {

MemAccess rd(uint64_t buf, uint64_t b, uint64_t e) { return {buf, b, e, false}; }
MemAccess wr(uint64_t buf, uint64_t b, uint64_t e) { return {buf, b, e, true}; }

TEST(Hazard, IndependentDispatchesNeedNoBarrier) {
  HazardTracker t;
  const MemAccess d1[] = {rd(1, 0, 100), wr(1, 100, 200)};
  const MemAccess d2[] = {rd(1, 0, 100), wr(1, 200, 300)};  // shares only a read
  EXPECT_FALSE(t.conflicts(d1));
  t.add(d1);
  EXPECT_FALSE(t.conflicts(d2));
}

TEST(Hazard, ReadAfterWriteWriteAfterReadWriteAfterWrite) {
  HazardTracker t;
  const MemAccess w[] = {wr(1, 100, 200)};
  t.add(w);
  const MemAccess raw[] = {rd(1, 150, 160)};
  const MemAccess waw[] = {wr(1, 199, 201)};
  const MemAccess touching[] = {rd(1, 200, 300)};  // adjacent, not overlapping
  const MemAccess other_buffer[] = {rd(2, 100, 200)};
  EXPECT_TRUE(t.conflicts(raw));
  EXPECT_TRUE(t.conflicts(waw));
  EXPECT_FALSE(t.conflicts(touching));
  EXPECT_FALSE(t.conflicts(other_buffer));

  HazardTracker r;
  const MemAccess reads[] = {rd(1, 0, 64)};
  r.add(reads);
  const MemAccess war[] = {wr(1, 32, 40)};
  EXPECT_TRUE(r.conflicts(war));
}

TEST(Hazard, BarrierClears) {
  HazardTracker t;
  const MemAccess w[] = {wr(1, 0, 10)};
  t.add(w);
  EXPECT_TRUE(t.conflicts(w));
  t.barrier();
  EXPECT_FALSE(t.conflicts(w));
  EXPECT_EQ(t.pending_count(), 0u);
}

TEST(Hazard, InPlaceWithinOneDispatchIsFine) {
  HazardTracker t;
  const MemAccess inplace[] = {rd(1, 0, 100), wr(1, 0, 100)};
  EXPECT_FALSE(t.conflicts(inplace));
}

}  // namespace
}  // namespace rdrr::runtime
