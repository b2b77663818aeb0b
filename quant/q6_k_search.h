// Internal: the Q6_K encoder's search kernels (q6_k_search.inc), built twice: generic (inside q6_k.cpp) and
// AVX2 (q6_k_avx2.cpp, -mavx2 -mf16c); both give bit-identical results. Not public API.
#pragma once

#include <cstdint>

namespace rdrr::quant::detail {

// One block, transposed: x[i][j] = src[16*j + i] (value i of group j); w likewise, read only when weighted.
struct alignas(32) Q6KWork {
  float x[16][16];
  float w[16][16];
  bool weighted = false;
};

struct Q6KKernels {
  // Transposes one block (and its weights, when not null) into wk.
  void (*load)(const float* src, const float* weights, Q6KWork& wk);
  // Per group: the largest magnitude and the (first) value that has it.
  void (*group_max)(const Q6KWork& wk, float* amax, float* mx);
  // For the block scale d (!= 0) and the groups' mx: the int8 group scales and the values q + 32 (0..63) in
  // natural order (L[16*j + i]).
  void (*search)(const Q6KWork& wk, float d, const float* mx, int8_t* scales, uint8_t* L);
};

const Q6KKernels& q6k_kernels_generic();
const Q6KKernels& q6k_kernels_avx2();  // x86 builds only (RDRR_QUANT_X86); call only when simd_enabled()

}  // namespace rdrr::quant::detail
