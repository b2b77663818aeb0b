// Q4_K block accessors; mirrors quant/blocks.h BlockQ4K (144 bytes = 36 uint32 words, 256 values):
//   word 0      d (bits 0-15, f16) | dmin (bits 16-31, f16)
//   words 1-3   scales[12]: 8 six-bit sub-scales sc[j] and sub-mins m[j] (packing below)
//   words 4-35  qs[128]: chunk c = bytes 32c..32c+31 holds value 64c+l in the low nibble and 64c+32+l in
//               the high nibble (l = 0..31); low nibbles are sub-block 2c, high ones 2c+1.
// Decode: x = (d * sc[j]) * q - (dmin * m[j]), q in 0..15, j = value / 32.
// The including shader defines Q4K_WORD(i) to read uint32 word i of the weight binding; `wb` below is the
// word index of a block's first word (blocks must start 4-byte aligned: 144 * n is).
#ifndef RDRR_Q4_K_GLSL
#define RDRR_Q4_K_GLSL

#define Q4K_BLOCK_WORDS 36u
#define Q4K_BLOCK_ELEMS 256u

vec2 q4k_d_dmin(uint wb) { return unpackHalf2x16(Q4K_WORD(wb)); }

// Byte i (0..11) of scales[12], given its three words (block words 1..3).
uint q4k_sbyte(uvec3 sw, uint i) { return (sw[i >> 2] >> (8u * (i & 3u))) & 0xffu; }

// (sc[j], m[j]) for sub-block j = 0..7 (llama.cpp get_scale_min_k4), from the three scale words.
uvec2 q4k_scale_min_w(uvec3 sw, uint j) {
  if (j < 4u) return uvec2(q4k_sbyte(sw, j) & 63u, q4k_sbyte(sw, j + 4u) & 63u);
  const uint b = q4k_sbyte(sw, j + 4u);
  return uvec2((b & 15u) | ((q4k_sbyte(sw, j - 4u) >> 6) << 4), (b >> 4) | ((q4k_sbyte(sw, j) >> 6) << 4));
}

uvec3 q4k_scale_words(uint wb) { return uvec3(Q4K_WORD(wb + 1u), Q4K_WORD(wb + 2u), Q4K_WORD(wb + 3u)); }

uvec2 q4k_scale_min(uint wb, uint j) { return q4k_scale_min_w(q4k_scale_words(wb), j); }

// 4-bit value q of element e (0..255) of the block.
uint q4k_q(uint wb, uint e) {
  const uint c = e >> 6;
  const uint l = e & 31u;
  const uint hi = (e >> 5) & 1u;
  const uint byte_index = 32u * c + l;
  return (Q4K_WORD(wb + 4u + (byte_index >> 2)) >> (8u * (byte_index & 3u) + 4u * hi)) & 15u;
}

// Code q of sub-block j scaled exactly as the CPU reference rounds it (no contraction into fma):
// (d * sc[j]) * q - (dmin * m[j]). Q5_K (q5_k.glsl) shares it.
float q4k_scaled(uint wb, uint j, uint q) {
  const vec2 dm = q4k_d_dmin(wb);
  const uvec2 sm = q4k_scale_min(wb, j);
  precise float d1 = dm.x * float(sm.x);
  precise float m1 = dm.y * float(sm.y);
  precise float x = d1 * float(q) - m1;
  return x;
}

// Exact decode of element e.
float q4k_decode(uint wb, uint e) { return q4k_scaled(wb, e >> 5, q4k_q(wb, e)); }

#endif
