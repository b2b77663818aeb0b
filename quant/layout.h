// Block layouts of a 2-D weight W [n_rows = outputs N, k_cols = inputs K] (row-major f32) quantized to
// Q8_0 / Q4_K / Q6_K (block size B = 32 / 256 / 256 values), their sizes, and the matrix encode/decode.
//
//  flat:        W flattened row-major, cut into consecutive B-value blocks; only the tail block is
//               zero-padded. ceil(N*K / B) blocks.
//  row_wise:    each row has ceil(K/B) blocks (the row's last block zero-padded); block (r, b) at index
//               r*ceil(K/B) + b. Byte-identical to GGUF tensor data when K % B == 0.
//  column_wise: W^T [K, N] quantized row-wise: block (k, b) at index k*ceil(N/B) + b holds the output channels
//               b*B .. b*B+B-1 of input k (channels >= N zero-padded).
//
// Padding never disturbs the real values: padded positions get objective weight 0 (they are quantized
// "for free", so their decoded values are unspecified — readers bound every decode by the true shape).
//
// Importance (optional, imatrix style): one value >= 0 per input column k (e.g. the mean squared activation
// of input k). The per-value objective weight of W[r, k] is max(importance[k], 1e-6 * mean(importance)), so a
// never-activated column still gets a sane fit. Q8_0 ignores importance (its scale is max|x| / 127).
//
// Parallel: every call spreads its blocks over oneTBB's current arena (tbb::parallel_for, static partition);
// each block depends only on its own values, so the bytes are identical for any thread count.
#pragma once

#include <cstdint>
#include <span>

#include "quant/dtype.h"
#include "quant/status.h"

namespace rdrr::quant {

// The block grid of a quantized matrix: block_rows rows of blocks_per_row blocks each.
//  flat: 1 x ceil(N*K/B); row_wise: N x ceil(K/B); column_wise: K x ceil(N/B).
struct BlockGrid {
  int64_t block_rows = 0;
  int64_t blocks_per_row = 0;
  int64_t total_blocks() const { return block_rows * blocks_per_row; }
};

// OK when dtype is block-quantized, layout known, n_rows >= 1, k_cols >= 1 and every size fits in int64.
// Errors: kUnsupported (dtype), kInvalidArgument (shape, overflow).
Status check_matrix_shape(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols);

// Grid, block count and byte size of a quantized matrix; {0, 0} / 0 when check_matrix_shape fails.
BlockGrid block_grid(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols);
uint64_t quantized_block_count(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols);
uint64_t quantized_size_bytes(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols);

// Plain float types: n_elems * 4 (F32) or * 2 (F16, BF16); 0 for block types or n_elems < 0.
uint64_t plain_size_bytes(DType dtype, int64_t n_elems);

// Any dtype: plain_size_bytes(dtype, n_rows * k_cols) for F32/F16/BF16 (layout ignored), else
// quantized_size_bytes. 0 when invalid.
uint64_t tensor_size_bytes(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols);

struct QuantizeParams {
  DType dtype = DType::kQ4_K;
  Layout layout = Layout::kRowWise;
  std::span<const float> src;         // W [n_rows, k_cols], row-major, finite
  int64_t n_rows = 0;
  int64_t k_cols = 0;
  std::span<const float> importance;  // empty, or k_cols values >= 0
  std::span<uint8_t> dst;             // exactly quantized_size_bytes(...) bytes, any alignment
};

// Encodes the whole matrix. Errors: shape/dtype (see check_matrix_shape), kInvalidArgument (src/dst/importance
// sizes, negative importance), kNonFinite (NaN/Inf in src or importance; names the first row and column).
// On error dst is unspecified.
Status quantize_matrix(const QuantizeParams& p);

// Streaming encode of the chunk of rows [row_begin, row_begin + rows.size() / k_cols) of a matrix whose whole
// quantized buffer is dst (quantized_size_bytes of the full shape); only the chunk's blocks are written, so
// chunks may be encoded in any order (or concurrently into disjoint blocks).
//  row_wise:    any chunk; writes blocks [row_begin*ceil(K/B), row_end*ceil(K/B)).
//  column_wise: row_begin % B == 0 and (row_end % B == 0 or row_end == N); writes block columns
//               b in [row_begin/B, ceil(row_end/B)) of every input k, at their scattered indices k*ceil(N/B)+b.
//  flat:        (row_begin*K) % B == 0 and ((row_end*K) % B == 0 or row_end == N); writes the contiguous blocks
//               [row_begin*K/B, ceil(row_end*K/B)).
// Chunks of 256 rows (the last one shorter) satisfy every constraint for every dtype and K, since B divides 256.
struct QuantizeRowsParams {
  DType dtype = DType::kQ4_K;
  Layout layout = Layout::kRowWise;
  int64_t n_rows = 0;                 // the whole matrix
  int64_t k_cols = 0;
  int64_t row_begin = 0;              // first row of the chunk
  std::span<const float> rows;        // the chunk's rows, row-major (a multiple of k_cols values)
  std::span<const float> importance;  // empty, or k_cols values >= 0
  std::span<uint8_t> dst;             // the whole matrix's quantized buffer
};
Status quantize_rows(const QuantizeRowsParams& p);
// quantize_rows' checks (shapes, sizes, chunk alignment, importance, finiteness: the same errors) without encoding,
// for callers that write every block of the chunk themselves (quant/gptq.h).
Status check_quantize_rows(const QuantizeRowsParams& p);

struct DequantizeParams {
  DType dtype = DType::kQ4_K;
  Layout layout = Layout::kRowWise;
  std::span<const uint8_t> src;  // quantized_size_bytes(...) bytes, any alignment
  int64_t n_rows = 0;
  int64_t k_cols = 0;
  std::span<float> dst;          // W [n_rows, k_cols] row-major; padding is never written
};
// Decodes the whole matrix (bit-identical to the per-block decoders). Errors: shape/dtype, kInvalidArgument
// (src/dst sizes).
Status dequantize_matrix(const DequantizeParams& p);

}  // namespace rdrr::quant
