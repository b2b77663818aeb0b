// CPU reference forward pass for the supported text families (llama, mistral, qwen2, qwen3, gemma2, gemma3, phi3),
// written for readability, not speed: weights read as f32 from an HF SafeTensors folder, a GGUF file (through
// convert::SourceModel) or an RDRR pack (every tensor decoded through quant/, rdrr/tensor_decode.h), every
// activation and accumulation in double, parameters from convert::read_hf_model_config / the GGUF metadata /
// the manifest (the same resolved values). It is the oracle that gates the converter and the Vulkan runtime.
//
// No KV cache: logits() runs the whole sequence, position t = index t (as HF with no padding).
#pragma once

#include <functional>

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "convert/model_config.h"
#include "rdrr/manifest.h"
#include "quant/status.h"
#include "verify/reference_layer.h"
#include "verify/reference_ops.h"

namespace rdrr::verify {

class ReferenceWeights;

struct GreedyResult {
  std::vector<int32_t> token_ids;     // the n_new generated tokens (EOS does not stop)
  std::vector<double> top1_margins;   // logit(top1) - logit(top2) at each step
};

class ReferenceModel {
 public:
  // Reads folder/config.json (convert::read_hf_model_config) and the F32/F16/BF16 weights. Errors: those of
  // the readers, kNotFound (missing tensor), kValidation (tensor shape vs config), kUnsupported (a feature
  // this reference does not implement, e.g. a non-gated FFN).
  static Result<ReferenceModel> load_hf(const std::filesystem::path& folder);

  // Reads pack_dir/manifest.json (read_manifest_file: parsed and validated), then as below.
  static Result<ReferenceModel> load_pack(const std::filesystem::path& pack_dir);
  // An already-parsed manifest and the directory holding its shards (manifest.json and goldens need not
  // exist there). Parameters from architecture + inference (validate_model_parameters is run); every tensor
  // decoded from its dtype/layout to f32; a fused model.layers.N.mlp.gate_up_proj.weight [2F, D] is split
  // (gate rows first); tied embeddings (no lm_head): the embedding is the head. Errors (prefixed "pack
  // <dir>: "): validate_model_parameters', ShardReader's (kNotFound / kIo / kValidation for a span outside
  // its shard), kNotFound (tensor missing), kValidation (shape vs architecture, size vs dtype/shape/layout).
  static Result<ReferenceModel> load_pack(const Manifest& manifest, const std::filesystem::path& pack_dir);

  // Any converter input (HF folder or .gguf file) through convert::SourceModel: GGUF names mapped to HF,
  // llama q/k rows un-permuted, every GGUF block type decoded (Gemma GGUF norms hold 1 + w and the config
  // records offset 0). Errors: SourceModel::open's, then those of load_pack's tensor checks.
  static Result<ReferenceModel> load_source(const std::filesystem::path& src);
  // load_source of a .gguf file (kNotFound when `gguf_file` is not a regular file).
  static Result<ReferenceModel> load_gguf(const std::filesystem::path& gguf_file);

  const convert::ModelConfig& config() const { return config_; }
  size_t vocab_size() const { return embed_.out_features; }

  // Logits for every position: [tokens.size(), vocab] row-major; row t predicts token t + 1.
  // Errors: kInvalidArgument (empty input, token id out of range).
  Result<std::vector<float>> logits(std::span<const int32_t> tokens) const;

  // Greedy continuation: n_new steps with a KV cache (the same numbers as re-running the whole sequence each
  // step, as the HF goldens do).
  Result<GreedyResult> greedy(std::span<const int32_t> prompt, size_t n_new) const;

  // The inputs of a layer's linear maps (verify/reference_layer.h).
  using LinearInput = verify::LinearInput;
  static constexpr int kLinearInputs = verify::kLinearInputs;
  // Called with every linear input of every layer, in layer order: x is [tokens, in_features].
  using LinearInputObserver = std::function<void(size_t layer, LinearInput which, const Matrix& x)>;
  // Runs the forward pass of `tokens` (no logits) reporting every linear input. Errors: as logits.
  Status observe_linear_inputs(std::span<const int32_t> tokens, const LinearInputObserver& observer) const;

  // Incremental decoding: the keys and values (after RoPE) of every position run so far, per layer.
  struct KvCache {
    std::vector<Matrix> k, v;
    size_t length = 0;
  };
  // Runs `tokens` at positions cache.length.. (appending to the cache) and returns the logits of the last
  // one [vocab]. The same numbers as logits() of the whole sequence at that position. Errors: as logits.
  // `observer` (optional) sees every linear input of the new positions.
  Result<std::vector<float>> extend(KvCache& cache, std::span<const int32_t> tokens,
                                    const LinearInputObserver* observer = nullptr) const;

 private:
  struct Layer {
    std::array<Linear, kLayerLinearCount> linears;  // indexed by LayerLinear; a dense or MoE layer's maps
    std::vector<std::array<Linear, 3>> experts;     // MoE layers: each expert's gate, up, down
    LayerParams params;
  };

  static Result<ReferenceModel> load_weights(convert::ModelConfig config, const ReferenceWeights& weights);

  Status check_tokens(std::span<const int32_t> tokens) const;
  // Final hidden states (after the last norm) of every position, or only of the last one.
  Matrix hidden_states(std::span<const int32_t> tokens, bool last_only,
                       const LinearInputObserver* observer = nullptr) const;
  Matrix hidden_states(KvCache& cache, std::span<const int32_t> tokens, bool last_only,
                       const LinearInputObserver* observer) const;
  void run_layer(const Layer& layer, Matrix& h, size_t index, KvCache& cache,
                 const LinearInputObserver* observer) const;
  Matrix output_logits(const Matrix& h) const;

  convert::ModelConfig config_;
  Linear embed_;    // [vocab, hidden]
  Linear lm_head_;  // empty weight when tied (embed_ is used)
  std::vector<float> final_norm_;
  std::vector<Layer> layers_;
};

}  // namespace rdrr::verify
