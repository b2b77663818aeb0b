#include "quant/q4_k.h"

#include <cassert>
#include <cstddef>
#include <cstring>

#include "quant/cpu.h"
#include "quant/f16.h"
#include "quant/q4_k_kernels.h"

namespace rdrr::quant {

using detail::BlockF;
using detail::kQ4KLanes;
using detail::kQ4KRows;
using detail::LaneF;
using detail::Q4KKernels;
using detail::Q4KWork;

void pack_q4k_scales(const Q4KScales& codes, std::span<uint8_t, 12> packed) {
  for (int j = 0; j < 4; ++j) {
    const uint8_t sc_lo = codes.sc[j] & 63u, m_lo = codes.m[j] & 63u;
    const uint8_t sc_hi = codes.sc[j + 4] & 63u, m_hi = codes.m[j + 4] & 63u;
    packed[j] = static_cast<uint8_t>(sc_lo | ((sc_hi >> 4) << 6));
    packed[j + 4] = static_cast<uint8_t>(m_lo | ((m_hi >> 4) << 6));
    packed[j + 8] = static_cast<uint8_t>((sc_hi & 15u) | ((m_hi & 15u) << 4));
  }
}

Q4KScales unpack_q4k_scales(std::span<const uint8_t, 12> packed) {
  Q4KScales c{};
  for (int j = 0; j < 4; ++j) {
    c.sc[j] = packed[j] & 63u;
    c.m[j] = packed[j + 4] & 63u;
    c.sc[j + 4] = static_cast<uint8_t>((packed[j + 8] & 15u) | ((packed[j] >> 6) << 4));
    c.m[j + 4] = static_cast<uint8_t>((packed[j + 8] >> 4) | ((packed[j + 4] >> 6) << 4));
  }
  return c;
}

void dequantize_q4_k(std::span<const BlockQ4K> src, std::span<float> dst) {
  assert(dst.size() == src.size() * kQK_K);
  float* y = dst.data();
  for (const BlockQ4K& b : src) {
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    const Q4KScales c = unpack_q4k_scales(std::span<const uint8_t, 12>(b.scales));
    for (int chunk = 0; chunk < 4; ++chunk) {
      const uint8_t* q = b.qs + 32 * chunk;
      const float d1 = d * static_cast<float>(c.sc[2 * chunk]);
      const float m1 = dmin * static_cast<float>(c.m[2 * chunk]);
      const float d2 = d * static_cast<float>(c.sc[2 * chunk + 1]);
      const float m2 = dmin * static_cast<float>(c.m[2 * chunk + 1]);
      for (int l = 0; l < 32; ++l) y[l] = d1 * static_cast<float>(q[l] & 15u) - m1;
      for (int l = 0; l < 32; ++l) y[32 + l] = d2 * static_cast<float>(q[l] >> 4) - m2;
      y += 64;
    }
  }
}

namespace {

// llama.cpp's nearest_int: round to nearest even for |v| < 2^22.
inline int nearest_int(float v) {
  const float t = v + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

const Q4KKernels& kernels() {
#ifdef RDRR_QUANT_X86
  if (simd_enabled()) return detail::q4k_kernels_avx2();
#endif
  return detail::q4k_kernels_scalar();
}

// The 6-bit codes and levels of one block as the kernels produce them, and their packing.
void write_block(const Q4KKernels& k, uint16_t d_bits, uint16_t dmin_bits, const LaneF sc, const LaneF m,
                 const BlockF q, BlockQ4K& out) {
  out.d = d_bits;
  out.dmin = dmin_bits;
  Q4KScales codes{};
  for (int j = 0; j < kQ4KLanes; ++j) {
    codes.sc[j] = static_cast<uint8_t>(sc[j]);
    codes.m[j] = static_cast<uint8_t>(m[j]);
  }
  pack_q4k_scales(codes, std::span<uint8_t, 12>(out.scales));
  k.pack(q, out.qs);
}

// llama.cpp's quantize_row_q4_K_ref for one block, from make_qkx2's fits: 6-bit codes against
// d = max_scale/63 and dmin = max_min/63, then requantisation with division.
void finish_reference(const Q4KKernels& k, const Q4KWork& wk, const detail::Q4KRefFit& fit, BlockQ4K& out) {
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQ4KLanes; ++j) {
    if (fit.scale[j] > max_scale) max_scale = fit.scale[j];
    if (fit.the_min[j] > max_min) max_min = fit.the_min[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  LaneF sc, m;
  for (int j = 0; j < kQ4KLanes; ++j) {
    const auto ls = static_cast<uint8_t>(nearest_int(inv_scale * fit.scale[j]));
    const auto lm = static_cast<uint8_t>(nearest_int(inv_min * fit.the_min[j]));
    sc[j] = ls < 63 ? ls : 63;
    m[j] = lm < 63 ? lm : 63;
  }
  const uint16_t d_bits = f32_to_f16(max_scale / 63.f), dmin_bits = f32_to_f16(max_min / 63.f);
  const float d = f16_to_f32(d_bits), dmin = f16_to_f32(dmin_bits);
  LaneF D, M;
  for (int j = 0; j < kQ4KLanes; ++j) {
    D[j] = d * sc[j];
    M[j] = dmin * m[j];
  }
  alignas(32) BlockF q;
  k.requant(wk, D, M, q);
  for (int j = 0; j < kQ4KLanes; ++j) {
    if (D[j] != 0) continue;  // llama.cpp keeps make_qkx2's levels for a zero sub-scale (they decode to -M)
    for (int i = 0; i < kQ4KRows; ++i) q[i][j] = fit.levels[i][j];
  }
  write_block(k, d_bits, dmin_bits, sc, m, q, out);
}

// The f16 block scale for the largest fitted sub-scale `max_fit` (>= 0): max_fit / 63, saturated to the
// largest finite f16 (NaN -> 0), rounded up when rounding to nearest would leave max_fit more than half a code
// above 63 (an f16 subnormal has few bits; the largest sub-block would be clipped).
uint16_t block_scale_f16(float max_fit) {
  const float v = max_fit / 63.f;
  if (!(v > 0)) return 0;
  uint16_t h = f32_to_f16(v);
  if (h >= 0x7c00u) return 0x7bffu;
  if (f16_to_f32(h) * 63.5f < max_fit && h < 0x7bffu) ++h;
  return h;
}

// Our encoder: the kernels' continuous fit, block scales d = max D / 63 and dmin = max M / 63 (as llama.cpp
// derives them from its fits), then the kernels' code search.
void encode_block(const Q4KKernels& k, const Q4KWork& wk, BlockQ4K& out) {
  detail::Q4KFit fit;
  k.fit(wk, fit);
  float max_d = 0, max_m = 0;
  for (int j = 0; j < kQ4KLanes; ++j) {
    if (fit.D[j] > max_d) max_d = fit.D[j];
    if (fit.M[j] > max_m) max_m = fit.M[j];
  }
  const uint16_t d_bits = block_scale_f16(max_d), dmin_bits = block_scale_f16(max_m);
  detail::Q4KCodes c;
  k.codes(wk, fit, f16_to_f32(d_bits), f16_to_f32(dmin_bits), c);
  write_block(k, d_bits, dmin_bits, c.sc, c.m, c.q, out);
}

// llama.cpp's blocks, encoded in pairs (make_qkx2 runs on two blocks at once).
void reference_blocks(const float* src, std::span<BlockQ4K> dst) {
  const Q4KKernels& k = kernels();
  Q4KWork wk[2];
  detail::Q4KRefFit fit[2];
  for (size_t b = 0; b < dst.size(); b += 2) {
    const int n = dst.size() - b >= 2 ? 2 : 1;
    for (int t = 0; t < n; ++t) k.load(src + (b + static_cast<size_t>(t)) * kQK_K, nullptr, wk[t]);
    k.ref_search(wk, n, fit);
    for (int t = 0; t < n; ++t) finish_reference(k, wk[t], fit[t], dst[b + static_cast<size_t>(t)]);
  }
}

}  // namespace

void quantize_q4_k(std::span<const float> src, std::span<BlockQ4K> dst, std::span<const float> weights) {
  assert(src.size() == dst.size() * kQK_K);
  assert(weights.empty() || weights.size() == src.size());
  const Q4KKernels& k = kernels();
  Q4KWork wk;
  for (size_t b = 0; b < dst.size(); ++b) {
    k.load(src.data() + b * kQK_K, weights.empty() ? nullptr : weights.data() + b * kQK_K, wk);
    encode_block(k, wk, dst[b]);
  }
}

void quantize_q4_k_reference(std::span<const float> src, std::span<BlockQ4K> dst) {
  assert(src.size() == dst.size() * kQK_K);
  reference_blocks(src.data(), dst);
}

}  // namespace rdrr::quant
