// RoPE inverse-frequency tables computed on the CPU (HF transformers' rope_init_fns, in double), passed to
// the rope kernel as a small f32 buffer (RopeArgs::inv_freq) so one generic kernel serves every scaling.
// Pure; no Vulkan.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/status.h"

namespace rdrr::runtime {

enum class RopeScalingType : uint8_t {
  kNone,      // inv_freq_i = base^(-2i / n_rot)
  kLinear,    // inv_freq_i / factor
  kLlama3,    // Llama 3.1: low / high frequency bands (factor, low_freq_factor, high_freq_factor, original_max)
  kYarn,      // YaRN: ramp between interpolation and extrapolation (factor, beta_fast, beta_slow, original_max)
  kLongRope,  // Phi-3 LongRoPE / su: per-dimension short / long factors
  kFreqFactors,  // llama.cpp's rope_freqs: inv_freq_i / freq_factors[i] (a Llama 3.1 GGUF's llama3 scaling)
};

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;
  uint32_t original_max_position_embeddings = 0;  // llama3, yarn, longrope
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 0.0;          // yarn "mscale" / "mscale_all_dim" (DeepSeek style); 0 = unset
  double mscale_all_dim = 0.0;
  bool truncate = true;         // yarn: floor / ceil the correction range (HF default)
  // yarn and longrope: explicit attention_factor (0 = derived from factor as HF does)
  double attention_factor = 0.0;
  // longrope: n_rot / 2 factors each; long_factor is used when seq_len > original_max_position_embeddings
  std::vector<double> short_factor;
  std::vector<double> long_factor;
  // freq_factors: n_rot / 2 divisors
  std::vector<double> freq_factors;
};

// Whether LongRoPE rotates a forward pass whose last position is `last_position` with its long factors
// (transformers' longrope_frequency_update: last_position + 1 > original_max_position_embeddings).
inline bool longrope_uses_long(uint64_t original_max_position_embeddings, uint64_t last_position) {
  return last_position + 1 > original_max_position_embeddings;
}

struct RopeFrequencies {
  std::vector<float> inv_freq;  // n_rot / 2 entries
  float mscale = 1.0f;          // multiplies cos and sin (RopeArgs::mscale)
};

// theta_base > 0, n_rot even and > 0. seq_len selects LongRoPE's factor set (ignored otherwise).
// Errors: kInvalidArgument naming the field (factor <= 0, missing original_max_position_embeddings, wrong
// factor-list length, low_freq_factor >= high_freq_factor, ...).
Result<RopeFrequencies> rope_frequencies(const RopeScaling& scaling, double theta_base, uint32_t n_rot,
                                         uint64_t seq_len = 0);

}  // namespace rdrr::runtime
