// Q6_K block accessors; mirrors quant/blocks.h BlockQ6K (210 bytes = 105 uint16, 256 values):
//   bytes 0-127    ql[128]: low 4 bits
//   bytes 128-191  qh[64]:  high 2 bits
//   bytes 192-207  scales[16]: int8, one per 16 values
//   bytes 208-209  d: f16 super-block scale (last)
// Within each 128-value half h: ql[64h + l] holds q[l] (low nibble) and q[l+64] (high nibble), ql[64h+l+32]
// holds q[l+32] and q[l+96]; qh[32h + l] holds bits 4-5 of q[l], q[l+32], q[l+64], q[l+96] at shifts 0, 2,
// 4, 6 (l = 0..31). Decode: x = (d * scales[e / 16]) * (q - 32), q in 0..63.
// The including shader defines Q6K_HALF(i) to read uint16 i of the weight binding (as a uint); `hb` is the
// uint16 index of a block's first byte (blocks are 2-byte aligned).
#ifndef RDRR_Q6_K_GLSL
#define RDRR_Q6_K_GLSL

#define Q6K_BLOCK_HALFS 105u
#define Q6K_BLOCK_ELEMS 256u

uint q6k_byte(uint hb, uint byte_index) { return (Q6K_HALF(hb + (byte_index >> 1)) >> (8u * (byte_index & 1u))) & 0xffu; }

float q6k_d(uint hb) { return unpackHalf2x16(Q6K_HALF(hb + 104u)).x; }

int q6k_scale(uint hb, uint s) { return bitfieldExtract(int(q6k_byte(hb, 192u + s)), 0, 8); }

// 6-bit value q (0..63, not yet offset by -32) of element e (0..255).
uint q6k_q(uint hb, uint e) {
  const uint h = e >> 7;
  const uint r = e & 127u;
  const uint quarter = r >> 5;  // 0..3
  const uint l = r & 31u;
  const uint lo_byte = q6k_byte(hb, 64u * h + l + 32u * (quarter & 1u));
  const uint lo = (quarter >= 2u) ? (lo_byte >> 4) : (lo_byte & 15u);
  const uint hi = (q6k_byte(hb, 128u + 32u * h + l) >> (2u * quarter)) & 3u;
  return lo | (hi << 4);
}

float q6k_decode(uint hb, uint e) {
  precise float ds = q6k_d(hb) * float(q6k_scale(hb, e >> 4));
  precise float x = ds * float(int(q6k_q(hb, e)) - 32);
  return x;
}

#endif
