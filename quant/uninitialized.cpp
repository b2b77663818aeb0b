#include "quant/uninitialized.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <new>
#include <utility>

namespace rdrr::quant {
namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;

size_t rounded(size_t bytes) {
  if (bytes > SIZE_MAX - kHugePageBytes) throw std::bad_alloc();  // (a corrupt size: as operator new would)
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

bool poison_large_blocks() {
  static const bool on = [] {
    const char* v = std::getenv("RDRR_POISON_LARGE_BLOCKS");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// Freed large blocks, most recently freed first.
class LargeBlockCache {
 public:
  void* take(size_t bytes) {
    {
      const std::lock_guard lock(mu_);
      for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
        if (it->second != bytes) continue;
        void* p = it->first;
        held_ -= bytes;
        blocks_.erase(it);
        return p;
      }
    }
    void* p = ::operator new(bytes, std::align_val_t{kHugePageBytes});
    advise_huge_pages(p, bytes);
    return p;
  }
  void give(void* p, size_t bytes) noexcept {
    if (bytes > kLargeBlockCacheBytes) {
      release(p);
      return;
    }
    std::list<std::pair<void*, size_t>> dropped;
    {
      const std::lock_guard lock(mu_);
      try {
        blocks_.emplace_front(p, bytes);
      } catch (...) {
        release(p);
        return;
      }
      held_ += bytes;
      while (held_ > kLargeBlockCacheBytes) {
        held_ -= blocks_.back().second;
        dropped.splice(dropped.begin(), blocks_, std::prev(blocks_.end()));
      }
    }
    for (const auto& [q, n] : dropped) release(q);
  }
  size_t held() {
    const std::lock_guard lock(mu_);
    return held_;
  }

 private:
  static void release(void* p) noexcept { ::operator delete(p, std::align_val_t{kHugePageBytes}); }
  std::mutex mu_;
  std::list<std::pair<void*, size_t>> blocks_;
  size_t held_ = 0;
};

LargeBlockCache& cache() {
  static LargeBlockCache* c = new LargeBlockCache();  // never destroyed: vectors may outlive static destructors
  return *c;
}

}  // namespace

void advise_huge_pages(void* p, size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = kHugePageBytes;
  const auto begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  // Advice only: where THP is off or the range is not eligible the call fails and nothing changes.
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

void* take_large_block(size_t bytes) {
  const size_t n = rounded(bytes);
  void* p = cache().take(n);
  if (poison_large_blocks()) std::memset(p, 0xFF, n);
  return p;
}

void give_large_block(void* p, size_t bytes) noexcept { cache().give(p, rounded(bytes)); }

size_t large_block_cache_bytes() noexcept { return cache().held(); }

}  // namespace rdrr::quant
