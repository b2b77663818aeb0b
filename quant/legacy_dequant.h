// Decoders for every GGUF block type the converter accepts as input, and one entry point that decodes raw
// tensor bytes of any of them (F32/F16/BF16 too) to float32.
//
// Exactness: each decoder computes in float32 exactly as ggml's dequantize_row_* does, in the same order
// (e.g. Q2_K: dl = d * sc, ml = dmin * m, x = dl * q - ml), and the project builds with -ffp-contract=off,
// so the results are bit-identical to ggml / gguf-py.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "quant/legacy_blocks.h"
#include "quant/status.h"

namespace rdrr::quant {

// The GGUF tensor types rdrr can decode. The values are ggml's type ids, so a GGUF reader maps an id with
// ggml_block_type_from_id() (Q8_1, Q8_K, IQ*, TQ*, integer and F64 types are not decodable here).
enum class GgmlBlockType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kBF16 = 30,
};

std::optional<GgmlBlockType> ggml_block_type_from_id(uint32_t id);
std::string_view ggml_block_type_name(GgmlBlockType t);  // "Q5_0"; "" for a value outside the enum
// Values and bytes per block (1 and the element size for F32/F16/BF16); 0 for a value outside the enum.
int64_t ggml_block_elems(GgmlBlockType t);
int64_t ggml_block_bytes(GgmlBlockType t);

// Per-type decoders: dst.size() == src.size() * values-per-block (asserted).
void dequantize_q4_0(std::span<const BlockQ4_0> src, std::span<float> dst);
void dequantize_q4_1(std::span<const BlockQ4_1> src, std::span<float> dst);
void dequantize_q5_0(std::span<const BlockQ5_0> src, std::span<float> dst);
void dequantize_q5_1(std::span<const BlockQ5_1> src, std::span<float> dst);
void dequantize_q2_k(std::span<const BlockQ2K> src, std::span<float> dst);
void dequantize_q3_k(std::span<const BlockQ3K> src, std::span<float> dst);
void dequantize_q5_k(std::span<const BlockQ5K> src, std::span<float> dst);

// The 16 signed group scales of a Q3_K block (6-bit code - 32, in -32..31); packing: see legacy_blocks.h.
struct Q3KScales {
  int8_t sc[16];
};
Q3KScales unpack_q3k_scales(std::span<const uint8_t, 12> packed);

// Decodes src (a whole number of blocks of type t, any alignment) into dst, which must hold exactly
// src.size() / ggml_block_bytes(t) * ggml_block_elems(t) values. Large inputs are spread over oneTBB's
// current arena by blocks (bytes identical at any thread count).
// Errors: kUnsupported (t outside the enum), kInvalidArgument (src not a whole number of blocks, dst size).
Status dequantize_ggml_blocks(GgmlBlockType t, std::span<const std::byte> src, std::span<float> dst);

}  // namespace rdrr::quant
