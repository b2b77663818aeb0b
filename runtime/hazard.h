// Decides where a recorded sequence of dispatches needs a barrier: only where data flows between them
// (read-after-write, write-after-read, write-after-write on overlapping byte ranges of the same buffer).
// Pure; the Recorder emits one global memory barrier whenever conflicts() says so, then calls barrier().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rdrr::runtime {

struct MemAccess {
  uint64_t buffer = 0;  // VkBuffer handle value
  uint64_t begin = 0;   // byte range [begin, end)
  uint64_t end = 0;
  bool write = false;
};

class HazardTracker {
 public:
  // True when `next` touches memory that a dispatch since the last barrier wrote (RAW/WAW), or writes
  // memory one read (WAR). Accesses within `next` itself never conflict with each other.
  bool conflicts(std::span<const MemAccess> next) const;
  void add(std::span<const MemAccess> accesses);
  void barrier() { pending_.clear(); }
  size_t pending_count() const { return pending_.size(); }

 private:
  std::vector<MemAccess> pending_;
};

}  // namespace rdrr::runtime
