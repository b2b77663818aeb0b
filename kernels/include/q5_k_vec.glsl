// Q5_K decode on 16-byte vectors (gemv_q4k.comp ROWS with Q5K). A 176-byte block is 11 uvec4 when blocks start
// 16-byte aligned (176 = 11 * 16): uvec4 0 = the header as Q4_K's (d | dmin, scale words 1..3: q4v_scales),
// uvec4 1 + h (h = 0, 1) = qh bytes 16h .. 16h + 15, uvec4 3 + j (j = 0..7) = qs bytes 16j .. 16j + 15, the
// "item" j as Q4_K's (q4_k_vec.glsl): chunk c = j / 2, half h = j % 2; its byte 4m + t holds value
// 64c + 16h + 4m + t in the low nibble and that value + 32 in the high nibble. Their fifth bits are bits 2c and
// 2c + 1 of qh byte 16h + 4m + t, i.e. of byte t of word m of qh vector h (q5_k.glsl: bit j of qh[l] is bit 4
// of value 32j + l).
#ifndef RDRR_Q5_K_VEC_GLSL
#define RDRR_Q5_K_VEC_GLSL

#define Q5V_BLOCK_VECS 11u
#define Q5V_QH_VEC 1u
#define Q5V_QS_VEC 3u

// A 5-bit field at bit p <= 18 of v as an exact float (q4v_nib's trick with a 5-bit mask).
float q5v_field(uint v, uint p) {
  return uintBitsToFloat((v & (31u << p)) | ((150u - p) << 23)) - float(1u << (23u - p));
}

// The 8 five-bit values of qs word w and qh word hw for chunk c (shift c2 = 2c): lo[t] = value of byte t's low
// nibble, hi[t] = of its high nibble, exact (0 .. 31).
void q5v_word(uint w, uint hw, uint c2, out vec4 lo, out vec4 hi) {
  const uint l5 = (w & 0x0f0f0f0fu) | (((hw >> c2) << 4) & 0x10101010u);
  const uint h5 = ((w >> 4) & 0x0f0f0f0fu) | (((hw >> c2) << 3) & 0x10101010u);
  lo = vec4(q5v_field(l5, 0u), q5v_field(l5, 8u), q5v_field(l5, 16u), q5v_field(l5 >> 16, 8u));
  hi = vec4(q5v_field(h5, 0u), q5v_field(h5, 8u), q5v_field(h5, 16u), q5v_field(h5 >> 16, 8u));
}

#endif
