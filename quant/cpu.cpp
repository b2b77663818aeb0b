#include "quant/cpu.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace rdrr::quant {
namespace {

bool env_disables_simd() {
  const char* v = std::getenv("RDRR_NO_SIMD");
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

// -1: not yet decided (use the environment), 0: disabled, 1: enabled.
std::atomic<int>& simd_override() {
  static std::atomic<int> value{-1};
  return value;
}

}  // namespace

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = [] {
    __builtin_cpu_init();
    // F16C through cpuid (leaf 1, ecx): clang 14's __builtin_cpu_supports does not know "f16c".
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
    return __builtin_cpu_supports("avx2") && f16c;
  }();
  return has;
#else
  return false;
#endif
}

bool simd_enabled() {
  static const bool env_off = env_disables_simd();
  const int o = simd_override().load(std::memory_order_relaxed);
  const bool wanted = o < 0 ? !env_off : o == 1;
  return wanted && cpu_has_avx2();
}

void set_simd_enabled(bool enabled) { simd_override().store(enabled ? 1 : 0, std::memory_order_relaxed); }

}  // namespace rdrr::quant
