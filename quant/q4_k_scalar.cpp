// Scalar Q4_K kernels: the reference the AVX2 kernels (q4_k_avx2.cpp) must match bit for bit. Each function
// runs, lane by lane, exactly the per-lane operations of its AVX2 twin in the same order.
#include <cmath>
#include <limits>

#include "quant/q4_k_kernels.h"

namespace rdrr::quant::detail {
namespace {

constexpr float kRoundMagic = 12582912.f;  // 1.5 * 2^23: (v + magic) - magic rounds to nearest even

// The AVX2 instructions' semantics: _mm256_min_ps / _mm256_max_ps return the second operand when unordered.
inline float vmin(float a, float b) { return a < b ? a : b; }
inline float vmax(float a, float b) { return a > b ? a : b; }
inline float vround(float v) { return (v + kRoundMagic) - kRoundMagic; }
// Nearest level in [0, hi] (NaN -> 0).
inline float level(float v, float hi) { return vmin(vmax(vround(v), 0.f), hi); }

// make_qkx2_quants' 21 trial inverse-scale numerators (rmin + rdelta*is + nmax), is = 0..20.
float trial_numerator(int is) { return (-1.f + 0.1f * static_cast<float>(is)) + 15.f; }

void ref_search_lane(const Q4KWork& wk, int j, float& scale_out, float& min_out, BlockF levels) {
  float x[kQ4KRows];
  float w[kQ4KRows];
  float sum_x2 = 0;
  for (int i = 0; i < kQ4KRows; ++i) {
    x[i] = wk.x[i][j];
    sum_x2 += x[i] * x[i];
  }
  const float av_x = std::sqrt(sum_x2 / 32.f);
  for (int i = 0; i < kQ4KRows; ++i) w[i] = av_x + std::fabs(x[i]);

  float mn = x[0], mx = x[0], sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < kQ4KRows; ++i) {
    mn = vmin(x[i], mn);
    mx = vmax(x[i], mx);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  mn = vmin(0.f, mn);  // if (min > 0) min = 0
  const bool flat = mx == mn;
  const float flat_min = mn;
  float iscale = 15.f / (mx - mn);
  float scale = 1.f / iscale;
  float best = 0;
  float lv[kQ4KRows];
  for (int i = 0; i < kQ4KRows; ++i) {
    lv[i] = level(iscale * (x[i] - mn), 15.f);
    float diff = scale * lv[i] + mn - x[i];
    diff = diff * diff;
    best += w[i] * diff;
  }
  for (int is = 0; is <= 20; ++is) {
    iscale = trial_numerator(is) / (mx - mn);  // mn is the best candidate's min so far (as in llama.cpp)
    float aux[kQ4KRows];
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < kQ4KRows; ++i) {
      aux[i] = level(iscale * (x[i] - mn), 15.f);
      const float wl = w[i] * aux[i];
      sum_l += wl;
      sum_l2 += wl * aux[i];
      sum_xl += wl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float cur = 0;
    for (int i = 0; i < kQ4KRows; ++i) {
      float diff = this_scale * aux[i] + this_min - x[i];
      diff = diff * diff;
      cur += w[i] * diff;
    }
    if (cur < best) {
      for (int i = 0; i < kQ4KRows; ++i) lv[i] = aux[i];
      best = cur;
      scale = this_scale;
      mn = this_min;
    }
  }
  for (int i = 0; i < kQ4KRows; ++i) levels[i][j] = flat ? 0.f : lv[i];
  scale_out = flat ? 0.f : scale;
  min_out = -(flat ? flat_min : mn);
}

void ref_search(const Q4KWork* wk, int n_blocks, Q4KRefFit* out) {
  for (int b = 0; b < n_blocks; ++b) {
    for (int j = 0; j < kQ4KLanes; ++j) ref_search_lane(wk[b], j, out[b].scale[j], out[b].the_min[j], out[b].levels);
  }
}

void load(const float* src, const float* weights, Q4KWork& wk) {
  for (int j = 0; j < kQ4KLanes; ++j) {
    for (int i = 0; i < kQ4KRows; ++i) wk.x[i][j] = src[32 * j + i];
  }
  wk.weighted = weights != nullptr;
  if (weights == nullptr) return;
  for (int j = 0; j < kQ4KLanes; ++j) {
    for (int i = 0; i < kQ4KRows; ++i) wk.w[i][j] = weights[32 * j + i];
  }
}

void pack(const BlockF q, uint8_t* qs) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const auto lo = static_cast<uint32_t>(q[l][2 * c]);
      const auto hi = static_cast<uint32_t>(q[l][2 * c + 1]);
      qs[32 * c + l] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

// Error of one lane quantised against (D, M); writes the levels when q != nullptr.
float lane_error(const Q4KWork& wk, int j, float D, float M, bool divide, float (*q)[kQ4KLanes]) {
  const float inv = 1.f / D;
  float err = 0;
  for (int i = 0; i < kQ4KRows; ++i) {
    const float x = wk.x[i][j];
    const float t = divide ? (x + M) / D : (x + M) * inv;
    const float l = level(t, 15.f);
    if (q != nullptr) q[i][j] = l;
    const float diff = (D * l - M) - x;
    float e = diff * diff;
    if (wk.weighted) e = wk.w[i][j] * e;
    err += e;
  }
  return err;
}

void requant(const Q4KWork& wk, const LaneF D, const LaneF M, bool divide, BlockF q, LaneF err) {
  for (int j = 0; j < kQ4KLanes; ++j) err[j] = lane_error(wk, j, D[j], M[j], divide, q);
}

inline int32_t clamp_code(int32_t v) { return v < 0 ? 0 : (v > 63 ? 63 : v); }

void search_codes(const Q4KWork& wk, float d, float dmin, const LaneI sc0, const LaneI m0, const Q4KOffsets& offs,
                  LaneI sc, LaneI m, LaneF err) {
  for (int j = 0; j < kQ4KLanes; ++j) {
    for (int k = 0; k < offs.count; ++k) {
      const int32_t s = clamp_code(sc0[j] + offs.dsc[k]);
      const int32_t mm = clamp_code(m0[j] + offs.dm[k]);
      const float e = lane_error(wk, j, d * static_cast<float>(s), dmin * static_cast<float>(mm), false, nullptr);
      if (e < err[j]) {
        err[j] = e;
        sc[j] = s;
        m[j] = mm;
      }
    }
  }
}

void refit(const Q4KWork& wk, const BlockF q, LaneF D, LaneF M) {
  for (int j = 0; j < kQ4KLanes; ++j) {
    float s_w = 0, s_q = 0, s_qq = 0, s_x = 0, s_qx = 0;
    for (int i = 0; i < kQ4KRows; ++i) {
      const float w = wk.weighted ? wk.w[i][j] : 1.f;
      const float wq = w * q[i][j];
      s_w += w;
      s_q += wq;
      s_qq += wq * q[i][j];
      s_x += w * wk.x[i][j];
      s_qx += wq * wk.x[i][j];
    }
    const float det = s_qq * s_w - s_q * s_q;
    float dd = (s_w * s_qx - s_x * s_q) / det;
    float mm = (s_q * s_qx - s_qq * s_x) / det;
    if (!(det > 0)) {  // all levels equal: offset only
      mm = vmax(-(s_x / s_w), 0.f);
      dd = 0;
    }
    if (mm < 0) {
      mm = 0;
      dd = s_qx / s_qq;
    }
    D[j] = dd;
    M[j] = mm;
  }
}

}  // namespace

const Q4KKernels& q4k_kernels_scalar() {
  static const Q4KKernels k{&load, &ref_search, &requant, &search_codes, &refit, &pack};
  return k;
}

}  // namespace rdrr::quant::detail
