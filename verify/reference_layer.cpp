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

// act(gate) * up, elementwise into gate.
void gated(const convert::ModelConfig& c, Matrix& gate, const Matrix& up) {
  const bool gelu = c.inference.ffn.activation == rdrr::Activation::kGeluTanh;
  for (size_t i = 0; i < gate.data.size(); ++i) {
    gate.data[i] = (gelu ? gelu_tanh(gate.data[i]) : silu(gate.data[i])) * up.data[i];
  }
}

// The mixture of experts on x [rows, hidden]: each expert runs once on the rows routed to it.
Matrix mixture(const convert::ModelConfig& c, const MoeParams& p, const ApplyLinear& linear, const ApplyExpert& expert,
               const Matrix& x) {
  const Matrix logits = linear(LayerLinear::kRouter, x);
  std::vector<std::vector<std::pair<size_t, double>>> rows_of(p.experts);  // expert -> (row, weight)
  for (size_t t = 0; t < x.rows; ++t) {
    const Routing r = route({logits.data.data() + t * logits.cols, logits.cols}, p);
    for (size_t j = 0; j < r.experts.size(); ++j) rows_of[r.experts[j]].emplace_back(t, r.weights[j]);
  }
  Matrix out(x.rows, x.cols);
  for (uint32_t e = 0; e < p.experts; ++e) {
    const auto& routed = rows_of[e];
    if (routed.empty()) continue;
    Matrix xe(routed.size(), x.cols);
    for (size_t i = 0; i < routed.size(); ++i) {
      std::copy_n(x.data.begin() + static_cast<std::ptrdiff_t>(routed[i].first * x.cols), x.cols,
                  xe.data.begin() + static_cast<std::ptrdiff_t>(i * x.cols));
    }
    Matrix g = expert(LayerLinear::kGate, e, xe);
    gated(c, g, expert(LayerLinear::kUp, e, xe));
    const Matrix d = expert(LayerLinear::kDown, e, g);
    for (size_t i = 0; i < routed.size(); ++i) {
      for (size_t k = 0; k < x.cols; ++k) out.data[routed[i].first * x.cols + k] += routed[i].second * d.data[i * d.cols + k];
    }
  }
  if (p.shared) {
    Matrix g = linear(LayerLinear::kSharedGate, x);
    gated(c, g, linear(LayerLinear::kSharedUp, x));
    const Matrix d = linear(LayerLinear::kSharedDown, g);
    Matrix s;
    if (p.shared_gated) s = linear(LayerLinear::kSharedExpertGate, x);
    for (size_t t = 0; t < x.rows; ++t) {
      const double scale = p.shared_gated ? 1.0 / (1.0 + std::exp(-s.data[t])) : 1.0;
      for (size_t k = 0; k < x.cols; ++k) out.data[t * x.cols + k] += scale * d.data[t * d.cols + k];
    }
  }
  return out;
}

}  // namespace

Routing route(std::span<const double> logits, const MoeParams& p) {
  const double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> prob(logits.size());
  double sum = 0.0;
  for (size_t e = 0; e < logits.size(); ++e) sum += prob[e] = std::exp(logits[e] - top);
  for (double& v : prob) v /= sum;
  std::vector<uint32_t> order(logits.size());
  for (size_t e = 0; e < order.size(); ++e) order[e] = static_cast<uint32_t>(e);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return prob[a] > prob[b]; });
  Routing r;
  double chosen = 0.0;
  for (uint32_t j = 0; j < p.top_k && j < order.size(); ++j) {
    r.experts.push_back(order[j]);
    r.weights.push_back(prob[order[j]]);
    chosen += prob[order[j]];
  }
  if (p.normalize) {
    for (double& w : r.weights) w /= chosen;
  }
  return r;
}

void run_decoder_layer(const convert::ModelConfig& c, const LayerParams& p, const ApplyLinear& linear, Matrix& h,
                       std::span<const BatchSegment> segments, const ObserveLinearInput& observe,
                       const ApplyExpert& expert) {
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
  Matrix down;
  if (p.moe.experts > 0) {
    down = mixture(c, p.moe, linear, expert, x);
  } else {
    Matrix gate = linear(LayerLinear::kGate, x);
    gated(c, gate, linear(LayerLinear::kUp, x));
    seen(LinearInput::kFfnMid, gate);
    down = linear(LayerLinear::kDown, gate);
  }
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
