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
#include "verify/reference_model.h"
#include "verify/reference_rope.h"
#include "verify/reference_weights.h"

namespace rdrr::verify {

using M = ModelTensor;

// Reads model tensors (rdrr/model_tensors.h) under one root, each checked against its expected shape.
class ReferenceLoader {
 public:
  ReferenceLoader(const ReferenceWeights& w, const Architecture& a, const TensorRoot& root)
      : w_(w), dims_(model_dims(a)), root_(root) {}

  Result<std::vector<float>> tensor(ModelTensor t, uint32_t layer = 0) const {
    const std::string full = model_tensor_name(t, layer, root_);
    const std::vector<int64_t> shape = expected_shape(t, dims_);
    RDRR_ASSIGN_OR_RETURN(const std::vector<int64_t> actual, w_.shape(full));
    if (actual != shape) {
      return error(StatusCode::kValidation, "tensor " + full + ": shape " + shape_str(actual) + ", expected " +
                                                shape_str(shape) + " from " + w_.config_origin());
    }
    return w_.read_f32(full);
  }
  bool has(ModelTensor t, uint32_t layer) const { return w_.has(model_tensor_name(t, layer, root_)); }

  // A linear map: a 2-D weight [out, in] and, when `bias` is given, its bias [out].
  Result<Linear> linear(ModelTensor weight, uint32_t layer, std::optional<ModelTensor> bias = std::nullopt) const {
    const std::vector<int64_t> shape = expected_shape(weight, dims_);
    Linear l{.out_features = to_u64(shape[0]), .in_features = to_u64(shape[1]), .weight = {}, .bias = {}};
    RDRR_ASSIGN_OR_RETURN(l.weight, tensor(weight, layer));
    if (bias) {
      RDRR_ASSIGN_OR_RETURN(l.bias, tensor(*bias, layer));
    }
    return l;
  }

  Status load_attention(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const;
  Status load_mlp(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const;
  Status load_norms(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const;

 private:
  static uint64_t to_u64(int64_t v) { return static_cast<uint64_t>(v); }
  static std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  }
  const ReferenceWeights& w_;
  ModelDims dims_;
  TensorRoot root_;
};

namespace {

// Rows [begin, begin + rows) of a fused linear (Phi-3 qkv_proj, gate_up_proj).
Linear slice_rows(const Linear& fused, size_t begin, size_t rows) {
  Linear l{.out_features = rows, .in_features = fused.in_features, .weight = {}, .bias = {}};
  const auto first = fused.weight.begin() + static_cast<std::ptrdiff_t>(begin * fused.in_features);
  l.weight.assign(first, first + static_cast<std::ptrdiff_t>(rows * fused.in_features));
  return l;
}

}  // namespace

Status ReferenceLoader::load_attention(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const {
  const auto& a = c.architecture;
  const uint64_t q_rows = a.num_attention_heads * a.head_dim, kv_rows = a.num_key_value_heads * a.head_dim;
  const bool bias = c.inference.attention.attention_bias;
  auto maybe = [&](ModelTensor b) { return bias ? std::optional<ModelTensor>(b) : std::nullopt; };
  if (has(M::kQkvProj, i)) {
    RDRR_ASSIGN_OR_RETURN(Linear qkv, linear(M::kQkvProj, i));
    l.q = slice_rows(qkv, 0, q_rows);
    l.k = slice_rows(qkv, q_rows, kv_rows);
    l.v = slice_rows(qkv, q_rows + kv_rows, kv_rows);
  } else {
    RDRR_ASSIGN_OR_RETURN(l.q, linear(M::kQProj, i, maybe(M::kQBias)));
    RDRR_ASSIGN_OR_RETURN(l.k, linear(M::kKProj, i, maybe(M::kKBias)));
    RDRR_ASSIGN_OR_RETURN(l.v, linear(M::kVProj, i, maybe(M::kVBias)));
  }
  RDRR_ASSIGN_OR_RETURN(l.o, linear(M::kOProj, i));
  if (c.inference.attention.query_key_norm) {
    RDRR_ASSIGN_OR_RETURN(l.q_norm, tensor(M::kQNorm, i));
    RDRR_ASSIGN_OR_RETURN(l.k_norm, tensor(M::kKNorm, i));
  }
  return Status::Ok();
}

Status ReferenceLoader::load_mlp(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const {
  if (!c.inference.ffn.gated) return error(StatusCode::kUnsupported, "verify reference: non-gated FFN");
  const uint64_t f = c.architecture.intermediate_size;
  if (has(M::kGateUpProj, i)) {
    RDRR_ASSIGN_OR_RETURN(Linear fused, linear(M::kGateUpProj, i));
    l.gate = slice_rows(fused, 0, f);
    l.up = slice_rows(fused, f, f);
  } else {
    RDRR_ASSIGN_OR_RETURN(l.gate, linear(M::kGateProj, i));
    RDRR_ASSIGN_OR_RETURN(l.up, linear(M::kUpProj, i));
  }
  RDRR_ASSIGN_OR_RETURN(l.down, linear(M::kDownProj, i));
  return Status::Ok();
}

Status ReferenceLoader::load_norms(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const {
  const auto& n = c.inference.normalization;
  RDRR_ASSIGN_OR_RETURN(l.input_norm, tensor(M::kInputNorm, i));
  // Gemma: post_attention_layernorm normalises the attention output and pre_feedforward_layernorm the
  // MLP input; elsewhere post_attention_layernorm is the MLP input norm.
  if (n.post_attention_norm) {
    RDRR_ASSIGN_OR_RETURN(l.post_attention_norm, tensor(M::kPostAttentionNorm, i));
    if (n.pre_feedforward_norm) {
      RDRR_ASSIGN_OR_RETURN(l.pre_feedforward_norm, tensor(M::kPreFeedforwardNorm, i));
    }
  } else if (n.pre_feedforward_norm) {
    RDRR_ASSIGN_OR_RETURN(l.pre_feedforward_norm, tensor(M::kPostAttentionNorm, i));
  }
  if (n.post_feedforward_norm) {
    RDRR_ASSIGN_OR_RETURN(l.post_feedforward_norm, tensor(M::kPostFeedforwardNorm, i));
  }
  return Status::Ok();
}

namespace {

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

// Root of the text model's tensors (rdrr/model_tensors.h): the plain one (CausalLM classes, packs and converter
// sources) or, in Gemma 3 multimodal checkpoints, "model.language_model." (transformers 5) / "language_model.model."
// (transformers 4), whichever holds the embedding.
TensorRoot text_model_root(const ReferenceWeights& w) {
  for (const TensorRoot& root : kTensorRoots) {
    if (w.has(model_tensor_name(ModelTensor::kEmbedTokens, 0, root))) return root;
  }
  return kPlainRoot;  // the load then fails naming model.embed_tokens.weight
}

// Root of lm_head: transformers 4 wrappers keep it under "language_model.", all others at the top.
TensorRoot head_root(const ReferenceWeights& w) {
  return w.has(model_tensor_name(ModelTensor::kLmHead, 0, kLanguageModelRoot)) ? kLanguageModelRoot : kPlainRoot;
}

}  // namespace

Result<ReferenceModel> ReferenceModel::load_weights(convert::ModelConfig config, const ReferenceWeights& w) {
  ReferenceModel m;
  m.config_ = std::move(config);
  const auto& a = m.config_.architecture;
  const auto& inf = m.config_.inference;
  const ReferenceLoader ld(w, a, text_model_root(w));
  RDRR_ASSIGN_OR_RETURN(m.embed_, ld.linear(M::kEmbedTokens, 0));
  RDRR_ASSIGN_OR_RETURN(m.final_norm_, ld.tensor(M::kFinalNorm));
  // Tied embeddings: no lm_head (a pack or converter source never has one then); the embedding is used.
  if (!m.config_.tied_embeddings && !inf.output.tie_word_embeddings) {
    const ReferenceLoader top(w, a, head_root(w));
    RDRR_ASSIGN_OR_RETURN(m.lm_head_, top.linear(M::kLmHead, 0));
  }
  m.layers_.resize(a.num_layers);
  for (uint32_t i = 0; i < a.num_layers; ++i) {
    Layer& l = m.layers_[i];
    RDRR_RETURN_IF_ERROR(ld.load_attention(m.config_, i, l));
    RDRR_RETURN_IF_ERROR(ld.load_mlp(m.config_, i, l));
    RDRR_RETURN_IF_ERROR(ld.load_norms(m.config_, i, l));
    if (i >= inf.attention.layer_types.size()) {
      return error(StatusCode::kValidation, "layerTypes has " + std::to_string(inf.attention.layer_types.size()) +
                                                " entries, expected " + std::to_string(a.num_layers));
    }
    const rdrr::LayerType type = inf.attention.layer_types[i];
    RDRR_ASSIGN_OR_RETURN(l.rope, make_rope_tables(inf.rope, a.head_dim, type));
    l.attention = attention_params(m.config_, type);
  }
  return m;
}

Result<ReferenceModel> ReferenceModel::load_hf(const std::filesystem::path& folder) {
  RDRR_ASSIGN_OR_RETURN(convert::ModelConfig config, convert::read_hf_model_config(folder));
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
