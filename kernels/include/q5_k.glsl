// Q5_K block accessors; mirrors quant/legacy_blocks.h BlockQ5K (176 bytes = 44 uint32 words, 256 values):
//   word 0       d | dmin (f16 each), words 1-3 scales[12] packed as Q4_K's (q4_k.glsl, included first)
//   words 4-11   qh[32]: bit j of qh[l] is bit 4 of value 32 j + l
//   words 12-43  qs[128]: as Q4_K's (chunk c = bytes 32c..32c+31: value 64c+l low nibble, 64c+32+l high)
// Decode: x = (d * sc[j]) * q - (dmin * m[j]), q in 0..31, j = value / 32.
// Uses Q4K_WORD(i) (the weight binding's uint32 word i); `wb` is the word index of a block's first word.
#ifndef RDRR_Q5_K_GLSL
#define RDRR_Q5_K_GLSL

#define Q5K_BLOCK_WORDS 44u
#define Q5K_QH_WORD 4u
#define Q5K_QS_WORD 12u

// 5-bit value of element e (0..255).
uint q5k_q(uint wb, uint e) {
  const uint c = e >> 6;
  const uint l = e & 31u;
  const uint hi = (e >> 5) & 1u;
  const uint qs_byte = 32u * c + l;
  const uint low = (Q4K_WORD(wb + Q5K_QS_WORD + (qs_byte >> 2)) >> (8u * (qs_byte & 3u) + 4u * hi)) & 15u;
  const uint high = (Q4K_WORD(wb + Q5K_QH_WORD + (l >> 2)) >> (8u * (l & 3u) + (e >> 5))) & 1u;
  return low | (high << 4);
}

// Exact decode of element e (Q4_K's scaling of the 5-bit code).
float q5k_decode(uint wb, uint e) { return q4k_scaled(wb, e >> 5, q5k_q(wb, e)); }

#endif
