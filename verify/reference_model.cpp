// ReferenceModel forward pass (HF transformers semantics, double precision).
#include "verify/reference_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace rdrr::verify {

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
  const ApplyLinear apply = [&layer](LayerLinear which, const Matrix& x) {
    return linear(x, layer.linears[static_cast<size_t>(which)]);
  };
  const ApplyExpert expert = [&layer](LayerLinear which, uint32_t e, const Matrix& x) {
    return linear(x, layer.experts[e][expert_slot(which)]);
  };
  ObserveLinearInput observe;
  if (observer != nullptr) {
    observe = [observer, index](LinearInput which, const Matrix& x) { (*observer)(index, which, x); };
  }
  const BatchSegment whole{.row_begin = 0, .rows = h.rows, .k = &cache.k[index], .v = &cache.v[index]};
  run_decoder_layer(config_, layer.params, apply, h, std::span(&whole, 1), observe, expert);
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
  final_norm(config_, final_norm_, h);
  return h;
}

Matrix ReferenceModel::output_logits(const Matrix& h) const {
  Matrix logits = linear(h, lm_head_.weight.empty() ? embed_ : lm_head_);
  softcap_logits(config_, logits);
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
  // Each step runs only the new token: the same numbers as re-running the whole sequence, except for LongRoPE
  // once a step crosses the original context (transformers re-rotates every position then; a cache keeps them).
  KvCache cache;
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
