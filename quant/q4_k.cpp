#include "quant/q4_k.h"

#include <cassert>
#include <cstddef>
#include <cstring>
#include <limits>

#include "quant/cpu.h"
#include "quant/f16.h"
#include "quant/q4_k_kernels.h"

namespace rdrr::quant {

using detail::BlockF;
using detail::kQ4KLanes;
using detail::kQ4KRows;
using detail::LaneF;
using detail::LaneI;
using detail::Q4KKernels;
using detail::Q4KOffsets;
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

// A complete block encoding with its per-sub-block error.
struct Candidate {
  uint16_t d_bits = 0;
  uint16_t dmin_bits = 0;
  LaneI sc{};
  LaneI m{};
  LaneF err{};
  alignas(32) BlockF q;
};

double total_error(const LaneF err) {
  double t = 0;
  for (int j = 0; j < kQ4KLanes; ++j) t += err[j];
  return t;
}

void write_block(const Q4KKernels& k, const Candidate& c, BlockQ4K& out) {
  out.d = c.d_bits;
  out.dmin = c.dmin_bits;
  Q4KScales codes{};
  for (int j = 0; j < kQ4KLanes; ++j) {
    codes.sc[j] = static_cast<uint8_t>(c.sc[j]);
    codes.m[j] = static_cast<uint8_t>(c.m[j]);
  }
  pack_q4k_scales(codes, std::span<uint8_t, 12>(out.scales));
  k.pack(c.q, out.qs);
}

// The rest of quantize_row_q4_K_ref for one block, from make_qkx2's fits: 6-bit codes against
// d = max_scale/63 and dmin = max_min/63, then requantisation with division.
void finish_reference(const Q4KKernels& k, const Q4KWork& wk, const detail::Q4KRefFit& fit, Candidate& c) {
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQ4KLanes; ++j) {
    if (fit.scale[j] > max_scale) max_scale = fit.scale[j];
    if (fit.the_min[j] > max_min) max_min = fit.the_min[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kQ4KLanes; ++j) {
    const auto ls = static_cast<uint8_t>(nearest_int(inv_scale * fit.scale[j]));
    const auto lm = static_cast<uint8_t>(nearest_int(inv_min * fit.the_min[j]));
    c.sc[j] = ls < 63 ? ls : 63;
    c.m[j] = lm < 63 ? lm : 63;
  }
  c.d_bits = f32_to_f16(max_scale / 63.f);
  c.dmin_bits = f32_to_f16(max_min / 63.f);
  const float d = f16_to_f32(c.d_bits), dmin = f16_to_f32(c.dmin_bits);
  LaneF D, M;
  for (int j = 0; j < kQ4KLanes; ++j) {
    D[j] = d * static_cast<float>(c.sc[j]);
    M[j] = dmin * static_cast<float>(c.m[j]);
  }
  k.requant(wk, D, M, /*divide=*/true, c.q, c.err);
  for (int j = 0; j < kQ4KLanes; ++j) {
    if (D[j] != 0) continue;  // llama.cpp keeps make_qkx2's levels for a zero sub-scale (they decode to -M)
    for (int i = 0; i < kQ4KRows; ++i) c.q[i][j] = fit.levels[i][j];
  }
}

// Nearest 6-bit code of v (NaN -> 0).
inline int32_t to_code(float v) {
  const float r = (v + 12582912.f) - 12582912.f;
  const float c = r > 0.f ? (r < 63.f ? r : 63.f) : 0.f;
  return static_cast<int32_t>(c);
}

// Code offsets (sub-scale, sub-min) tried around the rounded fit, most frequent winners first. The re-fitted
// scale tends to overshoot once the values are requantised, hence the bias towards -1. Round 1 searches
// wider; round 2 (only when round 1 improved the block) refines.
constexpr int8_t kRound1Sc[] = {0, -1, 0, -1, 0, 1, 1, -1, -2};
constexpr int8_t kRound1M[] = {0, -1, -1, 0, 1, 0, 1, -2, -2};
constexpr int8_t kRound2Sc[] = {0, -1, 0};
constexpr int8_t kRound2M[] = {0, -1, -1};
constexpr Q4KOffsets kRoundGrids[] = {{kRound1Sc, kRound1M, static_cast<int>(sizeof kRound1Sc)},
                                      {kRound2Sc, kRound2M, static_cast<int>(sizeof kRound2Sc)}};
constexpr int kMaxRounds = 2;

// Tries block scales (d, dmin) with codes searched around the continuous per-sub-block fit (Dfit, Mfit).
// With keep_incumbent, `best` uses the same (d, dmin) and a sub-block only changes when it gets better.
// Replaces `best` and returns true when the block's total error drops.
bool try_scales(const Q4KKernels& k, const Q4KWork& wk, const Q4KOffsets& grid, uint16_t d_bits, uint16_t dmin_bits,
                const LaneF Dfit, const LaneF Mfit, bool keep_incumbent, Candidate& best) {
  const float d = f16_to_f32(d_bits), dmin = f16_to_f32(dmin_bits);
  LaneI sc0, m0, sc, m;
  LaneF err;
  for (int j = 0; j < kQ4KLanes; ++j) {
    sc0[j] = to_code(Dfit[j] / d);
    m0[j] = to_code(Mfit[j] / dmin);
    sc[j] = keep_incumbent ? best.sc[j] : 0;
    m[j] = keep_incumbent ? best.m[j] : 0;
    err[j] = keep_incumbent ? best.err[j] : std::numeric_limits<float>::infinity();
  }
  k.search_codes(wk, d, dmin, sc0, m0, grid, sc, m, err);
  if (!(total_error(err) < total_error(best.err))) return false;
  LaneF D, M, err2;
  for (int j = 0; j < kQ4KLanes; ++j) {
    D[j] = d * static_cast<float>(sc[j]);
    M[j] = dmin * static_cast<float>(m[j]);
  }
  alignas(32) BlockF q;
  k.requant(wk, D, M, /*divide=*/false, q, err2);
  for (int j = 0; j < kQ4KLanes; ++j) {
    const bool changed = !keep_incumbent || err[j] < best.err[j];
    if (!changed) continue;
    assert(err2[j] == err[j]);
    for (int i = 0; i < kQ4KRows; ++i) best.q[i][j] = q[i][j];
    best.sc[j] = sc[j];
    best.m[j] = m[j];
    best.err[j] = err[j];
  }
  best.d_bits = d_bits;
  best.dmin_bits = dmin_bits;
  return true;
}

void improve_block(const Q4KKernels& k, const Q4KWork& wk, Candidate& best) {
  for (int round = 0; round < kMaxRounds; ++round) {
    LaneF Dfit, Mfit;
    k.refit(wk, best.q, Dfit, Mfit);
    const Q4KOffsets& grid = kRoundGrids[round];
    bool improved = try_scales(k, wk, grid, best.d_bits, best.dmin_bits, Dfit, Mfit, true, best);
    float max_d = 0, max_m = 0;
    for (int j = 0; j < kQ4KLanes; ++j) {
      if (Dfit[j] > max_d) max_d = Dfit[j];
      if (Mfit[j] > max_m) max_m = Mfit[j];
    }
    const uint16_t d_bits = f32_to_f16(max_d / 63.f), dmin_bits = f32_to_f16(max_m / 63.f);
    if (d_bits != best.d_bits || dmin_bits != best.dmin_bits) {
      improved = try_scales(k, wk, grid, d_bits, dmin_bits, Dfit, Mfit, false, best) || improved;
    }
    if (!improved) break;
  }
}

// Encodes the blocks in pairs (make_qkx2 runs on two blocks at once); improve = false gives llama.cpp's blocks.
void quantize_blocks(const float* src, const float* weights, std::span<BlockQ4K> dst, bool improve) {
  const Q4KKernels& k = kernels();
  Q4KWork wk[2];
  detail::Q4KRefFit fit[2];
  Candidate c;
  for (size_t b = 0; b < dst.size(); b += 2) {
    const int n = dst.size() - b >= 2 ? 2 : 1;
    for (int t = 0; t < n; ++t) {
      const size_t off = (b + static_cast<size_t>(t)) * kQK_K;
      k.load(src + off, weights == nullptr ? nullptr : weights + off, wk[t]);
    }
    k.ref_search(wk, n, fit);
    for (int t = 0; t < n; ++t) {
      finish_reference(k, wk[t], fit[t], c);
      if (improve) improve_block(k, wk[t], c);
      write_block(k, c, dst[b + static_cast<size_t>(t)]);
    }
  }
}

}  // namespace

void quantize_q4_k(std::span<const float> src, std::span<BlockQ4K> dst, std::span<const float> weights) {
  assert(src.size() == dst.size() * kQK_K);
  assert(weights.empty() || weights.size() == src.size());
  quantize_blocks(src.data(), weights.empty() ? nullptr : weights.data(), dst, /*improve=*/true);
}

void quantize_q4_k_reference(std::span<const float> src, std::span<BlockQ4K> dst) {
  assert(src.size() == dst.size() * kQK_K);
  quantize_blocks(src.data(), nullptr, dst, /*improve=*/false);
}

}  // namespace rdrr::quant
