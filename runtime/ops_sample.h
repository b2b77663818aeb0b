// Token selection on the GPU (kernels/sample.comp): greedy argmax and temperature / top-k sampling with a
// seeded counter-based RNG. Only the chosen token id (uint32) is written; read back 4 bytes.
#pragma once

#include <cstdint>
#include <string_view>

#include "quant/status.h"
#include "runtime/memory.h"
#include "runtime/recorder.h"

namespace rdrr::runtime {

struct SampleArgs {
  BufferRange logits;   // f32[n]
  BufferRange scratch;  // sample_scratch_bytes(n)
  BufferRange token;    // uint32[1]: the chosen id (0xffffffff when no logit is finite)
  uint32_t n = 0;
  // temperature <= 0: greedy argmax (first index wins ties). > 0: token = argmax(logit / T + Gumbel noise)
  // over the kept tokens, i.e. a draw from softmax(logit / T) restricted to them.
  float temperature = 0.0f;
  uint32_t top_k = 0;  // keep the logits >= the k-th largest (ties kept, as HF); 0 or >= n keeps all
  uint64_t seed = 0;   // same seed, same logits: same token; vary it per step (e.g. base_seed + position)
};
Status record_sample(Recorder& rec, const SampleArgs& args, std::string_view label = "sample");

// Greedy argmax: record_sample with temperature 0.
Status record_argmax(Recorder& rec, const BufferRange& logits, const BufferRange& scratch, const BufferRange& token,
                     uint32_t n, std::string_view label = "argmax");

// Scratch bytes for n logits.
uint64_t sample_scratch_bytes(uint32_t n);

}  // namespace rdrr::runtime
