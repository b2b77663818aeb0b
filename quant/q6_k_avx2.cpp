// Compiled with -mavx2 -mf16c (never -mfma); see q6_k_search.inc for why this is bit-identical to the generic
// build and safe to link next to it.
#include "quant/q6_k_search.h"

#include <cstdint>

namespace rdrr::quant::detail {

namespace q6k_avx2 {
#include "quant/q6_k_search.inc"
}  // namespace q6k_avx2

float q6k_evaluate_d_avx2(const float* x, const float* w, float d, const int8_t* start_s, const bool* wide,
                          int8_t* s_out) {
  return q6k_avx2::evaluate_d(x, w, d, start_s, wide, s_out);
}

}  // namespace rdrr::quant::detail
