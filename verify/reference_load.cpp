// ReferenceModel loaders: tensors by HF name from a weight source (verify/reference_weights.h: SafeTensors
// folder, RDRR pack, converter source model) -> layer weights (f32), checked against the config.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "convert/safetensors.h"
#include "convert/source.h"
#include "rdrr/manifest_json.h"
#include "rdrr/model_tensors.h"
#include "rdrr/shard_reader.h"
#include "rdrr/validate.h"
#include "verify/reference_load.h"
#include "verify/reference_model.h"
#include "verify/reference_rope.h"
#include "verify/reference_weights.h"

namespace rdrr::verify {

using M = ModelTensor;

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

Status check_shape(const ReferenceWeights& w, const std::string& full, const std::vector<int64_t>& shape) {
  RDRR_ASSIGN_OR_RETURN(const std::vector<int64_t> actual, w.shape(full));
  if (actual != shape) {
    return error(StatusCode::kValidation, "tensor " + full + ": shape " + shape_str(actual) + ", expected " +
                                              shape_str(shape) + " from " + w.config_origin());
  }
  return Status::Ok();
}

// A linear map's source: rows [row_begin, row_begin + rows) of `weight` (shape checked), optional bias.
Result<LinearSource> linear_source(const ReferenceWeights& w, const Architecture& a, const TensorRoot& root,
                                   ModelTensor weight, uint32_t layer, std::optional<ModelTensor> bias = std::nullopt,
                                   uint64_t row_begin = 0, uint64_t rows = 0) {
  const ModelDims dims = model_dims(a);
  const std::vector<int64_t> shape = expected_shape(weight, dims);
  LinearSource l{.weight = model_tensor_name(weight, layer, root), .row_begin = row_begin,
                 .rows = rows != 0 ? rows : static_cast<uint64_t>(shape[0]),
                 .in_features = static_cast<uint64_t>(shape[1]), .bias = {}};
  RDRR_RETURN_IF_ERROR(check_shape(w, l.weight, shape));
  if (bias) {
    l.bias = model_tensor_name(*bias, layer, root);
    RDRR_RETURN_IF_ERROR(check_shape(w, l.bias, expected_shape(*bias, dims)));
  }
  return l;
}

AttentionParams attention_params(const convert::ModelConfig& c, rdrr::LayerType type) {
  const auto& a = c.architecture;
  const auto& att = c.inference.attention;
  AttentionParams p;
  p.num_heads = a.num_attention_heads;
  p.num_kv_heads = a.num_key_value_heads;
  p.head_dim = a.head_dim;
  p.scale = 1.0 / std::sqrt(att.query_pre_attn_scalar.value_or(static_cast<double>(a.head_dim)));
  p.softcap = att.attn_logit_softcapping.value_or(0.0);
  p.window = type == rdrr::LayerType::kSlidingAttention ? att.sliding_window.value_or(0) : 0;
  return p;
}

}  // namespace

TensorRoot text_model_root(const ReferenceWeights& w) {
  for (const TensorRoot& root : kTensorRoots) {
    if (w.has(model_tensor_name(ModelTensor::kEmbedTokens, 0, root))) return root;
  }
  return kPlainRoot;  // the load then fails naming model.embed_tokens.weight
}

TensorRoot head_root(const ReferenceWeights& w) {
  return w.has(model_tensor_name(ModelTensor::kLmHead, 0, kLanguageModelRoot)) ? kLanguageModelRoot : kPlainRoot;
}

Result<std::vector<float>> read_checked(const ReferenceWeights& w, const Architecture& a, const TensorRoot& root,
                                        ModelTensor t, uint32_t layer) {
  const std::string full = model_tensor_name(t, layer, root);
  RDRR_RETURN_IF_ERROR(check_shape(w, full, expected_shape(t, model_dims(a))));
  return w.read_f32(full);
}

Result<LinearSource> matrix_source(const ReferenceWeights& w, const Architecture& a, const TensorRoot& root,
                                   ModelTensor t) {
  return linear_source(w, a, root, t, 0);
}

Result<LayerLinears> layer_linears(const ReferenceWeights& w, const convert::ModelConfig& c, const TensorRoot& root,
                                   uint32_t i) {
  const auto& a = c.architecture;
  const uint64_t q_rows = a.num_attention_heads * a.head_dim, kv_rows = a.num_key_value_heads * a.head_dim;
  const bool bias = c.inference.attention.attention_bias;
  auto maybe = [&](ModelTensor b) { return bias ? std::optional<ModelTensor>(b) : std::nullopt; };
  LayerLinears l;
  auto at = [&l](LayerLinear which) -> LinearSource& { return l[static_cast<size_t>(which)]; };
  if (w.has(model_tensor_name(M::kQkvProj, i, root))) {
    // Biases stay separate (the converter splits a fused qkv bias).
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kQ), linear_source(w, a, root, M::kQkvProj, i, maybe(M::kQBias), 0, q_rows));
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kK),
                          linear_source(w, a, root, M::kQkvProj, i, maybe(M::kKBias), q_rows, kv_rows));
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kV),
                          linear_source(w, a, root, M::kQkvProj, i, maybe(M::kVBias), q_rows + kv_rows, kv_rows));
  } else {
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kQ), linear_source(w, a, root, M::kQProj, i, maybe(M::kQBias)));
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kK), linear_source(w, a, root, M::kKProj, i, maybe(M::kKBias)));
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kV), linear_source(w, a, root, M::kVProj, i, maybe(M::kVBias)));
  }
  RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kO), linear_source(w, a, root, M::kOProj, i));
  if (!c.inference.ffn.gated) return error(StatusCode::kUnsupported, "verify reference: non-gated FFN");
  if (is_moe_layer(a, i)) {
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kRouter), linear_source(w, a, root, M::kRouter, i));
    if (a.moe.shared_expert_intermediate_size > 0) {
      RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kSharedGate), linear_source(w, a, root, M::kSharedGateProj, i));
      RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kSharedUp), linear_source(w, a, root, M::kSharedUpProj, i));
      RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kSharedDown), linear_source(w, a, root, M::kSharedDownProj, i));
    }
    if (a.moe.shared_expert_gated) {
      RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kSharedExpertGate), linear_source(w, a, root, M::kSharedExpertGate, i));
    }
    return l;
  }
  const uint64_t f = a.intermediate_size;
  if (w.has(model_tensor_name(M::kGateUpProj, i, root))) {
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kGate), linear_source(w, a, root, M::kGateUpProj, i, std::nullopt, 0, f));
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kUp), linear_source(w, a, root, M::kGateUpProj, i, std::nullopt, f, f));
  } else {
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kGate), linear_source(w, a, root, M::kGateProj, i));
    RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kUp), linear_source(w, a, root, M::kUpProj, i));
  }
  RDRR_ASSIGN_OR_RETURN(at(LayerLinear::kDown), linear_source(w, a, root, M::kDownProj, i));
  return l;
}

Result<std::vector<ExpertLinears>> expert_linears(const ReferenceWeights& w, const convert::ModelConfig& c,
                                                  const TensorRoot& root, uint32_t i) {
  const auto& a = c.architecture;
  std::vector<ExpertLinears> out;
  if (!is_moe_layer(a, i)) return out;
  const uint64_t f = a.moe.expert_intermediate_size, d = a.hidden_size;
  for (uint64_t e = 0; e < a.moe.num_experts; ++e) {
    ExpertLinears x;
    RDRR_ASSIGN_OR_RETURN(x[0], linear_source(w, a, root, M::kExpertsGateUp, i, std::nullopt, 2 * f * e, f));
    RDRR_ASSIGN_OR_RETURN(x[1], linear_source(w, a, root, M::kExpertsGateUp, i, std::nullopt, 2 * f * e + f, f));
    RDRR_ASSIGN_OR_RETURN(x[2], linear_source(w, a, root, M::kExpertsDown, i, std::nullopt, d * e, d));
    out.push_back(std::move(x));
  }
  return out;
}

Result<LayerParams> layer_params(const ReferenceWeights& w, const convert::ModelConfig& c, const TensorRoot& root,
                                 uint32_t i) {
  const auto& a = c.architecture;
  const auto& n = c.inference.normalization;
  const auto read = [&](ModelTensor t) { return read_checked(w, a, root, t, i); };
  LayerParams p;
  if (c.inference.attention.query_key_norm) {
    RDRR_ASSIGN_OR_RETURN(p.q_norm, read(M::kQNorm));
    RDRR_ASSIGN_OR_RETURN(p.k_norm, read(M::kKNorm));
  }
  RDRR_ASSIGN_OR_RETURN(p.input_norm, read(M::kInputNorm));
  // Gemma: post_attention_layernorm normalises the attention output and pre_feedforward_layernorm the
  // MLP input; elsewhere post_attention_layernorm is the MLP input norm.
  if (n.post_attention_norm) {
    RDRR_ASSIGN_OR_RETURN(p.post_attention_norm, read(M::kPostAttentionNorm));
    if (n.pre_feedforward_norm) {
      RDRR_ASSIGN_OR_RETURN(p.pre_feedforward_norm, read(M::kPreFeedforwardNorm));
    }
  } else if (n.pre_feedforward_norm) {
    RDRR_ASSIGN_OR_RETURN(p.pre_feedforward_norm, read(M::kPostAttentionNorm));
  }
  if (n.post_feedforward_norm) {
    RDRR_ASSIGN_OR_RETURN(p.post_feedforward_norm, read(M::kPostFeedforwardNorm));
  }
  const auto& types = c.inference.attention.layer_types;
  if (i >= types.size()) {
    return error(StatusCode::kValidation, "layerTypes has " + std::to_string(types.size()) + " entries, expected " +
                                              std::to_string(a.num_layers));
  }
  RDRR_ASSIGN_OR_RETURN(p.rope, make_rope_tables(c.inference.rope, a.head_dim, types[i]));
  p.attention = attention_params(c, types[i]);
  if (is_moe_layer(a, i)) {
    p.moe = MoeParams{.experts = a.moe.num_experts, .top_k = a.moe.experts_per_token,
                      .normalize = a.moe.normalize_top_k, .shared = a.moe.shared_expert_intermediate_size > 0,
                      .shared_gated = a.moe.shared_expert_gated};
  }
  return p;
}

namespace {

// A linear map held in memory (the double reference): its rows of the (maybe fused) weight, and its bias.
Result<Linear> load_linear(const ReferenceWeights& w, const LinearSource& s) {
  Linear l{.out_features = s.rows, .in_features = s.in_features, .weight = {}, .bias = {}};
  l.weight.resize(s.rows * s.in_features);
  RDRR_RETURN_IF_ERROR(w.read_rows_f32(s.weight, s.row_begin, s.rows, l.weight));
  if (!s.bias.empty()) {
    RDRR_ASSIGN_OR_RETURN(l.bias, w.read_f32(s.bias));
  }
  return l;
}

// The embedding or the head as a whole matrix.
Result<Linear> load_matrix(const ReferenceWeights& w, const Architecture& a, const TensorRoot& root, ModelTensor t) {
  const std::vector<int64_t> shape = expected_shape(t, model_dims(a));
  Linear l{.out_features = static_cast<uint64_t>(shape[0]), .in_features = static_cast<uint64_t>(shape[1]),
           .weight = {}, .bias = {}};
  RDRR_ASSIGN_OR_RETURN(l.weight, read_checked(w, a, root, t));
  return l;
}

}  // namespace

Result<ReferenceModel> ReferenceModel::load_weights(convert::ModelConfig config, const ReferenceWeights& w) {
  ReferenceModel m;
  m.config_ = std::move(config);
  const auto& a = m.config_.architecture;
  const TensorRoot root = text_model_root(w);
  RDRR_ASSIGN_OR_RETURN(m.embed_, load_matrix(w, a, root, M::kEmbedTokens));
  RDRR_ASSIGN_OR_RETURN(m.final_norm_, read_checked(w, a, root, M::kFinalNorm));
  // Tied embeddings: no lm_head (a pack or converter source never has one then); the embedding is used.
  if (!m.config_.tied_embeddings && !m.config_.inference.output.tie_word_embeddings) {
    RDRR_ASSIGN_OR_RETURN(m.lm_head_, load_matrix(w, a, head_root(w), M::kLmHead));
  }
  m.layers_.resize(a.num_layers);
  for (uint32_t i = 0; i < a.num_layers; ++i) {
    Layer& l = m.layers_[i];
    RDRR_ASSIGN_OR_RETURN(const LayerLinears src, layer_linears(w, m.config_, root, i));
    for (size_t j = 0; j < src.size(); ++j) {
      if (src[j].weight.empty()) continue;  // a map this layer does not have (dense vs MoE)
      RDRR_ASSIGN_OR_RETURN(l.linears[j], load_linear(w, src[j]));
    }
    RDRR_ASSIGN_OR_RETURN(const std::vector<ExpertLinears> experts, expert_linears(w, m.config_, root, i));
    for (const ExpertLinears& e : experts) {
      std::array<Linear, 3>& dst = l.experts.emplace_back();
      for (size_t j = 0; j < e.size(); ++j) {
        RDRR_ASSIGN_OR_RETURN(dst[j], load_linear(w, e[j]));
      }
    }
    RDRR_ASSIGN_OR_RETURN(l.params, layer_params(w, m.config_, root, i));
  }
  return m;
}

Result<ReferenceModel> ReferenceModel::load_hf(const std::filesystem::path& folder) {
  RDRR_ASSIGN_OR_RETURN(convert::ModelConfig config, convert::read_hf_model_config(folder));
  // Per-expert checkpoints are stacked by the converter's source reader into the pack's expert tensors.
  if (config.architecture.moe.present()) return load_source(folder);
  RDRR_ASSIGN_OR_RETURN(convert::SafeTensorsModel st, convert::SafeTensorsModel::open(folder));
  return load_weights(std::move(config), *safetensors_weights(st));
}

Result<ReferenceModel> ReferenceModel::load_pack(const std::filesystem::path& pack_dir) {
  RDRR_ASSIGN_OR_RETURN(const Manifest manifest, read_manifest_file(pack_dir));
  return load_pack(manifest, pack_dir);
}

Result<ReferenceModel> ReferenceModel::load_pack(const Manifest& manifest, const std::filesystem::path& pack_dir) {
  const std::string ctx = "pack " + pack_dir.string();
  RDRR_RETURN_IF_ERROR(
      validate_model_parameters(manifest.architecture, manifest.inference, manifest.tokenizer).context(ctx));
  Result<ShardReader> reader = ShardReader::open(pack_dir, manifest.shards);
  if (!reader.ok()) return reader.status().context(ctx);
  return load_weights(model_config_from_manifest(manifest), *pack_weights(manifest, *reader)).context(ctx);
}

Result<ReferenceModel> ReferenceModel::load_source(const std::filesystem::path& src) {
  // Unfused: a stored gate_up_proj (Phi-3) stays fused, and load_mlp splits it.
  RDRR_ASSIGN_OR_RETURN(const convert::SourceModel source,
                        convert::SourceModel::open(src, convert::SourceOptions{.fuse_gate_up = false}));
  return load_weights(source.config(), *source_weights(source)).context(src.string());
}

Result<ReferenceModel> ReferenceModel::load_gguf(const std::filesystem::path& gguf_file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(gguf_file, ec)) {
    return error(StatusCode::kNotFound, gguf_file.string() + ": not a GGUF file (no such regular file)");
  }
  return load_source(gguf_file);
}

}  // namespace rdrr::verify
