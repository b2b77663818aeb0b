// Offset arithmetic of the device-memory sub-allocator: first-fit over a free list with coalescing on free.
// Pure (no Vulkan) so it is unit-tested on its own; MemoryPool owns one per memory block.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace rdrr::runtime {

class RangeAllocator {
 public:
  explicit RangeAllocator(uint64_t capacity_bytes);

  // Offset of a free range of `size_bytes` whose start is a multiple of `alignment` (a power of two),
  // or nullopt when no free range fits. size_bytes must be > 0.
  std::optional<uint64_t> allocate(uint64_t size_bytes, uint64_t alignment);
  // Returns a range previously handed out by allocate (exact offset and size).
  void free(uint64_t offset, uint64_t size_bytes);

  uint64_t capacity_bytes() const { return capacity_; }
  uint64_t used_bytes() const { return used_; }
  uint64_t largest_free_bytes() const;
  size_t free_range_count() const { return free_.size(); }

 private:
  uint64_t capacity_;
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, disjoint, never adjacent (coalesced)
};

}  // namespace rdrr::runtime
