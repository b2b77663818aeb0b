#include "verify/metrics.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace rdrr::verify {

std::vector<double> log_softmax(std::span<const float> logits) {
  double max_logit = -INFINITY;
  for (float l : logits) max_logit = std::max(max_logit, static_cast<double>(l));
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max_logit);
  const double log_z = max_logit + std::log(sum);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - log_z;
  return out;
}

double kl_divergence(std::span<const float> ref_logits, std::span<const float> other_logits) {
  const std::vector<double> lp = log_softmax(ref_logits), lq = log_softmax(other_logits);
  double kld = 0.0;
  for (size_t i = 0; i < lp.size(); ++i) kld += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kld;
}

size_t argmax(std::span<const float> row) {
  return static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

Result<LogitsComparison> compare_logits(std::span<const float> ref, std::span<const float> other, size_t vocab) {
  if (vocab == 0 || ref.size() != other.size() || ref.size() % vocab != 0) {
    return error(StatusCode::kInvalidArgument, "compare_logits: sizes " + std::to_string(ref.size()) + " and " +
                                                   std::to_string(other.size()) + " for vocab " + std::to_string(vocab));
  }
  LogitsComparison c;
  c.positions = ref.size() / vocab;
  for (size_t t = 0; t < c.positions; ++t) {
    const auto r = ref.subspan(t * vocab, vocab), o = other.subspan(t * vocab, vocab);
    const double kld = kl_divergence(r, o);
    c.kld_per_position.push_back(kld);
    c.kld_mean += kld / static_cast<double>(c.positions);
    c.kld_max = std::max(c.kld_max, kld);
    if (argmax(r) == argmax(o)) ++c.top1_matches;
  }
  return c;
}

}  // namespace rdrr::verify
