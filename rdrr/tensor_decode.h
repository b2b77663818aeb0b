// Decoding a pack tensor to float32 in its logical order, whatever its dtype and layout: F32 copied,
// F16/BF16 widened (quant/f16.h), Q8_0/Q4_K/Q6_K in flat/row_wise/column_wise decoded through
// quant::dequantize_matrix. The result is row-major over the logical HF shape ([N, K] for matmuls), so a
// column_wise tensor comes back in row order. Used by the CPU reference (verify/) and rdrr-inspect.
//
//   RDRR_ASSIGN_OR_RETURN(ShardReader reader, ShardReader::open(dir, manifest.shards));
//   RDRR_ASSIGN_OR_RETURN(std::vector<float> w, read_tensor_f32(reader, *find_tensor(manifest, name)));
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "quant/status.h"
#include "rdrr/manifest.h"
#include "rdrr/shard_reader.h"

namespace rdrr {

// Product of the entry's shape. Errors: kValidation (empty shape, a zero dimension, overflow past 2^53).
Result<uint64_t> tensor_elem_count(const TensorEntry& entry);

// Decodes `bytes` (the tensor's stored bytes, spans concatenated) into `out` (tensor_elem_count values).
// Errors, prefixed "tensor <name>: ": kValidation (bytes size vs the dtype/shape/layout's size, a block
// type without layout or not 2-D), kInvalidArgument (out size).
Status decode_tensor_f32(const TensorEntry& entry, std::span<const std::byte> bytes, std::span<float> out);

// Rows [row_begin, row_begin + rows) of a 2-D (or 1-D: one row) tensor can be decoded alone when row_begin and
// rows are multiples of this (the last chunk may end at the last row): 1 for plain floats and for row_wise / flat
// blocks whose rows are whole blocks, the block size B for column_wise (a block holds B rows of one input), and
// every row (the whole tensor at once) for a flat layout whose rows cut blocks. Streaming readers (the CPU
// reference engine) size their chunks by it.
uint64_t tensor_row_alignment(const TensorEntry& entry);

// The stored bytes rows [row_begin, row_begin + rows) decode from, as (offset, size) ranges of the tensor's bytes in
// order: one range for plain floats and row-contiguous blocks, one per input for column_wise (its B-row groups),
// the whole tensor for a flat layout whose rows cut blocks. Errors: kInvalidArgument (a range outside the rows or
// not aligned to tensor_row_alignment), kValidation (shape).
struct TensorByteRange {
  uint64_t offset = 0;
  uint64_t size = 0;
};
Result<std::vector<TensorByteRange>> tensor_row_byte_ranges(const TensorEntry& entry, uint64_t row_begin,
                                                            uint64_t rows);

// Decodes rows [row_begin, row_begin + rows) from `packed`, the concatenation of tensor_row_byte_ranges' ranges,
// into `out` (rows * row length values), row-major: the same values as decode_tensor_f32 of the whole tensor.
// Errors, prefixed "tensor <name>: ": those of tensor_row_byte_ranges, kInvalidArgument (packed or out size).
Status decode_packed_rows_f32(const TensorEntry& entry, std::span<const std::byte> packed, uint64_t row_begin,
                              uint64_t rows, std::span<float> out);

// The same from the whole tensor's stored bytes (`bytes`, size checked); `scratch` (optional) is reused working
// memory for ranges that are not one contiguous piece.
Status decode_tensor_rows_f32(const TensorEntry& entry, std::span<const std::byte> bytes, uint64_t row_begin,
                              uint64_t rows, std::span<float> out, std::vector<uint8_t>* scratch = nullptr);

// Reads the tensor's bytes through `reader` (bounds-checked) and decodes them.
Result<std::vector<float>> read_tensor_f32(const ShardReader& reader, const TensorEntry& entry);

}  // namespace rdrr
