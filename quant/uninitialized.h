// UninitVector<T>: a std::vector whose resize() leaves new elements of trivial types uninitialized, for
// large buffers that are written in full right after (activations, converted weights, factors): a value-
// initializing resize would first zero every page (measured: a tenth of a calibration's CPU time). Its
// allocations of 4 MiB or more ask the kernel for transparent huge pages (madvise MADV_HUGEPAGE, where the
// system allows it): such buffers come fresh from mmap each time, and 4 KiB pages cost one page fault each
// (measured: another tenth under virtualization).
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace rdrr::quant {

// Marks the whole 2 MiB pages inside [p, p + bytes) for transparent huge pages (no-op where unsupported).
void advise_huge_pages(void* p, size_t bytes) noexcept;
inline constexpr size_t kHugePageAdviceMinBytes = size_t{4} << 20;

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
    T* p = std::allocator<T>::allocate(n);
    if (n * sizeof(T) >= kHugePageAdviceMinBytes) advise_huge_pages(p, n * sizeof(T));
    return p;
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
