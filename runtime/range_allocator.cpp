#include "runtime/range_allocator.h"

#include <cassert>
#include <iterator>

namespace rdrr::runtime {

RangeAllocator::RangeAllocator(uint64_t capacity_bytes) : capacity_(capacity_bytes) {
  if (capacity_bytes > 0) free_.emplace(0, capacity_bytes);
}

std::optional<uint64_t> RangeAllocator::allocate(uint64_t size_bytes, uint64_t alignment) {
  assert(size_bytes > 0 && alignment > 0 && (alignment & (alignment - 1)) == 0);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = it->first;
    const uint64_t len = it->second;
    const uint64_t aligned = (start + alignment - 1) & ~(alignment - 1);
    const uint64_t pad = aligned - start;
    if (pad > len || len - pad < size_bytes) continue;
    const uint64_t tail_start = aligned + size_bytes;
    const uint64_t tail_len = start + len - tail_start;
    free_.erase(it);
    if (pad > 0) free_.emplace(start, pad);
    if (tail_len > 0) free_.emplace(tail_start, tail_len);
    used_ += size_bytes;
    return aligned;
  }
  return std::nullopt;
}

void RangeAllocator::free(uint64_t offset, uint64_t size_bytes) {
  assert(offset + size_bytes <= capacity_);
  used_ -= size_bytes;
  auto next = free_.lower_bound(offset);
  uint64_t start = offset;
  uint64_t len = size_bytes;
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    assert(prev->first + prev->second <= offset && "double free or overlap");
    if (prev->first + prev->second == offset) {
      start = prev->first;
      len += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end()) {
    assert(offset + size_bytes <= next->first && "double free or overlap");
    if (offset + size_bytes == next->first) {
      len += next->second;
      free_.erase(next);
    }
  }
  free_.emplace(start, len);
}

uint64_t RangeAllocator::largest_free_bytes() const {
  uint64_t best = 0;
  for (const auto& [off, len] : free_) best = len > best ? len : best;
  return best;
}

}  // namespace rdrr::runtime
