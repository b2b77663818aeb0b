// One decoder layer of the CPU reference (HF transformers semantics: norms, q/k norm, RoPE, causal GQA
// attention, gated FFN, Gemma's post-norms), shared by both engines: ReferenceModel (weights held in memory,
// double accumulation) and StreamingReference (weights streamed one layer at a time, f32 BLAS matmuls). The
// linear maps are the caller's; everything else runs here in double (activations are a few rows: cheap).
// Several sequences can share one call: their rows are stacked in h and the linear maps run once on all of
// them, while RoPE and attention run per sequence against that sequence's KV cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "convert/model_config.h"
#include "verify/reference_ops.h"

namespace rdrr::verify {

// The linear maps of a layer. A mixture-of-experts layer has kRouter (and, with a shared expert, kShared*) in
// place of kGate / kUp / kDown, which it applies per expert through ApplyExpert.
enum class LayerLinear : uint8_t {
  kQ, kK, kV, kO, kGate, kUp, kDown, kRouter, kSharedGate, kSharedUp, kSharedDown, kSharedExpertGate,
};
inline constexpr size_t kLayerLinearCount = static_cast<size_t>(LayerLinear::kSharedExpertGate) + 1;

// A mixture-of-experts layer's routing (rdrr/SPEC.md 8.2 architecture.moe); experts == 0: a dense MLP.
struct MoeParams {
  uint32_t experts = 0;
  uint32_t top_k = 0;
  bool normalize = false;
  bool shared = false;        // a shared expert (kSharedGate / kSharedUp / kSharedDown)
  bool shared_gated = false;  // scaled by sigmoid(kSharedExpertGate x)
};

// The inputs of a layer's linear maps: kAttnIn feeds q/k/v, kAttnOut o_proj, kFfnIn gate/up, kFfnMid down.
enum class LinearInput { kAttnIn = 0, kAttnOut = 1, kFfnIn = 2, kFfnMid = 3 };
inline constexpr int kLinearInputs = 4;

// The small per-layer tensors (f32) and resolved parameters; empty vectors are absent norms.
struct LayerParams {
  std::vector<float> input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm;
  std::vector<float> q_norm, k_norm;
  RopeTables rope;
  AttentionParams attention;
  MoeParams moe;
};

// One sequence's rows [row_begin, row_begin + rows) of the batch. k / v hold the keys (after RoPE) and values
// of every earlier position of the sequence in this layer; the new rows are at positions k->rows.. and are
// appended.
struct BatchSegment {
  size_t row_begin = 0;
  size_t rows = 0;
  Matrix* k = nullptr;
  Matrix* v = nullptr;
};

// y = W x for the layer's map `which` (x is [rows, in_features] of the whole batch).
using ApplyLinear = std::function<Matrix(LayerLinear which, const Matrix& x)>;
// y = W_e x for expert e's map `which` (kGate, kUp or kDown); x holds the rows routed to e.
using ApplyExpert = std::function<Matrix(LayerLinear which, uint32_t expert, const Matrix& x)>;
// The index of an expert's map `which` in its {gate, up, down} triple.
inline size_t expert_slot(LayerLinear which) {
  return which == LayerLinear::kGate ? 0 : which == LayerLinear::kUp ? 1 : 2;
}
// Sees every linear input of the batch (calibration statistics); may be empty.
using ObserveLinearInput = std::function<void(LinearInput which, const Matrix& x)>;

// h [rows, hidden] <- the layer applied to h (residual stream in place). `expert` is needed by MoE layers
// (p.moe.experts > 0), whose expert inputs `observe` does not see (kFfnIn is the router's input).
void run_decoder_layer(const convert::ModelConfig& config, const LayerParams& p, const ApplyLinear& linear,
                       Matrix& h, std::span<const BatchSegment> segments, const ObserveLinearInput& observe,
                       const ApplyExpert& expert = {});

// The experts of one token: indices in selection order and their weights (SPEC 8.2: softmax over the router
// logits, the top_k largest with ties to the lower index, renormalized when p.normalize).
struct Routing {
  std::vector<uint32_t> experts;
  std::vector<double> weights;
};
Routing route(std::span<const double> router_logits, const MoeParams& p);

// Index of the largest value (the first on ties) and its margin over the runner-up.
std::pair<int32_t, double> top1_with_margin(std::span<const double> row);

// Final RMSNorm then softcapping helpers used by both engines.
void final_norm(const convert::ModelConfig& config, std::span<const float> weight, Matrix& h);
void softcap_logits(const convert::ModelConfig& config, Matrix& logits);

}  // namespace rdrr::verify
