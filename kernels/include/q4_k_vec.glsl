// Q4_K decode on 16-byte vectors (gemv_q4k.comp). A 144-byte block is 9 uvec4 when blocks start 16-byte
// aligned (144 = 9 * 16): uvec4 0 = header (d | dmin, scale words 1..3), uvec4 1 + j (j = 0..7) = qs bytes
// 16j .. 16j + 15, the "item" j: chunk c = j / 2, half h = j % 2; its byte 4m + t (word m, byte t) holds
// value 64c + 16h + 4m + t in the low nibble (sub-block 2c) and that value + 32 in the high nibble
// (sub-block 2c + 1). See q4_k.glsl for the block format.
//
// Nibble -> float without an int-to-float conversion: with the nibble at bit p <= 19 of v,
// bits(v & (15 << p) | (150 - p) << 23) is the float 2^(23 - p) + q exactly, so subtracting 2^(23 - p) gives q
// exactly (one LOP3 and one FADD on NVIDIA instead of a quarter-rate I2F).
#ifndef RDRR_Q4_K_VEC_GLSL
#define RDRR_Q4_K_VEC_GLSL

#define Q4V_BLOCK_VECS 9u

float q4v_nib(uint v, uint p) { return uintBitsToFloat((v & (15u << p)) | ((150u - p) << 23)) - float(1u << (23u - p)); }

// The 8 nibble values of word w as (low nibbles of bytes 0..3, high nibbles of bytes 0..3).
void q4v_word(uint w, out vec4 lo, out vec4 hi) {
  const uint s = w >> 12;  // nibbles at bits 20, 24, 28 move to 8, 12, 16
  lo = vec4(q4v_nib(w, 0u), q4v_nib(w, 8u), q4v_nib(w, 16u), q4v_nib(s, 12u));
  hi = vec4(q4v_nib(w, 4u), q4v_nib(w, 12u), q4v_nib(s, 8u), q4v_nib(s, 16u));
}

// The 8 nibble values of word w with per-position offsets, split between the integer and float pipes (NVIDIA
// issues LOP3/SHF at half the FADD/FFMA rate): lo[t] = (low nibble of byte t) + Q4V_OFF_LO[t], hi[t] = (high
// nibble of byte t) + Q4V_OFF_HI[t]. Bits 0-15 of w and bits 20-23 (at 11-14 of s = w >> 9) are exact floats
// (q4v_nib: one LOP3, one FADD); bits 16-19 of w and 24-31 (at 15-22 of s) sit in the mantissa under
// exponents 2^7, 2^8 and 2^4 (one LOP3, no FADD), so they carry offsets 128, 256 and 16 that callers take out
// once per sum (dot(lo, x) - dot(Q4V_OFF_LO, x)). An offset of 256 on a 16-value sum costs about
// 2^-24 * 256 * 16 / 30 ~ 1e-5 of the sum (the rows path's 16-value sums).
const vec4 Q4V_OFF_LO = vec4(0.0, 0.0, 128.0, 256.0);
const vec4 Q4V_OFF_HI = vec4(0.0, 0.0, 0.0, 16.0);
void q4v_word_mixed(uint w, out vec4 lo, out vec4 hi) {
  const uint s = w >> 9;
  lo = vec4(q4v_nib(w, 0u), q4v_nib(w, 8u), uintBitsToFloat((w & 0x000f0000u) | 0x43000000u),
            uintBitsToFloat((s & 0x00078000u) | 0x43800000u));
  hi = vec4(q4v_nib(w, 4u), q4v_nib(w, 12u), q4v_nib(s, 11u), uintBitsToFloat((s & 0x00780000u) | 0x41800000u));
}

// The 8 nibble values of word w with per-position offsets, fewer FADDs than q4v_word_mixed (the column split
// path, whose offsets come out once per output): lo[t] = (low nibble of byte t) + Q4V_MANT_OFF_LO[t],
// hi[t] = (high nibble of byte t) + Q4V_MANT_OFF_HI[t]. Three copies of the word put every nibble at bit
// p = 11..19 (a = w << 11: nibbles at bits 0, 4, 8; w itself: 12, 16; s = w >> 9: 20, 24, 28), where
// bits(v & (15 << p) | (150 - p) << 23) is 2^(23 - p) + q exactly. The three at p = 11 / 12 (offsets 4096 /
// 2048) get an FADD, the five at p = 15..19 keep offsets 256, 128 or 16: 2 shifts + 8 LOP3 + 3 FADD per word
// against q4v_word_mixed's 1 + 8 + 5, the same largest offset (256). Keeping 4096 and 2048 (no FADD) was
// faster still (H100, 4096x14336 independent calls 14.3 -> 14.15 us) but far less precise: the products
// a * (q + 4096) round at 2^-24 * 4096 relative to sums that the sub-block mins mostly cancel (GemvTest NMSE
// 4.4e-8 against its 1e-9 bound, relative error up to 1.4e-3 in ForcedKernelTest). A fourth copy for
// all-small offsets (4 shifts, no FADD) was slower (14.5 us): shifts issue at half the FADD rate.
const vec4 Q4V_MANT_OFF_LO = vec4(0.0, 16.0, 128.0, 256.0);
const vec4 Q4V_MANT_OFF_HI = vec4(256.0, 0.0, 0.0, 16.0);
void q4v_word_mant(uint w, out vec4 lo, out vec4 hi) {
  const uint a = w << 11;
  const uint s = w >> 9;
  lo = vec4(uintBitsToFloat((a & 0x00007800u) | 0x45800000u) - 4096.0, uintBitsToFloat((a & 0x00780000u) | 0x41800000u),
            uintBitsToFloat((w & 0x000f0000u) | 0x43000000u), uintBitsToFloat((s & 0x00078000u) | 0x43800000u));
  hi = vec4(uintBitsToFloat((a & 0x00078000u) | 0x43800000u), uintBitsToFloat((w & 0x0000f000u) | 0x45000000u) - 2048.0,
            uintBitsToFloat((s & 0x00007800u) | 0x45800000u) - 4096.0, uintBitsToFloat((s & 0x00780000u) | 0x41800000u));
}

// Sub-block scales and mins of item j's two sub-blocks (2c, 2c + 1), c = j / 2, from the header vector:
// returns (sc_lo, sc_hi, m_lo, m_hi) as floats (llama.cpp get_scale_min_k4 on whole words: sub-blocks 0..3
// are the low 6 bits of scale bytes 0..3 / 4..7; 4..7 combine nibbles of bytes 8..11 with the top 2 bits of
// bytes 0..3 / 4..7). One bit-select per word builds both fields (upper: nibbles from hdr.w, bits 4-5 from
// the top bits of hdr.y / hdr.z shifted down by 2; lower: the whole word), already shifted so the two fields
// sit at bits 0 and 8; bits 6-7 and 14+ are garbage that the conversions mask off. The fields become floats
// without shifts (q4v_nib's trick with a 6-bit field at bit 0 and bit 8). The c-dependent selects and shift
// counts are loop-invariant for a thread. (H100, bench_kernels, column_wise 4096x14336 independent calls:
// 15.27 -> 14.71 us against the per-byte shift-and-mask form; the scales were ~36 of ~134 instructions per
// input and invocation there.)
vec4 q4v_scales(uvec4 hdr, uint c) {
  const bool upper = c >= 2u;
  const uint sh = 16u * (c & 1u);
  const uint keep = upper ? 0x0f0f0f0fu : 0xffffffffu;  // bits taken from the first word
  const uint scw = (((upper ? hdr.w : hdr.y) >> sh) & keep) | ((hdr.y >> (2u + sh)) & ~keep);
  const uint mw = (((upper ? hdr.w : hdr.z) >> (upper ? 4u + sh : sh)) & keep) | ((hdr.z >> (2u + sh)) & ~keep);
  return vec4(uintBitsToFloat((scw & 0x3fu) | 0x4b000000u) - 8388608.0,
              uintBitsToFloat((scw & 0x3f00u) | 0x47000000u) - 32768.0,
              uintBitsToFloat((mw & 0x3fu) | 0x4b000000u) - 8388608.0,
              uintBitsToFloat((mw & 0x3f00u) | 0x47000000u) - 32768.0);
}

#endif
