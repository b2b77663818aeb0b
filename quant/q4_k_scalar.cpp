// Scalar Q4_K kernels: the reference the AVX2 kernels (q4_k_avx2.cpp) must match bit for bit. Each function
// runs, lane by lane, exactly the per-lane operations of its AVX2 twin in the same order; the encoder's search
// (q4_k_search.inc) is the same source in both files.
#include <cmath>

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

// llama.cpp's requantisation (with division).
void requant(const Q4KWork& wk, const LaneF D, const LaneF M, BlockF q) {
  for (int j = 0; j < kQ4KLanes; ++j) {
    for (int i = 0; i < kQ4KRows; ++i) q[i][j] = level((wk.x[i][j] + M[j]) / D[j], 15.f);
  }
}

#include "quant/simd8.inc"
#include "quant/q4_k_search.inc"

}  // namespace

const Q4KKernels& q4k_kernels_scalar() {
  static const Q4KKernels k{&load, &ref_search, &requant, &q4k_search::fit, &q4k_search::codes, &pack};
  return k;
}

}  // namespace rdrr::quant::detail
