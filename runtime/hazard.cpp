#include "runtime/hazard.h"

namespace rdrr::runtime {

bool HazardTracker::conflicts(std::span<const MemAccess> next) const {
  for (const MemAccess& n : next) {
    for (const MemAccess& p : pending_) {
      if (n.buffer != p.buffer || n.end <= p.begin || p.end <= n.begin) continue;
      if (n.write || p.write) return true;
    }
  }
  return false;
}

void HazardTracker::add(std::span<const MemAccess> accesses) {
  pending_.insert(pending_.end(), accesses.begin(), accesses.end());
}

}  // namespace rdrr::runtime
