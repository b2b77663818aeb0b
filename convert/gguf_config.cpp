// model_config_from_gguf(): llama.cpp GGUF metadata -> ModelConfig, with the GGUF quirks the converter
// undoes recorded (q/k row permutation, Gemma norms holding 1 + w).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "convert/model_config_internal.h"
#include "quant/f16.h"

namespace rdrr::convert {
namespace {

using mcfg::FamilyTraits;

constexpr uint64_t kGemmaSwaPeriod = 6;              // llama.cpp: set_swa_pattern(6) for Gemma 3
constexpr double kGemmaDefaultLocalTheta = 10000.0;  // llama.cpp: rope_freq_base_train_swa for Gemma 3
constexpr double kDefaultRopeTheta = 10000.0;        // llama.cpp: rope_freq_base_train default
constexpr uint64_t kGemma27bLayers = 62;             // llama.cpp: LLM_TYPE_27B scales by hidden / heads
constexpr uint64_t kGemma2_27bLayers = 46;           // the same for Gemma 2 27B
constexpr uint64_t kGemma2SwaPeriod = 2;             // llama.cpp: set_swa_pattern(2) for Gemma 2 (even layers)
constexpr uint64_t kGemma2Window = 4096;             // llama.cpp's Gemma 2 defaults when the keys are absent
constexpr double kGemma2AttnSoftcap = 50.0;
constexpr double kGemma2FinalSoftcap = 30.0;

// A Gemma 2 key llama.cpp defaults: the file's value, else the default with a warning.
template <typename T>
T gemma2_default(std::optional<T> v, const std::string& key, T fallback, ModelConfig& cfg) {
  if (v) return *v;
  cfg.warnings.push_back(key + ": absent, using llama.cpp's Gemma 2 default " + mcfg::fmt_double(double(fallback)));
  return fallback;
}

Status unsupported(std::string msg) { return error(StatusCode::kUnsupported, std::move(msg)); }
Status invalid(std::string msg) { return error(StatusCode::kValidation, std::move(msg)); }

// Typed optional lookups of one GGUF file's metadata; errors name the key (the file is added by the caller).
class Keys {
 public:
  Keys(const GgufFile& g, std::string arch) : g_(g), arch_(std::move(arch)) {}

  std::string arch_key(std::string_view k) const { return arch_ + "." + std::string(k); }
  const GgufFile& file() const { return g_; }

  Status missing(std::string_view key) const {
    return error(StatusCode::kSchema, "metadata key '" + std::string(key) + "': missing");
  }
  Status wrong_type(std::string_view key, std::string_view expected, const GgufValue& v) const {
    return error(StatusCode::kSchema, "metadata key '" + std::string(key) + "': expected " + std::string(expected) +
                                          ", found " + std::string(gguf_value_type_name(v.type)));
  }

  // An integer, or an array of equal integers (llama.cpp allows per-layer arrays for some keys).
  Result<std::optional<uint64_t>> opt_uint(std::string_view key) const {
    const GgufValue* v = g_.find(key);
    if (v == nullptr) return std::optional<uint64_t>();
    if (const auto* u = std::get_if<uint64_t>(&v->data)) return std::optional<uint64_t>(*u);
    if (const auto* i = std::get_if<int64_t>(&v->data); i && *i >= 0) {
      return std::optional<uint64_t>(static_cast<uint64_t>(*i));
    }
    const auto* a = std::get_if<GgufArray>(&v->data);
    if (a == nullptr || a->count == 0) return wrong_type(key, "a non-negative integer", *v);
    Result<std::vector<int64_t>> ints = a->to_ints();
    if (!ints.ok() || a->elem_type == GgufValueType::kBool) return wrong_type(key, "a non-negative integer", *v);
    for (int64_t x : *ints) {
      if (x != ints->front()) {
        return unsupported("metadata key '" + std::string(key) + "': per-layer values differ");
      }
    }
    if (ints->front() < 0) return wrong_type(key, "a non-negative integer", *v);
    return std::optional<uint64_t>(static_cast<uint64_t>(ints->front()));
  }
  Result<uint64_t> req_uint(std::string_view key) const {
    RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> v, opt_uint(key));
    if (!v) return missing(key);
    return *v;
  }
  // f32 values as the shortest decimal that round-trips them (see model_config.h).
  Result<std::optional<double>> opt_float(std::string_view key) const {
    const GgufValue* v = g_.find(key);
    if (v == nullptr) return std::optional<double>();
    const auto* d = std::get_if<double>(&v->data);
    if (d == nullptr) return wrong_type(key, "f32 or f64", *v);
    if (!std::isfinite(*d)) return error(StatusCode::kNonFinite, "metadata key '" + std::string(key) + "': not finite");
    return std::optional<double>(v->type == GgufValueType::kF32 ? mcfg::f32_as_decimal(static_cast<float>(*d)) : *d);
  }
  Result<std::optional<bool>> opt_bool(std::string_view key) const {
    const GgufValue* v = g_.find(key);
    if (v == nullptr) return std::optional<bool>();
    if (const auto* b = std::get_if<bool>(&v->data)) return std::optional<bool>(*b);
    return wrong_type(key, "bool", *v);
  }
  Result<std::optional<std::string>> opt_string(std::string_view key) const {
    const GgufValue* v = g_.find(key);
    if (v == nullptr) return std::optional<std::string>();
    if (const auto* s = std::get_if<std::string>(&v->data)) return std::optional<std::string>(*s);
    return wrong_type(key, "string", *v);
  }

 private:
  const GgufFile& g_;
  std::string arch_;
};

Result<uint64_t> read_vocab_size(const Keys& k, ModelConfig& cfg) {
  const GgufArray* tokens = nullptr;
  if (const GgufValue* v = k.file().find("tokenizer.ggml.tokens")) tokens = std::get_if<GgufArray>(&v->data);
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> declared, k.opt_uint(k.arch_key("vocab_size")));
  std::optional<uint64_t> vocab;
  if (const GgufTensor* embd = k.file().find_tensor("token_embd.weight"); embd && embd->ne.size() == 2) {
    vocab = embd->ne[1];  // rows of the embedding: what the pack's vocabSize must be
    if (declared && *declared != *vocab) {
      cfg.warnings.push_back("metadata key '" + k.arch_key("vocab_size") + "' (" + std::to_string(*declared) +
                             ") differs from token_embd.weight's " + std::to_string(*vocab) + " rows; using the rows");
    }
  }
  if (!vocab) vocab = declared;
  if (!vocab && tokens) vocab = tokens->count;
  if (!vocab) return k.missing(k.arch_key("vocab_size"));
  if (tokens && tokens->count > *vocab) {
    return invalid("tokenizer.ggml.tokens: " + std::to_string(tokens->count) + " tokens, but the vocabulary has " +
                   std::to_string(*vocab) + " rows");
  }
  return *vocab;
}

Status read_architecture(const Keys& k, const FamilyTraits& t, ModelConfig& cfg) {
  Architecture& a = cfg.architecture;
  a.family = t.family;
  RDRR_ASSIGN_OR_RETURN(uint64_t layers, k.req_uint(k.arch_key("block_count")));
  RDRR_ASSIGN_OR_RETURN(a.hidden_size, k.req_uint(k.arch_key("embedding_length")));
  RDRR_ASSIGN_OR_RETURN(a.intermediate_size, k.req_uint(k.arch_key("feed_forward_length")));
  RDRR_ASSIGN_OR_RETURN(uint64_t heads, k.req_uint(k.arch_key("attention.head_count")));
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> kv, k.opt_uint(k.arch_key("attention.head_count_kv")));
  RDRR_ASSIGN_OR_RETURN(a.max_seq_len, k.req_uint(k.arch_key("context_length")));
  if (layers > kMaxLayers) {
    return invalid(k.arch_key("block_count") + ": " + std::to_string(layers) + " exceeds the limit of " +
                   std::to_string(kMaxLayers));
  }
  if (heads == 0) return invalid(k.arch_key("attention.head_count") + ": must be > 0");
  if (heads > UINT32_MAX || kv.value_or(heads) > UINT32_MAX) return invalid("attention head counts exceed 2^32");
  a.num_layers = static_cast<uint32_t>(layers);
  a.num_attention_heads = static_cast<uint32_t>(heads);
  a.num_key_value_heads = static_cast<uint32_t>(kv.value_or(heads));
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> key_length, k.opt_uint(k.arch_key("attention.key_length")));
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> value_length, k.opt_uint(k.arch_key("attention.value_length")));
  if (!key_length && a.hidden_size % heads != 0) {
    return invalid(k.arch_key("attention.key_length") + " is absent and head_count " + std::to_string(heads) +
                   " does not divide embedding_length " + std::to_string(a.hidden_size));
  }
  a.head_dim = key_length.value_or(a.hidden_size / heads);
  if (value_length && *value_length != a.head_dim) {
    return unsupported(k.arch_key("attention.value_length") + " " + std::to_string(*value_length) +
                       " != key_length " + std::to_string(a.head_dim));
  }
  RDRR_ASSIGN_OR_RETURN(a.vocab_size, read_vocab_size(k, cfg));
  return Status::Ok();
}

// architecture.moe from {arch}.expert_count, expert_used_count, expert_feed_forward_length (else
// feed_forward_length: Mixtral), expert_shared_feed_forward_length and expert_weights_norm (absent: llama.cpp's
// per-architecture choice: renormalized for llama / qwen3moe, not for qwen2moe). Every layer is an MoE layer.
Status read_moe(const Keys& k, const FamilyTraits& t, ModelConfig& cfg) {
  if (t.moe == mcfg::MoeStyle::kNone) return Status::Ok();
  Architecture& a = cfg.architecture;
  MoeArchitecture m;
  RDRR_ASSIGN_OR_RETURN(const uint64_t experts, k.req_uint(k.arch_key("expert_count")));
  RDRR_ASSIGN_OR_RETURN(const uint64_t used, k.req_uint(k.arch_key("expert_used_count")));
  if (experts > UINT32_MAX || used > UINT32_MAX) return invalid(k.arch_key("expert_count") + ": exceeds 2^32");
  m.num_experts = static_cast<uint32_t>(experts);
  m.experts_per_token = static_cast<uint32_t>(used);
  RDRR_ASSIGN_OR_RETURN(const std::optional<uint64_t> ff, k.opt_uint(k.arch_key("expert_feed_forward_length")));
  m.expert_intermediate_size = ff.value_or(a.intermediate_size);
  RDRR_ASSIGN_OR_RETURN(const std::optional<uint64_t> shared, k.opt_uint(k.arch_key("expert_shared_feed_forward_length")));
  m.shared_expert_intermediate_size = shared.value_or(0);
  m.shared_expert_gated = m.shared_expert_intermediate_size > 0;
  RDRR_ASSIGN_OR_RETURN(const std::optional<bool> norm, k.opt_bool(k.arch_key("expert_weights_norm")));
  m.normalize_top_k = norm.value_or(t.family != ArchFamily::kQwen2Moe);
  if (m.experts_per_token > m.num_experts) {
    return invalid(k.arch_key("expert_used_count") + ": " + std::to_string(used) + " exceeds expert_count " +
                   std::to_string(experts));
  }
  a.moe = std::move(m);
  return Status::Ok();
}

Status read_attention(const Keys& k, const FamilyTraits& t, ModelConfig& cfg) {
  AttentionConfig& att = cfg.inference.attention;
  const uint32_t n = cfg.architecture.num_layers;
  att.causal = true;
  att.layer_types.assign(n, LayerType::kFullAttention);
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> window, k.opt_uint(k.arch_key("attention.sliding_window")));
  if (t.family == ArchFamily::kGemma2) {
    window = gemma2_default(window, k.arch_key("attention.sliding_window"), kGemma2Window, cfg);
  }
  if (window && *window == 0) window.reset();
  if (window && t.family == ArchFamily::kGemma2) {
    for (uint32_t i = 0; i < n; i += kGemma2SwaPeriod) att.layer_types[i] = LayerType::kSlidingAttention;
  } else if (window && t.gemma) {
    const std::string key = k.arch_key("attention.sliding_window_pattern");
    const GgufValue* pattern = k.file().find(key);
    const auto* list = pattern ? std::get_if<GgufArray>(&pattern->data) : nullptr;
    if (list && list->elem_type == GgufValueType::kBool) {
      if (list->count != n) {
        return invalid(key + ": " + std::to_string(list->count) + " entries, block_count is " + std::to_string(n));
      }
      RDRR_ASSIGN_OR_RETURN(std::vector<int64_t> flags, list->to_ints());
      for (uint32_t i = 0; i < n; ++i) {
        if (flags[i] != 0) att.layer_types[i] = LayerType::kSlidingAttention;
      }
    } else {
      std::optional<uint64_t> period;
      if (pattern) {
        RDRR_ASSIGN_OR_RETURN(period, k.opt_uint(key));
      }
      if (!period) {
        cfg.warnings.push_back(key + ": absent, using llama.cpp's default period " + std::to_string(kGemmaSwaPeriod) +
                               " (every 6th layer full attention)");
      }
      const uint64_t p = period.value_or(kGemmaSwaPeriod);
      for (uint32_t i = 0; i < n; ++i) {
        if (p == 0 || i % p < p - 1) att.layer_types[i] = LayerType::kSlidingAttention;
      }
    }
  } else if (window && t.sliding_all_layers) {
    att.layer_types.assign(n, LayerType::kSlidingAttention);  // Phi-3: the window applies to every layer (HF)
  } else if (window) {
    cfg.warnings.push_back(k.arch_key("attention.sliding_window") + ": ignored (llama.cpp ignores it for " +
                           std::string(t.gguf_arch) + ")");
  }
  bool any_sliding = false;
  for (LayerType lt : att.layer_types) any_sliding |= lt == LayerType::kSlidingAttention;
  att.sliding_window = any_sliding ? window : std::nullopt;

  const GgufFile& g = k.file();
  if (g.find_tensor("blk.0.attn_output.bias") != nullptr) {
    return unsupported("tensor blk.0.attn_output.bias: an attention output bias cannot be represented");
  }
  att.attention_bias = g.find_tensor("blk.0.attn_q.bias") != nullptr || g.find_tensor("blk.0.attn_qkv.bias") != nullptr;
  att.query_key_norm = t.query_key_norm;
  if (t.gemma) {  // llama.cpp's Gemma 2 / 3 attention scale
    const Architecture& a = cfg.architecture;
    const uint64_t big = t.family == ArchFamily::kGemma2 ? kGemma2_27bLayers : kGemma27bLayers;
    att.query_pre_attn_scalar =
        static_cast<double>(a.num_layers == big ? a.hidden_size / a.num_attention_heads : a.head_dim);
    RDRR_ASSIGN_OR_RETURN(att.attn_logit_softcapping, k.opt_float(k.arch_key("attn_logit_softcapping")));
    if (t.family == ArchFamily::kGemma2) {
      att.attn_logit_softcapping = gemma2_default(att.attn_logit_softcapping, k.arch_key("attn_logit_softcapping"),
                                                  kGemma2AttnSoftcap, cfg);
    }
  }
  return Status::Ok();
}

Status read_rope_scaling(const Keys& k, RopeConfig& r) {
  RDRR_ASSIGN_OR_RETURN(std::optional<std::string> type, k.opt_string(k.arch_key("rope.scaling.type")));
  RDRR_ASSIGN_OR_RETURN(std::optional<double> factor, k.opt_float(k.arch_key("rope.scaling.factor")));
  RDRR_ASSIGN_OR_RETURN(std::optional<double> linear, k.opt_float(k.arch_key("rope.scale_linear")));
  if (!type && linear && *linear != 1.0) {  // older files: rope.scale_linear only
    type = "linear";
    factor = linear;
  }
  const std::string kind = type.value_or("none");
  // longrope: newer convert_hf_to_gguf writes the type beside the factor tensors, which read_rope_factors reads.
  if (kind == "none" || kind == "longrope") return Status::Ok();
  if (!factor) return k.missing(k.arch_key("rope.scaling.factor"));
  if (kind == "linear") {
    r.scaling_type = RopeScalingType::kLinear;
    r.scaling_factor = factor;
    return Status::Ok();
  }
  if (kind != "yarn") {
    return unsupported(k.arch_key("rope.scaling.type") + ": '" + kind + "' is not supported (none, linear, yarn)");
  }
  for (std::string_view key : {"rope.scaling.attn_factor", "rope.scaling.yarn_log_multiplier"}) {
    RDRR_ASSIGN_OR_RETURN(std::optional<double> v, k.opt_float(k.arch_key(key)));
    if (v && *v != (key == "rope.scaling.attn_factor" ? 1.0 : 0.0)) {
      return unsupported(k.arch_key(key) + ": " + mcfg::fmt_double(*v) + " (only the default YaRN attention factor)");
    }
  }
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> orig, k.opt_uint(k.arch_key("rope.scaling.original_context_length")));
  if (!orig) return k.missing(k.arch_key("rope.scaling.original_context_length"));
  RDRR_ASSIGN_OR_RETURN(std::optional<double> beta_fast, k.opt_float(k.arch_key("rope.scaling.yarn_beta_fast")));
  RDRR_ASSIGN_OR_RETURN(std::optional<double> beta_slow, k.opt_float(k.arch_key("rope.scaling.yarn_beta_slow")));
  r.scaling_type = RopeScalingType::kYarn;
  r.scaling_factor = factor;
  r.original_max_positions = orig;
  r.yarn_beta_fast = beta_fast.value_or(32.0);
  r.yarn_beta_slow = beta_slow.value_or(1.0);
  r.yarn_attention_factor = mcfg::yarn_mscale(*factor, 1.0);
  return Status::Ok();
}

// A per-pair RoPE factor tensor (rope_freqs / rope_factors_long / rope_factors_short: F32 or F16, `pairs`
// values, finite and > 0) as the shortest decimals of its f32 values; absent: empty.
Result<std::vector<double>> rope_factor_tensor(const Keys& k, const char* name, uint64_t pairs) {
  std::vector<double> out;
  const GgufTensor* t = k.file().find_tensor(name);
  if (t == nullptr) return out;
  const std::string where = std::string("tensor ") + name;
  if (t->type != GgmlType::kF32 && t->type != GgmlType::kF16) {
    return unsupported(where + ": type " + std::string(t->type_name()) + ", expected F32 or F16");
  }
  if (t->ne.size() != 1 || t->ne[0] != pairs) {
    return invalid(where + ": shape " + shape_to_string(t->ne) + ", expected [" + std::to_string(pairs) +
                   "] (rotary dims / 2)");
  }
  for (uint64_t i = 0; i < pairs; ++i) {
    float f = 0.0f;
    if (t->type == GgmlType::kF32) {
      std::memcpy(&f, t->bytes.data() + i * 4, 4);
    } else {
      uint16_t h = 0;
      std::memcpy(&h, t->bytes.data() + i * 2, 2);
      f = quant::f16_to_f32(h);
    }
    if (!std::isfinite(f) || !(f > 0.0f)) {
      return invalid(where + ": value " + std::to_string(i) + " is " + std::to_string(f) + ", expected finite and > 0");
    }
    out.push_back(mcfg::f32_as_decimal(f));
  }
  return out;
}

// Per-pair RoPE factors carried as tensors: rope_freqs (llama.cpp's llama3 scaling of Llama 3.1/3.2) ->
// freq_factors; rope_factors_long + rope_factors_short (Phi-3 LongRoPE) -> longrope, with
// rope.scaling.original_context_length and rope.scaling.attn_factor (absent: transformers' default from
// context_length / original).
Status read_rope_factors(const Keys& k, const ModelConfig& cfg, uint64_t pairs, RopeConfig& r) {
  RDRR_ASSIGN_OR_RETURN(std::vector<double> freqs, rope_factor_tensor(k, "rope_freqs.weight", pairs));
  RDRR_ASSIGN_OR_RETURN(std::vector<double> longs, rope_factor_tensor(k, "rope_factors_long.weight", pairs));
  RDRR_ASSIGN_OR_RETURN(std::vector<double> shorts, rope_factor_tensor(k, "rope_factors_short.weight", pairs));
  RDRR_ASSIGN_OR_RETURN(std::optional<std::string> declared, k.opt_string(k.arch_key("rope.scaling.type")));
  if (declared.value_or("") == "longrope" && longs.empty() && shorts.empty()) {
    return error(StatusCode::kSchema, k.arch_key("rope.scaling.type") +
                                          ": 'longrope' but tensors rope_factors_long/short.weight are missing");
  }
  if (freqs.empty() && longs.empty() && shorts.empty()) return Status::Ok();
  const std::string type(rope_scaling_type_name(r.scaling_type));
  if (r.scaling_type != RopeScalingType::kNone) {
    return unsupported(k.arch_key("rope.scaling.type") + ": '" + type +
                       "' together with per-dimension RoPE factor tensors is not supported");
  }
  if (!freqs.empty() && (!longs.empty() || !shorts.empty())) {
    return unsupported("tensor rope_freqs.weight together with rope_factors_long/short is not supported");
  }
  if (!freqs.empty()) {
    r.scaling_type = RopeScalingType::kFreqFactors;
    r.freq_factors = std::move(freqs);
    return Status::Ok();
  }
  if (longs.empty() || shorts.empty()) {
    return error(StatusCode::kSchema, std::string("tensor ") +
                                          (longs.empty() ? "rope_factors_long.weight" : "rope_factors_short.weight") +
                                          ": missing (LongRoPE needs both factor tensors)");
  }
  RDRR_ASSIGN_OR_RETURN(uint64_t orig, k.req_uint(k.arch_key("rope.scaling.original_context_length")));
  if (orig == 0) return invalid("metadata key '" + k.arch_key("rope.scaling.original_context_length") + "': 0");
  RDRR_ASSIGN_OR_RETURN(std::optional<double> attention, k.opt_float(k.arch_key("rope.scaling.attn_factor")));
  if (!attention) {
    attention = mcfg::longrope_attention_factor(
        static_cast<double>(cfg.architecture.max_seq_len) / static_cast<double>(orig), orig);
  }
  r.scaling_type = RopeScalingType::kLongRope;
  r.short_factors = std::move(shorts);
  r.long_factors = std::move(longs);
  r.original_max_positions = orig;
  r.attention_factor = attention;
  return Status::Ok();
}

Status read_rope(const Keys& k, const FamilyTraits& t, ModelConfig& cfg) {
  RopeConfig& r = cfg.inference.rope;
  r = RopeConfig{};
  RDRR_ASSIGN_OR_RETURN(std::optional<double> theta, k.opt_float(k.arch_key("rope.freq_base")));
  if (!theta) {
    cfg.warnings.push_back(k.arch_key("rope.freq_base") + ": absent, using llama.cpp's default " +
                           mcfg::fmt_double(kDefaultRopeTheta));
  }
  r.theta = theta.value_or(kDefaultRopeTheta);
  RDRR_RETURN_IF_ERROR(read_rope_scaling(k, r));
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> dims, k.opt_uint(k.arch_key("rope.dimension_count")));
  const uint64_t head_dim = cfg.architecture.head_dim;
  r.partial_rotary_factor = dims && head_dim > 0 ? static_cast<double>(*dims) / static_cast<double>(head_dim) : 1.0;
  r.convention = RopeConvention::kRotateHalf;  // llama/mistral: the converter undoes the q/k row permutation
  RDRR_RETURN_IF_ERROR(read_rope_factors(k, cfg, dims.value_or(head_dim) / 2, r));
  if (t.family == ArchFamily::kGemma3 && cfg.inference.attention.sliding_window) {
    RDRR_ASSIGN_OR_RETURN(std::optional<double> local, k.opt_float(k.arch_key("rope.freq_base_swa")));
    if (!local) {
      cfg.warnings.push_back(k.arch_key("rope.freq_base_swa") + ": absent, using llama.cpp's Gemma 3 default " +
                             mcfg::fmt_double(kGemmaDefaultLocalTheta));
    }
    r.local_theta = local.value_or(kGemmaDefaultLocalTheta);
  }
  return Status::Ok();
}

Status read_norm_ffn_output(const Keys& k, const FamilyTraits& t, ModelConfig& cfg) {
  NormConfig& norm = cfg.inference.normalization;
  RDRR_ASSIGN_OR_RETURN(std::optional<double> eps, k.opt_float(k.arch_key("attention.layer_norm_rms_epsilon")));
  if (!eps) return k.missing(k.arch_key("attention.layer_norm_rms_epsilon"));
  norm.type = NormType::kRmsNorm;
  norm.rms_norm_eps = *eps;
  norm.weight_offset = 0.0;  // Gemma GGUF norms already hold 1 + w
  cfg.norm_weights_include_offset = t.gemma;
  norm.post_attention_norm = t.gemma;
  norm.pre_feedforward_norm = true;
  norm.post_feedforward_norm = t.gemma;
  cfg.inference.ffn.activation = t.gemma ? Activation::kGeluTanh : Activation::kSilu;
  cfg.inference.ffn.gated = true;
  OutputConfig& out = cfg.inference.output;
  cfg.tied_embeddings = k.file().find_tensor("output.weight") == nullptr;
  out.tie_word_embeddings = cfg.tied_embeddings;
  out.embedding_scale = t.gemma ? hf_embedding_scale(cfg.architecture.hidden_size, quant::DType::kF32) : 1.0;
  if (t.gemma) {
    RDRR_ASSIGN_OR_RETURN(out.final_logit_softcapping, k.opt_float(k.arch_key("final_logit_softcapping")));
    if (t.family == ArchFamily::kGemma2) {
      out.final_logit_softcapping = gemma2_default(out.final_logit_softcapping, k.arch_key("final_logit_softcapping"),
                                                   kGemma2FinalSoftcap, cfg);
    }
  }
  return Status::Ok();
}

Status read_tokenizer(const Keys& k, ModelConfig& cfg) {
  if (k.file().find("tokenizer.ggml.tokens") == nullptr) return k.missing("tokenizer.ggml.tokens");
  TokenizerInfo& tok = cfg.tokenizer;
  RDRR_ASSIGN_OR_RETURN(tok.bos_token_id, k.opt_uint("tokenizer.ggml.bos_token_id"));
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> id, k.opt_uint(key));
    if (id) mcfg::append_unique(tok.eos_token_ids, *id);
  }
  if (tok.eos_token_ids.empty()) return k.missing("tokenizer.ggml.eos_token_id");
  RDRR_ASSIGN_OR_RETURN(tok.pad_token_id, k.opt_uint("tokenizer.ggml.padding_token_id"));
  RDRR_ASSIGN_OR_RETURN(std::optional<std::string> model, k.opt_string("tokenizer.ggml.model"));
  RDRR_ASSIGN_OR_RETURN(std::optional<bool> add_bos, k.opt_bool("tokenizer.ggml.add_bos_token"));
  RDRR_ASSIGN_OR_RETURN(std::optional<bool> add_eos, k.opt_bool("tokenizer.ggml.add_eos_token"));
  tok.add_bos_token = add_bos.value_or(model.value_or("") == "llama");  // llama.cpp: SentencePiece adds BOS
  tok.add_eos_token = add_eos.value_or(false);
  if (tok.add_bos_token && !tok.bos_token_id) return k.missing("tokenizer.ggml.bos_token_id");
  RDRR_ASSIGN_OR_RETURN(std::string text, mcfg::tokenizer_json_text(k.file()));
  cfg.gguf_tokenizer_json = std::move(text);
  return Status::Ok();
}

// convert_hf_to_gguf writes MistralForCausalLM checkpoints as architecture "llama"; the model's own name
// (general.basename, general.name, general.base_model.0.name, as convert_hf_to_gguf fills them from the
// folder or the model card) is what still says Mistral. Returns the key that said so.
std::optional<std::string> mistral_named(const Keys& k) {
  for (const char* key : {"general.basename", "general.name", "general.base_model.0.name"}) {
    const Result<std::optional<std::string>> v = k.opt_string(key);
    if (!v.ok() || !v->has_value()) continue;
    std::string lower = **v;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("mistral") != std::string::npos) return std::string(key) + " '" + **v + "'";
  }
  return std::nullopt;
}

Result<ModelConfig> read_gguf_config(const GgufFile& g) {
  const GgufValue* arch_value = g.find("general.architecture");
  if (arch_value == nullptr) return error(StatusCode::kSchema, "metadata key 'general.architecture': missing");
  const auto* arch = std::get_if<std::string>(&arch_value->data);
  if (arch == nullptr) return error(StatusCode::kSchema, "metadata key 'general.architecture': expected a string");
  const FamilyTraits* t = mcfg::family_by_gguf_arch(*arch);
  if (t == nullptr) {
    return unsupported("general.architecture '" + *arch +
                       "' is not supported (supported: llama (also Mistral, recorded as mistral when the model's name says so, "
                       "and Mixtral, with expert_count), qwen2, qwen3, gemma2, gemma3, phi3, qwen2moe, qwen3moe)");
  }
  const Keys k(g, *arch);
  // llama.cpp writes Mixtral as llama with {arch}.expert_count.
  RDRR_ASSIGN_OR_RETURN(const std::optional<uint64_t> experts, k.opt_uint(k.arch_key("expert_count")));
  if (experts.value_or(0) > 0 && t->family == ArchFamily::kLlama) t = &mcfg::family_traits(ArchFamily::kMixtral);
  if (t->moe != mcfg::MoeStyle::kNone && experts.value_or(0) == 0) return k.missing(k.arch_key("expert_count"));
  ModelConfig cfg;
  cfg.family = std::string(t->name);
  cfg.qk_rows_permuted = *arch == "llama";  // convert_hf_to_gguf permutes llama (and Mixtral) q/k rows
  RDRR_RETURN_IF_ERROR(read_architecture(k, *t, cfg));
  RDRR_RETURN_IF_ERROR(read_moe(k, *t, cfg));
  RDRR_RETURN_IF_ERROR(read_attention(k, *t, cfg));
  RDRR_RETURN_IF_ERROR(read_rope(k, *t, cfg));
  RDRR_RETURN_IF_ERROR(read_norm_ffn_output(k, *t, cfg));
  RDRR_RETURN_IF_ERROR(read_tokenizer(k, cfg));
  if (t->family == ArchFamily::kLlama) {
    if (const std::optional<std::string> named = mistral_named(k)) {
      cfg.family = "mistral";
      cfg.architecture.family = ArchFamily::kMistral;
      cfg.warnings.push_back("architecture llama recorded as family mistral (" + *named + ")");
    }
  }
  RDRR_RETURN_IF_ERROR(check_model_config(cfg));
  return cfg;
}

}  // namespace

Result<ModelConfig> model_config_from_gguf(const GgufFile& gguf) {
  return read_gguf_config(gguf).context(gguf.path().string());
}

}  // namespace rdrr::convert
