// Distribution metrics between a reference and another producer's logits ([n_positions, vocab] row-major
// f32). Softmax and sums in double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "quant/status.h"

namespace rdrr::verify {

// log softmax of one row, in double.
std::vector<double> log_softmax(std::span<const float> logits);

// KL(P_ref || P_other) = sum_i p_ref_i (log p_ref_i - log p_other_i) in nats, one row each.
double kl_divergence(std::span<const float> ref_logits, std::span<const float> other_logits);

// Index of the largest value (the first on ties).
size_t argmax(std::span<const float> row);

struct LogitsComparison {
  std::vector<double> kld_per_position;
  double kld_mean = 0.0;
  double kld_max = 0.0;
  size_t top1_matches = 0;  // positions whose argmax agrees
  size_t positions = 0;
  double top1_agreement() const { return positions ? static_cast<double>(top1_matches) / static_cast<double>(positions) : 0.0; }
};

// Errors: kInvalidArgument (vocab 0, sizes that differ or are not a multiple of vocab).
Result<LogitsComparison> compare_logits(std::span<const float> ref, std::span<const float> other, size_t vocab);

}  // namespace rdrr::verify
