// Q8_0 block accessors; mirrors quant/blocks.h BlockQ8_0 (34 bytes = 17 uint16, 32 values):
//   bytes 0-1 d (f16), bytes 2-33 qs[32] (int8). Decode: x = d * q.
// The including shader defines Q80_HALF(i) to read uint16 i of the weight binding (as a uint); `hb` is the
// uint16 index of a block's first byte.
#ifndef RDRR_Q8_0_GLSL
#define RDRR_Q8_0_GLSL

#define Q80_BLOCK_HALFS 17u
#define Q80_BLOCK_ELEMS 32u

float q80_d(uint hb) { return unpackHalf2x16(Q80_HALF(hb)).x; }

// int8 values 2i and 2i+1 of the block (i = 0..15).
ivec2 q80_pair(uint hb, uint i) {
  const int w = int(Q80_HALF(hb + 1u + i));
  return ivec2(bitfieldExtract(w, 0, 8), bitfieldExtract(w, 8, 8));
}

int q80_q(uint hb, uint e) {
  const ivec2 p = q80_pair(hb, e >> 1);
  return (e & 1u) == 0u ? p.x : p.y;
}

float q80_decode(uint hb, uint e) {
  precise float x = q80_d(hb) * float(q80_q(hb, e));
  return x;
}

#endif
