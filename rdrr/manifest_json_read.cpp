// manifest.json -> Manifest (syntax and schema; consistency is validate.cpp's job).
#include <utility>

#include "rdrr/json_fields.h"
#include "rdrr/json_strict.h"
#include "rdrr/manifest_json.h"
#include "rdrr/manifest_json_graph.h"
#include "rdrr/mapped_file.h"
#include "rdrr/validate.h"

namespace rdrr {
namespace {

using json_fields::expect_array;
using json_fields::Object;
using json_fields::schema_error;
using nlohmann::json;

// Opens the object at `key` of `parent` (required).
Result<Object> open_child(Object& parent, std::string_view key) {
  RDRR_ASSIGN_OR_RETURN(const json* v, parent.need(key));
  return Object::open(*v, parent.child(key));
}

Status read_file_record(const json& v, const std::string& path, FileRecord& out) {
  RDRR_ASSIGN_OR_RETURN(Object o, Object::open(v, path));
  RDRR_RETURN_IF_ERROR(o.req_string("name", out.name, kMaxStringBytes));
  RDRR_RETURN_IF_ERROR(o.req_uint("size", out.size_bytes));
  RDRR_RETURN_IF_ERROR(o.req_string("hash", out.sha256_hex, 64));
  return o.finish();
}

Status read_file_records(Object& parent, std::string_view key, std::vector<FileRecord>& out) {
  RDRR_ASSIGN_OR_RETURN(const json* arr, parent.need(key));
  const std::string path = parent.child(key);
  RDRR_RETURN_IF_ERROR(expect_array(*arr, path, kMaxListEntries));
  out.clear();
  for (size_t i = 0; i < arr->size(); ++i) {
    FileRecord f;
    RDRR_RETURN_IF_ERROR(read_file_record((*arr)[i], json_pointer_child(path, std::to_string(i)), f));
    out.push_back(std::move(f));
  }
  return Status::Ok();
}

// architecture.moe (rdrr/SPEC.md 8.2); numExperts 0 is refused (a dense model omits the object).
Status read_moe(Object& arch, MoeArchitecture& moe) {
  RDRR_ASSIGN_OR_RETURN(Object m, open_child(arch, "moe"));
  RDRR_RETURN_IF_ERROR(m.req_uint("numExperts", moe.num_experts));
  RDRR_RETURN_IF_ERROR(m.req_uint("expertsPerToken", moe.experts_per_token));
  RDRR_RETURN_IF_ERROR(m.req_uint("expertIntermediateSize", moe.expert_intermediate_size));
  RDRR_RETURN_IF_ERROR(m.req_bool("normalizeTopK", moe.normalize_top_k));
  RDRR_RETURN_IF_ERROR(m.req_uint("sharedExpertIntermediateSize", moe.shared_expert_intermediate_size));
  RDRR_RETURN_IF_ERROR(m.req_bool("sharedExpertGated", moe.shared_expert_gated));
  RDRR_ASSIGN_OR_RETURN(const json* dense, m.need("denseLayers"));
  const std::string path = m.child("denseLayers");
  RDRR_RETURN_IF_ERROR(expect_array(*dense, path, kMaxLayers));
  for (size_t i = 0; i < dense->size(); ++i) {
    uint64_t layer = 0;
    RDRR_RETURN_IF_ERROR(json_fields::to_uint((*dense)[i], json_pointer_child(path, std::to_string(i)), kMaxLayers, layer));
    moe.dense_layers.push_back(static_cast<uint32_t>(layer));
  }
  RDRR_RETURN_IF_ERROR(m.finish());
  if (!moe.present()) return json_fields::schema_error(m.child("numExperts"), "must be > 0 (omit \"moe\" for a dense model)");
  return Status::Ok();
}

Status read_architecture(Object& root, Architecture& a) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(root, "architecture"));
  RDRR_RETURN_IF_ERROR(o.req_enum("family", parse_arch_family, a.family));
  RDRR_RETURN_IF_ERROR(o.req_uint("numLayers", a.num_layers));
  RDRR_RETURN_IF_ERROR(o.req_uint("hiddenSize", a.hidden_size));
  RDRR_RETURN_IF_ERROR(o.req_uint("intermediateSize", a.intermediate_size));
  RDRR_RETURN_IF_ERROR(o.req_uint("numAttentionHeads", a.num_attention_heads));
  RDRR_RETURN_IF_ERROR(o.req_uint("numKeyValueHeads", a.num_key_value_heads));
  RDRR_RETURN_IF_ERROR(o.req_uint("headDim", a.head_dim));
  RDRR_RETURN_IF_ERROR(o.req_uint("vocabSize", a.vocab_size));
  RDRR_RETURN_IF_ERROR(o.req_uint("maxSeqLen", a.max_seq_len));
  a.moe = {};
  if (o.get("moe") != nullptr) RDRR_RETURN_IF_ERROR(read_moe(o, a.moe));
  return o.finish();
}

Status read_attention(Object& inf, AttentionConfig& a) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(inf, "attention"));
  RDRR_RETURN_IF_ERROR(o.req_bool("causal", a.causal));
  RDRR_RETURN_IF_ERROR(o.req_bool("attentionBias", a.attention_bias));
  RDRR_RETURN_IF_ERROR(o.req_bool("queryKeyNorm", a.query_key_norm));
  RDRR_RETURN_IF_ERROR(o.opt_double("queryPreAttnScalar", a.query_pre_attn_scalar));
  RDRR_RETURN_IF_ERROR(o.opt_double("attnLogitSoftcapping", a.attn_logit_softcapping));
  RDRR_RETURN_IF_ERROR(o.opt_uint("slidingWindow", a.sliding_window));
  RDRR_ASSIGN_OR_RETURN(const json* types, o.need("layerTypes"));
  const std::string path = o.child("layerTypes");
  RDRR_RETURN_IF_ERROR(expect_array(*types, path, kMaxLayers));
  a.layer_types.clear();
  for (size_t i = 0; i < types->size(); ++i) {
    const std::string p = json_pointer_child(path, std::to_string(i));
    std::string s;
    RDRR_RETURN_IF_ERROR(json_fields::to_string((*types)[i], p, 64, s));
    const auto t = parse_layer_type(s);
    if (!t) return schema_error(p, "unknown value \"" + s + "\"");
    a.layer_types.push_back(*t);
  }
  return o.finish();
}

Status read_normalization(Object& inf, NormConfig& n) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(inf, "normalization"));
  RDRR_RETURN_IF_ERROR(o.req_enum("type", parse_norm_type, n.type));
  RDRR_RETURN_IF_ERROR(o.req_double("rmsNormEps", n.rms_norm_eps));
  RDRR_RETURN_IF_ERROR(o.req_double("rmsNormWeightOffset", n.weight_offset));
  RDRR_RETURN_IF_ERROR(o.req_bool("postAttentionNorm", n.post_attention_norm));
  RDRR_RETURN_IF_ERROR(o.req_bool("preFeedforwardNorm", n.pre_feedforward_norm));
  RDRR_RETURN_IF_ERROR(o.req_bool("postFeedforwardNorm", n.post_feedforward_norm));
  return o.finish();
}

Status read_ffn(Object& inf, FfnConfig& f) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(inf, "ffn"));
  RDRR_RETURN_IF_ERROR(o.req_enum("activation", parse_activation, f.activation));
  RDRR_RETURN_IF_ERROR(o.req_bool("gatedActivation", f.gated));
  return o.finish();
}

// An optional array of numbers (absent: empty); its length is checked by validation.
Status opt_doubles(Object& o, std::string_view key, std::vector<double>& out) {
  out.clear();
  const json* v = o.get(key);
  if (v == nullptr) return Status::Ok();
  const std::string path = o.child(key);
  RDRR_RETURN_IF_ERROR(expect_array(*v, path, kMaxListEntries));
  out.resize(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    RDRR_RETURN_IF_ERROR(json_fields::to_double((*v)[i], json_pointer_child(path, std::to_string(i)), out[i]));
  }
  return Status::Ok();
}

Status read_rope(Object& inf, RopeConfig& r) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(inf, "rope"));
  RDRR_RETURN_IF_ERROR(o.req_double("ropeTheta", r.theta));
  RDRR_RETURN_IF_ERROR(o.opt_double("ropeLocalTheta", r.local_theta));
  RDRR_RETURN_IF_ERROR(o.req_enum("ropeScalingType", parse_rope_scaling_type, r.scaling_type));
  RDRR_RETURN_IF_ERROR(o.opt_double("ropeScalingFactor", r.scaling_factor));
  RDRR_RETURN_IF_ERROR(o.opt_double("ropeLowFreqFactor", r.low_freq_factor));
  RDRR_RETURN_IF_ERROR(o.opt_double("ropeHighFreqFactor", r.high_freq_factor));
  RDRR_RETURN_IF_ERROR(o.opt_uint("ropeOriginalMaxPositions", r.original_max_positions));
  RDRR_RETURN_IF_ERROR(o.opt_double("ropeYarnBetaFast", r.yarn_beta_fast));
  RDRR_RETURN_IF_ERROR(o.opt_double("ropeYarnBetaSlow", r.yarn_beta_slow));
  RDRR_RETURN_IF_ERROR(o.opt_double("ropeYarnAttentionFactor", r.yarn_attention_factor));
  RDRR_RETURN_IF_ERROR(opt_doubles(o, "ropeShortFactors", r.short_factors));
  RDRR_RETURN_IF_ERROR(opt_doubles(o, "ropeLongFactors", r.long_factors));
  RDRR_RETURN_IF_ERROR(o.opt_double("ropeAttentionFactor", r.attention_factor));
  RDRR_RETURN_IF_ERROR(opt_doubles(o, "ropeFreqFactors", r.freq_factors));
  RDRR_RETURN_IF_ERROR(o.req_double("partialRotaryFactor", r.partial_rotary_factor));
  RDRR_RETURN_IF_ERROR(o.req_enum("ropeConvention", parse_rope_convention, r.convention));
  return o.finish();
}

Status read_output(Object& inf, OutputConfig& out) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(inf, "output"));
  RDRR_RETURN_IF_ERROR(o.opt_double("finalLogitSoftcapping", out.final_logit_softcapping));
  RDRR_RETURN_IF_ERROR(o.req_bool("tieWordEmbeddings", out.tie_word_embeddings));
  RDRR_RETURN_IF_ERROR(o.req_double("embeddingScale", out.embedding_scale));
  return o.finish();
}

Status read_inference(Object& root, Inference& inf) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(root, "inference"));
  RDRR_RETURN_IF_ERROR(read_attention(o, inf.attention));
  RDRR_RETURN_IF_ERROR(read_normalization(o, inf.normalization));
  RDRR_RETURN_IF_ERROR(read_ffn(o, inf.ffn));
  RDRR_RETURN_IF_ERROR(read_rope(o, inf.rope));
  RDRR_RETURN_IF_ERROR(read_output(o, inf.output));
  inf.execution.reset();
  if (const json* e = o.get("execution")) {
    ExecutionGraph g;
    RDRR_RETURN_IF_ERROR(read_execution_graph(*e, o.child("execution"), g));
    inf.execution = std::move(g);
  }
  return o.finish();
}

Status read_tokenizer(Object& root, TokenizerInfo& t) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(root, "tokenizer"));
  RDRR_RETURN_IF_ERROR(o.req_string("type", t.type, 64));
  RDRR_RETURN_IF_ERROR(read_file_records(o, "files", t.files));
  RDRR_RETURN_IF_ERROR(o.req_bool("addBosToken", t.add_bos_token));
  RDRR_RETURN_IF_ERROR(o.req_bool("addEosToken", t.add_eos_token));
  RDRR_RETURN_IF_ERROR(o.opt_uint("bosTokenId", t.bos_token_id));
  RDRR_RETURN_IF_ERROR(o.opt_uint("padTokenId", t.pad_token_id));
  RDRR_ASSIGN_OR_RETURN(const json* eos, o.need("eosTokenIds"));
  const std::string path = o.child("eosTokenIds");
  RDRR_RETURN_IF_ERROR(expect_array(*eos, path, kMaxListEntries));
  t.eos_token_ids.clear();
  for (size_t i = 0; i < eos->size(); ++i) {
    uint64_t id = 0;
    RDRR_RETURN_IF_ERROR(
        json_fields::to_uint((*eos)[i], json_pointer_child(path, std::to_string(i)), kMaxJsonInteger, id));
    t.eos_token_ids.push_back(id);
  }
  return o.finish();
}

Status read_string_map(const json& v, const std::string& path, std::map<std::string, std::string>& out) {
  RDRR_ASSIGN_OR_RETURN(Object o, Object::open(v, path));
  if (v.size() > kMaxListEntries) return schema_error(path, "too many entries");
  out.clear();
  for (const auto& item : v.items()) {
    std::string s;
    RDRR_RETURN_IF_ERROR(o.req_string(item.key(), s, kMaxStringBytes));
    out.emplace(item.key(), std::move(s));
  }
  return o.finish();
}

// metadata.kernelRepins: optional array of {kernel, from, to}.
Status read_kernel_repins(Object& parent, std::vector<KernelRepin>& out) {
  out.clear();
  const json* arr = parent.get("kernelRepins");
  if (arr == nullptr) return Status::Ok();
  const std::string path = parent.child("kernelRepins");
  RDRR_RETURN_IF_ERROR(expect_array(*arr, path, kMaxListEntries));
  for (size_t i = 0; i < arr->size(); ++i) {
    RDRR_ASSIGN_OR_RETURN(Object e, Object::open((*arr)[i], json_pointer_child(path, std::to_string(i))));
    KernelRepin r;
    RDRR_RETURN_IF_ERROR(e.req_string("kernel", r.kernel, kMaxNameBytes));
    RDRR_RETURN_IF_ERROR(e.req_string("from", r.from, kMaxStringBytes));
    RDRR_RETURN_IF_ERROR(e.req_string("to", r.to, kMaxStringBytes));
    RDRR_RETURN_IF_ERROR(e.finish());
    out.push_back(std::move(r));
  }
  return Status::Ok();
}

Status read_metadata(Object& root, Provenance& p) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(root, "metadata"));
  {
    RDRR_ASSIGN_OR_RETURN(Object src, open_child(o, "source"));
    RDRR_RETURN_IF_ERROR(src.req_enum("format", parse_source_format, p.source.format));
    RDRR_RETURN_IF_ERROR(read_file_records(src, "files", p.source.files));
    RDRR_RETURN_IF_ERROR(src.finish());
  }
  {
    RDRR_ASSIGN_OR_RETURN(Object conv, open_child(o, "converter"));
    RDRR_RETURN_IF_ERROR(conv.req_string("name", p.converter.name, kMaxStringBytes));
    RDRR_RETURN_IF_ERROR(conv.req_string("version", p.converter.version, kMaxStringBytes));
    RDRR_ASSIGN_OR_RETURN(const json* flags, conv.need("flags"));
    RDRR_RETURN_IF_ERROR(read_string_map(*flags, conv.child("flags"), p.converter.flags));
    RDRR_RETURN_IF_ERROR(conv.finish());
  }
  RDRR_RETURN_IF_ERROR(o.opt_string("convertedAt", p.converted_at, 64));
  RDRR_RETURN_IF_ERROR(read_kernel_repins(o, p.kernel_repins));
  return o.finish();
}

template <typename E>
Status read_count_map(const json& v, const std::string& path, std::optional<E> (*parse)(std::string_view),
                      std::map<E, uint64_t>& out) {
  RDRR_ASSIGN_OR_RETURN(Object o, Object::open(v, path));
  out.clear();
  for (const auto& item : v.items()) {
    const auto key = parse(item.key());
    if (!key) return schema_error(o.child(item.key()), "unknown key \"" + item.key() + "\"");
    uint64_t n = 0;
    RDRR_RETURN_IF_ERROR(o.req_uint(item.key(), n));
    out[*key] = n;
  }
  return o.finish();
}

Status read_quantization_info(Object& root, QuantizationInfo& q) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(root, "quantizationInfo"));
  RDRR_ASSIGN_OR_RETURN(const json* tc, o.need("tensorCounts"));
  RDRR_RETURN_IF_ERROR(read_count_map(*tc, o.child("tensorCounts"), quant::parse_dtype, q.tensor_counts));
  RDRR_ASSIGN_OR_RETURN(const json* lc, o.need("layoutCounts"));
  RDRR_RETURN_IF_ERROR(read_count_map(*lc, o.child("layoutCounts"), quant::parse_layout, q.layout_counts));
  return o.finish();
}

Status read_shards(Object& root, std::vector<ShardInfo>& shards) {
  RDRR_ASSIGN_OR_RETURN(const json* arr, root.need("shards"));
  const std::string path = root.child("shards");
  RDRR_RETURN_IF_ERROR(expect_array(*arr, path, kMaxShards));
  shards.clear();
  for (size_t i = 0; i < arr->size(); ++i) {
    RDRR_ASSIGN_OR_RETURN(Object o, Object::open((*arr)[i], json_pointer_child(path, std::to_string(i))));
    ShardInfo s;
    RDRR_RETURN_IF_ERROR(o.req_uint("index", s.index));
    RDRR_RETURN_IF_ERROR(o.req_string("filename", s.filename, kMaxNameBytes));
    RDRR_RETURN_IF_ERROR(o.req_uint("size", s.size_bytes));
    RDRR_RETURN_IF_ERROR(o.req_string("hash", s.sha256_hex, 64));
    RDRR_RETURN_IF_ERROR(o.req_uint("offset", s.stream_offset_bytes));
    RDRR_RETURN_IF_ERROR(o.finish());
    shards.push_back(std::move(s));
  }
  return Status::Ok();
}

Status read_placement(Object& o, TensorEntry& t) {
  RDRR_RETURN_IF_ERROR(o.req_uint("size", t.size_bytes));
  t.placement.spans.clear();
  const json* spans = o.get("spans");
  if (spans == nullptr) {
    Span s;
    RDRR_RETURN_IF_ERROR(o.req_uint("shard", s.shard_index));
    RDRR_RETURN_IF_ERROR(o.req_uint("offset", s.offset_bytes));
    s.size_bytes = t.size_bytes;
    t.placement.spans.push_back(s);
    return Status::Ok();
  }
  const std::string path = o.child("spans");
  if (o.get("shard") != nullptr || o.get("offset") != nullptr) {
    return schema_error(o.path(), "has both \"spans\" and \"shard\"/\"offset\"");
  }
  RDRR_RETURN_IF_ERROR(expect_array(*spans, path, kMaxShards));
  if (spans->size() < 2) {
    return schema_error(path, "must list at least 2 spans (a tensor in one shard uses shard/offset)");
  }
  for (size_t i = 0; i < spans->size(); ++i) {
    RDRR_ASSIGN_OR_RETURN(Object so, Object::open((*spans)[i], json_pointer_child(path, std::to_string(i))));
    Span s;
    RDRR_RETURN_IF_ERROR(so.req_uint("shardIndex", s.shard_index));
    RDRR_RETURN_IF_ERROR(so.req_uint("offset", s.offset_bytes));
    RDRR_RETURN_IF_ERROR(so.req_uint("size", s.size_bytes));
    RDRR_RETURN_IF_ERROR(so.finish());
    t.placement.spans.push_back(s);
  }
  return Status::Ok();
}

Status read_tensor(const std::string& name, const json& v, const std::string& path, TensorEntry& t) {
  RDRR_ASSIGN_OR_RETURN(Object o, Object::open(v, path));
  t.name = name;
  RDRR_RETURN_IF_ERROR(o.req_enum("dtype", quant::parse_dtype, t.dtype));
  RDRR_ASSIGN_OR_RETURN(const json* shape, o.need("shape"));
  RDRR_RETURN_IF_ERROR(expect_array(*shape, o.child("shape"), kMaxTensorDims));
  t.shape.clear();
  for (size_t i = 0; i < shape->size(); ++i) {
    uint64_t d = 0;
    RDRR_RETURN_IF_ERROR(
        json_fields::to_uint((*shape)[i], json_pointer_child(o.child("shape"), std::to_string(i)), kMaxJsonInteger, d));
    t.shape.push_back(d);
  }
  t.layout.reset();
  if (o.get("layout") != nullptr) {
    quant::Layout l{};
    RDRR_RETURN_IF_ERROR(o.req_enum("layout", quant::parse_layout, l));
    t.layout = l;
  }
  RDRR_RETURN_IF_ERROR(o.req_enum("role", parse_tensor_role, t.role));
  RDRR_RETURN_IF_ERROR(o.req_string("group", t.group, kMaxNameBytes));
  RDRR_RETURN_IF_ERROR(read_placement(o, t));
  RDRR_RETURN_IF_ERROR(o.opt_string("hash", t.sha256_hex, 64));
  return o.finish();
}

Status read_tensors(Object& root, std::vector<TensorEntry>& tensors) {
  RDRR_ASSIGN_OR_RETURN(Object o, open_child(root, "tensors"));
  const json& obj = *root.get("tensors");
  if (obj.size() > kMaxTensors) {
    return schema_error(o.path(),
                        std::to_string(obj.size()) + " tensors exceed the limit of " + std::to_string(kMaxTensors));
  }
  tensors.clear();
  tensors.reserve(obj.size());
  for (const auto& item : obj.items()) {
    if (item.key().size() > kMaxNameBytes) {
      return schema_error(o.path(), "tensor name of " + std::to_string(item.key().size()) +
                                        " bytes exceeds the limit of " + std::to_string(kMaxNameBytes));
    }
    TensorEntry t;
    RDRR_RETURN_IF_ERROR(read_tensor(item.key(), item.value(), o.child(item.key()), t));
    o.get(item.key());
    tensors.push_back(std::move(t));
  }
  return o.finish();
}

Status read_goldens(Object& root, std::vector<GoldenFile>& goldens) {
  RDRR_ASSIGN_OR_RETURN(const json* arr, root.need("goldens"));
  const std::string path = root.child("goldens");
  RDRR_RETURN_IF_ERROR(expect_array(*arr, path, kMaxListEntries));
  goldens.clear();
  for (size_t i = 0; i < arr->size(); ++i) {
    RDRR_ASSIGN_OR_RETURN(Object o, Object::open((*arr)[i], json_pointer_child(path, std::to_string(i))));
    GoldenFile g;
    RDRR_RETURN_IF_ERROR(o.req_string("name", g.name, kMaxStringBytes));
    RDRR_RETURN_IF_ERROR(o.req_uint("size", g.size_bytes));
    RDRR_RETURN_IF_ERROR(o.req_string("hash", g.sha256_hex, 64));
    RDRR_RETURN_IF_ERROR(o.req_string("kind", g.kind, 64));
    RDRR_RETURN_IF_ERROR(o.finish());
    goldens.push_back(std::move(g));
  }
  return Status::Ok();
}

Status read_manifest(const json& doc, Manifest& m) {
  RDRR_ASSIGN_OR_RETURN(Object root, Object::open(doc, ""));
  // The version comes first: a newer manifest fails as "unsupported version", not on its new fields.
  RDRR_ASSIGN_OR_RETURN(const json* version, root.need("version"));
  uint64_t v = 0;
  RDRR_RETURN_IF_ERROR(json_fields::to_uint(*version, "/version", kMaxJsonInteger, v));
  if (v != kManifestVersion) {
    return schema_error("/version", "unsupported manifest version " + std::to_string(v) + " (this reader supports " +
                                        std::to_string(kManifestVersion) + ")");
  }
  m.version = static_cast<uint32_t>(v);
  RDRR_RETURN_IF_ERROR(root.req_string("modelId", m.model_id, kMaxStringBytes));
  RDRR_RETURN_IF_ERROR(root.req_string("modelType", m.model_type, 64));
  RDRR_RETURN_IF_ERROR(root.req_string("quantization", m.quantization, 64));
  RDRR_RETURN_IF_ERROR(read_quantization_info(root, m.quantization_info));
  RDRR_RETURN_IF_ERROR(read_architecture(root, m.architecture));
  RDRR_RETURN_IF_ERROR(read_inference(root, m.inference));
  RDRR_RETURN_IF_ERROR(read_tokenizer(root, m.tokenizer));
  RDRR_RETURN_IF_ERROR(read_metadata(root, m.metadata));
  RDRR_RETURN_IF_ERROR(read_shards(root, m.shards));
  RDRR_RETURN_IF_ERROR(read_tensors(root, m.tensors));
  RDRR_RETURN_IF_ERROR(root.req_uint("totalSize", m.total_size_bytes));
  RDRR_RETURN_IF_ERROR(root.req_string("hashAlgorithm", m.hash_algorithm, 64));
  RDRR_RETURN_IF_ERROR(read_goldens(root, m.goldens));
  return root.finish();
}

}  // namespace

Result<Manifest> parse_manifest(std::string_view json_text, std::string_view source_name) {
  const std::string where(source_name);
  if (json_text.size() > kMaxManifestBytes) {
    return error(StatusCode::kParse, where + ": manifest of " + std::to_string(json_text.size()) +
                                         " bytes exceeds the limit of " + std::to_string(kMaxManifestBytes));
  }
  RDRR_ASSIGN_OR_RETURN(json doc, parse_json_strict(json_text, source_name));
  Manifest m;
  Status s = read_manifest(doc, m);
  if (!s.ok()) return std::move(s).context(where);
  return m;
}

Result<Manifest> read_manifest_file(const std::filesystem::path& pack_dir) {
  const std::filesystem::path path = pack_dir / kManifestFilename;
  RDRR_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  if (file.size_bytes() > kMaxManifestBytes) {
    return error(StatusCode::kParse, path.string() + ": " + std::to_string(file.size_bytes()) +
                                         " bytes exceed the manifest limit of " + std::to_string(kMaxManifestBytes));
  }
  const auto bytes = file.bytes();
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  RDRR_ASSIGN_OR_RETURN(Manifest m, parse_manifest(text, path.string()));
  Status s = validate_manifest(m);
  if (!s.ok()) return std::move(s).context(path.string());
  return m;
}

}  // namespace rdrr
