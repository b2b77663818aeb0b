// RoPE parameters of an HF config: transformers 5 `rope_parameters` (one dict, or one per layer type) and
// transformers 4 `rope_theta` + `rope_scaling` (+ Gemma 3's `rope_local_base_freq`), resolved as
// transformers 5 resolves them (modeling_rope_utils: standardize_rope_params and the _compute_* functions).
#include <cmath>

#include "convert/model_config_internal.h"

namespace rdrr::convert::mcfg {
namespace {

using nlohmann::json;

constexpr double kGemmaDefaultLocalTheta = 10000.0;  // Gemma3TextConfig rope_local_base_freq
constexpr double kYarnDefaultBetaFast = 32.0;
constexpr double kYarnDefaultBetaSlow = 1.0;

Status unsupported(std::string msg) { return error(StatusCode::kUnsupported, std::move(msg)); }

struct RopeDefaults {
  std::optional<double> top_theta;        // config-level rope_theta (transformers 4)
  std::optional<uint64_t> top_orig_max;   // config-level original_max_position_embeddings (Phi-3)
  uint64_t max_positions = 0;             // max_position_embeddings
  double family_theta = 10000.0;          // the config class's default rope_theta
};

Result<double> req_number(const JsonObject& p, std::string_view key) {
  RDRR_ASSIGN_OR_RETURN(std::optional<double> v, p.opt_number(key));
  if (!v) return p.missing(key);
  return *v;
}

// YaRN as transformers 5 computes it: the explicit factor (else max_positions / original), the attention
// factor from attention_factor, else mscale/mscale_all_dim, else 0.1 ln(factor) + 1; betas 32 / 1 when
// absent or 0; truncate must not be false.
Status resolve_yarn(const JsonObject& p, uint64_t orig, const RopeDefaults& d, RopeConfig& r) {
  RDRR_ASSIGN_OR_RETURN(std::optional<double> factor, p.opt_number("factor"));
  if (!factor) {
    if (!p.has("original_max_position_embeddings")) return p.missing("factor");
    factor = static_cast<double>(d.max_positions) / static_cast<double>(orig);
  }
  RDRR_ASSIGN_OR_RETURN(std::optional<bool> truncate, p.opt_bool("truncate"));
  if (!truncate.value_or(true)) return unsupported(p.field("truncate") + ": false (untruncated YaRN ramp)");
  RDRR_ASSIGN_OR_RETURN(std::optional<double> attention, p.opt_number("attention_factor"));
  RDRR_ASSIGN_OR_RETURN(std::optional<double> mscale, p.opt_number("mscale"));
  RDRR_ASSIGN_OR_RETURN(std::optional<double> mscale_all, p.opt_number("mscale_all_dim"));
  if (!attention) {
    if (mscale.value_or(0) != 0 && mscale_all.value_or(0) != 0) {
      attention = yarn_mscale(*factor, *mscale) / yarn_mscale(*factor, *mscale_all);
    } else {
      attention = yarn_mscale(*factor, 1.0);
    }
  }
  RDRR_ASSIGN_OR_RETURN(std::optional<double> beta_fast, p.opt_number("beta_fast"));
  RDRR_ASSIGN_OR_RETURN(std::optional<double> beta_slow, p.opt_number("beta_slow"));
  r.scaling_type = RopeScalingType::kYarn;
  r.scaling_factor = factor;
  r.original_max_positions = orig;
  r.yarn_attention_factor = attention;
  r.yarn_beta_fast = beta_fast.value_or(0) != 0 ? *beta_fast : kYarnDefaultBetaFast;
  r.yarn_beta_slow = beta_slow.value_or(0) != 0 ? *beta_slow : kYarnDefaultBetaSlow;
  return Status::Ok();
}

// LongRoPE (Phi-3) as transformers' _compute_longrope_parameters: short_factor / long_factor lists, the
// factor given or max_position_embeddings / original, attention factor given or sqrt(1 + ln factor / ln orig)
// (1 when factor <= 1). "su" is its old name.
Status resolve_longrope(const JsonObject& p, uint64_t orig, const RopeDefaults& d, RopeConfig& r) {
  RDRR_ASSIGN_OR_RETURN(r.short_factors, p.number_list("short_factor"));
  RDRR_ASSIGN_OR_RETURN(r.long_factors, p.number_list("long_factor"));
  if (r.short_factors.empty()) return p.missing("short_factor");
  if (r.long_factors.empty()) return p.missing("long_factor");
  if (orig == 0) return p.missing("original_max_position_embeddings");
  RDRR_ASSIGN_OR_RETURN(std::optional<double> factor, p.opt_number("factor"));
  if (!factor) factor = static_cast<double>(d.max_positions) / static_cast<double>(orig);
  RDRR_ASSIGN_OR_RETURN(std::optional<double> attention, p.opt_number("attention_factor"));
  if (!attention) attention = longrope_attention_factor(*factor, orig);
  r.scaling_type = RopeScalingType::kLongRope;
  r.original_max_positions = orig;
  r.attention_factor = attention;
  return Status::Ok();
}

// One parameter set (a rope_parameters dict, or rope_scaling with the config-level rope_theta).
Status resolve_params(const JsonObject& p, const RopeDefaults& d, RopeConfig& r, std::vector<std::string>& warnings) {
  RDRR_ASSIGN_OR_RETURN(std::optional<double> theta, p.opt_number("rope_theta"));
  if (theta && d.top_theta && *theta != *d.top_theta) {
    warnings.push_back(p.field("rope_theta") + " (" + fmt_double(*theta) + ") is used; the config-level rope_theta (" +
                       fmt_double(*d.top_theta) + ") is ignored");
  }
  r.theta = theta ? *theta : d.top_theta.value_or(d.family_theta);
  RDRR_ASSIGN_OR_RETURN(std::optional<std::string> rope_type, p.opt_string("rope_type"));
  RDRR_ASSIGN_OR_RETURN(std::optional<std::string> legacy_type, p.opt_string("type"));
  if (rope_type && legacy_type && *rope_type != *legacy_type) {
    return error(StatusCode::kSchema, p.where() + ": 'rope_type' (" + *rope_type + ") and 'type' (" + *legacy_type +
                                          ") disagree");
  }
  const std::string type = rope_type ? *rope_type : legacy_type.value_or("default");
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> orig_given, p.opt_uint("original_max_position_embeddings"));
  const uint64_t orig = orig_given ? *orig_given : d.top_orig_max.value_or(d.max_positions);
  if (type == "default") {
    r.scaling_type = RopeScalingType::kNone;
  } else if (type == "linear") {
    r.scaling_type = RopeScalingType::kLinear;
    RDRR_ASSIGN_OR_RETURN(r.scaling_factor, req_number(p, "factor"));
  } else if (type == "llama3") {
    r.scaling_type = RopeScalingType::kLlama3;
    RDRR_ASSIGN_OR_RETURN(r.scaling_factor, req_number(p, "factor"));
    RDRR_ASSIGN_OR_RETURN(r.low_freq_factor, req_number(p, "low_freq_factor"));
    RDRR_ASSIGN_OR_RETURN(r.high_freq_factor, req_number(p, "high_freq_factor"));
    r.original_max_positions = orig;
  } else if (type == "yarn") {
    RDRR_RETURN_IF_ERROR(resolve_yarn(p, orig, d, r));
  } else if (type == "longrope" || type == "su") {
    RDRR_RETURN_IF_ERROR(resolve_longrope(p, orig, d, r));
  } else {
    return unsupported(p.field(rope_type ? "rope_type" : "type") + ": '" + type +
                       "' is not supported (supported: default, linear, llama3, yarn, longrope)");
  }
  return Status::Ok();
}

// transformers 5 writes one dict per layer type ({"full_attention": {...}, "sliding_attention": {...}}).
bool is_per_layer_type(const json& params) {
  if (params.empty()) return false;
  for (const auto& [key, value] : params.items()) {
    if (!value.is_object() || key.size() < 10 || key.compare(key.size() - 10, 10, "_attention") != 0) return false;
  }
  return true;
}

Status read_per_layer(const JsonObject& obj, const JsonObject& params, const FamilyTraits& t, const RopeDefaults& d,
                      ModelConfig& cfg) {
  for (const auto& [key, value] : params.json().items()) {
    if (key != "full_attention" && key != "sliding_attention") {
      return unsupported(params.field(key) + ": RoPE for layer type '" + key + "' is not supported");
    }
  }
  bool any_full = false, any_sliding = false;
  for (LayerType lt : cfg.inference.attention.layer_types) {
    (lt == LayerType::kSlidingAttention ? any_sliding : any_full) = true;
  }
  RDRR_ASSIGN_OR_RETURN(std::optional<JsonObject> full, params.opt_object("full_attention"));
  RDRR_ASSIGN_OR_RETURN(std::optional<JsonObject> sliding, params.opt_object("sliding_attention"));
  if (!full && any_full) return params.missing("full_attention");
  const json empty = json::object();
  RopeConfig& r = cfg.inference.rope;
  RDRR_RETURN_IF_ERROR(resolve_params(full ? *full : JsonObject(empty, params.where()), d, r, cfg.warnings));
  if (!any_sliding) return Status::Ok();
  if (!sliding) {
    if (t.family != ArchFamily::kGemma3) return Status::Ok();  // sliding layers use the single RoPE
    RDRR_ASSIGN_OR_RETURN(std::optional<double> local, obj.opt_number("rope_local_base_freq"));
    if (!local) {
      cfg.warnings.push_back(params.field("sliding_attention") + ": absent, local RoPE theta " +
                             fmt_double(kGemmaDefaultLocalTheta));
    }
    r.local_theta = local.value_or(kGemmaDefaultLocalTheta);
    return Status::Ok();
  }
  RopeDefaults sliding_defaults = d;
  const bool gemma3 = t.family == ArchFamily::kGemma3;
  if (gemma3) sliding_defaults.top_theta = kGemmaDefaultLocalTheta;
  RopeConfig local;
  RDRR_RETURN_IF_ERROR(resolve_params(*sliding, sliding_defaults, local, cfg.warnings));
  if (gemma3) {
    if (local.scaling_type != RopeScalingType::kNone) {
      return unsupported(sliding->where() + ": scaled RoPE on sliding layers is not supported");
    }
    r.local_theta = local.theta;
  } else if (!(local == r)) {
    return unsupported(params.where() + ": a different RoPE on sliding layers is only supported for Gemma 3");
  }
  return Status::Ok();
}

}  // namespace

Status read_hf_rope(const JsonObject& obj, const FamilyTraits& t, ModelConfig& cfg) {
  RopeConfig& r = cfg.inference.rope;
  r = RopeConfig{};
  RDRR_ASSIGN_OR_RETURN(std::optional<JsonObject> parameters, obj.opt_object("rope_parameters"));
  RDRR_ASSIGN_OR_RETURN(std::optional<JsonObject> scaling, obj.opt_object("rope_scaling"));
  if (parameters && scaling) {
    return error(StatusCode::kSchema, obj.where() + ": both 'rope_parameters' (transformers 5) and 'rope_scaling' "
                                                    "(transformers 4) are set");
  }
  RopeDefaults d;
  RDRR_ASSIGN_OR_RETURN(d.top_theta, obj.opt_number("rope_theta"));
  RDRR_ASSIGN_OR_RETURN(d.top_orig_max, obj.opt_uint("original_max_position_embeddings"));
  d.max_positions = cfg.architecture.max_seq_len;
  d.family_theta = t.default_rope_theta;
  const json empty = json::object();
  const JsonObject params = parameters ? *parameters : scaling ? *scaling : JsonObject(empty, obj.where());

  bool any_sliding = false;
  for (LayerType lt : cfg.inference.attention.layer_types) any_sliding |= lt == LayerType::kSlidingAttention;
  const bool per_layer = is_per_layer_type(params.json());
  if (per_layer) {
    RDRR_RETURN_IF_ERROR(read_per_layer(obj, params, t, d, cfg));
  } else {
    RDRR_RETURN_IF_ERROR(resolve_params(params, d, r, cfg.warnings));
    if (t.family == ArchFamily::kGemma3 && any_sliding) {
      RDRR_ASSIGN_OR_RETURN(std::optional<double> local, obj.opt_number("rope_local_base_freq"));
      if (!local) {
        cfg.warnings.push_back(obj.field("rope_local_base_freq") + ": absent, using the transformers default " +
                               fmt_double(kGemmaDefaultLocalTheta));
      }
      r.local_theta = local.value_or(kGemmaDefaultLocalTheta);
    }
  }
  // partial_rotary_factor: inside the (full-attention) parameters, else at config level.
  std::optional<double> partial;
  if (per_layer) {
    RDRR_ASSIGN_OR_RETURN(std::optional<JsonObject> full, params.opt_object("full_attention"));
    if (full) {
      RDRR_ASSIGN_OR_RETURN(partial, full->opt_number("partial_rotary_factor"));
    }
  } else {
    RDRR_ASSIGN_OR_RETURN(partial, params.opt_number("partial_rotary_factor"));
  }
  if (!partial) {
    RDRR_ASSIGN_OR_RETURN(partial, obj.opt_number("partial_rotary_factor"));
  }
  r.partial_rotary_factor = partial.value_or(1.0);
  r.convention = RopeConvention::kRotateHalf;  // every HF checkpoint of these families uses rotate_half
  return Status::Ok();
}

}  // namespace rdrr::convert::mcfg
