// GGUF-compatible block formats: the one definition of their byte layout (kernels/ mirrors it in GLSL,
// with a test that the two agree). All fields little-endian; f16 values are stored as raw uint16_t bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdrr::quant {

inline constexpr int kQK_K = 256;        // values per Q4_K / Q6_K super-block
inline constexpr int kQ4KSubBlocks = 8;  // 32-value sub-blocks per Q4_K block
inline constexpr int kQK8_0 = 32;        // values per Q8_0 block

// Q4_K (GGUF type 12): 144 bytes / 256 values. x = (d*sc[j])*q - (dmin*m[j]), q in 0..15.
struct BlockQ4K {
  uint16_t d;           // f16 scale of the 6-bit sub-scales
  uint16_t dmin;        // f16 scale of the 6-bit sub-mins
  uint8_t scales[12];   // 8 sub-scales + 8 sub-mins, 6 bits each (packing: see q4_k.h)
  uint8_t qs[128];      // 4-bit values: chunk c (32 bytes) = values 64c+l (low) and 64c+32+l (high)
};

// Q6_K (GGUF type 14): 210 bytes / 256 values. x = d * scales[s] * (q - 32), q in 0..63.
struct BlockQ6K {
  uint8_t ql[128];     // low 4 bits
  uint8_t qh[64];      // high 2 bits
  int8_t scales[16];   // one per 16 values
  uint16_t d;          // f16 super-block scale (last)
};

// Q8_0 (GGUF type 8): 34 bytes / 32 values. x = d * q.
struct BlockQ8_0 {
  uint16_t d;      // f16 scale
  int8_t qs[32];
};

static_assert(sizeof(BlockQ4K) == 144, "Q4_K block must be 144 bytes");
static_assert(sizeof(BlockQ6K) == 210, "Q6_K block must be 210 bytes");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must be 34 bytes");
static_assert(offsetof(BlockQ4K, scales) == 4 && offsetof(BlockQ4K, qs) == 16);
static_assert(offsetof(BlockQ6K, qh) == 128 && offsetof(BlockQ6K, scales) == 192 &&
              offsetof(BlockQ6K, d) == 208);
static_assert(alignof(BlockQ4K) == 2 && alignof(BlockQ6K) == 2 && alignof(BlockQ8_0) == 2);

}  // namespace rdrr::quant
