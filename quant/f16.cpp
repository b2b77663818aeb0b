#include "quant/f16.h"

#include <cassert>
#include <cstddef>

#include "quant/cpu.h"
#if defined(RDRR_QUANT_X86)
#include "quant/f16_avx2.h"
#endif

namespace rdrr::quant {

void f16_to_f32(std::span<const uint16_t> src, std::span<float> dst) {
  assert(src.size() == dst.size());
#if defined(RDRR_QUANT_X86)
  if (simd_enabled()) return detail::f16_to_f32_avx2(src.data(), dst.data(), src.size());
#endif
  for (size_t i = 0; i < src.size(); ++i) dst[i] = f16_to_f32(src[i]);
}

void f32_to_f16(std::span<const float> src, std::span<uint16_t> dst) {
  assert(src.size() == dst.size());
#if defined(RDRR_QUANT_X86)
  if (simd_enabled()) return detail::f32_to_f16_avx2(src.data(), dst.data(), src.size());
#endif
  for (size_t i = 0; i < src.size(); ++i) dst[i] = f32_to_f16(src[i]);
}

void bf16_to_f32(std::span<const uint16_t> src, std::span<float> dst) {
  assert(src.size() == dst.size());
#if defined(RDRR_QUANT_X86)
  if (simd_enabled()) return detail::bf16_to_f32_avx2(src.data(), dst.data(), src.size());
#endif
  for (size_t i = 0; i < src.size(); ++i) dst[i] = bf16_to_f32(src[i]);
}

void f32_to_bf16(std::span<const float> src, std::span<uint16_t> dst) {
  assert(src.size() == dst.size());
#if defined(RDRR_QUANT_X86)
  if (simd_enabled()) return detail::f32_to_bf16_avx2(src.data(), dst.data(), src.size());
#endif
  for (size_t i = 0; i < src.size(); ++i) dst[i] = f32_to_bf16(src[i]);
}

}  // namespace rdrr::quant
