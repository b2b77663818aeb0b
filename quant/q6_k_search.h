// Internal: the AVX2 build of the Q6_K scale search (q6_k_search.inc compiled with -mavx2 -mf16c), bit-identical
// to the generic build inside q6_k.cpp. Only call after cpu_has_avx2() (simd_enabled()) said yes.
#pragma once

#include <cstdint>

namespace rdrr::quant::detail {

float q6k_evaluate_d_avx2(const float* x, const float* w, float d, const int8_t* start_s, const bool* wide,
                          int8_t* s_out);

}  // namespace rdrr::quant::detail
