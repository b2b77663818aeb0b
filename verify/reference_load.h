// What both CPU reference engines read of a weight source (verify/reference_weights.h), checked against the
// config: the root of the text model's names, each layer's small tensors and parameters (norms, RoPE,
// attention), and where each linear map's rows are (a plain or a fused tensor, its bias).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "convert/model_config.h"
#include "quant/status.h"
#include "rdrr/model_tensors.h"
#include "verify/reference_layer.h"
#include "verify/reference_weights.h"

namespace rdrr::verify {

// Root of the text model's tensors: the plain one (CausalLM classes, packs and converter sources) or, in Gemma 3
// multimodal checkpoints, "model.language_model." (transformers 5) / "language_model.model." (transformers 4),
// whichever holds the embedding.
TensorRoot text_model_root(const ReferenceWeights& w);
// Root of lm_head: transformers 4 wrappers keep it under "language_model.", all others at the top.
TensorRoot head_root(const ReferenceWeights& w);

// A tensor's values after checking its shape against expected_shape(t, dims of `a`). Errors: kNotFound,
// kValidation ("tensor <name>: shape [..], expected [..] from <origin>").
Result<std::vector<float>> read_checked(const ReferenceWeights& w, const Architecture& a, const TensorRoot& root,
                                        ModelTensor t, uint32_t layer = 0);

// Rows [row_begin, row_begin + rows) of `weight` ([?, in_features]) are the map; bias ("" when none) has `rows`
// values (a fused tensor's maps never have one here).
struct LinearSource {
  std::string weight;
  uint64_t row_begin = 0;
  uint64_t rows = 0;
  uint64_t in_features = 0;
  std::string bias;
};
using LayerLinears = std::array<LinearSource, kLayerLinearCount>;  // indexed by LayerLinear; unused maps empty
using ExpertLinears = std::array<LinearSource, 3>;                   // kGate, kUp, kDown of one expert

// The embedding or the head as one map over all its rows (shape checked).
Result<LinearSource> matrix_source(const ReferenceWeights& w, const Architecture& a, const TensorRoot& root,
                                   ModelTensor t);

// Layer `i`'s linear maps (a fused qkv_proj / gate_up_proj is split by rows: q, k, v / gate, up), shapes checked.
// Errors: read_checked's, kUnsupported (non-gated FFN).
Result<LayerLinears> layer_linears(const ReferenceWeights& w, const convert::ModelConfig& c, const TensorRoot& root,
                                   uint32_t i);
// The experts of MoE layer `i` (architecture.moe), as row ranges of the stacked tensors; empty for a dense layer.
Result<std::vector<ExpertLinears>> expert_linears(const ReferenceWeights& w, const convert::ModelConfig& c,
                                                  const TensorRoot& root, uint32_t i);
// Layer `i`'s norms, RoPE tables and attention parameters. Errors: read_checked's, kValidation (layerTypes).
Result<LayerParams> layer_params(const ReferenceWeights& w, const convert::ModelConfig& c, const TensorRoot& root,
                                 uint32_t i);

}  // namespace rdrr::verify
