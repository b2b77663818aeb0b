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

// Reads the tensor's bytes through `reader` (bounds-checked) and decodes them.
Result<std::vector<float>> read_tensor_f32(const ShardReader& reader, const TensorEntry& entry);

}  // namespace rdrr
