#include "convert/pack_manifest.h"

#include <algorithm>
#include <cctype>

#include "convert/plan.h"
#include "graph/graph_check.h"
#include "graph/graph_plan.h"
#include "rdrr/validate.h"

namespace rdrr::convert {

rdrr::TensorRole manifest_role(std::string_view name) {
  switch (classify_tensor(name)) {
    case convert::TensorRole::kEmbedding: return rdrr::TensorRole::kEmbedding;
    case convert::TensorRole::kLmHead: return rdrr::TensorRole::kLmHead;
    case convert::TensorRole::kNorm: return rdrr::TensorRole::kNorm;
    case convert::TensorRole::kBias: return rdrr::TensorRole::kBias;
    default: return rdrr::TensorRole::kMatmul;
  }
}

std::string manifest_group(std::string_view name) {
  const int layer = layer_index(name);
  if (layer >= 0) return "layer." + std::to_string(layer);
  if (classify_tensor(name) == convert::TensorRole::kEmbedding) return "embed";
  return "head";
}

// `o` as convert_in_arena resolved it (layout and fusion defaults filled in).
std::map<std::string, std::string> converter_flags(const ConvertOptions& o) {
  std::map<std::string, std::string> f;
  f["quantize"] = std::string(preset_name(o.preset));
  f["q4k-layout"] = std::string(quant::layout_name(*o.q4k_layout));  // resolved by convert_in_arena
  f["kv-dtype"] = std::string(kv_dtype_name(o.kv_dtype));
  f["fuse-gate-up"] = o.fuse_gate_up.value_or(false) ? "true" : "false";
  f["fuse-qkv"] = o.fuse_qkv.value_or(false) ? "true" : "false";
  f["shard-size"] = std::to_string(o.shard_size_bytes);
  f["allow-nonfinite"] = o.allow_nonfinite ? "true" : "false";
  for (size_t i = 0; i < o.tensor_types.size(); ++i) f["tensor-type." + std::to_string(i)] = o.tensor_types[i];
  for (const auto& [k, v] : o.extra_flags) f.emplace(k, v);
  return f;
}

std::string quantization_label(Preset preset) {
  std::string s(preset_name(preset));
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

namespace {

TensorEntry tensor_entry(const TensorJob& job) {
  TensorEntry e;
  e.name = job.plan.name;
  e.dtype = job.plan.dtype;
  for (int64_t d : job.plan.shape) e.shape.push_back(static_cast<uint64_t>(d));
  e.layout = job.plan.layout;
  e.role = manifest_role(e.name);
  e.group = manifest_group(e.name);
  e.size_bytes = job.plan.size_bytes;
  e.placement = job.placement;
  return e;
}

}  // namespace

Status add_execution_graph(Manifest& m, KvDtype kv_dtype) {
  m.inference.execution.reset();
  graph::GraphPlanOptions opts;
  opts.kv_dtype = kv_dtype;
  Result<ExecutionGraph> g = graph::plan_execution_graph(m, opts);
  if (!g.ok()) return Status(g.status()).context("execution graph");
  m.inference.execution = std::move(g).value();
  return graph::check_execution_graph(m).context("execution graph");
}

Status preflight_execution_graph(const ModelConfig& cfg, const std::vector<TensorJob>& jobs, KvDtype kv_dtype) {
  Manifest m;
  m.architecture = cfg.architecture;
  m.inference = cfg.inference;
  for (const TensorJob& job : jobs) m.tensors.push_back(tensor_entry(job));
  return add_execution_graph(m, kv_dtype);
}

Result<Manifest> build_manifest(const ManifestInputs& in) {
  const ModelConfig& cfg = in.source->config();
  Manifest m;
  m.model_id = in.model_id;
  m.quantization = in.quantization;
  m.architecture = cfg.architecture;
  m.inference = cfg.inference;
  m.tokenizer = cfg.tokenizer;
  m.tokenizer.files = in.tokenizer_files;
  m.metadata.source.format = in.source->format();
  m.metadata.source.files = in.source_files;
  m.metadata.converter.name = std::string(kConverterName);
  m.metadata.converter.version = std::string(converter_version());
  m.metadata.converter.flags = in.flags;
  m.shards = in.shards;
  for (size_t i = 0; i < in.jobs->size(); ++i) {
    TensorEntry e = tensor_entry((*in.jobs)[i]);
    if (i < in.tensor_sha256.size() && !in.tensor_sha256[i].empty()) e.sha256_hex = in.tensor_sha256[i];
    m.tensors.push_back(std::move(e));
  }
  fill_derived_fields(m);
  canonicalize(m);
  RDRR_RETURN_IF_ERROR(validate_manifest(m).context("manifest"));
  RDRR_RETURN_IF_ERROR(add_execution_graph(m, in.kv_dtype));
  RDRR_RETURN_IF_ERROR(validate_manifest(m).context("manifest"));
  return m;
}

}  // namespace rdrr::convert
