// The AVX2 build of the Q6_K search kernels (compiled with -mavx2 -mf16c, never -mfma); see q6_k_search.inc for
// why it is bit-identical to the generic build and safe to link next to it.
#include <immintrin.h>

#include <cstdint>

#include "quant/q6_k_search.h"

namespace rdrr::quant::detail {
namespace {
#include "quant/simd8.inc"
#include "quant/q6_k_search.inc"
}  // namespace

const Q6KKernels& q6k_kernels_avx2() {
  static const Q6KKernels k{&q6k_search::load, &q6k_search::group_max, &q6k_search::search};
  return k;
}

}  // namespace rdrr::quant::detail
