// read_hf_model_config(): a Hugging Face checkpoint's config.json -> ModelConfig (architecture, attention
// layout, norms, MLP, output); RoPE in hf_rope.cpp, tokenizer side in tokenizer_files.cpp.
#include <algorithm>
#include <system_error>

#include "convert/model_config_internal.h"

namespace rdrr::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using mcfg::FamilyTraits;
using mcfg::JsonObject;

constexpr std::string_view kConfigFile = "config.json";

// Gemma3TextConfig defaults (transformers), applied to Gemma 3 text configs only.
constexpr uint64_t kGemmaDefaultHeads = 8;
constexpr uint64_t kGemmaDefaultKvHeads = 4;
constexpr uint64_t kGemmaDefaultHeadDim = 256;
constexpr uint64_t kGemmaDefaultVocab = 262208;
constexpr uint64_t kGemmaDefaultMaxPositions = 131072;
constexpr double kGemmaDefaultQueryPreAttnScalar = 256;
constexpr uint64_t kGemmaDefaultSlidingPattern = 6;
constexpr uint64_t kGemmaDefaultSlidingWindow = 4096;  // Gemma3TextConfig and Gemma2Config
constexpr uint64_t kGemma2SlidingPattern = 2;          // Gemma2Config: even layers slide
constexpr double kGemma2DefaultAttnSoftcap = 50.0;     // Gemma2Config attn_logit_softcapping
constexpr double kGemma2DefaultFinalSoftcap = 30.0;    // Gemma2Config final_logit_softcapping

// Gemma 3's text config relies on Gemma3TextConfig's defaults for fields real checkpoints omit; Gemma 2's
// configs carry them, so its missing fields stay errors.
bool gemma3(const FamilyTraits& t) { return t.family == ArchFamily::kGemma3; }
constexpr uint64_t kQwenDefaultMaxWindowLayers = 28;  // Qwen2Config / Qwen3Config

Status unsupported(std::string msg) { return error(StatusCode::kUnsupported, std::move(msg)); }
Status invalid(std::string msg) { return error(StatusCode::kValidation, std::move(msg)); }

struct Selected {
  const FamilyTraits* traits = nullptr;
  std::optional<JsonObject> text_config;  // Gemma3ForConditionalGeneration's text model
};

Result<Selected> select_family(const JsonObject& root, std::vector<std::string>& warnings) {
  std::optional<std::string> arch;
  if (const json* a = root.find("architectures")) {
    if (!a->is_array() || (!a->empty() && !(*a)[0].is_string())) {
      return root.wrong_type("architectures", "a list of class names");
    }
    if (!a->empty()) arch = (*a)[0].get<std::string>();
    if (a->size() > 1) {
      warnings.push_back(root.field("architectures") + ": " + std::to_string(a->size()) +
                         " entries, using the first (" + *arch + ")");
    }
  }
  RDRR_ASSIGN_OR_RETURN(std::optional<std::string> model_type, root.opt_string("model_type"));
  if (!arch && !model_type) {
    return error(StatusCode::kSchema, root.where() + ": neither 'architectures' nor 'model_type' names the model");
  }
  const std::string name = arch ? *arch : *model_type;
  const bool conditional = arch ? *arch == mcfg::kGemma3ConditionalArchitecture
                                : *model_type == mcfg::kGemma3ConditionalModelType;
  if (conditional) {
    RDRR_ASSIGN_OR_RETURN(std::optional<JsonObject> text, root.opt_object("text_config"));
    if (!text) return root.missing("text_config");
    RDRR_ASSIGN_OR_RETURN(std::optional<std::string> text_type, text->opt_string("model_type"));
    if (text_type && *text_type != "gemma3_text") {
      return unsupported(text->field("model_type") + ": '" + *text_type + "' is not gemma3_text");
    }
    warnings.push_back(root.where() + ": " + name + ": converting the text model only (vision_config ignored)");
    return Selected{&mcfg::family_traits(ArchFamily::kGemma3), std::move(text)};
  }
  const FamilyTraits* t = arch ? mcfg::family_by_hf_architecture(*arch) : mcfg::family_by_hf_model_type(*model_type);
  if (t == nullptr) {
    return unsupported(root.field(arch ? "architectures" : "model_type") + ": '" + name +
                       "' is not supported (supported: " + mcfg::supported_list() + ")");
  }
  if (arch && model_type && *model_type != t->hf_model_type) {
    warnings.push_back(root.field("model_type") + ": '" + *model_type + "' differs from " + *arch +
                       "'s '" + std::string(t->hf_model_type) + "'; the architecture decides");
  }
  return Selected{t, std::nullopt};
}

// A field that only Gemma 3 may omit (its text configs rely on Gemma3TextConfig's defaults).
Result<uint64_t> uint_or_gemma_default(const JsonObject& obj, std::string_view key, const FamilyTraits& t,
                                       uint64_t gemma_default, ModelConfig& cfg) {
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> v, obj.opt_uint(key));
  if (v) return *v;
  if (!gemma3(t)) return obj.missing(key);
  cfg.warnings.push_back(obj.field(key) + ": absent, using the transformers default " + std::to_string(gemma_default));
  return gemma_default;
}

Status read_architecture(const JsonObject& obj, const FamilyTraits& t, ModelConfig& cfg) {
  Architecture& a = cfg.architecture;
  a.family = t.family;
  RDRR_ASSIGN_OR_RETURN(a.hidden_size, obj.req_uint("hidden_size"));
  RDRR_ASSIGN_OR_RETURN(a.intermediate_size, obj.req_uint("intermediate_size"));
  RDRR_ASSIGN_OR_RETURN(uint64_t layers, obj.req_uint("num_hidden_layers"));
  RDRR_ASSIGN_OR_RETURN(uint64_t heads, uint_or_gemma_default(obj, "num_attention_heads", t, kGemmaDefaultHeads, cfg));
  RDRR_ASSIGN_OR_RETURN(a.vocab_size, uint_or_gemma_default(obj, "vocab_size", t, kGemmaDefaultVocab, cfg));
  RDRR_ASSIGN_OR_RETURN(a.max_seq_len,
                        uint_or_gemma_default(obj, "max_position_embeddings", t, kGemmaDefaultMaxPositions, cfg));
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> kv, obj.opt_uint("num_key_value_heads"));
  if (!kv && gemma3(t)) {
    cfg.warnings.push_back(obj.field("num_key_value_heads") + ": absent, using the transformers default " +
                           std::to_string(kGemmaDefaultKvHeads));
    kv = kGemmaDefaultKvHeads;
  }
  if (layers > kMaxLayers) {
    return invalid(obj.field("num_hidden_layers") + ": " + std::to_string(layers) + " exceeds the limit of " +
                   std::to_string(kMaxLayers));
  }
  if (heads == 0) return invalid(obj.field("num_attention_heads") + ": must be > 0");
  if (heads > UINT32_MAX || kv.value_or(heads) > UINT32_MAX) {
    return invalid(obj.where() + ": attention head counts exceed 2^32");
  }
  a.num_layers = static_cast<uint32_t>(layers);
  a.num_attention_heads = static_cast<uint32_t>(heads);
  a.num_key_value_heads = static_cast<uint32_t>(kv.value_or(heads));
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> head_dim, obj.opt_uint("head_dim"));
  if (head_dim) {
    a.head_dim = *head_dim;
  } else if (gemma3(t)) {
    cfg.warnings.push_back(obj.field("head_dim") + ": absent, using the transformers default " +
                           std::to_string(kGemmaDefaultHeadDim));
    a.head_dim = kGemmaDefaultHeadDim;
  } else if (a.hidden_size % heads != 0) {
    return invalid(obj.where() + ": head_dim is absent and num_attention_heads " + std::to_string(heads) +
                   " does not divide hidden_size " + std::to_string(a.hidden_size));
  } else {
    a.head_dim = a.hidden_size / heads;
  }
  return Status::Ok();
}

// An unsigned config field with the config class's default (warned when absent).
Result<uint64_t> uint_or_default(const JsonObject& obj, std::string_view key, uint64_t def, ModelConfig& cfg) {
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> v, obj.opt_uint(key));
  if (v) return *v;
  cfg.warnings.push_back(obj.field(key) + ": absent, using the transformers default " + std::to_string(def));
  return def;
}

// architecture.moe from the family's MoE fields (MixtralConfig / Qwen2MoeConfig / Qwen3MoeConfig defaults).
Status read_moe(const JsonObject& obj, const FamilyTraits& t, ModelConfig& cfg) {
  if (t.moe == mcfg::MoeStyle::kNone) return Status::Ok();
  Architecture& a = cfg.architecture;
  MoeArchitecture m;
  const bool mixtral = t.moe == mcfg::MoeStyle::kMixtral;
  const bool qwen2 = t.shared_expert;
  // Qwen configs name the count num_experts; transformers 5 writes num_local_experts for them too.
  const char* count_key = (mixtral || (!obj.has("num_experts") && obj.has("num_local_experts"))) ? "num_local_experts"
                                                                                            : "num_experts";
  RDRR_ASSIGN_OR_RETURN(const uint64_t experts, uint_or_default(obj, count_key, mixtral ? 8 : qwen2 ? 60 : 128, cfg));
  RDRR_ASSIGN_OR_RETURN(const uint64_t per_token,
                        uint_or_default(obj, "num_experts_per_tok", mixtral ? 2 : qwen2 ? 4 : 8, cfg));
  if (experts > UINT32_MAX || per_token > UINT32_MAX) return invalid(obj.where() + ": expert counts exceed 2^32");
  m.num_experts = static_cast<uint32_t>(experts);
  m.experts_per_token = static_cast<uint32_t>(per_token);
  if (mixtral) {  // MixtralSparseMoeBlock: intermediate_size per expert, weights always renormalized
    m.expert_intermediate_size = a.intermediate_size;
    m.normalize_top_k = true;
  } else {
    RDRR_ASSIGN_OR_RETURN(m.expert_intermediate_size,
                          uint_or_default(obj, "moe_intermediate_size", qwen2 ? 1408 : 768, cfg));
    RDRR_ASSIGN_OR_RETURN(const std::optional<bool> norm, obj.opt_bool("norm_topk_prob"));
    m.normalize_top_k = norm.value_or(false);
    if (qwen2) {
      RDRR_ASSIGN_OR_RETURN(m.shared_expert_intermediate_size,
                            uint_or_default(obj, "shared_expert_intermediate_size", 5632, cfg));
      m.shared_expert_gated = m.shared_expert_intermediate_size > 0;
    }
    // Qwen*MoeDecoderLayer: layer i is sparse iff i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
    RDRR_ASSIGN_OR_RETURN(const std::optional<uint64_t> step, obj.opt_uint("decoder_sparse_step"));
    if (step && *step == 0) return invalid(obj.field("decoder_sparse_step") + ": must be > 0");
    std::vector<uint64_t> only;
    if (obj.has("mlp_only_layers")) {
      RDRR_ASSIGN_OR_RETURN(only, obj.id_list("mlp_only_layers"));
    }
    for (uint32_t i = 0; i < a.num_layers; ++i) {
      const bool listed = std::find(only.begin(), only.end(), uint64_t{i}) != only.end();
      if (listed || (uint64_t{i} + 1) % step.value_or(1) != 0) m.dense_layers.push_back(i);
    }
    for (uint64_t l : only) {
      if (l >= a.num_layers) {
        return invalid(obj.field("mlp_only_layers") + ": layer " + std::to_string(l) + " >= num_hidden_layers " +
                       std::to_string(a.num_layers));
      }
    }
  }
  if (m.experts_per_token > m.num_experts) {
    return invalid(obj.field("num_experts_per_tok") + ": " + std::to_string(m.experts_per_token) +
                   " exceeds the expert count " + std::to_string(m.num_experts));
  }
  a.moe = std::move(m);
  return Status::Ok();
}

// Gemma's derivation of layer types from a sliding-window period: layer i slides unless (i + 1) % period == 0.
std::vector<LayerType> layers_from_period(uint32_t n, uint64_t period) {
  std::vector<LayerType> out(n, LayerType::kFullAttention);
  for (uint32_t i = 0; i < n; ++i) {
    if ((uint64_t{i} + 1) % period != 0) out[i] = LayerType::kSlidingAttention;
  }
  return out;
}

Result<std::vector<LayerType>> parse_layer_types(const JsonObject& obj, const json& list, uint32_t n) {
  if (!list.is_array()) return obj.wrong_type("layer_types", "a list of layer types");
  if (list.size() != n) {
    return invalid(obj.field("layer_types") + ": " + std::to_string(list.size()) +
                   " entries, but num_hidden_layers is " + std::to_string(n));
  }
  std::vector<LayerType> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::optional<LayerType> t = list[i].is_string() ? parse_layer_type(list[i].get<std::string>()) : std::nullopt;
    if (!t) {
      return unsupported(obj.field("layer_types") + "[" + std::to_string(i) + "]: " + list[i].dump() +
                         " is not supported (full_attention, sliding_attention)");
    }
    out.push_back(*t);
  }
  return out;
}

// Which layers slide and the window: `layer_types` when present, else the family's rule.
Status read_layers(const JsonObject& obj, const FamilyTraits& t, ModelConfig& cfg) {
  const uint32_t n = cfg.architecture.num_layers;
  AttentionConfig& att = cfg.inference.attention;
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> window, obj.opt_uint("sliding_window"));
  if (t.gemma && !obj.json().contains("sliding_window")) {  // absent (not null): Gemma3TextConfig's default
    cfg.warnings.push_back(obj.field("sliding_window") + ": absent, using the transformers default " +
                           std::to_string(kGemmaDefaultSlidingWindow));
    window = kGemmaDefaultSlidingWindow;
  }
  RDRR_ASSIGN_OR_RETURN(std::optional<bool> use_window, obj.opt_bool("use_sliding_window"));
  if (t.qwen_sliding && !use_window.value_or(false)) window.reset();  // Qwen: no window unless enabled
  if (t.family == ArchFamily::kLlama && window) {
    cfg.warnings.push_back(obj.field("sliding_window") + ": ignored (Llama has no sliding-window attention)");
    window.reset();
  }
  if (window && *window == 0) return invalid(obj.field("sliding_window") + ": must be > 0");
  std::optional<uint64_t> period;
  std::string period_key;
  for (std::string_view key : {"sliding_window_pattern", "_sliding_window_pattern"}) {
    RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> p, obj.opt_uint(key));
    if (p) {
      period = p;
      period_key = key;
    }
  }
  std::vector<LayerType> types(n, LayerType::kFullAttention);
  if (const json* list = obj.find("layer_types")) {
    RDRR_ASSIGN_OR_RETURN(types, parse_layer_types(obj, *list, n));
    if (period && (*period == 0 || layers_from_period(n, *period) != types)) {
      cfg.warnings.push_back(obj.field(period_key) + " (" + std::to_string(*period) +
                             ") ignored: it disagrees with layer_types, which is authoritative");
    }
  } else if (t.family == ArchFamily::kGemma2) {
    types = layers_from_period(n, kGemma2SlidingPattern);  // Gemma2Config's layer_types default
  } else if (t.gemma) {
    if (period && *period == 0) return invalid(obj.field(period_key) + ": must be > 0");
    if (!period) {
      cfg.warnings.push_back(obj.where() + ": neither layer_types nor sliding_window_pattern; using the "
                             "transformers default period " + std::to_string(kGemmaDefaultSlidingPattern));
    }
    types = layers_from_period(n, period.value_or(kGemmaDefaultSlidingPattern));
  } else if (t.qwen_sliding && window) {
    RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> first, obj.opt_uint("max_window_layers"));
    if (!first) {
      cfg.warnings.push_back(obj.field("max_window_layers") + ": absent, using the transformers default " +
                             std::to_string(kQwenDefaultMaxWindowLayers));
    }
    for (uint32_t i = 0; i < n; ++i) {
      if (i >= first.value_or(kQwenDefaultMaxWindowLayers)) types[i] = LayerType::kSlidingAttention;
    }
  } else if (t.sliding_all_layers && window) {
    types.assign(n, LayerType::kSlidingAttention);
  }
  bool any_sliding = false;
  for (LayerType lt : types) any_sliding |= lt == LayerType::kSlidingAttention;
  if (any_sliding && !window) {
    cfg.warnings.push_back(obj.where() + ": layer_types lists sliding_attention layers but no sliding window is in "
                           "effect; every layer uses full attention");
    types.assign(n, LayerType::kFullAttention);
    any_sliding = false;
  }
  att.layer_types = std::move(types);
  att.sliding_window = any_sliding ? window : std::nullopt;
  return Status::Ok();
}

Status read_attention_extras(const JsonObject& obj, const FamilyTraits& t, ModelConfig& cfg) {
  AttentionConfig& att = cfg.inference.attention;
  att.causal = true;
  RDRR_ASSIGN_OR_RETURN(std::optional<bool> bidirectional, obj.opt_bool("use_bidirectional_attention"));
  if (bidirectional.value_or(false)) {
    return unsupported(obj.field("use_bidirectional_attention") + ": true (only causal attention is supported)");
  }
  RDRR_ASSIGN_OR_RETURN(std::optional<bool> bias, obj.opt_bool("attention_bias"));
  if (t.qkv_bias) {
    att.attention_bias = true;  // Qwen2: q/k/v always have biases, o_proj never (attention_bias is not read)
  } else if (bias.value_or(false)) {
    return unsupported(obj.field("attention_bias") + ": true gives " + std::string(t.hf_architecture) +
                       " biases on q/k/v and o_proj; an o_proj bias cannot be represented");
  }
  RDRR_ASSIGN_OR_RETURN(std::optional<bool> mlp_bias, obj.opt_bool("mlp_bias"));
  if (mlp_bias.value_or(false)) return unsupported(obj.field("mlp_bias") + ": true (MLP biases are not supported)");
  att.query_key_norm = t.query_key_norm;
  RDRR_ASSIGN_OR_RETURN(std::optional<double> scalar, obj.opt_number("query_pre_attn_scalar"));
  RDRR_ASSIGN_OR_RETURN(std::optional<double> softcap, obj.opt_number("attn_logit_softcapping"));
  if (t.gemma) {
    if (!scalar) {
      cfg.warnings.push_back(obj.field("query_pre_attn_scalar") + ": absent, using the transformers default " +
                             mcfg::fmt_double(kGemmaDefaultQueryPreAttnScalar));
    }
    att.query_pre_attn_scalar = scalar.value_or(kGemmaDefaultQueryPreAttnScalar);
    if (t.family == ArchFamily::kGemma2 && !obj.json().contains("attn_logit_softcapping")) {
      cfg.warnings.push_back(obj.field("attn_logit_softcapping") + ": absent, using the transformers default " +
                             mcfg::fmt_double(kGemma2DefaultAttnSoftcap));
      softcap = kGemma2DefaultAttnSoftcap;
    }
    att.attn_logit_softcapping = softcap;
  } else {
    if (scalar) cfg.warnings.push_back(obj.field("query_pre_attn_scalar") + ": ignored by this architecture");
    if (softcap) cfg.warnings.push_back(obj.field("attn_logit_softcapping") + ": ignored by this architecture");
  }
  return Status::Ok();
}

Result<Activation> read_activation(const JsonObject& obj, const FamilyTraits& t) {
  std::string key = "hidden_act";
  RDRR_ASSIGN_OR_RETURN(std::optional<std::string> name, obj.opt_string(key));
  if (t.gemma) {  // Gemma reads hidden_activation (hidden_act is a legacy alias)
    RDRR_ASSIGN_OR_RETURN(std::optional<std::string> gemma_name, obj.opt_string("hidden_activation"));
    if (gemma_name) name = gemma_name, key = "hidden_activation";
  }
  const std::string act = name.value_or(t.gemma ? "gelu_pytorch_tanh" : "silu");
  if (act == "silu" || act == "swish") return Activation::kSilu;
  if (act == "gelu_pytorch_tanh" || act == "gelu_tanh" || act == "gelu_new") return Activation::kGeluTanh;
  return unsupported(obj.field(key) + ": '" + act +
                     "' is not supported (silu/swish, gelu_pytorch_tanh/gelu_tanh/gelu_new)");
}

Result<quant::DType> checkpoint_dtype(const JsonObject& obj, const JsonObject& root, ModelConfig& cfg) {
  for (const JsonObject* o : {&obj, &root}) {
    for (std::string_view key : {"dtype", "torch_dtype"}) {
      RDRR_ASSIGN_OR_RETURN(std::optional<std::string> name, o->opt_string(key));
      if (!name) continue;
      if (*name == "bfloat16") return quant::DType::kBF16;
      if (*name == "float16" || *name == "half") return quant::DType::kF16;
      if (*name != "float32" && *name != "float") {
        cfg.warnings.push_back(o->field(key) + ": '" + *name + "' unknown; embedding scale rounded as float32");
      }
      return quant::DType::kF32;
    }
  }
  cfg.warnings.push_back(root.where() + ": no dtype/torch_dtype; embedding scale rounded as float32");
  return quant::DType::kF32;
}

Status read_norm_ffn_output(const JsonObject& obj, const JsonObject& root, const FamilyTraits& t, ModelConfig& cfg) {
  NormConfig& norm = cfg.inference.normalization;
  norm.type = NormType::kRmsNorm;
  RDRR_ASSIGN_OR_RETURN(std::optional<double> eps, obj.opt_number("rms_norm_eps"));
  if (!eps) {
    cfg.warnings.push_back(obj.field("rms_norm_eps") + ": absent, using the transformers default " +
                           mcfg::fmt_double(t.default_rms_eps));
  }
  norm.rms_norm_eps = eps.value_or(t.default_rms_eps);
  norm.weight_offset = t.gemma ? 1.0 : 0.0;
  norm.post_attention_norm = t.gemma;
  norm.pre_feedforward_norm = true;
  norm.post_feedforward_norm = t.gemma;
  RDRR_ASSIGN_OR_RETURN(cfg.inference.ffn.activation, read_activation(obj, t));
  cfg.inference.ffn.gated = true;

  OutputConfig& out = cfg.inference.output;
  RDRR_ASSIGN_OR_RETURN(std::optional<bool> tied, obj.opt_bool("tie_word_embeddings"));
  if (!tied && &obj.json() != &root.json()) {
    RDRR_ASSIGN_OR_RETURN(tied, root.opt_bool("tie_word_embeddings"));
  }
  cfg.tied_embeddings = tied.value_or(t.tied_default);
  out.tie_word_embeddings = cfg.tied_embeddings;
  RDRR_ASSIGN_OR_RETURN(std::optional<double> final_softcap, obj.opt_number("final_logit_softcapping"));
  if (t.gemma) {
    if (t.family == ArchFamily::kGemma2 && !obj.json().contains("final_logit_softcapping")) {
      cfg.warnings.push_back(obj.field("final_logit_softcapping") + ": absent, using the transformers default " +
                             mcfg::fmt_double(kGemma2DefaultFinalSoftcap));
      final_softcap = kGemma2DefaultFinalSoftcap;
    }
    out.final_logit_softcapping = final_softcap;
    RDRR_ASSIGN_OR_RETURN(quant::DType dtype, checkpoint_dtype(obj, root, cfg));
    out.embedding_scale = hf_embedding_scale(cfg.architecture.hidden_size, dtype);
  } else {
    if (final_softcap) cfg.warnings.push_back(obj.field("final_logit_softcapping") + ": ignored by this architecture");
    out.embedding_scale = 1.0;
  }
  return Status::Ok();
}

Result<ModelConfig> read_config(const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    return error(StatusCode::kNotFound, folder.string() + ": not a directory");
  }
  const fs::path config_path = folder / kConfigFile;
  if (!fs::exists(config_path, ec)) return error(StatusCode::kNotFound, config_path.string() + ": not found");
  RDRR_ASSIGN_OR_RETURN(json root_json, mcfg::read_json_object_file(config_path, kConfigFile));
  const JsonObject root(root_json, std::string(kConfigFile));

  ModelConfig cfg;
  RDRR_ASSIGN_OR_RETURN(Selected sel, select_family(root, cfg.warnings));
  const FamilyTraits& t = *sel.traits;
  const JsonObject& obj = sel.text_config ? *sel.text_config : root;
  cfg.family = std::string(t.name);
  RDRR_RETURN_IF_ERROR(read_architecture(obj, t, cfg));
  RDRR_RETURN_IF_ERROR(read_moe(obj, t, cfg));
  RDRR_RETURN_IF_ERROR(read_layers(obj, t, cfg));
  RDRR_RETURN_IF_ERROR(read_attention_extras(obj, t, cfg));
  RDRR_RETURN_IF_ERROR(mcfg::read_hf_rope(obj, t, cfg));
  RDRR_RETURN_IF_ERROR(read_norm_ffn_output(obj, root, t, cfg));
  const mcfg::HfTokenizerSources sources{&root, sel.text_config ? &*sel.text_config : nullptr};
  RDRR_RETURN_IF_ERROR(mcfg::read_hf_tokenizer(folder, sources, t, cfg));
  RDRR_RETURN_IF_ERROR(check_model_config(cfg));
  return cfg;
}

}  // namespace

Result<ModelConfig> read_hf_model_config(const fs::path& folder) {
  Result<ModelConfig> r = read_config(folder);
  if (r.ok() || r.status().code() == StatusCode::kNotFound) return r;
  return std::move(r).context(folder.string());
}

}  // namespace rdrr::convert
