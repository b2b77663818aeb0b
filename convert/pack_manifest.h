// Builds the RDRR manifest of a converted model from the pieces the converter produced: the model config,
// the planned and placed tensors, the shard list, the bundled tokenizer files and the provenance.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "convert/pipeline.h"
#include "convert/source.h"
#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::convert {

struct ManifestInputs {
  const SourceModel* source = nullptr;
  std::string model_id;
  std::string quantization;                   // "Q4_K_M"
  const std::vector<TensorJob>* jobs = nullptr;
  std::vector<ShardInfo> shards;
  std::vector<FileRecord> tokenizer_files;    // as bundled in the pack
  std::vector<FileRecord> source_files;       // provenance, names relative to the input folder
  std::map<std::string, std::string> flags;   // converter.flags
  std::vector<std::string> tensor_sha256;     // per job (same order), empty: no tensor hashes
  KvDtype kv_dtype = KvDtype::kF16;  // KV cache precision of the execution graph
};

// The manifest tensor role and group of a canonical tensor name ("embed", "head", "layer.N").
rdrr::TensorRole manifest_role(std::string_view name);
std::string manifest_group(std::string_view name);

// The options that influence the output, in canonical spelling (no paths, no thread count); q4k_layout must be
// resolved (convert_model resolves it from the source's format).
std::map<std::string, std::string> converter_flags(const ConvertOptions& options);

// "Q4_K_M", "F16", ...
std::string quantization_label(Preset preset);

// Plans the execution graph of `m` (architecture, inference parameters and tensors final) with this build's
// kernels (graph/graph_plan.h), checks it (graph/graph_check.h, digests included) and sets
// m.inference.execution. Errors: the planner's or checker's, prefixed with "execution graph: ".
Status add_execution_graph(Manifest& m, KvDtype kv_dtype);

// The graph check before anything is written: add_execution_graph on a manifest holding only the model
// config and the planned tensors (names, dtypes, shapes, layouts). The conversion stops here when the
// graph cannot be planned for this build.
Status preflight_execution_graph(const ModelConfig& cfg, const std::vector<TensorJob>& jobs, KvDtype kv_dtype);

// Fills every field, derives counts, canonicalizes, plans and checks the execution graph (add_execution_graph)
// and runs validate_manifest (its errors, prefixed with "manifest: ", e.g. a model id with control characters).
Result<Manifest> build_manifest(const ManifestInputs& in);

}  // namespace rdrr::convert
