#include "verify/reference_rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace rdrr::verify {
namespace {

void apply_llama3(const rdrr::RopeConfig& r, std::vector<double>& inv_freq) {
  const double factor = *r.scaling_factor, low = *r.low_freq_factor, high = *r.high_freq_factor;
  const double old_ctx = static_cast<double>(*r.original_max_positions);
  const double low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  for (double& f : inv_freq) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen > low_wavelen) {
      f /= factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      f = (1.0 - smooth) * f / factor + smooth * f;
    }
  }
}

// transformers' _compute_yarn_parameters with truncate=True.
void apply_yarn(const rdrr::RopeConfig& r, double base, size_t dim, std::vector<double>& inv_freq) {
  const double factor = *r.scaling_factor;
  const double max_pos = static_cast<double>(*r.original_max_positions);
  const auto correction_dim = [&](double num_rot) {
    return static_cast<double>(dim) * std::log(max_pos / (num_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
  };
  double low = std::max(std::floor(correction_dim(r.yarn_beta_fast.value_or(32.0))), 0.0);
  double high = std::min(std::ceil(correction_dim(r.yarn_beta_slow.value_or(1.0))), static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation_factor = 1.0 - ramp;
    const double extrapolated = inv_freq[i], interpolated = inv_freq[i] / factor;
    inv_freq[i] = interpolated * (1.0 - extrapolation_factor) + extrapolated * extrapolation_factor;
  }
}

// inv_freq_i /= factors_i: LongRoPE's short / long factors and llama.cpp's rope_freqs (transformers'
// _compute_longrope_parameters: inv_freq = 1 / (factors * base^(2i / dim))).
Status divide(const std::vector<double>& factors, const char* field, std::vector<double>& inv_freq) {
  if (factors.size() != inv_freq.size()) {
    return error(StatusCode::kValidation, std::string("rope: ") + field + " has " + std::to_string(factors.size()) +
                                              " entries, expected " + std::to_string(inv_freq.size()));
  }
  for (size_t i = 0; i < factors.size(); ++i) inv_freq[i] /= factors[i];
  return Status::Ok();
}

Result<RopeTables> longrope_tables(const rdrr::RopeConfig& rope, RopeTables t) {
  if (!rope.original_max_positions || !rope.attention_factor) {
    return error(StatusCode::kValidation, "rope: longrope needs ropeOriginalMaxPositions and ropeAttentionFactor");
  }
  t.inv_freq_long = t.inv_freq;
  RDRR_RETURN_IF_ERROR(divide(rope.short_factors, "ropeShortFactors", t.inv_freq));
  RDRR_RETURN_IF_ERROR(divide(rope.long_factors, "ropeLongFactors", t.inv_freq_long));
  t.long_after = static_cast<size_t>(*rope.original_max_positions);
  t.attention_factor = *rope.attention_factor;
  return t;
}

}  // namespace

Result<RopeTables> make_rope_tables(const rdrr::RopeConfig& rope, uint64_t head_dim, rdrr::LayerType layer_type) {
  const auto rot_dim = static_cast<size_t>(static_cast<double>(head_dim) * rope.partial_rotary_factor);
  if (rot_dim == 0 || rot_dim % 2 != 0 || rot_dim > head_dim) {
    return error(StatusCode::kValidation, "rope: rotary dimension " + std::to_string(rot_dim) + " of head_dim " +
                                              std::to_string(head_dim) + " must be even and in (0, head_dim]");
  }
  RopeTables t;
  t.interleaved = rope.convention == rdrr::RopeConvention::kInterleaved;
  const bool local = layer_type == rdrr::LayerType::kSlidingAttention && rope.local_theta.has_value();
  const double base = local ? *rope.local_theta : rope.theta;
  for (size_t i = 0; i < rot_dim / 2; ++i) {
    t.inv_freq.push_back(1.0 / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(rot_dim)));
  }
  if (local || rope.scaling_type == rdrr::RopeScalingType::kNone) return t;
  if (rope.scaling_type == rdrr::RopeScalingType::kLongRope) return longrope_tables(rope, std::move(t));
  if (rope.scaling_type == rdrr::RopeScalingType::kFreqFactors) {
    RDRR_RETURN_IF_ERROR(divide(rope.freq_factors, "ropeFreqFactors", t.inv_freq));
    return t;
  }
  if (!rope.scaling_factor) return error(StatusCode::kValidation, "rope: scaling without ropeScalingFactor");
  switch (rope.scaling_type) {
    case rdrr::RopeScalingType::kLinear:
      for (double& f : t.inv_freq) f /= *rope.scaling_factor;
      break;
    case rdrr::RopeScalingType::kLlama3:
      if (!rope.low_freq_factor || !rope.high_freq_factor || !rope.original_max_positions) {
        return error(StatusCode::kValidation, "rope: llama3 scaling needs low/high freq factors and original max positions");
      }
      apply_llama3(rope, t.inv_freq);
      break;
    case rdrr::RopeScalingType::kYarn:
      if (!rope.original_max_positions) return error(StatusCode::kValidation, "rope: yarn needs ropeOriginalMaxPositions");
      apply_yarn(rope, base, rot_dim, t.inv_freq);
      t.attention_factor = rope.yarn_attention_factor.value_or(0.1 * std::log(*rope.scaling_factor) + 1.0);
      break;
    case rdrr::RopeScalingType::kNone:
    case rdrr::RopeScalingType::kLongRope:
    case rdrr::RopeScalingType::kFreqFactors:
      break;
  }
  return t;
}

}  // namespace rdrr::verify
