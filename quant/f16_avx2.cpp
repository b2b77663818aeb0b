// Compiled with -mavx2 -mf16c (and never -mfma): only called after cpu_has_avx2() said yes.
// No calls to inline functions defined elsewhere (an out-of-line copy built with -mavx2 could be picked by the
// linker for generic code too): tails go through a zero-padded vector instead of the scalar functions.
#include "quant/f16_avx2.h"

#include <immintrin.h>

namespace rdrr::quant::detail {

namespace {

constexpr size_t kLanes = 8;

// Runs `convert8` (8 values from `in` to `out`) over n values, the last partial group through padded buffers.
template <typename From, typename To, typename Convert8>
void convert_all(const From* src, To* dst, size_t n, Convert8 convert8) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) convert8(src + i, dst + i);
  if (i < n) {
    alignas(32) From in[kLanes] = {};
    alignas(32) To out[kLanes];
    __builtin_memcpy(in, src + i, (n - i) * sizeof(From));
    convert8(in, out);
    __builtin_memcpy(dst + i, out, (n - i) * sizeof(To));
  }
}

// Eight floats to bf16 (in the low 16 bits of each 32-bit lane): round to nearest even, NaNs quieted.
__m256i to_bf16_lanes(__m256i x) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb);
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
  const __m256i abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
  const __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));  // abs < 2^31: signed ok
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

}  // namespace

// vcvtph2ps quiets signalling NaNs (sets the top mantissa bit); the scalar reference does the same.
void f16_to_f32_avx2(const uint16_t* src, float* dst, size_t n) {
  convert_all(src, dst, n, [](const uint16_t* s, float* d) {
    _mm256_storeu_ps(d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s))));
  });
}

// vcvtps2ph with an explicit round-to-nearest-even immediate (MXCSR is not consulted); NaNs are quieted with
// their top payload bits kept, like the scalar reference.
void f32_to_f16_avx2(const float* src, uint16_t* dst, size_t n) {
  convert_all(src, dst, n, [](const float* s, uint16_t* d) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), h);
  });
}

void bf16_to_f32_avx2(const uint16_t* src, float* dst, size_t n) {
  convert_all(src, dst, n, [](const uint16_t* s, float* d) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_slli_epi32(w, 16));
  });
}

void f32_to_bf16_avx2(const float* src, uint16_t* dst, size_t n) {
  convert_all(src, dst, n, [](const float* s, uint16_t* d) {
    const __m256i lanes = to_bf16_lanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
    // packus works per 128-bit half: pack the two halves of the same register, then take its low 128 bits.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lanes, lanes), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm256_castsi256_si128(packed));
  });
}

}  // namespace rdrr::quant::detail
