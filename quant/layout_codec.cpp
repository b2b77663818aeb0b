#include "quant/layout_codec.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "quant/blocks.h"
#include "quant/legacy_dequant.h"
#include "quant/cpu.h"
#include "quant/q4_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"

namespace rdrr::quant::detail {

static_assert(kTileElems / kQK8_0 * int64_t{sizeof(BlockQ8_0)} <= kTileBytes);
static_assert(kTileElems / kQK_K * int64_t{sizeof(BlockQ6K)} <= kTileBytes);
static_assert(kTileElems / kQK_K * int64_t{sizeof(BlockQ4K)} <= kTileBytes);

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks go through a local, aligned array: dst/src byte buffers need no alignment.
template <typename Block, int64_t kElems, auto kQuantize>
void encode_weighted(const float* x, const float* w, int64_t n_blocks, uint8_t* out) {
  constexpr int64_t kBatch = kTileElems / kElems;
  Block tmp[kBatch];
  for (int64_t b0 = 0; b0 < n_blocks; b0 += kBatch) {
    const int64_t n = std::min(kBatch, n_blocks - b0);
    const auto n_vals = static_cast<size_t>(n * kElems);
    const float* xb = x + b0 * kElems;
    kQuantize(std::span<const float>(xb, n_vals), std::span<Block>(tmp, static_cast<size_t>(n)),
              w ? std::span<const float>(w + b0 * kElems, n_vals) : std::span<const float>());
    std::memcpy(out + b0 * static_cast<int64_t>(sizeof(Block)), tmp, static_cast<size_t>(n) * sizeof(Block));
  }
}

void encode_q8_0(const float* x, const float* /*w: Q8_0 has no weighted fit*/, int64_t n_blocks, uint8_t* out) {
  constexpr int64_t kBatch = kTileElems / kQK8_0;
  BlockQ8_0 tmp[kBatch];
  for (int64_t b0 = 0; b0 < n_blocks; b0 += kBatch) {
    const int64_t n = std::min(kBatch, n_blocks - b0);
    quantize_q8_0(std::span<const float>(x + b0 * kQK8_0, static_cast<size_t>(n * kQK8_0)),
                  std::span<BlockQ8_0>(tmp, static_cast<size_t>(n)));
    std::memcpy(out + b0 * static_cast<int64_t>(sizeof(BlockQ8_0)), tmp, static_cast<size_t>(n) * sizeof(BlockQ8_0));
  }
}

template <typename Block, int64_t kElems, auto kDequantize>
void decode_blocks(const uint8_t* in, int64_t n_blocks, float* y) {
  constexpr int64_t kBatch = kTileElems / kElems;
  Block tmp[kBatch];
  for (int64_t b0 = 0; b0 < n_blocks; b0 += kBatch) {
    const int64_t n = std::min(kBatch, n_blocks - b0);
    std::memcpy(tmp, in + b0 * static_cast<int64_t>(sizeof(Block)), static_cast<size_t>(n) * sizeof(Block));
    kDequantize(std::span<const Block>(tmp, static_cast<size_t>(n)),
                std::span<float>(y + b0 * kElems, static_cast<size_t>(n * kElems)));
  }
}

void q4k_quantize(std::span<const float> x, std::span<BlockQ4K> b, std::span<const float> w) {
  quantize_q4_k(x, b, w);
}
void q6k_quantize(std::span<const float> x, std::span<BlockQ6K> b, std::span<const float> w) {
  quantize_q6_k(x, b, w);
}
void q4k_dequantize(std::span<const BlockQ4K> b, std::span<float> y) { dequantize_q4_k(b, y); }
void q6k_dequantize(std::span<const BlockQ6K> b, std::span<float> y) { dequantize_q6_k(b, y); }
void q8_dequantize(std::span<const BlockQ8_0> b, std::span<float> y) { dequantize_q8_0(b, y); }

const Codec kQ8_0Codec{kQK8_0, sizeof(BlockQ8_0), &encode_q8_0, &decode_blocks<BlockQ8_0, kQK8_0, q8_dequantize>};
const Codec kQ4KCodec{kQK_K, sizeof(BlockQ4K), &encode_weighted<BlockQ4K, kQK_K, q4k_quantize>,
                      &decode_blocks<BlockQ4K, kQK_K, q4k_dequantize>};
const Codec kQ6KCodec{kQK_K, sizeof(BlockQ6K), &encode_weighted<BlockQ6K, kQK_K, q6k_quantize>,
                      &decode_blocks<BlockQ6K, kQK_K, q6k_dequantize>};

// Pass-through types (quant/dtype.h): decoders only (ggml's, quant/legacy_dequant.h).
void q4_0_dequantize(std::span<const BlockQ4_0> b, std::span<float> y) { dequantize_q4_0(b, y); }
void q5_0_dequantize(std::span<const BlockQ5_0> b, std::span<float> y) { dequantize_q5_0(b, y); }
void q5k_dequantize(std::span<const BlockQ5K> b, std::span<float> y) { dequantize_q5_k(b, y); }
const Codec kQ4_0Codec{kQK8_0, sizeof(BlockQ4_0), nullptr, &decode_blocks<BlockQ4_0, kQK8_0, q4_0_dequantize>};
const Codec kQ5_0Codec{kQK8_0, sizeof(BlockQ5_0), nullptr, &decode_blocks<BlockQ5_0, kQK8_0, q5_0_dequantize>};
const Codec kQ5KCodec{kQK_K, sizeof(BlockQ5K), nullptr, &decode_blocks<BlockQ5K, kQK_K, q5k_dequantize>};

}  // namespace

bool all_finite(const float* x, int64_t n) {
#ifdef RDRR_QUANT_X86
  if (simd_enabled()) return all_finite_avx2(x, n);
#endif
  // Branch-free on the bits (vectorizes): |x| >= inf (0x7f800000) carries into bit 31 when 2^23 is added.
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bad |= ((bits & 0x7fffffffu) + 0x00800000u) & 0x80000000u;
  }
  return bad == 0;
}

bool gather_columns(const float* src, int64_t src_stride, int64_t n_rows, int64_t n_cols, int64_t dst_stride,
                    float* dst) {
#ifdef RDRR_QUANT_X86
  if (simd_enabled()) return gather_columns_avx2(src, src_stride, n_rows, n_cols, dst_stride, dst);
#endif
  bool ok = true;
  for (int64_t i = 0; i < n_rows; ++i) {
    for (int64_t k = 0; k < n_cols; ++k) {
      const float v = src[i * src_stride + k];
      ok = ok && std::fabs(v) <= std::numeric_limits<float>::max();
      dst[k * dst_stride + i] = v;
    }
  }
  return ok;
}

const Codec& codec_for(DType dtype) {
  switch (dtype) {
    case DType::kQ4_K: return kQ4KCodec;
    case DType::kQ6_K: return kQ6KCodec;
    case DType::kQ4_0: return kQ4_0Codec;
    case DType::kQ5_0: return kQ5_0Codec;
    case DType::kQ5_K: return kQ5KCodec;
    default: return kQ8_0Codec;
  }
}

void decode_matrix(const Codec& codec, Layout layout, BlockGrid grid, int64_t n_rows, int64_t k_cols,
                   const uint8_t* src, float* dst) {
  const int64_t B = codec.block_elems;
  const int64_t K = k_cols;
  const int64_t tile = kTileElems / B;
  const int64_t bpr = grid.blocks_per_row;
  if (layout != Layout::kColumnWise) {
    const int64_t total = grid.total_blocks();
    const int64_t total_elems = n_rows * K;
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, ceil_div(total, tile)),
        [&](const tbb::blocked_range<int64_t>& tr) {
          alignas(64) float y[kTileElems];
          for (int64_t t = tr.begin(); t != tr.end(); ++t) {
            const int64_t gb = t * tile;
            const int64_t n = std::min(tile, total - gb);
            codec.decode(src + gb * codec.block_bytes, n, y);
            for (int64_t g = gb; g < gb + n; ++g) {
              const float* yb = y + (g - gb) * B;
              if (layout == Layout::kFlat) {
                const int64_t n_real = std::min(B, total_elems - g * B);
                std::copy(yb, yb + n_real, dst + g * B);
              } else {
                const int64_t r = g / bpr;
                const int64_t col0 = (g % bpr) * B;
                std::copy(yb, yb + std::min(B, K - col0), dst + r * K + col0);
              }
            }
          }
        },
        tbb::static_partitioner());
    return;
  }
  const int64_t k_tiles = ceil_div(K, tile);
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, bpr * k_tiles),
      [&](const tbb::blocked_range<int64_t>& tr) {
        alignas(64) float y[kTileElems];
        for (int64_t item = tr.begin(); item != tr.end(); ++item) {
          const int64_t b = item / k_tiles;
          const int64_t k0 = (item % k_tiles) * tile;
          const int64_t nk = std::min(tile, K - k0);
          for (int64_t kk = 0; kk < nk; ++kk) {
            codec.decode(src + ((k0 + kk) * bpr + b) * codec.block_bytes, 1, y + kk * B);
          }
          const int64_t n_real = std::min(B, n_rows - b * B);
          for (int64_t i = 0; i < n_real; ++i) {
            float* row = dst + (b * B + i) * K + k0;
            for (int64_t kk = 0; kk < nk; ++kk) row[kk] = y[kk * B + i];
          }
        }
      },
      tbb::static_partitioner());
}

}  // namespace rdrr::quant::detail
