// The text files of a synthetic checkpoint (config, generation config, tokenizer, shard index) and the output
// folder's preparation; used by synthetic_model.cpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "quant/status.h"
#include "tools/synthetic_model.h"

namespace rdrr::tools::detail {

// Creates the folder, or checks that it holds none of the files this tool writes (config.json,
// generation_config.json, tokenizer.json, tokenizer_config.json, model.safetensors,
// model.safetensors.index.json, model-NNNNN-of-NNNNN.safetensors): kAlreadyExists unless force, in which case
// exactly those files are removed.
Status prepare_output_dir(const std::filesystem::path& dir, bool force);
// config.json, generation_config.json, tokenizer.json, tokenizer_config.json.
Status write_text_files(const SyntheticModelOptions& o);
// model.safetensors.index.json for shards (indices into tensors) stored as files[i].
Status write_shard_index(const std::filesystem::path& dir, const std::vector<SyntheticTensor>& tensors,
                         const std::vector<std::vector<size_t>>& shards, const std::vector<std::string>& files,
                         uint64_t total_bytes);

}  // namespace rdrr::tools::detail
