// Building blocks of the CPU reference forward pass (verify/reference_model.h). Activations are double,
// weights f32 in HF layout ([out_features, in_features], row-major); every dot product accumulates in
// double in a fixed order, so results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "quant/uninitialized.h"

namespace rdrr::verify {

// A dense [rows, cols] row-major matrix of doubles (activations: one row per token).
struct Matrix {
  size_t rows = 0;
  size_t cols = 0;
  quant::UninitVector<double> data;

  Matrix() = default;
  Matrix(size_t r, size_t c) : rows(r), cols(c), data(r * c, 0.0) {}
  // Values left unset: for outputs written in full right after.
  static Matrix uninitialized(size_t r, size_t c) {
    Matrix m;
    m.rows = r;
    m.cols = c;
    m.data.resize(r * c);
    return m;
  }
  std::span<double> row(size_t r) { return {data.data() + r * cols, cols}; }
  std::span<const double> row(size_t r) const { return {data.data() + r * cols, cols}; }
};

// A linear layer's f32 weight [out_features, in_features] and optional bias [out_features].
struct Linear {
  size_t out_features = 0;
  size_t in_features = 0;
  std::vector<float> weight;
  std::vector<float> bias;  // empty: no bias
};

// y[t] = W x[t] (+ b); TBB-parallel over output rows.
Matrix linear(const Matrix& x, const Linear& w);

// Row-wise RMSNorm over groups of `group_elems` (the whole row, or one head for q/k norms):
// y = x / sqrt(mean(x^2) + eps) * (offset + w). Works in place.
void rms_norm(Matrix& x, std::span<const float> weight, double eps, double offset, size_t group_elems);

// Rotary embedding parameters resolved for one layer.
struct RopeTables {
  std::vector<double> inv_freq;  // one per rotated pair
  bool interleaved = false;      // pairs (2i, 2i+1) instead of (i, i + rot/2)
  double attention_factor = 1.0;  // cos/sin multiplier (YaRN, LongRoPE)
  // LongRoPE: the long-factor table, used by a pass whose last position + 1 exceeds long_after (transformers'
  // longrope_frequency_update); empty otherwise.
  std::vector<double> inv_freq_long;
  size_t long_after = 0;
  const std::vector<double>& table(size_t last_position) const {
    return !inv_freq_long.empty() && last_position + 1 > long_after ? inv_freq_long : inv_freq;
  }
};

// Rotates the first 2 * inv_freq.size() elements of each head of each row; row t is at position first_pos + t.
// The rows are one pass of one sequence: LongRoPE picks its table by the last row's position.
void apply_rope(Matrix& x, size_t head_dim, const RopeTables& rope, size_t first_pos = 0);

struct AttentionParams {
  size_t num_heads = 0;
  size_t num_kv_heads = 0;
  size_t head_dim = 0;
  double scale = 1.0;                  // applied to q.k
  double softcap = 0.0;                // 0: none; else scores = cap * tanh(scores / cap)
  size_t window = 0;                   // 0: full causal; else query i sees keys j with i - j < window
};

// Causal grouped-query attention; q [T, heads*hd] at positions first_pos.., k/v [first_pos + T, kv_heads*hd]
// (every position so far) -> [T, heads*hd].
Matrix attention(const Matrix& q, const Matrix& k, const Matrix& v, const AttentionParams& p, size_t first_pos = 0);

double silu(double x);
double gelu_tanh(double x);

}  // namespace rdrr::verify
