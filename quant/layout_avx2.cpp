// AVX2 helper of the column_wise encoder (compiled with -mavx2; layout.cpp dispatches here when
// simd_enabled()). Pure data movement plus a finiteness test: identical results to the generic loop.
#include <immintrin.h>

#include <cfloat>
#include <cstdint>

#include "quant/avx2_util.h"
#include "quant/layout_codec.h"

namespace rdrr::quant::detail {

namespace {

inline bool finite(float v) { return __builtin_fabsf(v) <= FLT_MAX; }

}  // namespace

bool gather_columns_avx2(const float* src, int64_t src_stride, int64_t n_rows, int64_t n_cols, int64_t dst_stride,
                         float* dst) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 max_finite = _mm256_set1_ps(FLT_MAX);
  __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  bool ok_scalar = true;
  const int64_t rows8 = n_rows - n_rows % 8, cols8 = n_cols - n_cols % 8;
  for (int64_t i0 = 0; i0 < rows8; i0 += 8) {
    for (int64_t k0 = 0; k0 < cols8; k0 += 8) {
      __m256 r[8];
      for (int c = 0; c < 8; ++c) {
        const float* row = src + (i0 + c) * src_stride;
        // The caller walks tiles along the rows: request this row's next tile early (a prefetch never faults).
        if (k0 == 0) _mm_prefetch(reinterpret_cast<const char*>(row + n_cols), _MM_HINT_T0);
        r[c] = _mm256_loadu_ps(row + k0);
        ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(r[c], abs_mask), max_finite, _CMP_LE_OQ));
      }
      transpose8(r);
      for (int c = 0; c < 8; ++c) _mm256_storeu_ps(dst + (k0 + c) * dst_stride + i0, r[c]);
    }
    for (int64_t i = i0; i < i0 + 8; ++i) {
      for (int64_t k = cols8; k < n_cols; ++k) {
        const float v = src[i * src_stride + k];
        ok_scalar = ok_scalar && finite(v);
        dst[k * dst_stride + i] = v;
      }
    }
  }
  for (int64_t i = rows8; i < n_rows; ++i) {
    for (int64_t k = 0; k < n_cols; ++k) {
      const float v = src[i * src_stride + k];
      ok_scalar = ok_scalar && finite(v);
      dst[k * dst_stride + i] = v;
    }
  }
  return ok_scalar && _mm256_movemask_ps(ok) == 0xff;
}

bool all_finite_avx2(const float* x, int64_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 max_finite = _mm256_set1_ps(FLT_MAX);
  __m256 ok0 = _mm256_castsi256_ps(_mm256_set1_epi32(-1)), ok1 = ok0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    ok0 = _mm256_and_ps(ok0, _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), max_finite, _CMP_LE_OQ));
    ok1 = _mm256_and_ps(ok1,
                        _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + i + 8), abs_mask), max_finite, _CMP_LE_OQ));
  }
  bool ok = _mm256_movemask_ps(_mm256_and_ps(ok0, ok1)) == 0xff;
  for (; i < n; ++i) ok = ok && finite(x[i]);
  return ok;
}

}  // namespace rdrr::quant::detail
