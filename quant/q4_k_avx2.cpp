// AVX2 Q4_K kernels (this file alone is compiled with -mavx2 -mf16c, never -mfma). One __m256 holds one value
// of each of the 8 sub-blocks, so every lane runs exactly the operations of q4_k_scalar.cpp in the same order
// and the results are bit-identical.
#include <immintrin.h>

#include "quant/avx2_util.h"
#include "quant/q4_k_kernels.h"

namespace rdrr::quant::detail {
namespace {

inline __m256 splat(float v) { return _mm256_set1_ps(v); }
inline __m256 load(const float* p) { return _mm256_load_ps(p); }
inline void store(float* p, __m256 v) { _mm256_store_ps(p, v); }
inline __m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
inline __m256 sub(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
inline __m256 mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
inline __m256 div(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
inline __m256 neg(__m256 a) { return _mm256_xor_ps(a, splat(-0.f)); }
inline __m256 blend(__m256 a, __m256 b, __m256 mask) { return _mm256_blendv_ps(a, b, mask); }  // mask ? b : a
inline __m256 lt(__m256 a, __m256 b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
inline __m256 gt(__m256 a, __m256 b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }

// Nearest level in [0, hi]: ((v + 1.5*2^23) - 1.5*2^23), then max(., 0), min(., hi) (NaN -> 0).
inline __m256 level(__m256 v, __m256 hi) {
  const __m256 magic = splat(12582912.f);
  const __m256 r = sub(add(v, magic), magic);
  return _mm256_min_ps(_mm256_max_ps(r, _mm256_setzero_ps()), hi);
}

// Sum over the 32 rows of w * (s*l + mn - x)^2 (make_qkx2's error of a candidate).
inline __m256 candidate_error(const BlockF x, const __m256* w, const __m256* l, __m256 s, __m256 mn) {
  __m256 err = _mm256_setzero_ps();
  for (int i = 0; i < kQ4KRows; ++i) {
    __m256 diff = sub(add(mul(s, l[i]), mn), load(x[i]));
    diff = mul(diff, diff);
    err = add(err, mul(w[i], diff));
  }
  return err;
}

// make_qkx2 on N blocks at once: the blocks are independent, interleaving them only hides latency.
template <int N>
void ref_search_n(const Q4KWork* wk, Q4KRefFit* out) {
  const __m256 zero = _mm256_setzero_ps(), fifteen = splat(15.f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 w[N][kQ4KRows], lv[N][kQ4KRows], aux[N][kQ4KRows];
  __m256 mn[N], mx[N], sum_w[N], sum_x[N], flat[N], flat_min[N], scale[N], best[N];
  for (int b = 0; b < N; ++b) {
    __m256 sum_x2 = zero;
    for (int i = 0; i < kQ4KRows; ++i) {
      const __m256 x = load(wk[b].x[i]);
      sum_x2 = add(sum_x2, mul(x, x));
    }
    const __m256 av_x = _mm256_sqrt_ps(div(sum_x2, splat(32.f)));
    for (int i = 0; i < kQ4KRows; ++i) w[b][i] = add(av_x, _mm256_and_ps(load(wk[b].x[i]), abs_mask));
    mn[b] = load(wk[b].x[0]);
    mx[b] = mn[b];
    sum_w[b] = w[b][0];
    sum_x[b] = mul(w[b][0], mn[b]);
    for (int i = 1; i < kQ4KRows; ++i) {
      const __m256 x = load(wk[b].x[i]);
      mn[b] = _mm256_min_ps(x, mn[b]);
      mx[b] = _mm256_max_ps(x, mx[b]);
      sum_w[b] = add(sum_w[b], w[b][i]);
      sum_x[b] = add(sum_x[b], mul(w[b][i], x));
    }
    mn[b] = _mm256_min_ps(zero, mn[b]);
    flat[b] = _mm256_cmp_ps(mx[b], mn[b], _CMP_EQ_OQ);
    flat_min[b] = mn[b];
    const __m256 iscale = div(fifteen, sub(mx[b], mn[b]));
    scale[b] = div(splat(1.f), iscale);
    for (int i = 0; i < kQ4KRows; ++i) lv[b][i] = level(mul(iscale, sub(load(wk[b].x[i]), mn[b])), fifteen);
    best[b] = candidate_error(wk[b].x, w[b], lv[b], scale[b], mn[b]);
  }

  for (int is = 0; is <= 20; ++is) {
    const __m256 numerator = splat((-1.f + 0.1f * static_cast<float>(is)) + 15.f);
    __m256 iscale[N], sum_l[N], sum_l2[N], sum_xl[N];
    for (int b = 0; b < N; ++b) {
      iscale[b] = div(numerator, sub(mx[b], mn[b]));
      sum_l[b] = sum_l2[b] = sum_xl[b] = zero;
    }
    for (int i = 0; i < kQ4KRows; ++i) {
      for (int b = 0; b < N; ++b) {
        const __m256 x = load(wk[b].x[i]);
        aux[b][i] = level(mul(iscale[b], sub(x, mn[b])), fifteen);
        const __m256 wl = mul(w[b][i], aux[b][i]);
        sum_l[b] = add(sum_l[b], wl);
        sum_l2[b] = add(sum_l2[b], mul(wl, aux[b][i]));
        sum_xl[b] = add(sum_xl[b], mul(wl, x));
      }
    }
    __m256 valid[N], this_scale[N], this_min[N], cur[N];
    for (int b = 0; b < N; ++b) {
      const __m256 det = sub(mul(sum_w[b], sum_l2[b]), mul(sum_l[b], sum_l[b]));
      valid[b] = gt(det, zero);
      this_scale[b] = div(sub(mul(sum_w[b], sum_xl[b]), mul(sum_x[b], sum_l[b])), det);
      this_min[b] = div(sub(mul(sum_l2[b], sum_x[b]), mul(sum_l[b], sum_xl[b])), det);
      const __m256 positive = gt(this_min[b], zero);
      this_min[b] = blend(this_min[b], zero, positive);
      this_scale[b] = blend(this_scale[b], div(sum_xl[b], sum_l2[b]), positive);
      cur[b] = zero;
    }
    for (int i = 0; i < kQ4KRows; ++i) {  // the candidates' errors (make_qkx2's second loop)
      for (int b = 0; b < N; ++b) {
        __m256 diff = sub(add(mul(this_scale[b], aux[b][i]), this_min[b]), load(wk[b].x[i]));
        diff = mul(diff, diff);
        cur[b] = add(cur[b], mul(w[b][i], diff));
      }
    }
    for (int b = 0; b < N; ++b) {
      const __m256 take = _mm256_and_ps(valid[b], lt(cur[b], best[b]));
      if (_mm256_movemask_ps(take) == 0) continue;
      for (int i = 0; i < kQ4KRows; ++i) lv[b][i] = blend(lv[b][i], aux[b][i], take);
      best[b] = blend(best[b], cur[b], take);
      scale[b] = blend(scale[b], this_scale[b], take);
      mn[b] = blend(mn[b], this_min[b], take);
    }
  }
  for (int b = 0; b < N; ++b) {
    for (int i = 0; i < kQ4KRows; ++i) store(out[b].levels[i], blend(lv[b][i], zero, flat[b]));
    store(out[b].scale, blend(scale[b], zero, flat[b]));
    store(out[b].the_min, neg(blend(mn[b], flat_min[b], flat[b])));
  }
}

void ref_search(const Q4KWork* wk, int n_blocks, Q4KRefFit* out) {
  if (n_blocks == 2) {
    ref_search_n<2>(wk, out);
  } else {
    ref_search_n<1>(wk, out);
  }
}


void transpose_block(const float* src, BlockF dst) {
  for (int i0 = 0; i0 < kQ4KRows; i0 += 8) {
    __m256 r[8];
    for (int j = 0; j < kQ4KLanes; ++j) r[j] = _mm256_loadu_ps(src + 32 * j + i0);
    transpose8(r);
    for (int i = 0; i < 8; ++i) store(dst[i0 + i], r[i]);
  }
}

void load_block(const float* src, const float* weights, Q4KWork& wk) {
  transpose_block(src, wk.x);
  wk.weighted = weights != nullptr;
  if (weights != nullptr) transpose_block(weights, wk.w);
}

void pack(const BlockF q, uint8_t* qs) {
  // Row i of q holds the levels of value i of the 8 sub-blocks; sub-block pair (2c, 2c+1) goes to qs[32c + i].
  // Transposed 8 rows at a time, t[c][g] holds the bytes of rows 8g..8g+7 of chunk c as 8 int32.
  __m256i t[4][4];
  for (int g = 0; g < 4; ++g) {
    __m256 r[8];
    for (int k = 0; k < 8; ++k) r[k] = load(q[8 * g + k]);
    transpose8(r);  // r[j] = values 8g..8g+7 of sub-block j
    for (int c = 0; c < 4; ++c) {
      t[c][g] = _mm256_or_si256(_mm256_cvttps_epi32(r[2 * c]), _mm256_slli_epi32(_mm256_cvttps_epi32(r[2 * c + 1]), 4));
    }
  }
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int c = 0; c < 4; ++c) {
    const __m256i a = _mm256_packs_epi32(t[c][0], t[c][1]), b = _mm256_packs_epi32(t[c][2], t[c][3]);
    const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(a, b), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 32 * c), bytes);
  }
}

// llama.cpp's requantisation (with division).
void requant(const Q4KWork& wk, const LaneF D, const LaneF M, BlockF q) {
  const __m256 d = _mm256_loadu_ps(D), m = _mm256_loadu_ps(M), fifteen = splat(15.f);
  for (int i = 0; i < kQ4KRows; ++i) store(q[i], level(div(add(load(wk.x[i]), m), d), fifteen));
}

#include "quant/simd8.inc"
#include "quant/q4_k_search.inc"

}  // namespace

const Q4KKernels& q4k_kernels_avx2() {
  static const Q4KKernels k{&load_block, &ref_search, &requant, &q4k_search::fit, &q4k_search::codes, &pack};
  return k;
}

}  // namespace rdrr::quant::detail

