// Manifest -> canonical manifest.json text.
#include <nlohmann/json.hpp>
#include <utility>

#include "rdrr/manifest_json.h"
#include "rdrr/manifest_json_graph.h"

namespace rdrr {
namespace {

using nlohmann::json;

std::string str(std::string_view s) { return std::string(s); }

template <typename T>
void put_opt(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

json file_record_json(const FileRecord& f) {
  return json{{"name", f.name}, {"size", f.size_bytes}, {"hash", f.sha256_hex}};
}

json file_records_json(const std::vector<FileRecord>& files) {
  json j = json::array();
  for (const FileRecord& f : files) j.push_back(file_record_json(f));
  return j;
}

json architecture_json(const Architecture& a) {
  json j{{"family", str(arch_family_name(a.family))},
              {"numLayers", a.num_layers},
              {"hiddenSize", a.hidden_size},
              {"intermediateSize", a.intermediate_size},
              {"numAttentionHeads", a.num_attention_heads},
              {"numKeyValueHeads", a.num_key_value_heads},
              {"headDim", a.head_dim},
              {"vocabSize", a.vocab_size},
              {"maxSeqLen", a.max_seq_len}};
  if (a.moe.present()) {
    j["moe"] = json{{"numExperts", a.moe.num_experts},
                    {"expertsPerToken", a.moe.experts_per_token},
                    {"expertIntermediateSize", a.moe.expert_intermediate_size},
                    {"normalizeTopK", a.moe.normalize_top_k},
                    {"sharedExpertIntermediateSize", a.moe.shared_expert_intermediate_size},
                    {"sharedExpertGated", a.moe.shared_expert_gated},
                    {"denseLayers", a.moe.dense_layers}};
  }
  return j;
}

json attention_json(const AttentionConfig& a) {
  json types = json::array();
  for (LayerType t : a.layer_types) types.push_back(str(layer_type_name(t)));
  json j{{"causal", a.causal},
         {"attentionBias", a.attention_bias},
         {"queryKeyNorm", a.query_key_norm},
         {"layerTypes", std::move(types)}};
  put_opt(j, "queryPreAttnScalar", a.query_pre_attn_scalar);
  put_opt(j, "attnLogitSoftcapping", a.attn_logit_softcapping);
  put_opt(j, "slidingWindow", a.sliding_window);
  return j;
}

json rope_json(const RopeConfig& r) {
  json j{{"ropeTheta", r.theta},
         {"ropeScalingType", str(rope_scaling_type_name(r.scaling_type))},
         {"partialRotaryFactor", r.partial_rotary_factor},
         {"ropeConvention", str(rope_convention_name(r.convention))}};
  put_opt(j, "ropeLocalTheta", r.local_theta);
  put_opt(j, "ropeScalingFactor", r.scaling_factor);
  put_opt(j, "ropeLowFreqFactor", r.low_freq_factor);
  put_opt(j, "ropeHighFreqFactor", r.high_freq_factor);
  put_opt(j, "ropeOriginalMaxPositions", r.original_max_positions);
  put_opt(j, "ropeYarnBetaFast", r.yarn_beta_fast);
  put_opt(j, "ropeYarnBetaSlow", r.yarn_beta_slow);
  put_opt(j, "ropeYarnAttentionFactor", r.yarn_attention_factor);
  if (!r.short_factors.empty()) j["ropeShortFactors"] = r.short_factors;
  if (!r.long_factors.empty()) j["ropeLongFactors"] = r.long_factors;
  put_opt(j, "ropeAttentionFactor", r.attention_factor);
  if (!r.freq_factors.empty()) j["ropeFreqFactors"] = r.freq_factors;
  return j;
}

json inference_json(const Inference& inf) {
  const NormConfig& n = inf.normalization;
  json output{{"tieWordEmbeddings", inf.output.tie_word_embeddings}, {"embeddingScale", inf.output.embedding_scale}};
  put_opt(output, "finalLogitSoftcapping", inf.output.final_logit_softcapping);
  json j{{"attention", attention_json(inf.attention)},
         {"normalization",
          {{"type", str(norm_type_name(n.type))},
           {"rmsNormEps", n.rms_norm_eps},
           {"rmsNormWeightOffset", n.weight_offset},
           {"postAttentionNorm", n.post_attention_norm},
           {"preFeedforwardNorm", n.pre_feedforward_norm},
           {"postFeedforwardNorm", n.post_feedforward_norm}}},
         {"ffn", {{"activation", str(activation_name(inf.ffn.activation))}, {"gatedActivation", inf.ffn.gated}}},
         {"rope", rope_json(inf.rope)},
         {"output", std::move(output)}};
  if (inf.execution) j["execution"] = execution_graph_to_json(*inf.execution);
  return j;
}

json tokenizer_json(const TokenizerInfo& t) {
  json j{{"type", t.type},
         {"files", file_records_json(t.files)},
         {"addBosToken", t.add_bos_token},
         {"addEosToken", t.add_eos_token},
         {"eosTokenIds", t.eos_token_ids}};
  put_opt(j, "bosTokenId", t.bos_token_id);
  put_opt(j, "padTokenId", t.pad_token_id);
  return j;
}

json metadata_json(const Provenance& p) {
  json j{
      {"source", {{"format", str(source_format_name(p.source.format))}, {"files", file_records_json(p.source.files)}}},
      {"converter", {{"name", p.converter.name}, {"version", p.converter.version}, {"flags", p.converter.flags}}}};
  put_opt(j, "convertedAt", p.converted_at);
  if (!p.kernel_repins.empty()) {
    json repins = json::array();
    for (const KernelRepin& r : p.kernel_repins) repins.push_back({{"kernel", r.kernel}, {"from", r.from}, {"to", r.to}});
    j["kernelRepins"] = std::move(repins);
  }
  return j;
}

json quantization_info_json(const QuantizationInfo& q) {
  json tc = json::object();
  for (const auto& [dtype, n] : q.tensor_counts) tc[str(quant::dtype_name(dtype))] = n;
  json lc = json::object();
  for (const auto& [layout, n] : q.layout_counts) lc[str(quant::layout_name(layout))] = n;
  return json{{"tensorCounts", std::move(tc)}, {"layoutCounts", std::move(lc)}};
}

json tensor_json(const TensorEntry& t) {
  json j{{"dtype", str(quant::dtype_name(t.dtype))},
         {"shape", t.shape},
         {"role", str(tensor_role_name(t.role))},
         {"group", t.group},
         {"size", t.size_bytes}};
  if (t.layout) j["layout"] = str(quant::layout_name(*t.layout));
  if (t.placement.spans.size() == 1) {
    j["shard"] = t.placement.spans[0].shard_index;
    j["offset"] = t.placement.spans[0].offset_bytes;
  } else {  // >= 2 spans (validate_manifest rejects 0)
    json spans = json::array();
    for (const Span& s : t.placement.spans) {
      spans.push_back(json{{"shardIndex", s.shard_index}, {"offset", s.offset_bytes}, {"size", s.size_bytes}});
    }
    j["spans"] = std::move(spans);
  }
  put_opt(j, "hash", t.sha256_hex);
  return j;
}

}  // namespace

std::string serialize_manifest(const Manifest& m) {
  json shards = json::array();
  for (const ShardInfo& s : m.shards) {
    shards.push_back(json{{"index", s.index},
                          {"filename", s.filename},
                          {"size", s.size_bytes},
                          {"hash", s.sha256_hex},
                          {"offset", s.stream_offset_bytes}});
  }
  json tensors = json::object();
  for (const TensorEntry& t : m.tensors) tensors[t.name] = tensor_json(t);
  json goldens = json::array();
  for (const GoldenFile& g : m.goldens) {
    goldens.push_back(json{{"name", g.name}, {"size", g.size_bytes}, {"hash", g.sha256_hex}, {"kind", g.kind}});
  }
  const json doc{{"version", m.version},
                 {"modelId", m.model_id},
                 {"modelType", m.model_type},
                 {"quantization", m.quantization},
                 {"quantizationInfo", quantization_info_json(m.quantization_info)},
                 {"architecture", architecture_json(m.architecture)},
                 {"inference", inference_json(m.inference)},
                 {"tokenizer", tokenizer_json(m.tokenizer)},
                 {"metadata", metadata_json(m.metadata)},
                 {"shards", std::move(shards)},
                 {"tensors", std::move(tensors)},
                 {"totalSize", m.total_size_bytes},
                 {"hashAlgorithm", m.hash_algorithm},
                 {"goldens", std::move(goldens)}};
  std::string out = doc.dump(2, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
  out += '\n';
  return out;
}

}  // namespace rdrr
