// UninitVector<T>: a std::vector whose resize() leaves new elements of trivial types uninitialized, for
// large buffers that are written in full right after (activations, converted weights, factors): a value-
// initializing resize would first zero every page (measured: a tenth of a calibration's CPU time).
//
// Its allocations of 4 MiB or more (kLargeBlockMinBytes) are large blocks: 2 MiB aligned, marked for transparent
// huge pages (madvise MADV_HUGEPAGE, where the system allows it), and kept when freed, up to kLargeBlockCacheBytes
// in all (the least recently freed dropped first), for the next allocation of the same size rounded up to 2 MiB.
// Such buffers recur with the same sizes (one layer after another, one pass after another); without the cache each
// came fresh from mmap and the kernel zeroed it (under virtualization the host also faults it in again), measured
// in bench/README.md ("Reading weights and reusing buffers"). Contents of a reused block are whatever its last
// owner left: as for fresh memory, nothing may read an element before writing it. RDRR_POISON_LARGE_BLOCKS=1
// (read once) fills every large block with 0xFF bytes (NaN for floats) when it is handed out, to test that.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace rdrr::quant {

// Marks the whole 2 MiB pages inside [p, p + bytes) for transparent huge pages (no-op where unsupported).
void advise_huge_pages(void* p, size_t bytes) noexcept;
inline constexpr size_t kLargeBlockMinBytes = size_t{4} << 20;
inline constexpr size_t kLargeBlockCacheBytes = size_t{512} << 20;

// A large block of at least `bytes` (from the cache when one of the same rounded size is there; throws
// std::bad_alloc), and its return (kept in the cache, or freed when it does not fit).
void* take_large_block(size_t bytes);
void give_large_block(void* p, size_t bytes) noexcept;  // bytes as passed to take_large_block
// Bytes held by the cache now (for tests).
size_t large_block_cache_bytes() noexcept;

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    if (n * sizeof(T) >= kLargeBlockMinBytes) return static_cast<T*>(take_large_block(n * sizeof(T)));
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) >= kLargeBlockMinBytes) {
      give_large_block(p, n * sizeof(T));
    } else {
      std::allocator<T>::deallocate(p, n);
    }
  }
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;  // default-initialization: no zeroing for trivial types
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T>
using UninitVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace rdrr::quant
