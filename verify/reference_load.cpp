// ReferenceModel loaders: tensors by HF name from a weight source (verify/reference_weights.h: SafeTensors
// folder, RDRR pack, converter source model) -> layer weights (f32), checked against the config.
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "convert/safetensors.h"
#include "convert/source.h"
#include "rdrr/manifest_json.h"
#include "rdrr/shard_reader.h"
#include "rdrr/validate.h"
#include "verify/reference_model.h"
#include "verify/reference_rope.h"
#include "verify/reference_weights.h"

namespace rdrr::verify {

class ReferenceLoader {
 public:
  ReferenceLoader(const ReferenceWeights& w, std::string prefix) : w_(w), prefix_(std::move(prefix)) {}

  Result<std::vector<float>> tensor(const std::string& name, std::vector<int64_t> shape) const {
    const std::string full = prefix_ + name;
    RDRR_ASSIGN_OR_RETURN(const std::vector<int64_t> actual, w_.shape(full));
    if (actual != shape) {
      return error(StatusCode::kValidation, "tensor " + full + ": shape " + shape_str(actual) + ", expected " +
                                                shape_str(shape) + " from " + w_.config_origin());
    }
    return w_.read_f32(full);
  }
  bool has(const std::string& name) const { return w_.has(prefix_ + name); }

  Result<Linear> linear(const std::string& name, uint64_t out, uint64_t in, bool bias) const {
    Linear l{.out_features = out, .in_features = in, .weight = {}, .bias = {}};
    RDRR_ASSIGN_OR_RETURN(l.weight, tensor(name + ".weight", {to_i64(out), to_i64(in)}));
    if (bias) {
      RDRR_ASSIGN_OR_RETURN(l.bias, tensor(name + ".bias", {to_i64(out)}));
    }
    return l;
  }

  Status load_attention(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const;
  Status load_mlp(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const;
  Status load_norms(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const;

 private:
  static int64_t to_i64(uint64_t v) { return static_cast<int64_t>(v); }
  static std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  }
  const ReferenceWeights& w_;
  std::string prefix_;
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
  const std::string p = "layers." + std::to_string(i) + ".self_attn.";
  const uint64_t q_rows = a.num_attention_heads * a.head_dim, kv_rows = a.num_key_value_heads * a.head_dim;
  const bool bias = c.inference.attention.attention_bias;
  if (has(p + "qkv_proj.weight")) {
    RDRR_ASSIGN_OR_RETURN(Linear qkv, linear(p + "qkv_proj", q_rows + 2 * kv_rows, a.hidden_size, false));
    l.q = slice_rows(qkv, 0, q_rows);
    l.k = slice_rows(qkv, q_rows, kv_rows);
    l.v = slice_rows(qkv, q_rows + kv_rows, kv_rows);
  } else {
    RDRR_ASSIGN_OR_RETURN(l.q, linear(p + "q_proj", q_rows, a.hidden_size, bias));
    RDRR_ASSIGN_OR_RETURN(l.k, linear(p + "k_proj", kv_rows, a.hidden_size, bias));
    RDRR_ASSIGN_OR_RETURN(l.v, linear(p + "v_proj", kv_rows, a.hidden_size, bias));
  }
  RDRR_ASSIGN_OR_RETURN(l.o, linear(p + "o_proj", a.hidden_size, q_rows, false));
  if (c.inference.attention.query_key_norm) {
    RDRR_ASSIGN_OR_RETURN(l.q_norm, tensor(p + "q_norm.weight", {to_i64(a.head_dim)}));
    RDRR_ASSIGN_OR_RETURN(l.k_norm, tensor(p + "k_norm.weight", {to_i64(a.head_dim)}));
  }
  return Status::Ok();
}

Status ReferenceLoader::load_mlp(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const {
  if (!c.inference.ffn.gated) return error(StatusCode::kUnsupported, "verify reference: non-gated FFN");
  const auto& a = c.architecture;
  const std::string p = "layers." + std::to_string(i) + ".mlp.";
  if (has(p + "gate_up_proj.weight")) {
    RDRR_ASSIGN_OR_RETURN(Linear fused, linear(p + "gate_up_proj", 2 * a.intermediate_size, a.hidden_size, false));
    l.gate = slice_rows(fused, 0, a.intermediate_size);
    l.up = slice_rows(fused, a.intermediate_size, a.intermediate_size);
  } else {
    RDRR_ASSIGN_OR_RETURN(l.gate, linear(p + "gate_proj", a.intermediate_size, a.hidden_size, false));
    RDRR_ASSIGN_OR_RETURN(l.up, linear(p + "up_proj", a.intermediate_size, a.hidden_size, false));
  }
  RDRR_ASSIGN_OR_RETURN(l.down, linear(p + "down_proj", a.hidden_size, a.intermediate_size, false));
  return Status::Ok();
}

Status ReferenceLoader::load_norms(const convert::ModelConfig& c, uint32_t i, ReferenceModel::Layer& l) const {
  const auto& n = c.inference.normalization;
  const std::string p = "layers." + std::to_string(i) + ".";
  const std::vector<int64_t> shape = {to_i64(c.architecture.hidden_size)};
  RDRR_ASSIGN_OR_RETURN(l.input_norm, tensor(p + "input_layernorm.weight", shape));
  // Gemma: post_attention_layernorm normalises the attention output and pre_feedforward_layernorm the
  // MLP input; elsewhere post_attention_layernorm is the MLP input norm.
  if (n.post_attention_norm) {
    RDRR_ASSIGN_OR_RETURN(l.post_attention_norm, tensor(p + "post_attention_layernorm.weight", shape));
    if (n.pre_feedforward_norm) {
      RDRR_ASSIGN_OR_RETURN(l.pre_feedforward_norm, tensor(p + "pre_feedforward_layernorm.weight", shape));
    }
  } else if (n.pre_feedforward_norm) {
    RDRR_ASSIGN_OR_RETURN(l.pre_feedforward_norm, tensor(p + "post_attention_layernorm.weight", shape));
  }
  if (n.post_feedforward_norm) {
    RDRR_ASSIGN_OR_RETURN(l.post_feedforward_norm, tensor(p + "post_feedforward_layernorm.weight", shape));
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

// Prefix of the text model's tensors: "model." (CausalLM classes, packs and converter sources) or, in Gemma 3
// multimodal checkpoints, "model.language_model." (transformers 5) / "language_model.model." (transformers 4).
std::string text_model_prefix(const ReferenceWeights& w) {
  for (const char* prefix : {"model.", "model.language_model.", "language_model.model."}) {
    if (w.has(std::string(prefix) + "embed_tokens.weight")) return prefix;
  }
  return "model.";  // the load then fails naming model.embed_tokens.weight
}

}  // namespace

Result<ReferenceModel> ReferenceModel::load_weights(convert::ModelConfig config, const ReferenceWeights& w) {
  ReferenceModel m;
  m.config_ = std::move(config);
  const ReferenceLoader ld(w, text_model_prefix(w));
  const auto& a = m.config_.architecture;
  const auto& inf = m.config_.inference;
  RDRR_ASSIGN_OR_RETURN(m.embed_, ld.linear("embed_tokens", a.vocab_size, a.hidden_size, false));
  RDRR_ASSIGN_OR_RETURN(m.final_norm_, ld.tensor("norm.weight", {static_cast<int64_t>(a.hidden_size)}));
  // Tied embeddings: no lm_head (a pack or converter source never has one then); the embedding is used.
  if (!m.config_.tied_embeddings && !inf.output.tie_word_embeddings) {
    const ReferenceLoader top(w, w.has("language_model.lm_head.weight") ? "language_model." : "");
    RDRR_ASSIGN_OR_RETURN(m.lm_head_, top.linear("lm_head", a.vocab_size, a.hidden_size, false));
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
