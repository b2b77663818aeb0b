// Random-weight Hugging Face checkpoints of real model shapes (Llama 3.2 1B, Llama 3.1 8B, a tiny one), for
// converter benchmarks and tests: config.json (LlamaForCausalLM, rope_scaling llama3), generation_config.json,
// a synthetic byte-level BPE tokenizer (tokenizer.json + tokenizer_config.json, Llama 3 special tokens), and
// SafeTensors shards split as transformers' save_pretrained does.
//
// Weights: matrices ~ N(0, 0.02) (Irwin-Hall sum of four 16-bit uniforms, scaled), RMSNorm weights = 1.
// Every value depends only on (seed, tensor name, element index): a counter-based hash (murmur3 finaliser),
// run in parallel chunks with oneTBB, so the bytes are identical at any thread count and for any shard size.
// Files are streamed tensor by tensor through two 32 MiB buffers (one filled while the other is written), never
// the whole model in memory.
//
// Tokenizer: ids 0..255 are GPT-2's byte alphabet, then merges (two bytes, then a two-byte token and a byte)
// up to vocab_size - S, then S = min(256, vocab_size - 256) special tokens named as Llama 3's (BOS
// <|begin_of_text|> = vocab_size - S, EOS <|end_of_text|> = BOS + 1; 128000/128001 for the presets).
// The 8B preset uses Llama 3.1's rope_scaling factor 8 (the 1B preset: Llama 3.2's 32).
//
// Sharding (huggingface_hub's split_state_dict_into_shards, transformers' default max_shard_size "5GB" =
// 5e9 bytes): tensors in state-dict order; a tensor larger than the limit gets a shard of its own; otherwise
// a new shard starts when the tensor would push the current one over the limit. One shard: model.safetensors;
// more: model-0000i-of-0000n.safetensors + model.safetensors.index.json ({"metadata": {"total_size"},
// "weight_map"}, keys sorted, indent 2). In each file tensors are sorted by name, the header is compact JSON
// with __metadata__ {"format": "pt"}, padded with spaces to a multiple of 8 bytes (as the safetensors library).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quant/dtype.h"
#include "quant/status.h"

namespace rdrr::tools {

// The checkpoint's architecture: Llama (dense), Qwen3-MoE (q / k norms, mlp.gate + mlp.experts.N.{gate,up,down}_proj,
// every layer sparse) or Mixtral (block_sparse_moe.gate + block_sparse_moe.experts.N.w1 / w3 / w2).
enum class SyntheticFamily : uint8_t { kLlama, kQwen3Moe, kMixtral };

struct SyntheticShape {
  std::string name = "custom";  // preset name, or "custom"
  SyntheticFamily family = SyntheticFamily::kLlama;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 131072;
  double rms_norm_eps = 1e-5;
  double rope_theta = 500000.0;
  // rope_scaling {"rope_type": "llama3", ...}
  double rope_factor = 32.0;
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  int64_t rope_original_max_positions = 8192;
  // Mixture of experts (Qwen3-MoE, Mixtral): experts per layer, selected per token, each expert's FFN width
  // (Qwen3-MoE's moe_intermediate_size; Mixtral's experts are intermediate_size wide).
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
};

// "llama-3.2-1b", "llama-3.1-8b", "tiny", "qwen3-30b-a3b", "mixtral-8x7b", "tiny-qwen3-moe", "tiny-mixtral";
// nullopt for another name.
std::optional<SyntheticShape> synthetic_shape_preset(std::string_view name);
std::vector<std::string> synthetic_shape_names();
// Every dim >= 1, vocab_size >= 258 (256 byte tokens + BOS/EOS), rope values finite and > 0; MoE families: 1 <=
// experts_per_token <= num_experts, the expert width >= 1.
// Errors: kInvalidArgument naming the field.
Status check_synthetic_shape(const SyntheticShape& shape);

struct SyntheticTensor {
  std::string name;            // HF name, e.g. "model.layers.3.mlp.down_proj.weight"
  std::vector<int64_t> shape;  // PyTorch order
  bool is_norm = false;        // RMSNorm weight (all ones)
  int64_t numel() const;
};
// The checkpoint's tensors in state-dict order (embed, per layer q/k/v/o, gate/up/down, the two norms,
// final norm, lm_head unless tied; MoE families: the q / k norms (Qwen3), the router and every expert's three
// matrices in place of gate/up/down).
std::vector<SyntheticTensor> synthetic_tensors(const SyntheticShape& shape);

// Shard assignment: groups of indices into `tensor_bytes` (state-dict order), as save_pretrained splits.
std::vector<std::vector<size_t>> split_into_shards(std::span<const uint64_t> tensor_bytes, uint64_t max_shard_bytes);

// Fills out[i] with the value of element first_elem + i of a matrix tensor (tensor_seed from
// synthetic_tensor_seed); any element range can be generated independently.
uint64_t synthetic_tensor_seed(uint64_t seed, std::string_view tensor_name);
void fill_synthetic_values(uint64_t tensor_seed, int64_t first_elem, std::span<float> out);

std::string synthetic_config_json(const SyntheticShape& shape, quant::DType dtype);
std::string synthetic_generation_config_json(const SyntheticShape& shape);
std::string synthetic_tokenizer_json(const SyntheticShape& shape);
std::string synthetic_tokenizer_config_json(const SyntheticShape& shape);
// BOS / EOS ids: the first two special tokens (128000 / 128001 for a 128256 vocabulary).
int64_t synthetic_bos_id(const SyntheticShape& shape);
int64_t synthetic_eos_id(const SyntheticShape& shape);

struct SyntheticModelOptions {
  SyntheticShape shape;
  quant::DType dtype = quant::DType::kBF16;  // F32, F16 or BF16
  std::filesystem::path out_dir;
  uint64_t seed = 0;
  uint64_t max_shard_bytes = 5'000'000'000;
  bool force = false;  // overwrite the files this tool writes when out_dir already holds a checkpoint
};

struct SyntheticModelSummary {
  std::vector<std::string> safetensors_files;  // file names, in order
  uint64_t tensor_bytes = 0;                   // the index's total_size
  uint64_t file_bytes = 0;                     // all .safetensors files
  int64_t params = 0;
};

// Writes the folder (created if missing). Errors: kInvalidArgument (shape, dtype, max_shard_bytes 0),
// kAlreadyExists (out_dir holds config.json or a model*.safetensors* file and force is false), kIo/kNoSpace.
Result<SyntheticModelSummary> write_synthetic_model(const SyntheticModelOptions& options);

}  // namespace rdrr::tools
