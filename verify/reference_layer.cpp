#include "verify/reference_layer.h"

#include <algorithm>
#include <cmath>

namespace rdrr::verify {
namespace {

void add_in_place(Matrix& h, const Matrix& x) {
  for (size_t i = 0; i < h.data.size(); ++i) h.data[i] += x.data[i];
}

Matrix rows_of(const Matrix& m, size_t first, size_t count) {
  Matrix out(count, m.cols);
  std::copy_n(m.data.begin() + static_cast<std::ptrdiff_t>(first * m.cols), count * m.cols, out.data.begin());
  return out;
}

void put_rows(Matrix& m, size_t first, const Matrix& rows) {
  std::copy(rows.data.begin(), rows.data.end(), m.data.begin() + static_cast<std::ptrdiff_t>(first * m.cols));
}

void append_rows(Matrix& cache, const Matrix& rows) {
  cache.cols = rows.cols;
  cache.data.insert(cache.data.end(), rows.data.begin(), rows.data.end());
  cache.rows += rows.rows;
}

// q/k norm, RoPE, cache append and attention of each sequence; returns the attention output of the batch.
Matrix attend(const convert::ModelConfig& c, const LayerParams& p, const Matrix& q, const Matrix& k,
              const Matrix& v, std::span<const BatchSegment> segments) {
  const auto& norm = c.inference.normalization;
  const size_t hd = p.attention.head_dim;
  Matrix mixed(q.rows, q.cols);
  for (const BatchSegment& s : segments) {
    Matrix qs = rows_of(q, s.row_begin, s.rows), ks = rows_of(k, s.row_begin, s.rows);
    if (!p.q_norm.empty()) {
      rms_norm(qs, p.q_norm, norm.rms_norm_eps, norm.weight_offset, hd);
      rms_norm(ks, p.k_norm, norm.rms_norm_eps, norm.weight_offset, hd);
    }
    const size_t first = s.k->rows;
    apply_rope(qs, hd, p.rope, first);
    apply_rope(ks, hd, p.rope, first);
    append_rows(*s.k, ks);
    append_rows(*s.v, rows_of(v, s.row_begin, s.rows));
    put_rows(mixed, s.row_begin, attention(qs, *s.k, *s.v, p.attention, first));
  }
  return mixed;
}

}  // namespace

void run_decoder_layer(const convert::ModelConfig& c, const LayerParams& p, const ApplyLinear& linear, Matrix& h,
                       std::span<const BatchSegment> segments, const ObserveLinearInput& observe) {
  const auto seen = [&](LinearInput which, const Matrix& x) {
    if (observe) observe(which, x);
  };
  const auto& norm = c.inference.normalization;
  const double eps = norm.rms_norm_eps, offset = norm.weight_offset;

  Matrix x = h;
  rms_norm(x, p.input_norm, eps, offset, h.cols);
  seen(LinearInput::kAttnIn, x);
  const Matrix q = linear(LayerLinear::kQ, x), k = linear(LayerLinear::kK, x), v = linear(LayerLinear::kV, x);
  const Matrix mixed = attend(c, p, q, k, v, segments);
  seen(LinearInput::kAttnOut, mixed);
  Matrix attn = linear(LayerLinear::kO, mixed);
  if (!p.post_attention_norm.empty()) rms_norm(attn, p.post_attention_norm, eps, offset, h.cols);
  add_in_place(h, attn);

  x = h;
  if (!p.pre_feedforward_norm.empty()) rms_norm(x, p.pre_feedforward_norm, eps, offset, h.cols);
  seen(LinearInput::kFfnIn, x);
  Matrix gate = linear(LayerLinear::kGate, x);
  const Matrix up = linear(LayerLinear::kUp, x);
  const bool gelu = c.inference.ffn.activation == rdrr::Activation::kGeluTanh;
  for (size_t i = 0; i < gate.data.size(); ++i) {
    gate.data[i] = (gelu ? gelu_tanh(gate.data[i]) : silu(gate.data[i])) * up.data[i];
  }
  seen(LinearInput::kFfnMid, gate);
  Matrix down = linear(LayerLinear::kDown, gate);
  if (!p.post_feedforward_norm.empty()) rms_norm(down, p.post_feedforward_norm, eps, offset, h.cols);
  add_in_place(h, down);
}

std::pair<int32_t, double> top1_with_margin(std::span<const double> row) {
  size_t best = 0;
  for (size_t i = 1; i < row.size(); ++i) {
    if (row[i] > row[best]) best = i;
  }
  double second = -INFINITY;
  for (size_t i = 0; i < row.size(); ++i) {
    if (i != best && row[i] > second) second = row[i];
  }
  return {static_cast<int32_t>(best), row[best] - second};
}

void final_norm(const convert::ModelConfig& c, std::span<const float> weight, Matrix& h) {
  const auto& norm = c.inference.normalization;
  rms_norm(h, weight, norm.rms_norm_eps, norm.weight_offset, h.cols);
}

void softcap_logits(const convert::ModelConfig& c, Matrix& logits) {
  if (const auto cap = c.inference.output.final_logit_softcapping) {
    for (double& l : logits.data) l = *cap * std::tanh(l / *cap);
  }
}

}  // namespace rdrr::verify
