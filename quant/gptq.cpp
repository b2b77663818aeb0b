#include "quant/gptq.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "quant/blas.h"
#include "quant/blocks.h"
#include "quant/f16.h"
#include "quant/layout.h"
#include "quant/q4_k.h"
#include "quant/uninitialized.h"

namespace rdrr::quant {
namespace {

constexpr int64_t kB = kQK_K;  // 256 values per block
constexpr size_t kBs = kQK_K;
constexpr int64_t kBatchCols = kGptqPanelRows;  // lazy-update batch (GPTQ's "block"): one panel of t
constexpr int64_t kRowGroup = 64;       // rows per task in row_wise
constexpr int64_t kUpdateCols = 1024;   // columns per task of the lazy update

// The decode parameters of one Q4_K block: value = scale[j] * q - min[j] for sub-block j.
struct Q4KParams {
  float scale[kQ4KSubBlocks];
  float min[kQ4KSubBlocks];
};

Q4KParams params_of(const BlockQ4K& b) {
  const Q4KScales c = unpack_q4k_scales(std::span<const uint8_t, 12>(b.scales, 12));
  const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
  Q4KParams p;
  for (int j = 0; j < kQ4KSubBlocks; ++j) {
    p.scale[j] = d * static_cast<float>(c.sc[j]);
    p.min[j] = dmin * static_cast<float>(c.m[j]);
  }
  return p;
}

// Rounds x to the nearest code of sub-block j, writes it at value position v of the block, returns the
// decoded value (the decoder's float arithmetic).
float set_nearest(BlockQ4K& b, const Q4KParams& p, int64_t v, float x) {
  const int j = static_cast<int>(v / 32);
  const float s = p.scale[j], mn = p.min[j];
  int best = 0;
  if (s > 0.0f) {
    const int q0 = std::clamp(static_cast<int>(std::lrint((x + mn) / s)), 0, 15);
    float best_err = INFINITY;
    for (int q = std::max(0, q0 - 1); q <= std::min(15, q0 + 1); ++q) {
      const float e = std::fabs(s * static_cast<float>(q) - mn - x);
      if (e < best_err) best_err = e, best = q;
    }
  }
  uint8_t& byte = b.qs[32 * (v / 64) + v % 32];
  byte = (v % 64) < 32 ? static_cast<uint8_t>((byte & 0xF0) | best) : static_cast<uint8_t>((byte & 0x0F) | (best << 4));
  return s * static_cast<float>(best) - mn;
}

BlockQ4K* block_at(std::span<uint8_t> dst, int64_t index) {
  return reinterpret_cast<BlockQ4K*>(dst.data() + index * static_cast<int64_t>(sizeof(BlockQ4K)));
}

struct Group {
  const GptqRowsParams* p;
  int64_t r0 = 0;  // first row of the group (matrix row index)
  int64_t m = 0;   // rows in the group
};

// Quantizes processing position i of every row of the group (w holds the rows' current values in processing
// order; position i is input order[i]); dec[r] receives the decoded values. params: row-major [m, blocks per
// row], the static groups of row layouts.
void quantize_column(const Group& g, std::span<const float> w, const std::vector<Q4KParams>& params, int64_t i,
                     std::vector<float>& dec) {
  const GptqRowsParams& p = *g.p;
  const int64_t kc = p.k_cols;
  const GptqFactor& f = *p.factor;
  const int64_t k = f.order.empty() ? i : f.order[i];
  if (p.layout == Layout::kColumnWise) {
    float vals[kBs];
    float wts[kBs];
    const int64_t bpr = (p.n_rows + kB - 1) / kB;
    for (int64_t r = 0; r < kB; ++r) {
      vals[r] = r < g.m ? w[r * kc + i] : 0.0f;
      wts[r] = r < g.m ? 1.0f : 0.0f;
    }
    BlockQ4K* b = block_at(p.dst, k * bpr + g.r0 / kB);
    quantize_q4_k({vals, kBs}, {b, 1}, g.m < kB ? std::span<const float>(wts, kBs) : std::span<const float>());
    float out[kBs];
    dequantize_q4_k({b, 1}, {out, kBs});
    for (int64_t r = 0; r < g.m; ++r) dec[r] = out[r];
    return;
  }
  const int64_t bpr = (kc + kB - 1) / kB;
  for (int64_t r = 0; r < g.m; ++r) {
    BlockQ4K* b = block_at(p.dst, (g.r0 + r) * bpr + k / kB);
    dec[r] = set_nearest(*b, params[r * bpr + k / kB], k % kB, w[r * kc + i]);
  }
}

void run_group(const Group& g) {
  const GptqRowsParams& p = *g.p;
  const int64_t kc = p.k_cols;
  const int64_t first = g.r0 - p.row_begin;
  const GptqFactor& f = *p.factor;
  const auto at = [&](int64_t i) { return f.order.empty() ? i : f.order[i]; };
  UninitVector<float> w(static_cast<size_t>(g.m * kc));  // current values, processing order
  for (int64_t r = 0; r < g.m; ++r) {
    const float* src = p.rows.data() + (first + r) * kc;
    for (int64_t i = 0; i < kc; ++i) w[r * kc + i] = src[at(i)];
  }
  std::vector<Q4KParams> params;
  if (p.layout != Layout::kColumnWise) {  // static groups from quantize_rows' blocks
    const int64_t bpr = (kc + kB - 1) / kB;
    params.resize(static_cast<size_t>(g.m * bpr));
    for (int64_t r = 0; r < g.m; ++r) {
      for (int64_t b = 0; b < bpr; ++b) params[r * bpr + b] = params_of(*block_at(p.dst, (g.r0 + r) * bpr + b));
    }
  }
  std::vector<float> dec(static_cast<size_t>(g.m));
  UninitVector<float> diff(static_cast<size_t>(g.m * kBatchCols));  // W - Q of the batch's inputs
  for (int64_t k0 = 0; k0 < kc; k0 += kBatchCols) {
    const int64_t k1 = std::min(kc, k0 + kBatchCols);
    const float* panel = f.t.data() + f.panel_offset(k0 / kBatchCols);  // t[k0:k1, k0:], leading dimension ld
    const int64_t ld = kc - k0;
    for (int64_t k = k0; k < k1; ++k) {
      quantize_column(g, w, params, k, dec);
      const float* tk = panel + (k - k0) * ld;  // t[k][j] = tk[j - k0]
      const int64_t input = at(k);
      for (int64_t r = 0; r < g.m; ++r) {
        float* wr = w.data() + r * kc;
        const float d = p.rows[(first + r) * kc + input] - dec[r];
        diff[r * kBatchCols + (k - k0)] = d;
        for (int64_t j = k + 1; j < k1; ++j) wr[j] += d * tk[j - k0];
      }
    }
    // The batch's differences onto the inputs after it: W[:, k1:] += D t[k0:k1, k1:], one single-threaded
    // sgemm per fixed slice of columns.
    const int64_t rest = kc - k1, slices = (rest + kUpdateCols - 1) / kUpdateCols;
    tbb::parallel_for(int64_t{0}, slices, [&](int64_t sl) {
      const int64_t j0 = k1 + sl * kUpdateCols, jn = std::min(kUpdateCols, kc - j0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g.m), static_cast<int>(jn),
                  static_cast<int>(k1 - k0), 1.0f, diff.data(), static_cast<int>(kBatchCols), panel + (j0 - k0),
                  static_cast<int>(ld), 1.0f, w.data() + j0, static_cast<int>(kc));
    });
  }
}

}  // namespace

Status quantize_rows_gptq(const GptqRowsParams& p) {
  if (p.factor == nullptr || p.factor->k_cols != p.k_cols ||
      p.factor->t.size() != p.factor->panel_offset((p.k_cols + kGptqPanelRows - 1) / kGptqPanelRows)) {
    return Status(StatusCode::kInvalidArgument, "gptq: factor missing or not for k_cols " + std::to_string(p.k_cols));
  }
  QuantizeRowsParams plain;
  plain.dtype = DType::kQ4_K;
  plain.layout = p.layout;
  plain.n_rows = p.n_rows;
  plain.k_cols = p.k_cols;
  plain.row_begin = p.row_begin;
  plain.rows = p.rows;
  plain.importance = p.factor->importance;
  plain.dst = p.dst;
  // Row_wise and flat take their static groups from quantize_rows' blocks, and flat matrices whose blocks
  // straddle rows keep them; column_wise writes every block of the chunk below, so only the checks run.
  RDRR_RETURN_IF_ERROR(p.layout == Layout::kColumnWise ? check_quantize_rows(plain) : quantize_rows(plain));
  if (p.layout == Layout::kFlat && p.k_cols % kB != 0) return Status::Ok();
  use_single_threaded_blas();
  const int64_t chunk_rows = static_cast<int64_t>(p.rows.size()) / p.k_cols;
  const int64_t group = p.layout == Layout::kColumnWise ? kB : kRowGroup;
  const int64_t n_groups = (chunk_rows + group - 1) / group;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n_groups, 1), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t gi = r.begin(); gi < r.end(); ++gi) {
      const int64_t r0 = p.row_begin + gi * group;
      run_group({&p, r0, std::min(group, p.row_begin + chunk_rows - r0)});
    }
  }, tbb::static_partitioner());
  return Status::Ok();
}

}  // namespace rdrr::quant
