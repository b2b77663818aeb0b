#include "quant/legacy_dequant.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

#include "quant/f16.h"
#include "quant/q4_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"

namespace rdrr::quant {

namespace {

// Bit 4 of value j of a Q5_0 / Q5_1 block: bit j of qh as a little-endian uint32.
inline uint32_t q5_high_bits(const uint8_t (&qh)[4]) {
  return static_cast<uint32_t>(qh[0]) | (static_cast<uint32_t>(qh[1]) << 8) |
         (static_cast<uint32_t>(qh[2]) << 16) | (static_cast<uint32_t>(qh[3]) << 24);
}

void decode_block(const BlockQ4_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int l = 0; l < 16; ++l) {
    y[l] = static_cast<float>((b.qs[l] & 15) - 8) * d;
    y[l + 16] = static_cast<float>((b.qs[l] >> 4) - 8) * d;
  }
}

void decode_block(const BlockQ4_1& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float m = f16_to_f32(b.m);
  for (int l = 0; l < 16; ++l) {
    y[l] = static_cast<float>(b.qs[l] & 15) * d + m;
    y[l + 16] = static_cast<float>(b.qs[l] >> 4) * d + m;
  }
}

void decode_block(const BlockQ5_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  const uint32_t qh = q5_high_bits(b.qh);
  for (int l = 0; l < 16; ++l) {
    const int q0 = static_cast<int>((b.qs[l] & 15u) | (((qh >> l) & 1u) << 4));
    const int q1 = static_cast<int>((b.qs[l] >> 4) | (((qh >> (l + 16)) & 1u) << 4));
    y[l] = static_cast<float>(q0 - 16) * d;
    y[l + 16] = static_cast<float>(q1 - 16) * d;
  }
}

void decode_block(const BlockQ5_1& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float m = f16_to_f32(b.m);
  const uint32_t qh = q5_high_bits(b.qh);
  for (int l = 0; l < 16; ++l) {
    const uint32_t q0 = (b.qs[l] & 15u) | (((qh >> l) & 1u) << 4);
    const uint32_t q1 = (b.qs[l] >> 4) | (((qh >> (l + 16)) & 1u) << 4);
    y[l] = static_cast<float>(q0) * d + m;
    y[l + 16] = static_cast<float>(q1) * d + m;
  }
}

// Q2_K: per 128-value half h and 2-bit plane j, two 16-value groups (qs[32h + 0..15] and qs[32h + 16..31]).
void decode_block(const BlockQ2K& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float dmin = f16_to_f32(b.dmin);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = b.qs + 32 * h;
    for (int j = 0; j < 4; ++j) {
      const int shift = 2 * j;
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = b.scales[8 * h + 2 * j + half];
        const float dl = d * static_cast<float>(sc & 15);
        const float ml = dmin * static_cast<float>(sc >> 4);
        const uint8_t* qq = q + 16 * half;
        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((qq[l] >> shift) & 3) - ml;
      }
    }
  }
}

void decode_block(const BlockQ3K& b, float* y) {
  const float d_all = f16_to_f32(b.d);
  const Q3KScales s = unpack_q3k_scales(std::span<const uint8_t, 12>(b.scales));
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = b.qs + 32 * h;
    for (int j = 0; j < 4; ++j) {
      const int shift = 2 * j;
      const uint8_t mask = static_cast<uint8_t>(1u << (4 * h + j));
      for (int half = 0; half < 2; ++half) {
        const float dl = d_all * static_cast<float>(s.sc[8 * h + 2 * j + half]);
        const int l0 = 16 * half;
        for (int l = l0; l < l0 + 16; ++l) {
          const int v = ((q[l] >> shift) & 3) - ((b.hmask[l] & mask) != 0 ? 0 : 4);
          *y++ = dl * static_cast<float>(v);
        }
      }
    }
  }
}

void decode_block(const BlockQ5K& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float dmin = f16_to_f32(b.dmin);
  const Q4KScales c = unpack_q4k_scales(std::span<const uint8_t, 12>(b.scales));
  for (int chunk = 0; chunk < 4; ++chunk) {
    const uint8_t* ql = b.qs + 32 * chunk;
    const uint8_t u1 = static_cast<uint8_t>(1u << (2 * chunk));
    const uint8_t u2 = static_cast<uint8_t>(2u << (2 * chunk));
    const float d1 = d * static_cast<float>(c.sc[2 * chunk]);
    const float m1 = dmin * static_cast<float>(c.m[2 * chunk]);
    const float d2 = d * static_cast<float>(c.sc[2 * chunk + 1]);
    const float m2 = dmin * static_cast<float>(c.m[2 * chunk + 1]);
    for (int l = 0; l < 32; ++l) {
      const int q = (ql[l] & 15) + ((b.qh[l] & u1) != 0 ? 16 : 0);
      y[l] = d1 * static_cast<float>(q) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      const int q = (ql[l] >> 4) + ((b.qh[l] & u2) != 0 ? 16 : 0);
      y[32 + l] = d2 * static_cast<float>(q) - m2;
    }
    y += 64;
  }
}

// The existing codecs, one block at a time (so the byte-level entry can memcpy each block).
void decode_block(const BlockQ8_0& b, float* y) { dequantize_q8_0({&b, 1}, {y, size_t{kQK8_0}}); }
void decode_block(const BlockQ4K& b, float* y) { dequantize_q4_k({&b, 1}, {y, size_t{kQK_K}}); }
void decode_block(const BlockQ6K& b, float* y) { dequantize_q6_k({&b, 1}, {y, size_t{kQK_K}}); }

template <typename Block, int kElems>
void decode_span(std::span<const Block> src, std::span<float> dst) {
  assert(dst.size() == src.size() * kElems);
  (void)dst;
  for (size_t i = 0; i < src.size(); ++i) decode_block(src[i], dst.data() + i * kElems);
}

// Blocks [begin, end) of an unaligned byte buffer: each block is copied out first (alignment, aliasing).
template <typename Block, int kElems>
void decode_bytes(const std::byte* src, float* dst, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    Block b;
    std::memcpy(&b, src + i * sizeof(Block), sizeof(Block));
    decode_block(b, dst + i * kElems);
  }
}

// Plain types: 2-byte values converted in stack-sized chunks with the bulk (SIMD) converters.
template <bool kBf16>
void decode_half_bytes(const std::byte* src, float* dst, size_t begin, size_t end) {
  constexpr size_t kChunk = 2048;
  uint16_t buf[kChunk];
  for (size_t i = begin; i < end; i += kChunk) {
    const size_t n = std::min(kChunk, end - i);
    std::memcpy(buf, src + i * 2, n * 2);
    if constexpr (kBf16) {
      bf16_to_f32(std::span<const uint16_t>(buf, n), std::span<float>(dst + i, n));
    } else {
      f16_to_f32(std::span<const uint16_t>(buf, n), std::span<float>(dst + i, n));
    }
  }
}

void decode_f32_bytes(const std::byte* src, float* dst, size_t begin, size_t end) {
  std::memcpy(dst + begin, src + begin * 4, (end - begin) * 4);
}

using RangeDecoder = void (*)(const std::byte*, float*, size_t, size_t);

RangeDecoder range_decoder(GgmlBlockType t) {
  switch (t) {
    case GgmlBlockType::kF32: return decode_f32_bytes;
    case GgmlBlockType::kF16: return decode_half_bytes<false>;
    case GgmlBlockType::kBF16: return decode_half_bytes<true>;
    case GgmlBlockType::kQ4_0: return decode_bytes<BlockQ4_0, kQK4_0>;
    case GgmlBlockType::kQ4_1: return decode_bytes<BlockQ4_1, kQK4_0>;
    case GgmlBlockType::kQ5_0: return decode_bytes<BlockQ5_0, kQK5_0>;
    case GgmlBlockType::kQ5_1: return decode_bytes<BlockQ5_1, kQK5_0>;
    case GgmlBlockType::kQ8_0: return decode_bytes<BlockQ8_0, kQK8_0>;
    case GgmlBlockType::kQ2_K: return decode_bytes<BlockQ2K, kQK_K>;
    case GgmlBlockType::kQ3_K: return decode_bytes<BlockQ3K, kQK_K>;
    case GgmlBlockType::kQ4_K: return decode_bytes<BlockQ4K, kQK_K>;
    case GgmlBlockType::kQ5_K: return decode_bytes<BlockQ5K, kQK_K>;
    case GgmlBlockType::kQ6_K: return decode_bytes<BlockQ6K, kQK_K>;
  }
  return nullptr;
}

}  // namespace

std::optional<GgmlBlockType> ggml_block_type_from_id(uint32_t id) {
  const auto t = static_cast<GgmlBlockType>(id);
  if (ggml_block_elems(t) == 0) return std::nullopt;
  return t;
}

std::string_view ggml_block_type_name(GgmlBlockType t) {
  switch (t) {
    case GgmlBlockType::kF32: return "F32";
    case GgmlBlockType::kF16: return "F16";
    case GgmlBlockType::kBF16: return "BF16";
    case GgmlBlockType::kQ4_0: return "Q4_0";
    case GgmlBlockType::kQ4_1: return "Q4_1";
    case GgmlBlockType::kQ5_0: return "Q5_0";
    case GgmlBlockType::kQ5_1: return "Q5_1";
    case GgmlBlockType::kQ8_0: return "Q8_0";
    case GgmlBlockType::kQ2_K: return "Q2_K";
    case GgmlBlockType::kQ3_K: return "Q3_K";
    case GgmlBlockType::kQ4_K: return "Q4_K";
    case GgmlBlockType::kQ5_K: return "Q5_K";
    case GgmlBlockType::kQ6_K: return "Q6_K";
  }
  return "";
}

int64_t ggml_block_elems(GgmlBlockType t) {
  switch (t) {
    case GgmlBlockType::kF32:
    case GgmlBlockType::kF16:
    case GgmlBlockType::kBF16: return 1;
    case GgmlBlockType::kQ4_0:
    case GgmlBlockType::kQ4_1:
    case GgmlBlockType::kQ5_0:
    case GgmlBlockType::kQ5_1:
    case GgmlBlockType::kQ8_0: return 32;
    case GgmlBlockType::kQ2_K:
    case GgmlBlockType::kQ3_K:
    case GgmlBlockType::kQ4_K:
    case GgmlBlockType::kQ5_K:
    case GgmlBlockType::kQ6_K: return kQK_K;
  }
  return 0;
}

int64_t ggml_block_bytes(GgmlBlockType t) {
  switch (t) {
    case GgmlBlockType::kF32: return 4;
    case GgmlBlockType::kF16:
    case GgmlBlockType::kBF16: return 2;
    case GgmlBlockType::kQ4_0: return sizeof(BlockQ4_0);
    case GgmlBlockType::kQ4_1: return sizeof(BlockQ4_1);
    case GgmlBlockType::kQ5_0: return sizeof(BlockQ5_0);
    case GgmlBlockType::kQ5_1: return sizeof(BlockQ5_1);
    case GgmlBlockType::kQ8_0: return sizeof(BlockQ8_0);
    case GgmlBlockType::kQ2_K: return sizeof(BlockQ2K);
    case GgmlBlockType::kQ3_K: return sizeof(BlockQ3K);
    case GgmlBlockType::kQ4_K: return sizeof(BlockQ4K);
    case GgmlBlockType::kQ5_K: return sizeof(BlockQ5K);
    case GgmlBlockType::kQ6_K: return sizeof(BlockQ6K);
  }
  return 0;
}

Q3KScales unpack_q3k_scales(std::span<const uint8_t, 12> packed) {
  Q3KScales s{};
  for (int g = 0; g < 16; ++g) {
    const int low = g < 8 ? (packed[g] & 15) : (packed[g - 8] >> 4);
    const int high = (packed[8 + g % 4] >> (2 * (g / 4))) & 3;
    s.sc[g] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
  return s;
}

void dequantize_q4_0(std::span<const BlockQ4_0> src, std::span<float> dst) {
  decode_span<BlockQ4_0, kQK4_0>(src, dst);
}
void dequantize_q4_1(std::span<const BlockQ4_1> src, std::span<float> dst) {
  decode_span<BlockQ4_1, kQK4_0>(src, dst);
}
void dequantize_q5_0(std::span<const BlockQ5_0> src, std::span<float> dst) {
  decode_span<BlockQ5_0, kQK5_0>(src, dst);
}
void dequantize_q5_1(std::span<const BlockQ5_1> src, std::span<float> dst) {
  decode_span<BlockQ5_1, kQK5_0>(src, dst);
}
void dequantize_q2_k(std::span<const BlockQ2K> src, std::span<float> dst) { decode_span<BlockQ2K, kQK_K>(src, dst); }
void dequantize_q3_k(std::span<const BlockQ3K> src, std::span<float> dst) { decode_span<BlockQ3K, kQK_K>(src, dst); }
void dequantize_q5_k(std::span<const BlockQ5K> src, std::span<float> dst) { decode_span<BlockQ5K, kQK_K>(src, dst); }

Status dequantize_ggml_blocks(GgmlBlockType t, std::span<const std::byte> src, std::span<float> dst) {
  const RangeDecoder decode = range_decoder(t);
  if (decode == nullptr) {
    return error(StatusCode::kUnsupported,
                 "dequantize: ggml type id " + std::to_string(static_cast<uint32_t>(t)) + " is not decodable");
  }
  const auto block_bytes = static_cast<size_t>(ggml_block_bytes(t));
  const auto block_elems = static_cast<size_t>(ggml_block_elems(t));
  const std::string name(ggml_block_type_name(t));
  if (src.size() % block_bytes != 0) {
    return error(StatusCode::kInvalidArgument, "dequantize " + name + ": source size " +
                                                   std::to_string(src.size()) + " bytes is not a multiple of " +
                                                   std::to_string(block_bytes) + "-byte blocks");
  }
  const size_t n_blocks = src.size() / block_bytes;
  if (dst.size() != n_blocks * block_elems) {
    return error(StatusCode::kInvalidArgument, "dequantize " + name + ": destination holds " +
                                                   std::to_string(dst.size()) + " values, expected " +
                                                   std::to_string(n_blocks * block_elems) + " (" +
                                                   std::to_string(n_blocks) + " blocks)");
  }
  // About 64K values per task: small inputs stay on the calling thread.
  const size_t grain_blocks = std::max<size_t>(1, 65536 / block_elems);
  if (n_blocks <= grain_blocks) {
    decode(src.data(), dst.data(), 0, n_blocks);
    return Status::Ok();
  }
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n_blocks, grain_blocks), [&](const tbb::blocked_range<size_t>& r) {
    decode(src.data(), dst.data(), r.begin(), r.end());
  });
  return Status::Ok();
}

}  // namespace rdrr::quant
