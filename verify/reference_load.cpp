// ReferenceModel::load_hf: HF tensor names -> layer weights (f32), checked against the config.
#include <cmath>
#include <string>
#include <utility>

#include "convert/safetensors.h"
#include "verify/reference_model.h"
#include "verify/reference_rope.h"

namespace rdrr::verify {

class ReferenceLoader {
 public:
  ReferenceLoader(const convert::SafeTensorsModel& st, std::string prefix) : st_(st), prefix_(std::move(prefix)) {}

  Result<std::vector<float>> tensor(const std::string& name, std::vector<int64_t> shape) const {
    RDRR_ASSIGN_OR_RETURN(const convert::TensorView* t, st_.get(prefix_ + name));
    if (t->shape != shape) {
      return error(StatusCode::kValidation, "tensor " + t->name + ": shape " + shape_str(t->shape) +
                                                ", expected " + shape_str(shape) + " from config.json");
    }
    return convert::read_as_f32(*t);
  }
  bool has(const std::string& name) const { return st_.find(prefix_ + name) != nullptr; }

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
  const convert::SafeTensorsModel& st_;
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

// Prefix of the text model's tensors: "model." (CausalLM classes) or, in Gemma 3 multimodal checkpoints,
// "model.language_model." (transformers 5) / "language_model.model." (transformers 4).
std::string text_model_prefix(const convert::SafeTensorsModel& st) {
  for (const char* prefix : {"model.", "model.language_model.", "language_model.model."}) {
    if (st.find(std::string(prefix) + "embed_tokens.weight") != nullptr) return prefix;
  }
  return "model.";  // the load then fails naming model.embed_tokens.weight
}

}  // namespace

Result<ReferenceModel> ReferenceModel::load_hf(const std::filesystem::path& folder) {
  ReferenceModel m;
  RDRR_ASSIGN_OR_RETURN(m.config_, convert::read_hf_model_config(folder));
  RDRR_ASSIGN_OR_RETURN(convert::SafeTensorsModel st, convert::SafeTensorsModel::open(folder));
  const ReferenceLoader ld(st, text_model_prefix(st));
  const auto& a = m.config_.architecture;
  const auto& inf = m.config_.inference;
  RDRR_ASSIGN_OR_RETURN(m.embed_, ld.linear("embed_tokens", a.vocab_size, a.hidden_size, false));
  RDRR_ASSIGN_OR_RETURN(m.final_norm_, ld.tensor("norm.weight", {static_cast<int64_t>(a.hidden_size)}));
  if (!m.config_.tied_embeddings && !inf.output.tie_word_embeddings) {
    const ReferenceLoader top(st, st.find("language_model.lm_head.weight") ? "language_model." : "");
    RDRR_ASSIGN_OR_RETURN(m.lm_head_, top.linear("lm_head", a.vocab_size, a.hidden_size, false));
  }
  m.layers_.resize(a.num_layers);
  for (uint32_t i = 0; i < a.num_layers; ++i) {
    Layer& l = m.layers_[i];
    RDRR_RETURN_IF_ERROR(ld.load_attention(m.config_, i, l));
    RDRR_RETURN_IF_ERROR(ld.load_mlp(m.config_, i, l));
    RDRR_RETURN_IF_ERROR(ld.load_norms(m.config_, i, l));
    const rdrr::LayerType type = inf.attention.layer_types.at(i);
    RDRR_ASSIGN_OR_RETURN(l.rope, make_rope_tables(inf.rope, a.head_dim, type));
    l.attention = attention_params(m.config_, type);
  }
  return m;
}

}  // namespace rdrr::verify
