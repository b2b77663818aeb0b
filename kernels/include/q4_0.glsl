// Q4_0 and Q5_0 block accessors; mirror quant/legacy_blocks.h BlockQ4_0 / BlockQ5_0 (ggml's formats):
//   Q4_0: 18 bytes = 9 uint16, 32 values: half 0 d (f16); halves 1-8 qs[16]: value l (low nibble) and value
//         l + 16 (high nibble) in qs[l]. Decode: x = (q - 8) * d, q in 0..15.
//   Q5_0: 22 bytes = 11 uint16, 32 values: half 0 d; halves 1-2 qh (uint32, little-endian): bit j is bit 4 of
//         value j; halves 3-10 qs[16] as in Q4_0. Decode: x = (q - 16) * d, q in 0..31.
// The including shader defines Q40_HALF(i) to read uint16 i of the weight binding (as a uint); `hb` is the
// uint16 index of a block's first byte (blocks are 2-byte aligned: 18 * n and 22 * n are).
#ifndef RDRR_Q4_0_GLSL
#define RDRR_Q4_0_GLSL

#define Q40_BLOCK_HALFS 9u
#define Q50_BLOCK_HALFS 11u
#define Q40_BLOCK_ELEMS 32u

float q40_d(uint hb) { return unpackHalf2x16(Q40_HALF(hb)).x; }

// qs bytes 4i .. 4i + 3 (i = 0..3) as one word; qs starts at half `qs_half` of the block.
uint q40_qs_word(uint hb, uint qs_half, uint i) {
  return Q40_HALF(hb + qs_half + 2u * i) | (Q40_HALF(hb + qs_half + 2u * i + 1u) << 16);
}

uint q50_qh(uint hb) { return Q40_HALF(hb + 1u) | (Q40_HALF(hb + 2u) << 16); }

// 4-bit value of element e (0..31) from qs starting at half `qs_half`.
uint q40_nibble(uint hb, uint qs_half, uint e) {
  const uint l = e & 15u;
  return (Q40_HALF(hb + qs_half + (l >> 1)) >> (8u * (l & 1u) + 4u * (e >> 4))) & 15u;
}

// Exact decodes, rounding like the CPU reference (one product).
float q40_decode(uint hb, uint e) {
  precise float x = float(int(q40_nibble(hb, 1u, e)) - 8) * q40_d(hb);
  return x;
}

float q50_decode(uint hb, uint e) {
  const uint q = q40_nibble(hb, 3u, e) | (((q50_qh(hb) >> e) & 1u) << 4);
  precise float x = float(int(q) - 16) * q40_d(hb);
  return x;
}

#endif
