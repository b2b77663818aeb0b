// The other GGUF block formats found in real llama.cpp files (Q4_K_M mixtures fall back to Q5_0 / Q8_0 for
// rows that are not a multiple of 256; older files use Q4_0/Q4_1/Q5_1; Q2_K/Q3_K/Q5_K files exist). rdrr
// only decodes them (quant/legacy_dequant.h) before requantizing. Layouts as in ggml's ggml-common.h; all
// fields little-endian, f16 values stored as raw uint16_t bits. Q4_K / Q6_K / Q8_0 live in quant/blocks.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/blocks.h"

namespace rdrr::quant {

inline constexpr int kQK4_0 = 32;  // values per Q4_0 / Q4_1 / Q5_0 / Q5_1 block
inline constexpr int kQK5_0 = 32;

// Q4_0 (GGUF type 2): 18 bytes / 32 values. x[j] = (q[j] - 8) * d, q in 0..15;
// qs[l] holds value l (low nibble) and value l + 16 (high nibble).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};

// Q4_1 (GGUF type 3): 20 bytes / 32 values. x[j] = q[j] * d + m; nibbles as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[16];
};

// Q5_0 (GGUF type 6): 22 bytes / 32 values. x[j] = (q[j] - 16) * d, q in 0..31: low 4 bits as in Q4_0,
// bit 4 of value j = bit j of qh read as a little-endian uint32.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};

// Q5_1 (GGUF type 7): 24 bytes / 32 values. x[j] = q[j] * d + m; bits as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[16];
};

// Q2_K (GGUF type 10): 84 bytes / 256 values, 16 groups of 16 values.
// x[i] = (d * (scales[g] & 15)) * q - (dmin * (scales[g] >> 4)), g = i / 16, q in 0..3.
// Value i (h = i / 128, j = (i % 128) / 32, l = i % 32): q = (qs[32h + l] >> 2j) & 3.
struct BlockQ2K {
  uint8_t scales[16];  // low nibble: scale code, high nibble: min code
  uint8_t qs[64];
  uint16_t d;          // f16 scale of the scale codes
  uint16_t dmin;       // f16 scale of the min codes
};

// Q3_K (GGUF type 11): 110 bytes / 256 values, 16 groups of 16 values.
// x[i] = (d * (sc[g] - 32)) * q, g = i / 16, sc[g] a 6-bit code, q in -4..3.
// Value i (h, j, l as in Q2_K): q = ((qs[32h + l] >> 2j) & 3) - (hmask[l] bit (4h + j) set ? 0 : 4).
// scales[12] packing of sc[g]: low 4 bits in byte g (g < 8, low nibble) or byte g - 8 (g >= 8, high
// nibble); high 2 bits in byte 8 + g % 4 at bits 2 * (g / 4) .. 2 * (g / 4) + 1.
struct BlockQ3K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};

// Q5_K (GGUF type 13): 176 bytes / 256 values, 8 sub-blocks of 32 values.
// x[i] = (d * sc[j]) * q - (dmin * m[j]), j = i / 32, q in 0..31; scales[12] packed as in Q4_K
// (quant/q4_k.h). Low 4 bits as in Q4_K (qs chunk c = i / 64: low nibbles = sub-block 2c, high = 2c + 1);
// bit 4 of value i = bit (i / 32) of qh[i % 32].
struct BlockQ5K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};

static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block must be 18 bytes");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block must be 20 bytes");
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block must be 22 bytes");
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block must be 24 bytes");
static_assert(sizeof(BlockQ2K) == 84, "Q2_K block must be 84 bytes");
static_assert(sizeof(BlockQ3K) == 110, "Q3_K block must be 110 bytes");
static_assert(sizeof(BlockQ5K) == 176, "Q5_K block must be 176 bytes");
static_assert(offsetof(BlockQ4_0, qs) == 2);
static_assert(offsetof(BlockQ4_1, m) == 2 && offsetof(BlockQ4_1, qs) == 4);
static_assert(offsetof(BlockQ5_0, qh) == 2 && offsetof(BlockQ5_0, qs) == 6);
static_assert(offsetof(BlockQ5_1, m) == 2 && offsetof(BlockQ5_1, qh) == 4 && offsetof(BlockQ5_1, qs) == 8);
static_assert(offsetof(BlockQ2K, qs) == 16 && offsetof(BlockQ2K, d) == 80 && offsetof(BlockQ2K, dmin) == 82);
static_assert(offsetof(BlockQ3K, qs) == 32 && offsetof(BlockQ3K, scales) == 96 && offsetof(BlockQ3K, d) == 108);
static_assert(offsetof(BlockQ5K, dmin) == 2 && offsetof(BlockQ5K, scales) == 4 && offsetof(BlockQ5K, qh) == 16 &&
              offsetof(BlockQ5K, qs) == 48);
static_assert(alignof(BlockQ4_0) == 2 && alignof(BlockQ4_1) == 2 && alignof(BlockQ5_0) == 2 &&
              alignof(BlockQ5_1) == 2 && alignof(BlockQ2K) == 2 && alignof(BlockQ3K) == 2 &&
              alignof(BlockQ5K) == 2);

}  // namespace rdrr::quant
