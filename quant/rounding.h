// Internal helpers shared by the quantizers (not part of the public API).
#pragma once

#include <bit>
#include <cstdint>

namespace rdrr::quant::detail {

// Round to nearest, ties to even, for |v| < 2^22 (llama.cpp's nearest_int): adding 1.5 * 2^23 makes the FPU
// round the value to an integer in the low mantissa bits.
inline int nearest_int(float v) {
  const float t = v + 12582912.f;
  return static_cast<int>(std::bit_cast<uint32_t>(t) & 0x007fffffu) - 0x00400000;
}

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace rdrr::quant::detail
