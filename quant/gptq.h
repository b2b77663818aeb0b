// Error-compensating (GPTQ-style) Q4_K quantization of a weight matrix W [N outputs, K inputs] given the
// second moment of its inputs H = E[x x^T] (K x K), after Frantar et al., "GPTQ" (2022), with static groups:
//
//  The inputs k = 0..K-1 are taken in processing order. Input k's values of every row are quantized, and each
//  row's error is spread over the inputs not yet quantized, which minimises the expected output error
//  E[((W - Wq) x)^2] greedily rather than the weight error ||W - Wq||^2 that plain rounding minimises.
//  GPTQ writes the update with U, the upper Cholesky factor of H^-1: e = (w'_k - q_k) / U[k][k],
//  w'_j -= e U[k][j]. With T = U^-1 (upper, H = T T^T: one Cholesky, no inverse) the same values are
//  w'_j = w_j + sum_{i<j} (w_i - q_i) T[i][j] / T[j][j] (from W - Q = E U), which is what is computed here:
//  the lazy batch update adds the batch's differences D = W - Q times the unit-diagonal t (quant/gptq.h,
//  GptqFactor) onto every later input.
//
//  Block parameters (static groups, as GPTQ's static_groups):
//   row_wise (and flat when K % 256 == 0, the same blocks): from the original weights, with the normal Q4_K
//     search (quant/q4_k.h) weighted by diag(H); every value is then rounded to the nearest code under them.
//   column_wise: a block holds 256 outputs of one input, so each block is quantized whole, with the normal
//     search, when its input is reached.
//   flat with K % 256 != 0 (blocks straddle rows): no compensation; the normal search weighted by diag(H).
//
// Rows are independent given H (column_wise: groups of 256 rows), so chunks of rows quantize in any order
// and in parallel (oneTBB), and the bytes are the same at any thread count. The lazy batch update (the
// differences of 128 inputs onto every later input) is a BLAS sgemm on fixed row groups and column slices.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "quant/dtype.h"
#include "quant/status.h"
#include "quant/uninitialized.h"

namespace rdrr::quant {

// Rows of one lazy-update batch, and of one panel of GptqFactor::t.
inline constexpr int64_t kGptqPanelRows = 128;

// The factor of one input distribution, shared by every matrix that reads that input (q/k/v, gate/up): t is
// the upper Cholesky-type factor T of the damped H in processing order (H = T T^T) with its columns scaled to
// a unit diagonal, t[i][j] = T[i][j] / T[j][j]; only its upper triangle is stored, in row panels: panel p holds
// rows [128 p, 128 p + 128) and columns [128 p, K), row-major with leading dimension K - 128 p (zeros left of
// the diagonal), so one batch's rows are one BLAS operand. About K^2 / 2 floats.
struct GptqFactor {
  int64_t k_cols = 0;
  UninitVector<float> t;
  std::vector<float> importance;  // diag(H) (objective weights of the block searches)
  std::vector<int64_t> order;     // act order: processing position -> input (empty: 0..K-1)

  size_t panel_offset(int64_t p) const {
    return static_cast<size_t>(kGptqPanelRows * (p * k_cols - kGptqPanelRows * p * (p - 1) / 2));
  }
  // t[i][j] (0 below the diagonal).
  float value(int64_t i, int64_t j) const {
    if (j < i) return 0.0f;
    const int64_t p = i / kGptqPanelRows, c0 = p * kGptqPanelRows;
    return t[panel_offset(p) + static_cast<size_t>((i - c0) * (k_cols - c0) + (j - c0))];
  }
};

// H: K*K row-major, symmetric positive semi-definite (e.g. the mean of x x^T over calibration tokens); only its
// lower triangle is read. damp: added to the diagonal as damp * mean(diag(H)) (GPTQ's percdamp, default 0.01);
// inputs never activated (H[i][i] == 0) get H[i][i] = 1 so they are rounded plainly. Float arithmetic through
// the BLAS (quant/blas.h): a tiled Cholesky of the reversed H, K^3 / 3 multiply-adds in tiles spread over
// oneTBB (the same bits at any thread count). Memory: H's own (permuted in place), then t; peak 1.5 K^2 floats.
// Errors: kInvalidArgument (sizes, damp <= 0), kNonFinite (NaN/Inf in H), kValidation (H not positive
// definite after damping, naming the pivot).
Result<GptqFactor> gptq_factor(UninitVector<float> hessian, int64_t k_cols, double damp = 0.01, bool act_order = false);
// The same from a double H (rounded to float).
Result<GptqFactor> gptq_factor(std::span<const double> hessian, int64_t k_cols, double damp = 0.01,
                               bool act_order = false);

struct GptqRowsParams {
  Layout layout = Layout::kRowWise;
  int64_t n_rows = 0;            // the whole matrix
  int64_t k_cols = 0;
  int64_t row_begin = 0;         // first row of the chunk (constraints as for quantize_rows)
  std::span<const float> rows;   // the chunk's rows, row-major
  const GptqFactor* factor = nullptr;
  std::span<uint8_t> dst;        // the whole matrix's Q4_K buffer (quantized_size_bytes)
};
// Encodes the chunk's blocks into dst (Q4_K only). Errors: those of quantize_rows, kInvalidArgument (no
// factor, factor size != k_cols).
Status quantize_rows_gptq(const GptqRowsParams& p);

}  // namespace rdrr::quant
