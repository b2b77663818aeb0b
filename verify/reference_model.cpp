// ReferenceModel forward pass (HF transformers semantics, double precision).
#include "verify/reference_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace rdrr::verify {
namespace {

void add_in_place(Matrix& h, const Matrix& x) {
  for (size_t i = 0; i < h.data.size(); ++i) h.data[i] += x.data[i];
}

// Index of the largest logit (first on ties) and its margin over the runner-up.
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

}  // namespace

Status ReferenceModel::check_tokens(std::span<const int32_t> tokens) const {
  if (tokens.empty()) return error(StatusCode::kInvalidArgument, "verify reference: empty token sequence");
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || static_cast<uint64_t>(tokens[t]) >= embed_.out_features) {
      return error(StatusCode::kInvalidArgument, "verify reference: token " + std::to_string(t) + " id " +
                                                     std::to_string(tokens[t]) + " outside [0, " +
                                                     std::to_string(embed_.out_features) + ")");
    }
  }
  return Status::Ok();
}

void ReferenceModel::run_layer(const Layer& layer, Matrix& h, size_t index, KvCache& cache,
                               const LinearInputObserver* observer) const {
  const auto observe = [&](LinearInput which, const Matrix& x) {
    if (observer != nullptr) (*observer)(index, which, x);
  };
  const auto& norm = config_.inference.normalization;
  const double eps = norm.rms_norm_eps, offset = norm.weight_offset;
  const size_t hd = layer.attention.head_dim;

  Matrix x = h;
  rms_norm(x, layer.input_norm, eps, offset, h.cols);
  observe(LinearInput::kAttnIn, x);
  Matrix q = linear(x, layer.q), k = linear(x, layer.k), v = linear(x, layer.v);
  if (!layer.q_norm.empty()) {
    rms_norm(q, layer.q_norm, eps, offset, hd);
    rms_norm(k, layer.k_norm, eps, offset, hd);
  }
  const size_t first = cache.length;
  apply_rope(q, hd, layer.rope, first);
  apply_rope(k, hd, layer.rope, first);
  Matrix& kc = cache.k[index];
  Matrix& vc = cache.v[index];
  kc.cols = k.cols;
  vc.cols = v.cols;
  kc.data.insert(kc.data.end(), k.data.begin(), k.data.end());
  vc.data.insert(vc.data.end(), v.data.begin(), v.data.end());
  kc.rows = vc.rows = first + k.rows;
  const Matrix mixed = attention(q, kc, vc, layer.attention, first);
  observe(LinearInput::kAttnOut, mixed);
  Matrix attn = linear(mixed, layer.o);
  if (!layer.post_attention_norm.empty()) rms_norm(attn, layer.post_attention_norm, eps, offset, h.cols);
  add_in_place(h, attn);

  x = h;
  if (!layer.pre_feedforward_norm.empty()) rms_norm(x, layer.pre_feedforward_norm, eps, offset, h.cols);
  observe(LinearInput::kFfnIn, x);
  Matrix gate = linear(x, layer.gate);
  const Matrix up = linear(x, layer.up);
  const bool gelu = config_.inference.ffn.activation == rdrr::Activation::kGeluTanh;
  for (size_t i = 0; i < gate.data.size(); ++i) {
    gate.data[i] = (gelu ? gelu_tanh(gate.data[i]) : silu(gate.data[i])) * up.data[i];
  }
  observe(LinearInput::kFfnMid, gate);
  Matrix down = linear(gate, layer.down);
  if (!layer.post_feedforward_norm.empty()) rms_norm(down, layer.post_feedforward_norm, eps, offset, h.cols);
  add_in_place(h, down);
}

Matrix ReferenceModel::hidden_states(std::span<const int32_t> tokens, bool last_only,
                                     const LinearInputObserver* observer) const {
  KvCache cache;
  return hidden_states(cache, tokens, last_only, observer);
}

Matrix ReferenceModel::hidden_states(KvCache& cache, std::span<const int32_t> tokens, bool last_only,
                                     const LinearInputObserver* observer) const {
  cache.k.resize(layers_.size());
  cache.v.resize(layers_.size());
  const size_t hidden = embed_.in_features;
  const double scale = config_.inference.output.embedding_scale;
  Matrix h(tokens.size(), hidden);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const float* e = embed_.weight.data() + static_cast<size_t>(tokens[t]) * hidden;
    for (size_t i = 0; i < hidden; ++i) h.data[t * hidden + i] = static_cast<double>(e[i]) * scale;
  }
  for (size_t i = 0; i < layers_.size(); ++i) run_layer(layers_[i], h, i, cache, observer);
  cache.length += tokens.size();
  if (last_only) {
    Matrix last(1, hidden);
    const auto row = h.row(h.rows - 1);
    std::copy(row.begin(), row.end(), last.data.begin());
    h = std::move(last);
  }
  const auto& norm = config_.inference.normalization;
  rms_norm(h, final_norm_, norm.rms_norm_eps, norm.weight_offset, hidden);
  return h;
}

Matrix ReferenceModel::output_logits(const Matrix& h) const {
  Matrix logits = linear(h, lm_head_.weight.empty() ? embed_ : lm_head_);
  if (const auto cap = config_.inference.output.final_logit_softcapping) {
    for (double& l : logits.data) l = *cap * std::tanh(l / *cap);
  }
  return logits;
}

Status ReferenceModel::observe_linear_inputs(std::span<const int32_t> tokens,
                                             const LinearInputObserver& observer) const {
  RDRR_RETURN_IF_ERROR(check_tokens(tokens));
  (void)hidden_states(tokens, true, &observer);
  return Status::Ok();
}

Result<std::vector<float>> ReferenceModel::logits(std::span<const int32_t> tokens) const {
  RDRR_RETURN_IF_ERROR(check_tokens(tokens));
  const Matrix logits = output_logits(hidden_states(tokens, false));
  std::vector<float> out(logits.data.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(logits.data[i]);
  return out;
}

Result<std::vector<float>> ReferenceModel::extend(KvCache& cache, std::span<const int32_t> tokens,
                                                  const LinearInputObserver* observer) const {
  RDRR_RETURN_IF_ERROR(check_tokens(tokens));
  const Matrix logits = output_logits(hidden_states(cache, tokens, true, observer));
  std::vector<float> out(logits.data.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(logits.data[i]);
  return out;
}

Result<GreedyResult> ReferenceModel::greedy(std::span<const int32_t> prompt, size_t n_new) const {
  RDRR_RETURN_IF_ERROR(check_tokens(prompt));
  GreedyResult result;
  KvCache cache;  // each step runs only the new token: the same numbers as re-running the whole sequence
  std::span<const int32_t> next = prompt;
  int32_t token = 0;
  for (size_t step = 0; step < n_new; ++step) {
    const Matrix logits = output_logits(hidden_states(cache, next, true, nullptr));
    const auto [best, margin] = top1_with_margin(logits.row(0));
    result.token_ids.push_back(best);
    result.top1_margins.push_back(margin);
    token = best;
    next = std::span<const int32_t>(&token, 1);
  }
  return result;
}

}  // namespace rdrr::verify
