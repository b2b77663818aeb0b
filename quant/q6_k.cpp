#include "quant/q6_k.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/cpu.h"
#include "quant/f16.h"
#include "quant/q6_k_ref_avx2.h"
#include "quant/q6_k_search.h"
#include "quant/rounding.h"

namespace rdrr::quant {

namespace detail {
namespace {
#include "quant/simd8.inc"
#include "quant/q6_k_search.inc"
}  // namespace

const Q6KKernels& q6k_kernels_generic() {
  static const Q6KKernels k{&q6k_search::load, &q6k_search::group_max, &q6k_search::search};
  return k;
}
}  // namespace detail

namespace {

using detail::clamp_int;
using detail::nearest_int;

constexpr int kGroups = 16;      // int8-scaled groups per block
constexpr int kGroupElems = 16;  // values per group
constexpr float kGroupMaxEps = 1e-15f;
constexpr uint16_t kF16MaxFinite = 0x7bff;

// The encoder's block scale: the largest group's value mx on level -32 takes the group scale -kScaleCode, which
// leaves the group room to grow (the search puts mx on levels -32 .. -26) within the int8 range.
constexpr float kScaleCode = 116.0f;

// llama.cpp make_qx_quants(n = 16, nmax = 32, rmse_type = 1, qw), operation for operation (float math, same
// order) so that the reference replica is bit-exact. L receives q + 32 in 0..63. Returns the group scale.
float make_qx_quants16(const float* x, int8_t* L, const float* qw) {
  constexpr int nmax = 32;
  float max = 0;
  float amax = 0;
  for (int i = 0; i < kGroupElems; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < kGroupElems; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < kGroupElems; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = clamp_int(l, -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = qw ? qw[i] : x[i] * x[i];
    const float lf = static_cast<float>(l);
    sumlx += w * x[i] * lf;
    suml2 += w * lf * lf;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < kGroupElems; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = clamp_int(l, -nmax, nmax - 1);
      const float w = qw ? qw[i] : x[i] * x[i];
      const float lf = static_cast<float>(l);
      sumlx += w * x[i] * lf;
      suml2 += w * lf * lf;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < kGroupElems; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + clamp_int(l, -nmax, nmax - 1));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// ql/qh packing (blocks.h): per 128-value half, ql[l] = q[l] | q[l+64] << 4, ql[l+32] = q[l+32] | q[l+96] << 4,
// qh[l] = bits 4-5 of q[l], q[l+32], q[l+64], q[l+96] at shifts 0, 2, 4, 6.
void pack_values(const int8_t* L, BlockQ6K* y) {
  uint8_t* ql = y->ql;
  uint8_t* qh = y->qh;
  for (int j = 0; j < kQK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l + 0] & 0xF;
      const int q2 = L[j + l + 32] & 0xF;
      const int q3 = L[j + l + 64] & 0xF;
      const int q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                   ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

void zero_block(BlockQ6K* y) { std::memset(y, 0, sizeof(BlockQ6K)); }

// Per-group float scales of the reference search; returns max_scale (signed, largest magnitude) or 0.
float reference_group_scales(const float* x, const float* qw, int8_t* L, float* scales) {
  float max_scale = 0;
  float max_abs_scale = 0;
#if defined(RDRR_QUANT_X86)
  const bool simd = simd_enabled();
  if (simd) detail::q6k_reference_scales_avx2(x, qw, L, scales);  // bit-identical, 8 groups at a time
#else
  constexpr bool simd = false;
#endif
  for (int ib = 0; ib < kGroups; ++ib) {
    const float scale = simd ? scales[ib]
                             : make_qx_quants16(x + kGroupElems * ib, L + kGroupElems * ib,
                                                qw ? qw + kGroupElems * ib : nullptr);
    scales[ib] = scale;
    const float abs_scale = std::fabs(scale);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scale;
    }
  }
  return max_abs_scale < kGroupMaxEps ? 0.0f : max_scale;
}

// The reference's block (scales, d and values q + 32 in L) without packing. Returns false for a zero block.
bool reference_values(const float* x, const float* qw, int8_t* L, BlockQ6K* y) {
  float scales[kGroups];
  const float max_scale = reference_group_scales(x, qw, L, scales);
  if (max_scale == 0.0f) return false;
  const float iscale = -128.f / max_scale;
  y->d = f32_to_f16(1.0f / iscale);
  for (int ib = 0; ib < kGroups; ++ib) {
    y->scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  }
#if defined(RDRR_QUANT_X86)
  if (simd_enabled()) {
    float group_d[kGroups];
    for (int j = 0; j < kGroups; ++j) group_d[j] = f16_to_f32(y->d) * static_cast<float>(y->scales[j]);
    detail::q6k_requantize_avx2(x, group_d, L);
    return true;
  }
#endif
  for (int j = 0; j < kGroups; ++j) {
    const float d = f16_to_f32(y->d) * static_cast<float>(y->scales[j]);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < kGroupElems; ++ii) {
      const int l = nearest_int(x[kGroupElems * j + ii] / d);
      L[kGroupElems * j + ii] = static_cast<int8_t>(clamp_int(l, -32, 31) + 32);
    }
  }
  return true;
}

void reference_block(const float* x, const float* qw, BlockQ6K* y) {
  int8_t L[kQK_K];
  if (!reference_values(x, qw, L, y)) {
    zero_block(y);
    return;
  }
  pack_values(L, y);
}

const detail::Q6KKernels& kernels() {
#if defined(RDRR_QUANT_X86)
  if (simd_enabled()) return detail::q6k_kernels_avx2();
#endif
  return detail::q6k_kernels_generic();
}

// The f16 block scale d = mx / (32 * kScaleCode) for the block's largest-magnitude value mx, saturated to the
// largest finite f16 and rounded away from zero when rounding to nearest would put mx on level -32 only with a
// group scale beyond -127 (an f16 subnormal d has few bits). 0 when d underflows.
uint16_t block_scale_f16(float mx) {
  const float d = mx / (32.0f * kScaleCode);
  uint16_t h = f32_to_f16(d);
  if ((h & 0x7fffu) >= 0x7c00u) return static_cast<uint16_t>((h & 0x8000u) | kF16MaxFinite);
  if (std::fabs(f16_to_f32(h)) * (32.0f * 127.0f) < std::fabs(mx) && (h & 0x7fffu) < kF16MaxFinite) ++h;
  return h;
}

void encode_block(const detail::Q6KKernels& k, const detail::Q6KWork& wk, BlockQ6K* y) {
  alignas(32) float amax[kGroups];
  alignas(32) float mx[kGroups];
  k.group_max(wk, amax, mx);
  int top = 0;
  for (int j = 1; j < kGroups; ++j) {
    if (amax[j] > amax[top]) top = j;
  }
  const uint16_t dh = amax[top] < kGroupMaxEps ? 0 : block_scale_f16(mx[top]);
  const float d = f16_to_f32(dh);
  if (d == 0.0f) {
    zero_block(y);
    return;
  }
  uint8_t L[kQK_K];
  k.search(wk, d, mx, y->scales, L);
  y->d = dh;
  pack_values(reinterpret_cast<const int8_t*>(L), y);
}

}  // namespace

void quantize_q6_k(std::span<const float> src, std::span<BlockQ6K> dst, std::span<const float> weights) {
  assert(src.size() == dst.size() * kQK_K);
  assert(weights.empty() || weights.size() == src.size());
  const detail::Q6KKernels& k = kernels();
  detail::Q6KWork wk;
  for (size_t b = 0; b < dst.size(); ++b) {
    k.load(src.data() + b * kQK_K, weights.empty() ? nullptr : weights.data() + b * kQK_K, wk);
    encode_block(k, wk, &dst[b]);
  }
}

void quantize_q6_k_reference(std::span<const float> src, std::span<BlockQ6K> dst,
                             std::span<const float> weights) {
  assert(src.size() == dst.size() * kQK_K);
  assert(weights.empty() || weights.size() == src.size());
  for (size_t b = 0; b < dst.size(); ++b) {
    reference_block(src.data() + b * kQK_K, weights.empty() ? nullptr : weights.data() + b * kQK_K, &dst[b]);
  }
}

void dequantize_q6_k(std::span<const BlockQ6K> src, std::span<float> dst) {
  assert(dst.size() == src.size() * kQK_K);
  for (size_t b = 0; b < src.size(); ++b) {
    const BlockQ6K& blk = src[b];
    // Unpack the 6-bit values (q - 32), then scale per 16-value group: (d * scale) * q, as ggml and gguf-py do.
    float q[kQK_K];
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = blk.ql + 64 * half;
      const uint8_t* qh = blk.qh + 32 * half;
      float* qq = q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        qq[l + 0] = static_cast<float>(((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        qq[l + 32] = static_cast<float>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        qq[l + 64] = static_cast<float>(((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        qq[l + 96] = static_cast<float>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
    const float d = f16_to_f32(blk.d);
    float* y = dst.data() + b * kQK_K;
    for (int g = 0; g < kGroups; ++g) {
      const float ds = d * static_cast<float>(blk.scales[g]);
      for (int i = 0; i < kGroupElems; ++i) y[kGroupElems * g + i] = ds * q[kGroupElems * g + i];
    }
  }
}

}  // namespace rdrr::quant
