// Q6_K codec (GGUF type 14): 256 values per 210-byte block, x = d * scales[s] * (q - 32) (see blocks.h).
#pragma once

#include <span>

#include "quant/blocks.h"

namespace rdrr::quant {

// Encodes src (size == dst.size() * 256, finite values) into Q6_K blocks, serially; thread-safe,
// deterministic. weights: optional per-value importance (size == src.size()); the quantizer minimises
// sum(weights[i] * (x[i] - decoded[i])^2), or the plain squared error when weights is empty.
// Search (quant/q6_k_search.inc): d from the block's largest value, then per 16-value group a few int8 scales
// that put the group's largest value exactly on a level (-32 .. -26) and a Lloyd step, each scored by
// requantising. It does not start from llama.cpp's blocks: a single block can be a little worse than
// quantize_q6_k_reference's, but tensors are better (lower relative RMSE than the reference's on the fixtures'
// weights and on normal / Laplace / Student-t data; bench/README.md). AVX2 and generic builds (see quant/cpu.h)
// give identical bytes.
void quantize_q6_k(std::span<const float> src, std::span<BlockQ6K> dst, std::span<const float> weights = {});

// Bit-exact replica of llama.cpp's quantize_row_q6_K_ref (weights empty) / quantize_row_q6_K_impl with
// quant_weights (weights given): make_qx_quants(16, 32, rmse_type 1) per group, int8 group scales against
// d = max_scale / -128, then requantisation. The quality anchor (test oracle) for tests and benchmarks.
void quantize_q6_k_reference(std::span<const float> src, std::span<BlockQ6K> dst,
                             std::span<const float> weights = {});

// Decodes blocks to floats (dst.size() == src.size() * 256): x = (f16(d) * scale) * (q - 32), bit-identical
// to gguf-py and ggml's dequantize_row_q6_K.
void dequantize_q6_k(std::span<const BlockQ6K> src, std::span<float> dst);

}  // namespace rdrr::quant
