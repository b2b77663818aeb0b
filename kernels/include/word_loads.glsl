// Reads of 2-byte-aligned data (Q6_K's 210-byte blocks) as 32-bit words: a block starts
// word aligned or 2 bytes past a word, alternating between neighbours, so a segment at 2-byte index h2 is
// read as aligned words and funnel-shifted by 0 or 16 bits, with no branch. The word past the segment is
// loaded only when the shift needs it, so a segment that ends a binding never reads past it.
// The including shader declares `w` (uint[]) on the weight binding.
#ifndef RDRR_WORD_LOADS_GLSL
#define RDRR_WORD_LOADS_GLSL

// Bits [sh, sh + 32) of the 64-bit value hi:lo, sh = 0 or 16.
uint funnel16(uint lo, uint hi, uint sh) { return (lo >> sh) | ((hi << 16) << (16u - sh)); }

// The 16 bytes at 2-byte index h2.
uvec4 segment16(uint h2) {
  const uint wi = h2 >> 1;
  const uint sh = (h2 & 1u) * 16u;
  uint v[5];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) v[i] = w[wi + i];
  v[4] = sh != 0u ? w[wi + 4u] : 0u;
  uvec4 out_v;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) out_v[i] = funnel16(v[i], v[i + 1u], sh);
  return out_v;
}

// The 8 bytes at 2-byte index h2.
uvec2 segment8(uint h2) {
  const uint wi = h2 >> 1;
  const uint sh = (h2 & 1u) * 16u;
  const uint v0 = w[wi];
  const uint v1 = w[wi + 1u];
  const uint v2 = sh != 0u ? w[wi + 2u] : 0u;
  return uvec2(funnel16(v0, v1, sh), funnel16(v1, v2, sh));
}

#endif
