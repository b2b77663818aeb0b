#include "runtime/rope_freqs.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace rdrr::runtime {
namespace {

Status invalid(const std::string& what) { return error(StatusCode::kInvalidArgument, "rope scaling: " + what); }

void llama3(const RopeScaling& s, std::vector<double>& inv) {
  const double old_ctx = s.original_max_position_embeddings;
  const double low_wavelen = old_ctx / s.low_freq_factor;
  const double high_wavelen = old_ctx / s.high_freq_factor;
  for (double& f : inv) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < high_wavelen) continue;  // high frequency: unchanged
    if (wavelen > low_wavelen) {           // low frequency: interpolated
      f /= s.factor;
      continue;
    }
    const double smooth = (old_ctx / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    f = (1.0 - smooth) * f / s.factor + smooth * f;
  }
}

double yarn_mscale(double scale, double m) { return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; }

// HF _compute_yarn_parameters.
double yarn(const RopeScaling& s, double base, uint32_t n_rot, std::vector<double>& inv) {
  const double dim = n_rot;
  auto correction_dim = [&](double rotations) {
    return dim * std::log(s.original_max_position_embeddings / (rotations * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(base));
  };
  double low = correction_dim(s.beta_fast);
  double high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1.0);
  if (low == high) high += 0.001;
  for (size_t i = 0; i < inv.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;  // weight of the unscaled frequency
    inv[i] = inv[i] / s.factor * (1.0 - extrapolation) + inv[i] * extrapolation;
  }
  if (s.attention_factor > 0.0) return s.attention_factor;
  if (s.mscale > 0.0 && s.mscale_all_dim > 0.0) {
    return yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim);
  }
  return yarn_mscale(s.factor, 1.0);
}

// inv_i /= factors_i (every factor finite and > 0, n_rot / 2 of them).
Status divide(const std::vector<double>& factors, const char* name, std::vector<double>& inv) {
  if (factors.size() != inv.size()) {
    return invalid(std::string(name) + " has " + std::to_string(factors.size()) + " entries, expected n_rot / 2 = " +
                   std::to_string(inv.size()));
  }
  for (size_t i = 0; i < inv.size(); ++i) {
    if (!(factors[i] > 0.0) || !std::isfinite(factors[i])) {
      return invalid(std::string(name) + " " + std::to_string(i) + " must be finite and > 0");
    }
    inv[i] /= factors[i];
  }
  return Status::Ok();
}

// HF _compute_longrope_parameters.
Result<double> longrope(const RopeScaling& s, uint64_t seq_len, std::vector<double>& inv) {
  const bool use_long = seq_len > s.original_max_position_embeddings;
  RDRR_RETURN_IF_ERROR(divide(use_long ? s.long_factor : s.short_factor, use_long ? "long_factor" : "short_factor", inv));
  if (s.attention_factor > 0.0) return s.attention_factor;
  if (s.factor <= 1.0) return 1.0;
  return std::sqrt(1.0 + std::log(s.factor) / std::log(static_cast<double>(s.original_max_position_embeddings)));
}

Status check(const RopeScaling& s) {
  if (s.type == RopeScalingType::kNone) return Status::Ok();
  if (!(s.factor > 0.0) || !std::isfinite(s.factor)) return invalid("factor " + std::to_string(s.factor) + " must be > 0");
  if (s.type == RopeScalingType::kLinear || s.type == RopeScalingType::kFreqFactors) return Status::Ok();
  if (s.original_max_position_embeddings == 0) return invalid("original_max_position_embeddings is 0");
  if (s.type == RopeScalingType::kLlama3 && !(s.low_freq_factor > 0.0 && s.low_freq_factor < s.high_freq_factor)) {
    return invalid("llama3 needs 0 < low_freq_factor < high_freq_factor (got " + std::to_string(s.low_freq_factor) +
                   ", " + std::to_string(s.high_freq_factor) + ")");
  }
  if (s.type == RopeScalingType::kYarn && !(s.beta_fast > 0.0 && s.beta_slow > 0.0)) {
    return invalid("yarn beta_fast and beta_slow must be > 0");
  }
  return Status::Ok();
}

}  // namespace

Result<RopeFrequencies> rope_frequencies(const RopeScaling& s, double theta_base, uint32_t n_rot, uint64_t seq_len) {
  if (!(theta_base > 0.0) || !std::isfinite(theta_base)) return invalid("theta_base must be > 0");
  if (n_rot == 0 || n_rot % 2 != 0) return invalid("n_rot " + std::to_string(n_rot) + " must be even and > 0");
  RDRR_RETURN_IF_ERROR(check(s));
  std::vector<double> inv(n_rot / 2);
  for (uint32_t i = 0; i < n_rot / 2; ++i) inv[i] = 1.0 / std::pow(theta_base, 2.0 * i / n_rot);
  double mscale = 1.0;
  switch (s.type) {
    case RopeScalingType::kNone: break;
    case RopeScalingType::kLinear:
      for (double& f : inv) f /= s.factor;
      break;
    case RopeScalingType::kLlama3: llama3(s, inv); break;
    case RopeScalingType::kYarn: mscale = yarn(s, theta_base, n_rot, inv); break;
    case RopeScalingType::kLongRope: {
      RDRR_ASSIGN_OR_RETURN(mscale, longrope(s, seq_len, inv));
      break;
    }
    case RopeScalingType::kFreqFactors: RDRR_RETURN_IF_ERROR(divide(s.freq_factors, "freq_factors", inv)); break;
  }
  RopeFrequencies out;
  out.inv_freq.resize(inv.size());
  for (size_t i = 0; i < inv.size(); ++i) out.inv_freq[i] = static_cast<float>(inv[i]);
  out.mscale = static_cast<float>(mscale);
  return out;
}

}  // namespace rdrr::runtime
