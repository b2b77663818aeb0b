// IEEE binary16 and bfloat16 conversions (round-to-nearest-even, subnormals, inf kept, nan quieted).
// The scalar inline functions are the reference; the bulk functions may use SIMD and must agree bit-for-bit.
#pragma once

#include <bit>
#include <cstdint>
#include <span>

namespace rdrr::quant {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits = 0;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    // inf, or a quiet nan with the payload kept (signalling nans are quieted, as F16C's vcvtph2ps does)
    bits = sign | 0x7f800000u | (mant << 13) | (mant != 0 ? 0x00400000u : 0u);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x47800000u) {  // >= 65536, inf or nan
    if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));  // quiet nan
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (x < 0x38800000u) {  // below the smallest normal f16 (2^-14): subnormal or zero
    // Adding 0.5f aligns the value so the FPU rounds it to a 10-bit subnormal mantissa (RNE).
    const float aligned = std::bit_cast<float>(x) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(aligned) - 0x3f000000u));
  }
  const uint32_t mant_odd = (x >> 13) & 1u;
  x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd;  // rebias and round to nearest even
  return static_cast<uint16_t>(sign | (x >> 13));  // a carry into exponent 31 yields inf, as it should
}

inline float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

// Bulk conversions (dst.size() must equal src.size()). Vectorised where the CPU allows.
void f16_to_f32(std::span<const uint16_t> src, std::span<float> dst);
void f32_to_f16(std::span<const float> src, std::span<uint16_t> dst);
void bf16_to_f32(std::span<const uint16_t> src, std::span<float> dst);
void f32_to_bf16(std::span<const float> src, std::span<uint16_t> dst);

}  // namespace rdrr::quant
