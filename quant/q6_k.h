// Q6_K codec (GGUF type 14): 256 values per 210-byte block, x = d * scales[s] * (q - 32) (see blocks.h).
#pragma once

#include <span>

#include "quant/blocks.h"

namespace rdrr::quant {

// Encodes src (size == dst.size() * 256, finite values) into Q6_K blocks, serially.
// weights: optional per-value importance (size == src.size()); the quantizer minimises
// sum(weights[i] * (x[i] - decoded[i])^2), or the plain squared error when weights is empty.
// Quality: the result never has a larger error (in that objective) than llama.cpp's reference quantizer
// (quantize_q6_k_reference below), which is evaluated as the first candidate of every block; extra
// candidates (other super-block scales, a local search over each 16-value group's int8 scale) are kept only
// when they lower the block's error. The scale search has an AVX2 build (see quant/cpu.h); both give identical
// bytes. Measured: 5-7% lower RMSE than the reference on the fixtures' weights and on normal data.
void quantize_q6_k(std::span<const float> src, std::span<BlockQ6K> dst, std::span<const float> weights = {});

// Bit-exact replica of llama.cpp's quantize_row_q6_K_ref (weights empty) / quantize_row_q6_K_impl with
// quant_weights (weights given): make_qx_quants(16, 32, rmse_type 1) per group, int8 group scales against
// d = max_scale / -128, then requantisation. The quality anchor for tests and benchmarks.
void quantize_q6_k_reference(std::span<const float> src, std::span<BlockQ6K> dst,
                             std::span<const float> weights = {});

// Decodes blocks to floats (dst.size() == src.size() * 256): x = (f16(d) * scale) * (q - 32), bit-identical
// to gguf-py and ggml's dequantize_row_q6_K.
void dequantize_q6_k(std::span<const BlockQ6K> src, std::span<float> dst);

}  // namespace rdrr::quant
