// Internal: the AVX2 build of llama.cpp's Q6_K reference steps (quant/q6_k.cpp's make_qx_quants16 over a whole
// block, and the final requantisation), bit-identical to the scalar code. Only call after simd_enabled().
#pragma once

#include <cstdint>

namespace rdrr::quant::detail {

// For each of the 16 groups of 16 values of x: the group scale make_qx_quants(16, 32, rmse_type 1, qw) returns
// (scales[g]) and its values q + 32 (L[16 g + i]; all 0 for a group whose max |x| < 1e-15, as the reference).
// qw: per-value weights or null (then w = x * x).
void q6k_reference_scales_avx2(const float* x, const float* qw, int8_t* L, float* scales);

// For each group g with group_d[g] != 0: L[16 g + i] = clamp(nearest_int(x / group_d[g]), -32, 31) + 32.
void q6k_requantize_avx2(const float* x, const float* group_d, int8_t* L);

}  // namespace rdrr::quant::detail
