// Internal to layout.cpp: a uniform view of the block codecs over raw (possibly unaligned) bytes, and the
// parallel matrix decoder. Not public API.
#pragma once

#include <cstdint>

#include "quant/dtype.h"
#include "quant/layout.h"

namespace rdrr::quant::detail {

inline constexpr int64_t kTileElems = 4096;  // values per work item (16 Q4_K/Q6_K or 128 Q8_0 blocks)
inline constexpr int64_t kTileBytes = 4352;  // encoded bytes of a tile, at most (128 Q8_0 blocks; static_asserts)

struct Codec {
  int64_t block_elems;
  int64_t block_bytes;
  // Encodes n_blocks blocks of x (weights w per value, or null) into out (n_blocks * block_bytes bytes); null for
  // the pass-through types.
  void (*encode)(const float* x, const float* w, int64_t n_blocks, uint8_t* out);
  // Decodes n_blocks blocks from in into y (n_blocks * block_elems values).
  void (*decode)(const uint8_t* in, int64_t n_blocks, float* y);
};

// dst[k * dst_stride + i] = src[i * src_stride + k] for i < n_rows, k < n_cols (the column_wise encoder's
// gather); true when every value copied is finite. The AVX2 version exists on x86-64 (RDRR_QUANT_X86) only.
bool gather_columns(const float* src, int64_t src_stride, int64_t n_rows, int64_t n_cols, int64_t dst_stride,
                    float* dst);
bool gather_columns_avx2(const float* src, int64_t src_stride, int64_t n_rows, int64_t n_cols, int64_t dst_stride,
                         float* dst);

// True when every x[0..n) is finite (the AVX2 version: x86-64 only).
bool all_finite(const float* x, int64_t n);
bool all_finite_avx2(const float* x, int64_t n);

// dtype must be block-quantized.
const Codec& codec_for(DType dtype);

// Decodes a whole matrix (arguments validated by the caller), bounded by the true shape.
void decode_matrix(const Codec& codec, Layout layout, BlockGrid grid, int64_t n_rows, int64_t k_cols,
                   const uint8_t* src, float* dst);

}  // namespace rdrr::quant::detail
