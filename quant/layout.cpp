#include "quant/layout.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "quant/layout_codec.h"

namespace rdrr::quant {

namespace {

using detail::Codec;
using detail::codec_for;
using detail::kTileBytes;
using detail::kTileElems;

bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Message building without operator+ chains (GCC 12 -O3 reports a false -Wrestrict on `"lit" + string&&`).
void append(std::string& s, std::string_view v) { s += v; }
template <typename T>
  requires std::is_arithmetic_v<T>
void append(std::string& s, T v) {
  s += std::to_string(v);
}
template <typename... Args>
std::string cat(const Args&... args) {
  std::string s;
  (append(s, args), ...);
  return s;
}

std::string shape_str(int64_t n_rows, int64_t k_cols) { return cat("[", n_rows, ", ", k_cols, "]"); }

// Per-column objective weights from the importance vector (see layout.h), or an empty vector.
Result<std::vector<float>> column_weights(std::span<const float> importance, int64_t k_cols) {
  std::vector<float> w;
  if (importance.empty()) return w;
  if (static_cast<int64_t>(importance.size()) != k_cols) {
    return error(StatusCode::kInvalidArgument, cat("importance has ", importance.size(), " values, expected k_cols = ", k_cols));
  }
  double sum = 0.0;
  for (size_t k = 0; k < importance.size(); ++k) {
    const float v = importance[k];
    if (!std::isfinite(v)) {
      return error(StatusCode::kNonFinite, cat("importance[", k, "] is not finite"));
    }
    if (v < 0.0f) {
      return error(StatusCode::kInvalidArgument,
                   cat("importance[", k, "] = ", v, " is negative"));
    }
    sum += v;
  }
  const double mean = sum / static_cast<double>(k_cols);
  const float floor_w = mean > 0.0 ? static_cast<float>(1e-6 * mean) : 1.0f;
  w.resize(importance.size());
  for (size_t k = 0; k < importance.size(); ++k) w[k] = std::max(importance[k], floor_w);
  return w;
}

// Lowest flat index (within the chunk) of a non-finite value seen by any tile; INT64_MAX when none.
class FirstBad {
 public:
  void check(const float* x, int64_t n, int64_t base) {
    if (detail::all_finite(x, n)) return;
    int64_t i = 0;
    while (std::fabs(x[i]) <= std::numeric_limits<float>::max()) ++i;
    int64_t cur = first_.load();
    while (base + i < cur && !first_.compare_exchange_weak(cur, base + i)) {
    }
  }
  int64_t get() const { return first_.load(); }

 private:
  std::atomic<int64_t> first_{INT64_MAX};
};

struct Chunk {
  const Codec* codec;
  BlockGrid grid;
  int64_t n_rows, k_cols, row_begin, row_end;
  const float* rows;        // the chunk's first row
  const float* col_weight;  // per-column weights or null
  uint8_t* dst;             // the whole matrix's blocks
};

// row_wise / flat: the chunk's blocks are the contiguous range [g0, g1); block g covers flat source elements
// of the chunk computed by `element_of`.
void encode_contiguous(const Chunk& c, bool flat, FirstBad& bad) {
  const int64_t B = c.codec->block_elems;
  const int64_t K = c.k_cols;
  const int64_t total_elems = c.n_rows * K;
  const int64_t bpr = c.grid.blocks_per_row;
  const int64_t g0 = flat ? c.row_begin * K / B : c.row_begin * bpr;
  const int64_t g1 = flat ? ceil_div(c.row_end * K, B) : c.row_end * bpr;
  const int64_t tile = kTileElems / B;
  const int64_t n_tiles = ceil_div(g1 - g0, tile);
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, n_tiles),
      [&](const tbb::blocked_range<int64_t>& tr) {
        alignas(64) float x[kTileElems];
        alignas(64) float w[kTileElems];
        for (int64_t t = tr.begin(); t != tr.end(); ++t) {
          const int64_t gb = g0 + t * tile;
          const int64_t ge = std::min(g1, gb + tile);
          // Whole blocks that are contiguous in the source (flat, or row_wise with K % B == 0): encoded in place.
          if ((flat || K % B == 0) && ge * B <= total_elems) {
            const float* s = c.rows + (gb * B - c.row_begin * K);
            const int64_t n_vals = (ge - gb) * B;
            bad.check(s, n_vals, gb * B - c.row_begin * K);
            if (c.col_weight != nullptr) {
              int64_t col = (gb * B) % K;
              for (int64_t i = 0; i < n_vals; ++i) {
                w[i] = c.col_weight[col];
                col = col + 1 == K ? 0 : col + 1;
              }
            }
            c.codec->encode(s, c.col_weight != nullptr ? w : nullptr, ge - gb, c.dst + gb * c.codec->block_bytes);
            continue;
          }
          for (int64_t g = gb; g < ge; ++g) {
            float* xb = x + (g - gb) * B;
            float* wb = w + (g - gb) * B;
            // Source: global flat element e0 .. e0 + n_real of row r (row_wise) or of the matrix (flat).
            const int64_t r = flat ? 0 : g / bpr;
            const int64_t col0 = flat ? 0 : (g % bpr) * B;
            const int64_t e0 = flat ? g * B : r * K + col0;
            const int64_t n_real = flat ? std::min(B, total_elems - e0) : std::min(B, K - col0);
            const float* s = c.rows + (e0 - c.row_begin * K);
            std::memcpy(xb, s, static_cast<size_t>(n_real) * sizeof(float));
            bad.check(xb, n_real, e0 - c.row_begin * K);
            std::fill(xb + n_real, xb + B, 0.0f);
            const bool weighted = c.col_weight != nullptr || n_real < B;
            if (weighted) {
              for (int64_t i = 0; i < n_real; ++i) wb[i] = c.col_weight ? c.col_weight[(e0 + i) % K] : 1.0f;
              std::fill(wb + n_real, wb + B, 0.0f);
            }
            c.codec->encode(xb, weighted ? wb : nullptr, 1, c.dst + g * c.codec->block_bytes);
          }
        }
      },
      tbb::static_partitioner());
}

// column_wise: block columns b of the chunk, every input k; block (k, b) at k*bpr + b.
void encode_columns(const Chunk& c, FirstBad& bad) {
  const int64_t B = c.codec->block_elems;
  const int64_t K = c.k_cols;
  const int64_t bpr = c.grid.blocks_per_row;
  const int64_t b0 = c.row_begin / B;
  const int64_t b1 = ceil_div(c.row_end, B);
  const int64_t kt = kTileElems / B;  // inputs per tile
  const int64_t k_tiles = ceil_div(K, kt);
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, (b1 - b0) * k_tiles),
      [&](const tbb::blocked_range<int64_t>& tr) {
        alignas(64) float x[kTileElems];
        alignas(64) float w[kTileElems];
        alignas(64) uint8_t out[kTileBytes];
        for (int64_t item = tr.begin(); item != tr.end(); ++item) {
          const int64_t b = b0 + item / k_tiles;
          const int64_t k0 = (item % k_tiles) * kt;
          const int64_t nk = std::min(kt, K - k0);
          const int64_t n_real = std::min(B, c.row_end - b * B);  // real output channels of this block column
          const int64_t off0 = (b * B - c.row_begin) * K + k0;
          if (!detail::gather_columns(c.rows + off0, K, n_real, nk, B, x)) {
            for (int64_t i = 0; i < n_real; ++i) bad.check(c.rows + off0 + i * K, nk, off0 + i * K);
          }
          const bool weighted = c.col_weight != nullptr || n_real < B;
          for (int64_t kk = 0; kk < nk; ++kk) {
            std::fill(x + kk * B + n_real, x + kk * B + B, 0.0f);
            if (weighted) {
              const float wk = c.col_weight ? c.col_weight[k0 + kk] : 1.0f;
              std::fill(w + kk * B, w + kk * B + n_real, wk);
              std::fill(w + kk * B + n_real, w + kk * B + B, 0.0f);
            }
          }
          // One call for the tile's blocks (into `out`), then each block to its place k*bpr + b.
          const int64_t bb = c.codec->block_bytes;
          c.codec->encode(x, weighted ? w : nullptr, nk, out);
          for (int64_t kk = 0; kk < nk; ++kk) std::memcpy(c.dst + ((k0 + kk) * bpr + b) * bb, out + kk * bb, bb);
        }
      },
      tbb::static_partitioner());
}

Status check_chunk(const QuantizeRowsParams& p, const Codec& codec, int64_t n_chunk_rows) {
  const int64_t B = codec.block_elems;
  const int64_t K = p.k_cols;
  const int64_t row_end = p.row_begin + n_chunk_rows;
  const std::string rng = cat("chunk rows [", p.row_begin, ", ", row_end, ")");
  if (p.layout == Layout::kColumnWise) {
    if (p.row_begin % B != 0 || (row_end % B != 0 && row_end != p.n_rows)) {
      return error(StatusCode::kInvalidArgument, cat(rng, ": column_wise ", dtype_name(p.dtype), " chunks must start on a multiple of ",
                                                     B, " rows and end on one or at the last row"));
    }
  } else if (p.layout == Layout::kFlat) {
    if ((p.row_begin * K) % B != 0 || ((row_end * K) % B != 0 && row_end != p.n_rows)) {
      return error(StatusCode::kInvalidArgument,
                   cat(rng, ": flat ", dtype_name(p.dtype), " chunks must start and end on a block boundary (row * k_cols % ",
                       B, " == 0, k_cols = ", K, "); use chunks of 256 rows"));
    }
  }
  return Status::Ok();
}

}  // namespace

Status check_matrix_shape(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols) {
  if (!is_block_quantized(dtype)) {
    return error(StatusCode::kUnsupported,
                 cat("dtype ", dtype_name(dtype), " has no block layout (expected Q8_0, Q4_K, Q6_K, Q4_0, Q5_0 or Q5_K)"));
  }
  if (layout != Layout::kFlat && layout != Layout::kRowWise && layout != Layout::kColumnWise) {
    return error(StatusCode::kUnsupported, cat("unknown layout ", static_cast<int>(layout)));
  }
  if (n_rows < 1 || k_cols < 1) {
    return error(StatusCode::kInvalidArgument, cat("shape ", shape_str(n_rows, k_cols), " must be at least [1, 1]"));
  }
  int64_t elems = 0;
  int64_t bytes = 0;
  const int64_t B = block_elems(dtype);
  // Padded element count bounds every layout's blocks: (N + B) * (K + B) covers ceil(N/B)*B*K etc.
  if (mul_overflows(n_rows + B, k_cols + B, &elems) || mul_overflows(elems / B + 1, block_bytes(dtype), &bytes)) {
    return error(StatusCode::kInvalidArgument, cat("shape ", shape_str(n_rows, k_cols), " overflows 64-bit sizes"));
  }
  return Status::Ok();
}

BlockGrid block_grid(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols) {
  if (!check_matrix_shape(dtype, layout, n_rows, k_cols).ok()) return {};
  const int64_t B = block_elems(dtype);
  switch (layout) {
    case Layout::kFlat: return {1, ceil_div(n_rows * k_cols, B)};
    case Layout::kRowWise: return {n_rows, ceil_div(k_cols, B)};
    case Layout::kColumnWise: return {k_cols, ceil_div(n_rows, B)};
  }
  return {};
}

uint64_t quantized_block_count(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols) {
  return static_cast<uint64_t>(block_grid(dtype, layout, n_rows, k_cols).total_blocks());
}

uint64_t quantized_size_bytes(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols) {
  return quantized_block_count(dtype, layout, n_rows, k_cols) * static_cast<uint64_t>(block_bytes(dtype));
}

uint64_t plain_size_bytes(DType dtype, int64_t n_elems) {
  if (is_block_quantized(dtype) || n_elems < 0) return 0;
  int64_t bytes = 0;
  if (mul_overflows(n_elems, block_bytes(dtype), &bytes)) return 0;
  return static_cast<uint64_t>(bytes);
}

uint64_t tensor_size_bytes(DType dtype, Layout layout, int64_t n_rows, int64_t k_cols) {
  if (is_block_quantized(dtype)) return quantized_size_bytes(dtype, layout, n_rows, k_cols);
  int64_t elems = 0;
  if (n_rows < 0 || k_cols < 0 || mul_overflows(n_rows, k_cols, &elems)) return 0;
  return plain_size_bytes(dtype, elems);
}

namespace {

// quantize_rows' argument checks; sets the chunk's row count and the column weights.
Status check_rows(const QuantizeRowsParams& p, const Codec*& codec, int64_t& n_chunk_rows, std::vector<float>& col_w) {
  RDRR_RETURN_IF_ERROR(check_matrix_shape(p.dtype, p.layout, p.n_rows, p.k_cols));
  codec = &codec_for(p.dtype);
  if (codec->encode == nullptr) {
    return error(StatusCode::kUnsupported, cat(dtype_name(p.dtype), " is a pass-through type: rdrr copies a GGUF's "
                                                                     "blocks of it, it does not encode floats into it"));
  }
  const int64_t K = p.k_cols;
  const auto n_vals = static_cast<int64_t>(p.rows.size());
  if (n_vals == 0 || n_vals % K != 0) {
    return error(StatusCode::kInvalidArgument, cat("chunk has ", n_vals, " values, expected a positive multiple of k_cols = ", K));
  }
  n_chunk_rows = n_vals / K;
  if (p.row_begin < 0 || p.row_begin + n_chunk_rows > p.n_rows) {
    return error(StatusCode::kInvalidArgument,
                 cat("chunk rows [", p.row_begin, ", ", p.row_begin + n_chunk_rows, ") outside the matrix's ", p.n_rows,
                     " rows"));
  }
  RDRR_RETURN_IF_ERROR(check_chunk(p, *codec, n_chunk_rows));
  const uint64_t want = quantized_size_bytes(p.dtype, p.layout, p.n_rows, K);
  if (p.dst.size() != want) {
    return error(StatusCode::kInvalidArgument,
                 cat("dst has ", p.dst.size(), " bytes, expected ", want, " for ", dtype_name(p.dtype), " ",
                     layout_name(p.layout), " ", shape_str(p.n_rows, K)));
  }
  RDRR_ASSIGN_OR_RETURN(col_w, column_weights(p.importance, K));
  return Status::Ok();
}

Status non_finite_at(int64_t row_begin, int64_t K, int64_t index) {
  return error(StatusCode::kNonFinite, cat("W[", row_begin + index / K, ", ", index % K, "] is not finite"));
}

}  // namespace

Status quantize_rows(const QuantizeRowsParams& p) {
  const Codec* codec = nullptr;
  int64_t n_chunk_rows = 0;
  std::vector<float> col_w;
  RDRR_RETURN_IF_ERROR(check_rows(p, codec, n_chunk_rows, col_w));
  const int64_t K = p.k_cols;
  const bool use_w = !col_w.empty() && p.dtype != DType::kQ8_0;
  const Chunk c{codec, block_grid(p.dtype, p.layout, p.n_rows, K), p.n_rows, K, p.row_begin,
                p.row_begin + n_chunk_rows, p.rows.data(), use_w ? col_w.data() : nullptr, p.dst.data()};
  FirstBad bad;
  if (p.layout == Layout::kColumnWise) {
    encode_columns(c, bad);
  } else {
    encode_contiguous(c, p.layout == Layout::kFlat, bad);
  }
  if (bad.get() != INT64_MAX) return non_finite_at(p.row_begin, K, bad.get());
  return Status::Ok();
}

Status check_quantize_rows(const QuantizeRowsParams& p) {
  const Codec* codec = nullptr;
  int64_t n_chunk_rows = 0;
  std::vector<float> col_w;
  RDRR_RETURN_IF_ERROR(check_rows(p, codec, n_chunk_rows, col_w));
  const auto it = std::find_if(p.rows.begin(), p.rows.end(), [](float v) { return !std::isfinite(v); });
  if (it != p.rows.end()) return non_finite_at(p.row_begin, p.k_cols, it - p.rows.begin());
  return Status::Ok();
}

Status quantize_matrix(const QuantizeParams& p) {
  RDRR_RETURN_IF_ERROR(check_matrix_shape(p.dtype, p.layout, p.n_rows, p.k_cols));
  if (static_cast<int64_t>(p.src.size()) != p.n_rows * p.k_cols) {
    return error(StatusCode::kInvalidArgument, cat("src has ", p.src.size(), " values, expected ", p.n_rows * p.k_cols, " for ",
                                                       shape_str(p.n_rows, p.k_cols)));
  }
  return quantize_rows({p.dtype, p.layout, p.n_rows, p.k_cols, 0, p.src, p.importance, p.dst});
}

Status dequantize_matrix(const DequantizeParams& p) {
  RDRR_RETURN_IF_ERROR(check_matrix_shape(p.dtype, p.layout, p.n_rows, p.k_cols));
  const uint64_t want = quantized_size_bytes(p.dtype, p.layout, p.n_rows, p.k_cols);
  if (p.src.size() != want) {
    return error(StatusCode::kInvalidArgument,
                 cat("src has ", p.src.size(), " bytes, expected ", want, " for ", dtype_name(p.dtype), " ",
                     layout_name(p.layout), " ", shape_str(p.n_rows, p.k_cols)));
  }
  if (static_cast<int64_t>(p.dst.size()) != p.n_rows * p.k_cols) {
    return error(StatusCode::kInvalidArgument, cat("dst has ", p.dst.size(), " values, expected ", p.n_rows * p.k_cols, " for ",
                                                       shape_str(p.n_rows, p.k_cols)));
  }
  detail::decode_matrix(codec_for(p.dtype), p.layout, block_grid(p.dtype, p.layout, p.n_rows, p.k_cols),
                        p.n_rows, p.k_cols, p.src.data(), p.dst.data());
  return Status::Ok();
}

}  // namespace rdrr::quant
