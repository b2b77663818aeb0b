// AVX2 replica of the Q6_K reference steps (see q6_k_ref_avx2.h). Compiled with -mavx2 -mf16c, never -mfma.
//
// Lane = group: 8 groups per vector, two passes per block. Every lane performs the scalar code's float
// operations in the scalar order (the sums accumulate element by element, products associate left to right:
// (w * x) * l and (w * l) * l), and division, rounding (the 1.5 * 2^23 trick of nearest_int) and comparisons
// are exact IEEE operations, so the results are bit-identical to quant/q6_k.cpp's make_qx_quants16.
#include "quant/q6_k_ref_avx2.h"

#include <immintrin.h>

namespace rdrr::quant::detail {
namespace {

constexpr int kGroupElems = 16;
constexpr int kLanes = 8;

inline __m256i nearest_int(__m256 v) {
  const __m256 t = _mm256_add_ps(v, _mm256_set1_ps(12582912.f));
  return _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(t), _mm256_set1_epi32(0x007fffff)),
                          _mm256_set1_epi32(0x00400000));
}

inline __m256i clamp_q(__m256i l) {
  return _mm256_min_epi32(_mm256_max_epi32(l, _mm256_set1_epi32(-32)), _mm256_set1_epi32(31));
}

struct Sums {
  __m256 lx;
  __m256 l2;
};

// sum(w * x * l) and sum(w * l * l) over the 16 elements, l = clamp(nearest_int(iscale * x)).
inline Sums sums_for(const __m256* xv, const __m256* wv, __m256 iscale) {
  __m256 lx = _mm256_setzero_ps();
  __m256 l2 = _mm256_setzero_ps();
  for (int i = 0; i < kGroupElems; ++i) {
    const __m256 lf = _mm256_cvtepi32_ps(clamp_q(nearest_int(_mm256_mul_ps(iscale, xv[i]))));
    lx = _mm256_add_ps(lx, _mm256_mul_ps(_mm256_mul_ps(wv[i], xv[i]), lf));
    l2 = _mm256_add_ps(l2, _mm256_mul_ps(_mm256_mul_ps(wv[i], lf), lf));
  }
  return {lx, l2};
}

// Eight consecutive groups (128 values from x).
void scales8(const float* x, const float* qw, int8_t* L, float* scales) {
  __m256 xv[kGroupElems];
  __m256 wv[kGroupElems];
  const __m256i idx = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112);
  for (int i = 0; i < kGroupElems; ++i) {
    xv[i] = _mm256_i32gather_ps(x + i, idx, 4);
    wv[i] = qw ? _mm256_i32gather_ps(qw + i, idx, 4) : _mm256_mul_ps(xv[i], xv[i]);
  }
  // max = the first value of largest magnitude (strict >), as the scalar loop finds it.
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax = _mm256_setzero_ps();
  __m256 max = _mm256_setzero_ps();
  for (int i = 0; i < kGroupElems; ++i) {
    const __m256 ax = _mm256_and_ps(xv[i], abs_mask);
    const __m256 gt = _mm256_cmp_ps(ax, amax, _CMP_GT_OQ);
    amax = _mm256_blendv_ps(amax, ax, gt);
    max = _mm256_blendv_ps(max, xv[i], gt);
  }
  const __m256 tiny = _mm256_cmp_ps(amax, _mm256_set1_ps(1e-15f), _CMP_LT_OQ);
  const __m256 zero = _mm256_setzero_ps();

  __m256 best_iscale = _mm256_div_ps(_mm256_set1_ps(-32.0f), max);
  Sums s = sums_for(xv, wv, best_iscale);
  __m256 scale = _mm256_blendv_ps(_mm256_div_ps(s.lx, s.l2), zero, _mm256_cmp_ps(s.l2, zero, _CMP_EQ_OQ));
  __m256 best = _mm256_mul_ps(scale, s.lx);
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float c = -(32.0f + 0.1f * static_cast<float>(is));
    const __m256 iscale = _mm256_div_ps(_mm256_set1_ps(c), max);
    s = sums_for(xv, wv, iscale);
    const __m256 better = _mm256_and_ps(_mm256_cmp_ps(s.l2, zero, _CMP_GT_OQ),
                                        _mm256_cmp_ps(_mm256_mul_ps(s.lx, s.lx), _mm256_mul_ps(best, s.l2), _CMP_GT_OQ));
    const __m256 new_scale = _mm256_div_ps(s.lx, s.l2);
    scale = _mm256_blendv_ps(scale, new_scale, better);
    best = _mm256_blendv_ps(best, _mm256_mul_ps(new_scale, s.lx), better);
    best_iscale = _mm256_blendv_ps(best_iscale, iscale, better);
  }
  _mm256_storeu_ps(scales, _mm256_blendv_ps(scale, zero, tiny));
  const __m256i tiny_i = _mm256_castps_si256(tiny);
  alignas(32) int32_t lanes[kLanes];
  for (int i = 0; i < kGroupElems; ++i) {
    __m256i l = _mm256_add_epi32(clamp_q(nearest_int(_mm256_mul_ps(best_iscale, xv[i]))), _mm256_set1_epi32(32));
    l = _mm256_andnot_si256(tiny_i, l);
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), l);
    for (int g = 0; g < kLanes; ++g) L[kGroupElems * g + i] = static_cast<int8_t>(lanes[g]);
  }
}

}  // namespace

void q6k_reference_scales_avx2(const float* x, const float* qw, int8_t* L, float* scales) {
  for (int half = 0; half < 2; ++half) {
    const int off = half * kLanes * kGroupElems;
    scales8(x + off, qw ? qw + off : nullptr, L + off, scales + half * kLanes);
  }
}

void q6k_requantize_avx2(const float* x, const float* group_d, int8_t* L) {
  alignas(32) int32_t q[kGroupElems];
  for (int g = 0; g < 16; ++g) {
    if (group_d[g] == 0.0f) continue;
    const __m256 d = _mm256_set1_ps(group_d[g]);
    for (int h = 0; h < 2; ++h) {
      const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + kGroupElems * g + 8 * h), d);
      const __m256i l = _mm256_add_epi32(clamp_q(nearest_int(v)), _mm256_set1_epi32(32));
      _mm256_store_si256(reinterpret_cast<__m256i*>(q + 8 * h), l);
    }
    for (int i = 0; i < kGroupElems; ++i) L[kGroupElems * g + i] = static_cast<int8_t>(q[i]);
  }
}

}  // namespace rdrr::quant::detail
