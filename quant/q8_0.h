// Q8_0 codec (GGUF type 8): 32 values per 34-byte block, x = d * q (see blocks.h).
#pragma once

#include <span>

#include "quant/blocks.h"

namespace rdrr::quant {

// Encodes src (size == dst.size() * 32, finite values) into Q8_0 blocks, serially.
// d = max|x| / 127 rounded to f16 (saturated at the largest finite f16), q = round-half-even(x / d) with d the
// rounded f16 value, clamped to [-127, 127]. The blocks decode with ggml/gguf-py unchanged (same format);
// compared to llama.cpp's quantize_row_q8_0_ref (which rounds x * (1/d_f32) half away from zero) an
// occasional q may differ by one, always toward the value the stored d reproduces best.
void quantize_q8_0(std::span<const float> src, std::span<BlockQ8_0> dst);

// Decodes blocks to floats (dst.size() == src.size() * 32): x = f16(d) * q, bit-identical to gguf-py.
void dequantize_q8_0(std::span<const BlockQ8_0> src, std::span<float> dst);

}  // namespace rdrr::quant
