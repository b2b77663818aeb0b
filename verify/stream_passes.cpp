// StreamingReference::sample and LayerPass: the passes calibration needs (see verify/stream_reference.h).
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "verify/splitmix.h"
#include "verify/stream_reference.h"
#include "verify/stream_reference_internal.h"

namespace rdrr::verify {

using stream_detail::Sequence;


Result<std::vector<std::vector<int32_t>>> StreamingReference::sample(std::span<const int32_t> starts, size_t length,
                                                                     uint64_t seed) const {
  const State& s = *s_;
  RDRR_RETURN_IF_ERROR(stream_detail::check_tokens(starts, vocab_size(), "sample starts"));
  const size_t n = starts.size(), layers = s.linears.size();
  std::vector<std::vector<int32_t>> out(n);
  if (n == 0 || length == 0) return out;
  std::vector<Sequence> seqs(n, Sequence{std::vector<Matrix>(layers), std::vector<Matrix>(layers)});
  std::vector<uint64_t> state(n);
  std::vector<std::pair<size_t, size_t>> rows_of(n);
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].push_back(starts[i]);
    state[i] = seed + i;
    rows_of[i] = {i, 1};
    all[i] = i;
  }
  std::vector<int32_t> step(starts.begin(), starts.end());
  if (length > 1) {
    // The first step runs each distinct start token once (the samples of a calibration set share one) and
    // hands its keys, values and logits to every sequence that starts with it.
    std::map<int32_t, size_t> distinct;
    std::vector<size_t> first_of(n);
    std::vector<int32_t> firsts;
    for (size_t i = 0; i < n; ++i) {
      const auto [it, fresh] = distinct.emplace(starts[i], firsts.size());
      if (fresh) firsts.push_back(starts[i]);
      first_of[i] = it->second;
    }
    const size_t m = firsts.size();
    std::vector<Sequence> first(m, Sequence{std::vector<Matrix>(layers), std::vector<Matrix>(layers)});
    std::vector<std::pair<size_t, size_t>> first_rows(m);
    std::vector<size_t> first_all(m);
    for (size_t j = 0; j < m; ++j) {
      first_rows[j] = {j, 1};
      first_all[j] = j;
    }
    RDRR_ASSIGN_OR_RETURN(Matrix h, stream_detail::embed_tokens(s, firsts));
    RDRR_RETURN_IF_ERROR(stream_detail::forward(s, h, first, first_rows, nullptr));
    RDRR_ASSIGN_OR_RETURN(const Matrix logits, stream_detail::head_logits(s, h, first_all));
    for (size_t i = 0; i < n; ++i) {
      seqs[i] = first[first_of[i]];
      step[i] = sample_token(logits.row(first_of[i]), state[i]);
      out[i].push_back(step[i]);
    }
  }
  while (out[0].size() < length) {  // every sequence has the same length
    RDRR_ASSIGN_OR_RETURN(Matrix h, stream_detail::embed_tokens(s, step));
    RDRR_RETURN_IF_ERROR(stream_detail::forward(s, h, seqs, rows_of, nullptr));
    RDRR_ASSIGN_OR_RETURN(const Matrix logits, stream_detail::head_logits(s, h, all));
    for (size_t i = 0; i < n; ++i) {
      step[i] = sample_token(logits.row(i), state[i]);
      out[i].push_back(step[i]);
    }
  }
  return out;
}

StreamingReference::LayerPass::LayerPass(LayerPass&&) noexcept = default;
StreamingReference::LayerPass& StreamingReference::LayerPass::operator=(LayerPass&&) noexcept = default;
StreamingReference::LayerPass::~LayerPass() = default;

Result<StreamingReference::LayerPass> StreamingReference::start_layer_pass(
    std::span<const std::vector<int32_t>> sequences, size_t max_group_rows) const {
  LayerPass p;
  p.s_ = s_.get();
  std::vector<int32_t> tokens;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const std::vector<int32_t>& seq = sequences[i];
    const std::string what = "sequence " + std::to_string(i);
    if (seq.empty()) return error(StatusCode::kInvalidArgument, what + ": empty");
    RDRR_RETURN_IF_ERROR(stream_detail::check_tokens(seq, vocab_size(), what));
    // A new group when this sequence would not fit (a sequence longer than the budget is a group alone).
    if (p.groups_.empty() || tokens.size() + seq.size() - p.groups_.back().first > max_group_rows) {
      p.groups_.emplace_back(tokens.size(), tokens.size());
    }
    tokens.insert(tokens.end(), seq.begin(), seq.end());
    p.groups_.back().second = tokens.size();
    p.lengths_.push_back(seq.size());
  }
  RDRR_ASSIGN_OR_RETURN(p.h_, stream_detail::embed_tokens(*s_, tokens));
  return p;
}

Status StreamingReference::LayerPass::run_layer(const ObserveLinearInput& observe) {
  const State& s = *s_;
  if (layer_ >= s.linears.size()) {
    return error(StatusCode::kInvalidArgument, "layer pass: all " + std::to_string(s.linears.size()) + " layers done");
  }
  size_t seq = 0;
  for (const auto& [begin, end] : groups_) {
    Matrix h(end - begin, h_.cols);
    std::copy(h_.data.begin() + static_cast<std::ptrdiff_t>(begin * h_.cols),
              h_.data.begin() + static_cast<std::ptrdiff_t>(end * h_.cols), h.data.begin());
    std::vector<Matrix> k, v;  // this layer's keys and values of the group's sequences (fresh: prompts)
    std::vector<BatchSegment> segments;
    for (size_t row = 0; row < h.rows; ++seq) {
      segments.push_back({.row_begin = row, .rows = lengths_[seq], .k = nullptr, .v = nullptr});
      row += lengths_[seq];
    }
    k.resize(segments.size());
    v.resize(segments.size());
    for (size_t i = 0; i < segments.size(); ++i) segments[i].k = &k[i], segments[i].v = &v[i];
    RDRR_RETURN_IF_ERROR(stream_detail::run_layer(s, layer_, h, segments, observe));
    std::copy(h.data.begin(), h.data.end(), h_.data.begin() + static_cast<std::ptrdiff_t>(begin * h_.cols));
  }
  ++layer_;
  return Status::Ok();
}

}  // namespace rdrr::verify
