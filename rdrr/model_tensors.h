// The one table of the model's tensors: every Hugging Face weight name the converter, planner, reference
// model and synthetic checkpoints use, with its manifest role and its expected shape in architecture dims.
// Adding a tensor name: one row in rdrr/model_tensors.cpp (and an enumerator below).
//
// A name is <root><scope prefix><stem>.<leaf>:
//   text scope:  root.text + stem            "model." + "embed_tokens" + ".weight"
//   layer scope: root.text + "layers.N." + stem   "model.layers.3." + "self_attn.q_proj" + ".weight"
//   head scope:  root.head + stem            "" + "lm_head" + ".weight"
// Roots: kPlainRoot (CausalLM checkpoints, packs, converter sources); Gemma 3 multimodal checkpoints wrap the
// text model: kLanguageModelRoot (transformers 4: "language_model.model.", "language_model.lm_head") and
// kModelLanguageModelRoot (transformers 5: "model.language_model.", "lm_head").
//
//   model_tensor_name(ModelTensor::kQProj, 3)        -> "model.layers.3.self_attn.q_proj.weight"
//   model_tensor_template(ModelTensor::kQProj)       -> "model.layers.{L}.self_attn.q_proj.weight"
//   parse_model_tensor_name("lm_head.weight")        -> {kLmHead, 0}
//   expected_shape(ModelTensor::kQkvProj, dims)      -> {(heads + 2 * kv_heads) * head_dim, hidden}
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdrr/manifest.h"

namespace rdrr {

enum class ModelTensor : uint8_t {
  // text and head scope (one per model)
  kEmbedTokens, kFinalNorm, kLmHead,
  // layer scope: norms
  kInputNorm, kPostAttentionNorm, kPreFeedforwardNorm, kPostFeedforwardNorm, kQNorm, kKNorm,
  // layer scope: attention and MLP weights (qkv_proj and gate_up_proj: Phi-3's fused ones, or the converter's)
  kQProj, kKProj, kVProj, kQkvProj, kOProj, kGateProj, kUpProj, kGateUpProj, kDownProj,
  // layer scope: attention biases (Qwen2)
  kQBias, kKBias, kVBias, kQkvBias,
  // layer scope: mixture of experts (architecture.moe). The experts of a layer are stacked into one matrix each
  // (expert e's rows follow expert e-1's): gate_up [E * 2 Fe, D] (per expert its gate rows, then its up rows),
  // down [E * D, Fe]. The shared expert (Qwen2-MoE) is a dense gated MLP of width Fs with a [1, D] gate.
  kRouter, kExpertsGateUp, kExpertsDown, kSharedGateProj, kSharedUpProj, kSharedGateUpProj, kSharedDownProj,
  kSharedExpertGate,
};
inline constexpr size_t kModelTensorCount = static_cast<size_t>(ModelTensor::kSharedExpertGate) + 1;

enum class TensorScope : uint8_t {
  kText,   // once per model, under root.text ("model.embed_tokens")
  kLayer,  // once per layer, under root.text + "layers.N." ("model.layers.N.self_attn.q_proj")
  kHead,   // once per model, beside the text model under root.head ("lm_head")
};
enum class TensorLeaf : uint8_t { kWeight, kBias };  // "weight", "bias"

// One dimension of an expected shape, in terms of the architecture.
enum class ShapeDim : uint8_t {
  kHidden,        // hidden_size (H)
  kIntermediate,  // intermediate_size (F)
  kGateUp,        // 2 * F (gate rows, then up rows)
  kVocab,         // vocab_size
  kHeadDim,       // head_dim (hd)
  kQ,             // num_attention_heads * hd
  kKv,            // num_key_value_heads * hd
  kQkv,           // (num_attention_heads + 2 * num_key_value_heads) * hd
  kExperts,       // moe.numExperts (E)
  kExpertsGateUp, // E * 2 * moe.expertIntermediateSize (Fe)
  kExpertsHidden, // E * hidden_size
  kExpertFf,      // Fe
  kSharedFf,      // moe.sharedExpertIntermediateSize (Fs)
  kSharedGateUp,  // 2 * Fs
  kOne,           // 1
};

struct ModelTensorInfo {
  ModelTensor tensor;
  std::string_view stem;          // HF module path inside its scope: "embed_tokens", "self_attn.q_proj"
  TensorLeaf leaf;
  TensorScope scope;
  TensorRole role;                // the manifest role (rdrr/manifest.h)
  uint8_t rank;                   // 1 or 2
  std::array<ShapeDim, 2> shape;  // the first `rank` dims ([out, in] for matmuls)
};

// Where a checkpoint keeps its text model's tensors.
struct TensorRoot {
  std::string_view text;  // prefix of text- and layer-scope names
  std::string_view head;  // prefix of head-scope names
  bool operator==(const TensorRoot&) const = default;
};
inline constexpr TensorRoot kPlainRoot{"model.", ""};
inline constexpr TensorRoot kLanguageModelRoot{"language_model.model.", "language_model."};  // transformers 4
inline constexpr TensorRoot kModelLanguageModelRoot{"model.language_model.", ""};           // transformers 5
// Every root, in the order a loader probes them; the multimodal wrappers alone.
inline constexpr std::array<TensorRoot, 3> kTensorRoots = {kPlainRoot, kModelLanguageModelRoot, kLanguageModelRoot};
inline constexpr std::array<TensorRoot, 2> kWrapperRoots = {kModelLanguageModelRoot, kLanguageModelRoot};

// Architecture dims the shape rules use (int64 like tensor shapes).
struct ModelDims {
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int64_t vocab = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t experts = 0;    // 0: dense
  int64_t expert_ff = 0;
  int64_t shared_ff = 0;
};
ModelDims model_dims(const Architecture& a);

// The table, one row per ModelTensor in enumerator order.
std::span<const ModelTensorInfo> model_tensor_table();
const ModelTensorInfo& model_tensor_info(ModelTensor t);
std::string_view tensor_leaf_name(TensorLeaf leaf);

// "model.layers.3.self_attn.q_proj" (no leaf); `layer` is ignored for text- and head-scope tensors.
std::string model_tensor_stem(ModelTensor t, uint32_t layer = 0, const TensorRoot& root = kPlainRoot);
// "model.layers.3.self_attn.q_proj.weight"; `layer` is ignored for text- and head-scope tensors.
std::string model_tensor_name(ModelTensor t, uint32_t layer = 0, const TensorRoot& root = kPlainRoot);
// The execution-graph weight ref with kLayerToken for the layer ("model.layers.{L}.mlp.down_proj.weight");
// text- and head-scope tensors: their plain name.
std::string model_tensor_template(ModelTensor t, const TensorRoot& root = kPlainRoot);

struct ParsedModelTensor {
  ModelTensor tensor;
  uint32_t layer = 0;  // 0 for text- and head-scope tensors
  bool operator==(const ParsedModelTensor&) const = default;
};
// The tensor a full name under `root` names, or nullopt for any other name.
std::optional<ParsedModelTensor> parse_model_tensor_name(std::string_view name, const TensorRoot& root = kPlainRoot);

// Splits a layer-scope name (or stem) "<root.text>layers.<N>.<rest>" into N and rest, whatever rest is
// (possibly empty); nullopt when `name` has no such prefix. N is read as std::from_chars reads an int (leading zeros
// accepted: "007" is 7); a negative or out-of-range N is no layer.
struct LayerTensorName {
  uint32_t layer = 0;
  std::string_view rest;
};
std::optional<LayerTensorName> split_layer_name(std::string_view name, const TensorRoot& root = kPlainRoot);

// The shape tensor `t` has under `d`: rank 1 or 2, [out, in] for matmuls.
std::vector<int64_t> expected_shape(ModelTensor t, const ModelDims& d);

// `name` moved from root `from` to root `to`, when it lies under `from`: a name starting with from.text (any
// rest), or from.head (non-empty) followed by a head-scope stem and '.'. nullopt otherwise.
std::optional<std::string> rebase_tensor_name(std::string_view name, const TensorRoot& from, const TensorRoot& to);

// True for a multimodal checkpoint's tensors outside the text model (vision tower, projector).
bool outside_text_model(std::string_view name);

}  // namespace rdrr
