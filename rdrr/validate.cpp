// validate_manifest(): header, architecture, inference parameters, tokenizer, provenance, goldens.
// Weights (shards, tensors, placement) are in validate_tensors.cpp, the graph in validate_graph.cpp.
#include "rdrr/validate.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "rdrr/validate_internal.h"
#include "rdrr/validate_util.h"

namespace rdrr {
namespace {

using vutil::check_finite;
using vutil::check_positive;
using vutil::quote;

Status schema(std::string msg) { return error(StatusCode::kSchema, std::move(msg)); }
Status invalid(std::string msg) { return error(StatusCode::kValidation, std::move(msg)); }

Status validate_header(const Manifest& m) {
  if (m.version != kManifestVersion) {
    return schema("version: unsupported manifest version " + std::to_string(m.version) + " (this reader supports " +
                  std::to_string(kManifestVersion) + ")");
  }
  if (m.model_type != kModelTypeTransformer) {
    return schema("modelType: " + quote(m.model_type) + " is not \"transformer\"");
  }
  if (m.hash_algorithm != kHashAlgorithmSha256) {
    return schema("hashAlgorithm: " + quote(m.hash_algorithm) + " is not \"sha256\"");
  }
  RDRR_RETURN_IF_ERROR(vutil::check_text("modelId", m.model_id, kMaxStringBytes));
  return vutil::check_identifier("quantization", m.quantization, 64, true, "_.-");
}

// The limit on numExperts: the router's top-k runs in one workgroup (kernels/moe_route.comp).
constexpr uint32_t kMaxExperts = 256;
constexpr uint32_t kMaxExpertsPerToken = 8;

Status validate_moe(const Architecture& a) {
  if (!a.moe.present()) return Status::Ok();
  const MoeArchitecture& m = a.moe;
  const std::string at = "architecture.moe.";
  if (m.num_experts < 2 || m.num_experts > kMaxExperts) {
    return invalid(at + "numExperts: " + std::to_string(m.num_experts) + ", expected 2.." + std::to_string(kMaxExperts));
  }
  if (m.experts_per_token < 1 || m.experts_per_token > std::min(m.num_experts, kMaxExpertsPerToken)) {
    return invalid(at + "expertsPerToken: " + std::to_string(m.experts_per_token) + ", expected 1.." +
                   std::to_string(std::min(m.num_experts, kMaxExpertsPerToken)));
  }
  if (m.expert_intermediate_size == 0) return invalid(at + "expertIntermediateSize: must be > 0");
  if (m.shared_expert_gated != (m.shared_expert_intermediate_size > 0)) {
    return invalid(at + "sharedExpertGated: " + (m.shared_expert_gated ? "true" : "false") +
                   " with sharedExpertIntermediateSize " + std::to_string(m.shared_expert_intermediate_size) +
                   " (a shared expert is gated: the graph has no ungated one)");
  }
  for (size_t i = 0; i < m.dense_layers.size(); ++i) {
    if (m.dense_layers[i] >= a.num_layers || (i > 0 && m.dense_layers[i] <= m.dense_layers[i - 1])) {
      return invalid(at + "denseLayers[" + std::to_string(i) + "]: " + std::to_string(m.dense_layers[i]) +
                     ", expected ascending layer indices below numLayers " + std::to_string(a.num_layers));
    }
  }
  if (m.dense_layers.size() == a.num_layers) return invalid(at + "denseLayers: every layer is dense");
  return Status::Ok();
}

Status validate_architecture(const Architecture& a) {
  const std::pair<const char*, uint64_t> positive[] = {{"numLayers", a.num_layers},
                                                       {"hiddenSize", a.hidden_size},
                                                       {"intermediateSize", a.intermediate_size},
                                                       {"numAttentionHeads", a.num_attention_heads},
                                                       {"numKeyValueHeads", a.num_key_value_heads},
                                                       {"headDim", a.head_dim},
                                                       {"vocabSize", a.vocab_size},
                                                       {"maxSeqLen", a.max_seq_len}};
  for (const auto& [name, value] : positive) {
    if (value == 0) return invalid(std::string("architecture.") + name + ": must be > 0");
  }
  if (a.num_layers > kMaxLayers) {
    return invalid("architecture.numLayers: " + std::to_string(a.num_layers) + " exceeds the limit of " +
                   std::to_string(kMaxLayers));
  }
  if (a.num_attention_heads % a.num_key_value_heads != 0) {
    return invalid("architecture: numAttentionHeads " + std::to_string(a.num_attention_heads) +
                   " is not a multiple of numKeyValueHeads " + std::to_string(a.num_key_value_heads));
  }
  if (a.head_dim % 2 != 0) return invalid("architecture.headDim: " + std::to_string(a.head_dim) + " is odd");
  return validate_moe(a);
}

Status validate_attention(const Architecture& arch, const AttentionConfig& a) {
  if (a.layer_types.size() != arch.num_layers) {
    return invalid("inference.attention.layerTypes: " + std::to_string(a.layer_types.size()) +
                   " entries != numLayers " + std::to_string(arch.num_layers));
  }
  bool any_sliding = false;
  for (LayerType t : a.layer_types) any_sliding |= t == LayerType::kSlidingAttention;
  if (any_sliding && !a.sliding_window) {
    return invalid("inference.attention.slidingWindow: required because layerTypes has sliding_attention");
  }
  if (!any_sliding && a.sliding_window) {
    return invalid("inference.attention.slidingWindow: given but no layer is sliding_attention");
  }
  if (a.sliding_window && *a.sliding_window == 0) return invalid("inference.attention.slidingWindow: must be > 0");
  if (a.query_pre_attn_scalar) {
    RDRR_RETURN_IF_ERROR(check_positive("inference.attention.queryPreAttnScalar", *a.query_pre_attn_scalar));
  }
  if (a.attn_logit_softcapping) {
    RDRR_RETURN_IF_ERROR(check_positive("inference.attention.attnLogitSoftcapping", *a.attn_logit_softcapping));
  }
  return Status::Ok();
}

// A per-pair factor list of a scaling type: present exactly when the type needs it, n_rot / 2 finite
// positive entries.
Status validate_rope_factors(const char* name, const std::vector<double>& factors, bool required,
                             const std::string& type, uint64_t pairs) {
  const std::string field = std::string("inference.rope.") + name;
  if (!required) {
    if (!factors.empty()) return schema(field + ": not allowed when ropeScalingType is " + type);
    return Status::Ok();
  }
  if (factors.empty()) return schema(field + ": required when ropeScalingType is " + type);
  if (factors.size() != pairs) {
    return invalid(field + ": " + std::to_string(factors.size()) + " entries, expected rotary dims / 2 = " +
                   std::to_string(pairs));
  }
  for (size_t i = 0; i < factors.size(); ++i) {
    RDRR_RETURN_IF_ERROR(check_positive(field + "/" + std::to_string(i), factors[i]));
  }
  return Status::Ok();
}

// Which optional RoPE fields each scaling type requires; all others must be absent. `pairs`: rotary dims / 2.
Status validate_rope_scaling(const RopeConfig& r, uint64_t pairs) {
  const bool is_linear = r.scaling_type == RopeScalingType::kLinear;
  const bool is_llama3 = r.scaling_type == RopeScalingType::kLlama3;
  const bool is_yarn = r.scaling_type == RopeScalingType::kYarn;
  const bool is_longrope = r.scaling_type == RopeScalingType::kLongRope;
  struct Field {
    const char* name;
    bool present;
    bool required;
    double value;
  };
  const Field fields[] = {
      {"ropeScalingFactor", r.scaling_factor.has_value(), is_linear || is_llama3 || is_yarn,
       r.scaling_factor.value_or(1)},
      {"ropeLowFreqFactor", r.low_freq_factor.has_value(), is_llama3, r.low_freq_factor.value_or(1)},
      {"ropeHighFreqFactor", r.high_freq_factor.has_value(), is_llama3, r.high_freq_factor.value_or(1)},
      {"ropeOriginalMaxPositions", r.original_max_positions.has_value(), is_llama3 || is_yarn || is_longrope,
       static_cast<double>(r.original_max_positions.value_or(1))},
      {"ropeYarnBetaFast", r.yarn_beta_fast.has_value(), is_yarn, r.yarn_beta_fast.value_or(1)},
      {"ropeYarnBetaSlow", r.yarn_beta_slow.has_value(), is_yarn, r.yarn_beta_slow.value_or(1)},
      {"ropeYarnAttentionFactor", r.yarn_attention_factor.has_value(), is_yarn, r.yarn_attention_factor.value_or(1)},
      {"ropeAttentionFactor", r.attention_factor.has_value(), is_longrope, r.attention_factor.value_or(1)},
  };
  const std::string type = quote(rope_scaling_type_name(r.scaling_type));
  for (const Field& f : fields) {
    const std::string name = std::string("inference.rope.") + f.name;
    if (f.required && !f.present) return schema(name + ": required when ropeScalingType is " + type);
    if (!f.required && f.present) return schema(name + ": not allowed when ropeScalingType is " + type);
    if (f.present) RDRR_RETURN_IF_ERROR(check_positive(name, f.value));
  }
  RDRR_RETURN_IF_ERROR(validate_rope_factors("ropeShortFactors", r.short_factors, is_longrope, type, pairs));
  RDRR_RETURN_IF_ERROR(validate_rope_factors("ropeLongFactors", r.long_factors, is_longrope, type, pairs));
  RDRR_RETURN_IF_ERROR(validate_rope_factors("ropeFreqFactors", r.freq_factors,
                                             r.scaling_type == RopeScalingType::kFreqFactors, type, pairs));
  if (is_llama3 && !(*r.high_freq_factor > *r.low_freq_factor)) {
    return invalid("inference.rope: ropeHighFreqFactor " + vutil::fmt_double(*r.high_freq_factor) +
                   " must be > ropeLowFreqFactor " + vutil::fmt_double(*r.low_freq_factor));
  }
  return Status::Ok();
}

Status validate_rope(const Architecture& arch, const AttentionConfig& att, const RopeConfig& r) {
  RDRR_RETURN_IF_ERROR(check_positive("inference.rope.ropeTheta", r.theta));
  if (r.local_theta) {
    RDRR_RETURN_IF_ERROR(check_positive("inference.rope.ropeLocalTheta", *r.local_theta));
    if (!att.sliding_window) {
      return invalid("inference.rope.ropeLocalTheta: given but no layer is sliding_attention");
    }
  }
  RDRR_RETURN_IF_ERROR(check_positive("inference.rope.partialRotaryFactor", r.partial_rotary_factor));
  const double rotary_dims = static_cast<double>(arch.head_dim) * r.partial_rotary_factor;
  if (r.partial_rotary_factor > 1 || rotary_dims != std::floor(rotary_dims) ||
      static_cast<uint64_t>(rotary_dims) % 2 != 0) {
    return invalid("inference.rope.partialRotaryFactor: " + vutil::fmt_double(r.partial_rotary_factor) +
                   " must be in (0, 1] and give an even number of rotary dims (headDim " +
                   std::to_string(arch.head_dim) + " * factor = " + vutil::fmt_double(rotary_dims) + ")");
  }
  return validate_rope_scaling(r, static_cast<uint64_t>(rotary_dims) / 2);
}

Status validate_inference(const Architecture& arch, const Inference& inf) {
  RDRR_RETURN_IF_ERROR(validate_attention(arch, inf.attention));
  RDRR_RETURN_IF_ERROR(check_positive("inference.normalization.rmsNormEps", inf.normalization.rms_norm_eps));
  RDRR_RETURN_IF_ERROR(check_finite("inference.normalization.rmsNormWeightOffset", inf.normalization.weight_offset));
  RDRR_RETURN_IF_ERROR(validate_rope(arch, inf.attention, inf.rope));
  RDRR_RETURN_IF_ERROR(check_positive("inference.output.embeddingScale", inf.output.embedding_scale));
  if (inf.output.final_logit_softcapping) {
    RDRR_RETURN_IF_ERROR(check_positive("inference.output.finalLogitSoftcapping", *inf.output.final_logit_softcapping));
  }
  return Status::Ok();
}

Status validate_token_id(const Architecture& arch, const std::string& field, uint64_t id) {
  if (id >= arch.vocab_size) {
    return invalid(field + ": token id " + std::to_string(id) + " >= vocabSize " + std::to_string(arch.vocab_size));
  }
  return Status::Ok();
}

// The token ids of the tokenizer section (no file checks).
Status validate_token_ids(const Architecture& arch, const TokenizerInfo& t) {
  if (t.eos_token_ids.empty()) return invalid("tokenizer.eosTokenIds: must list at least one id");
  std::set<uint64_t> eos;
  for (size_t i = 0; i < t.eos_token_ids.size(); ++i) {
    const std::string field = "tokenizer.eosTokenIds[" + std::to_string(i) + "]";
    RDRR_RETURN_IF_ERROR(validate_token_id(arch, field, t.eos_token_ids[i]));
    if (!eos.insert(t.eos_token_ids[i]).second) return invalid(field + ": duplicate id");
  }
  if (t.bos_token_id) RDRR_RETURN_IF_ERROR(validate_token_id(arch, "tokenizer.bosTokenId", *t.bos_token_id));
  if (t.pad_token_id) RDRR_RETURN_IF_ERROR(validate_token_id(arch, "tokenizer.padTokenId", *t.pad_token_id));
  if (t.add_bos_token && !t.bos_token_id) return invalid("tokenizer.addBosToken: true but no bosTokenId");
  return Status::Ok();
}

Status validate_tokenizer(const Manifest& m) {
  const TokenizerInfo& t = m.tokenizer;
  if (t.type != kTokenizerTypeBundled) return schema("tokenizer.type: " + quote(t.type) + " is not \"bundled\"");
  std::set<std::string> names;
  for (size_t i = 0; i < t.files.size(); ++i) {
    const FileRecord& f = t.files[i];
    const std::string field = "tokenizer.files[" + std::to_string(i) + "]";
    RDRR_RETURN_IF_ERROR(vutil::check_plain_file_name(field + ".name", f.name));
    bool allowed = false;
    for (std::string_view n : kTokenizerFileNames) allowed |= f.name == n;
    if (!allowed) return invalid(field + ".name " + quote(f.name) + ": not a tokenizer file name a pack may bundle");
    if (!names.insert(f.name).second) return invalid(field + ".name " + quote(f.name) + ": listed twice");
    RDRR_RETURN_IF_ERROR(vutil::check_sha256_hex(field + ".hash", f.sha256_hex));
  }
  if (names.count("tokenizer.json") == 0 && names.count("tokenizer.model") == 0 &&
      names.count("tokenizer.gguf.json") == 0) {
    return invalid("tokenizer.files: must include tokenizer.json or tokenizer.model (or tokenizer.gguf.json)");
  }
  return validate_token_ids(m.architecture, t);
}

// "YYYY-MM-DDTHH:MM:SSZ" with plausible field ranges.
bool is_utc_timestamp(std::string_view s) {
  if (s.size() != 20) return false;
  const char* pattern = "dddd-dd-ddTdd:dd:ddZ";
  for (size_t i = 0; i < 20; ++i) {
    if (pattern[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pattern[i]) return false;
  }
  auto num = [&](size_t at, size_t n) {
    int v = 0;
    for (size_t i = 0; i < n; ++i) v = v * 10 + (s[at + i] - '0');
    return v;
  };
  return num(5, 2) >= 1 && num(5, 2) <= 12 && num(8, 2) >= 1 && num(8, 2) <= 31 && num(11, 2) <= 23 &&
         num(14, 2) <= 59 && num(17, 2) <= 60;
}

Status check_digest(const std::string& field, const std::string& digest) {
  const std::string_view prefix = "sha256:";
  if (digest.rfind(prefix, 0) != 0 || !vutil::is_lower_hex(std::string_view(digest).substr(prefix.size()), 64)) {
    return error(StatusCode::kSchema, field + ": " + quote(digest) + " is not \"sha256:<64 lowercase hex>\"");
  }
  return Status::Ok();
}

Status validate_kernel_repins(const std::vector<KernelRepin>& repins) {
  if (repins.size() > kMaxListEntries) return invalid("metadata.kernelRepins: too many entries");
  for (size_t i = 0; i < repins.size(); ++i) {
    const KernelRepin& r = repins[i];
    const std::string field = "metadata.kernelRepins[" + std::to_string(i) + "]";
    RDRR_RETURN_IF_ERROR(vutil::check_identifier(field + ".kernel", r.kernel, kMaxNameBytes, true, "_.-"));
    RDRR_RETURN_IF_ERROR(check_digest(field + ".from", r.from));
    RDRR_RETURN_IF_ERROR(check_digest(field + ".to", r.to));
    if (r.from == r.to) return invalid(field + ": from and to are the same digest " + quote(r.from));
  }
  return Status::Ok();
}

Status validate_metadata(const Provenance& p) {
  std::set<std::string> names;
  for (size_t i = 0; i < p.source.files.size(); ++i) {
    const FileRecord& f = p.source.files[i];
    const std::string field = "metadata.source.files[" + std::to_string(i) + "]";
    RDRR_RETURN_IF_ERROR(vutil::check_relative_path(field + ".name", f.name));
    if (!names.insert(f.name).second) return invalid(field + ".name " + quote(f.name) + ": listed twice");
    RDRR_RETURN_IF_ERROR(vutil::check_sha256_hex(field + ".hash", f.sha256_hex));
  }
  RDRR_RETURN_IF_ERROR(vutil::check_text("metadata.converter.name", p.converter.name, kMaxStringBytes));
  RDRR_RETURN_IF_ERROR(vutil::check_text("metadata.converter.version", p.converter.version, kMaxStringBytes));
  if (p.converter.flags.size() > kMaxListEntries) return invalid("metadata.converter.flags: too many entries");
  for (const auto& [key, value] : p.converter.flags) {
    RDRR_RETURN_IF_ERROR(vutil::check_identifier("metadata.converter.flags key", key, kMaxNameBytes, true, "_.-"));
    RDRR_RETURN_IF_ERROR(vutil::check_text("metadata.converter.flags." + key, value, kMaxStringBytes, true));
  }
  if (p.converted_at && !is_utc_timestamp(*p.converted_at)) {
    return invalid("metadata.convertedAt: " + quote(*p.converted_at) + " is not YYYY-MM-DDTHH:MM:SSZ");
  }
  return validate_kernel_repins(p.kernel_repins);
}

Status validate_goldens(const std::vector<GoldenFile>& goldens) {
  if (goldens.size() > kMaxListEntries) return invalid("goldens: too many entries");
  std::set<std::string> names;
  const std::string prefix = std::string(kGoldenDirName) + "/";
  for (size_t i = 0; i < goldens.size(); ++i) {
    const GoldenFile& g = goldens[i];
    const std::string field = "goldens[" + std::to_string(i) + "]";
    if (g.name.rfind(prefix, 0) != 0) {
      return invalid(field + ".name " + quote(g.name) + ": unsafe file name (must be golden/<file name>)");
    }
    RDRR_RETURN_IF_ERROR(vutil::check_plain_file_name(field + ".name", std::string_view(g.name).substr(prefix.size())));
    if (!names.insert(g.name).second) return invalid(field + ".name " + quote(g.name) + ": listed twice");
    RDRR_RETURN_IF_ERROR(vutil::check_sha256_hex(field + ".hash", g.sha256_hex));
    RDRR_RETURN_IF_ERROR(vutil::check_identifier(field + ".kind", g.kind, 64, false, "_"));
  }
  return Status::Ok();
}

}  // namespace

Status validate_model_parameters(const Architecture& arch, const Inference& inference, const TokenizerInfo& tokenizer) {
  RDRR_RETURN_IF_ERROR(validate_architecture(arch));
  RDRR_RETURN_IF_ERROR(validate_inference(arch, inference));
  return validate_token_ids(arch, tokenizer);
}

Status validate_manifest(const Manifest& m) {
  RDRR_RETURN_IF_ERROR(validate_header(m));
  RDRR_RETURN_IF_ERROR(validate_architecture(m.architecture));
  RDRR_RETURN_IF_ERROR(validate_inference(m.architecture, m.inference));
  RDRR_RETURN_IF_ERROR(validate_tokenizer(m));
  RDRR_RETURN_IF_ERROR(validate_metadata(m.metadata));
  RDRR_RETURN_IF_ERROR(validate_goldens(m.goldens));
  RDRR_RETURN_IF_ERROR(internal::validate_weights(m));
  if (m.inference.execution) RDRR_RETURN_IF_ERROR(internal::validate_graph(m, *m.inference.execution));
  return Status::Ok();
}

}  // namespace rdrr
