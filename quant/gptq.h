// Error-compensating (GPTQ-style) Q4_K quantization of a weight matrix W [N outputs, K inputs] given the
// second moment of its inputs H = E[x x^T] (K x K), after Frantar et al., "GPTQ" (2022), with static groups:
//
//  The inputs k = 0..K-1 are taken in order. Input k's values of every row are quantized, and each row's
//  error e = (w - decoded) / U[k][k] is spread over the inputs not yet quantized: w[j] -= e * U[k][j]
//  (j > k), where U is the upper Cholesky factor of H^-1 (U^T U = H^-1). This minimises the expected output
//  error E[((W - Wq) x)^2] greedily rather than the weight error ||W - Wq||^2 that plain rounding minimises.
//
//  Block parameters are fixed when a block is first reached (static groups):
//   row_wise (and flat when K % 256 == 0, the same blocks): at the block's first input, from the row's
//     current (already compensated) values, with the normal Q4_K search (quant/q4_k.h) weighted by diag(H);
//     every later value of the block is re-rounded to the nearest code under those scales.
//   column_wise: a block holds 256 outputs of one input, so each block is quantized whole, with the normal
//     search, when its input is reached.
//   flat with K % 256 != 0 (blocks straddle rows): no compensation; the normal search weighted by diag(H).
//
// Rows are independent given H (column_wise: groups of 256 rows), so chunks of rows quantize in any order
// and in parallel (oneTBB), and the bytes are the same at any thread count. GPTQ's lazy batch update (the
// errors of 128 inputs onto every later input) is a BLAS sgemm on fixed row groups and column slices.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "quant/dtype.h"
#include "quant/status.h"

namespace rdrr::quant {

// U (upper triangular, row-major K x K, float) and diag(H) of one input distribution; shared by every
// matrix that reads that input (q/k/v, gate/up).
struct GptqFactor {
  int64_t k_cols = 0;
  std::vector<float> u;           // K*K, zero below the diagonal
  std::vector<float> importance;  // diag(H) (objective weights of the block searches)
  std::vector<int64_t> order;     // act order: processing position -> input (empty: 0..K-1)
};

// H: K*K row-major, symmetric positive semi-definite (e.g. the mean of x x^T over calibration tokens); only its
// lower triangle is read. damp: added to the diagonal as damp * mean(diag(H)) (GPTQ's percdamp, default 0.01);
// inputs never activated (H[i][i] == 0) get H[i][i] = 1 so they are rounded plainly. Float arithmetic through
// the BLAS (quant/blas.h): a tiled Cholesky of the reversed H and a triangular inverse, O(K^3) in tiles
// spread over oneTBB (the same bits at any thread count). Memory: H is released once copied; peak 2 K^2 floats.
// Errors: kInvalidArgument (sizes, damp <= 0), kNonFinite (NaN/Inf in H), kValidation (H not positive
// definite after damping, naming the pivot).
Result<GptqFactor> gptq_factor(std::vector<float> hessian, int64_t k_cols, double damp = 0.01, bool act_order = false);
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
