// Q4_K codec (GGUF type 12): 256 values per 144-byte block (see blocks.h).
//
// Decode: x = (f16(d) * sc[j]) * q - (f16(dmin) * m[j]) in float32, j = 32-value sub-block, q in 0..15.
// Scale packing (scales[12]): for j < 4, byte j low 6 bits = sc[j] and byte j+4 low 6 bits = m[j]; for j >= 4,
// byte j+4 = (sc[j] & 15) | ((m[j] & 15) << 4), sc[j] >> 4 goes to bits 6-7 of byte j-4 and m[j] >> 4 to
// bits 6-7 of byte j.
#pragma once

#include <cstdint>
#include <span>

#include "quant/blocks.h"

namespace rdrr::quant {

// The eight 6-bit sub-scales and sub-mins of a Q4_K block.
struct Q4KScales {
  uint8_t sc[kQ4KSubBlocks];  // 0..63
  uint8_t m[kQ4KSubBlocks];   // 0..63
};

// Packs 6-bit codes (values above 63 are masked to their low 6 bits) into the 12-byte field.
void pack_q4k_scales(const Q4KScales& codes, std::span<uint8_t, 12> packed);
Q4KScales unpack_q4k_scales(std::span<const uint8_t, 12> packed);

// Decodes blocks to floats (dst.size() == src.size() * 256), bit-identical to gguf-py and ggml's
// dequantize_row_q4_K.
void dequantize_q4_k(std::span<const BlockQ4K> src, std::span<float> dst);

// Encodes src (size == dst.size() * 256) into Q4_K blocks, serially; thread-safe, allocation-free,
// deterministic. weights: optional per-value importance (size == src.size(), >= 0); the quantizer minimises
// sum(weights[i] * (x[i] - decoded[i])^2) per block, or the plain squared error when weights is empty.
// Search (quant/q4_k_search.inc): per sub-block a least-squares (scale, min) fit over a few level grids plus
// a Lloyd step, block scales d/dmin from the largest fits, then a small search over the 6-bit codes scored by
// requantising. It does not start from llama.cpp's blocks: a single block can be a little worse than
// quantize_q4_k_reference's, but tensors are better (lower relative RMSE than llama.cpp's on the fixture
// models and on normal / Laplace / Student-t matrices; tests/quant_quality_test.cpp, bench/README.md).
// Values must be finite (the converter rejects NaN/Inf); non-finite input gives unspecified blocks, no crash.
// AVX2 and scalar paths (see quant/cpu.h) give identical bytes.
void quantize_q4_k(std::span<const float> src, std::span<BlockQ4K> dst, std::span<const float> weights = {});

// Bit-exact replica of llama.cpp's quantize_row_q4_K_ref (make_qkx2_quants per sub-block with weights
// rms + |x|, 6-bit codes against d = max_scale/63 and dmin = max_min/63, requantisation). The quality anchor
// (test oracle) in tests and benchmarks; it ignores importance weights.
void quantize_q4_k_reference(std::span<const float> src, std::span<BlockQ4K> dst);

}  // namespace rdrr::quant
