// AVX2 + F16C bulk conversions (internal; f16.cpp dispatches to them when simd_enabled()). Bit-identical to
// the scalar reference functions in f16.h. Defined only on x86-64 (RDRR_QUANT_X86).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdrr::quant::detail {

void f16_to_f32_avx2(const uint16_t* src, float* dst, size_t n);
void f32_to_f16_avx2(const float* src, uint16_t* dst, size_t n);
void bf16_to_f32_avx2(const uint16_t* src, float* dst, size_t n);
void f32_to_bf16_avx2(const float* src, uint16_t* dst, size_t n);

}  // namespace rdrr::quant::detail
