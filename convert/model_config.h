// Model configuration for the converter: everything the forward pass depends on, read from a Hugging Face
// checkpoint folder (config.json, generation_config.json, tokenizer files) or from a GGUF file's metadata,
// resolved into the manifest's structs (rdrr/manifest.h: Architecture, Inference, TokenizerInfo).
//
// The values recorded are resolved (rdrr/SPEC.md 8.3): family defaults are applied here, never by the
// runtime. Where a default that matters was applied (e.g. a Gemma 3 text_config without head_dim) a
// warning says so. Anything the manifest cannot represent (an o_proj bias, dynamic RoPE, a
// non-tanh GELU, bidirectional attention, ...) is kUnsupported rather than approximated.
//
// HF (transformers 4 and 5 configs):
//   family      architectures[0] (else model_type): LlamaForCausalLM/llama, MistralForCausalLM/mistral,
//               Qwen2ForCausalLM/qwen2, Qwen3ForCausalLM/qwen3, Gemma2ForCausalLM/gemma2 (Gemma norms and
//               embeddings, no q/k norm, one RoPE; layer_types, else even layers slide; soft-caps default to
//               Gemma2Config's 50 / 30 when absent), Gemma3ForCausalLM/gemma3_text (and the text
//               part of Gemma3ForConditionalGeneration/gemma3), Phi3ForCausalLM/phi3; mixtures of experts
//               (architecture.moe): MixtralForCausalLM/mixtral (num_local_experts, num_experts_per_tok,
//               intermediate_size per expert, always renormalized), Qwen3MoeForCausalLM/qwen3_moe and
//               Qwen2MoeForCausalLM/qwen2_moe (num_experts, or num_local_experts as transformers 5 writes it;
//               moe_intermediate_size, norm_topk_prob, decoder_sparse_step and mlp_only_layers -> denseLayers;
//               Qwen2-MoE's gated shared expert), each with its config class's defaults (warned).
//   required    hidden_size, intermediate_size, num_hidden_layers; num_attention_heads, vocab_size,
//               max_position_embeddings too, except in Gemma 3, whose text configs rely on Gemma3TextConfig's
//               defaults (8 heads, 4 kv heads, head_dim 256, 262208 tokens, 131072 positions,
//               query_pre_attn_scalar 256, sliding_window 4096 when the key is absent, local theta 10000,
//               bos 2 / eos 1): applied with a warning each. Other fields take the config class's default
//               (num_key_value_heads = heads, head_dim = hidden / heads, rms_norm_eps, rope_theta,
//               tie_word_embeddings: Gemma 3 true, others false), warned where it matters.
//   RoPE        transformers-5 `rope_parameters` (flat, or per layer type {full_attention, sliding_attention})
//               and transformers-4 `rope_theta` + `rope_scaling` (+ Gemma 3's `rope_local_base_freq`).
//               Types: default, linear, llama3, yarn (yarn as transformers 5: the explicit factor, attention
//               factor 0.1 ln(factor) + 1 or from mscale/mscale_all_dim, beta_fast 32 / beta_slow 1 by default),
//               longrope / su (short_factor, long_factor; attention factor given or from max / original).
//   layers      `layer_types` is authoritative; without it Gemma 3 uses (sliding_)sliding_window_pattern
//               (default 6), Qwen2/3 slide layers >= max_window_layers when use_sliding_window, Mistral and
//               Phi-3 slide every layer when sliding_window is set. Without an effective window every layer
//               is full attention.
//   unsupported attention_bias true outside Qwen2 (it also biases o_proj), mlp_bias, use_bidirectional_attention,
//               activations other than silu/gelu-tanh, RoPE types dynamic/..., untruncated YaRN.
//   tokenizer   ids from config.json, text_config and generation_config.json (bos/pad: the last of those
//               that sets them; eos: the union in that order, deduplicated); addBos/addEos
//               from tokenizer_config.json, else tokenizer.json's TemplateProcessing post-processor, else
//               the family's default (Qwen: no BOS; others: BOS when a bos id exists).
//
// GGUF (llama.cpp metadata of llama, qwen2, qwen3, gemma2, gemma3, phi3, qwen2moe, qwen3moe files; llama with
// {arch}.expert_count is Mixtral: expert_count, expert_used_count, expert_feed_forward_length (else
// feed_forward_length), expert_shared_feed_forward_length, expert_weights_norm (absent: renormalized except
// qwen2moe, as llama.cpp's graphs); Mistral GGUFs say "llama" and are
// recorded as family mistral when general.basename / general.name / general.base_model.0.name says Mistral):
//   {arch}.block_count, embedding_length, feed_forward_length, attention.head_count(_kv), key_length,
//   context_length, attention.layer_norm_rms_epsilon, rope.freq_base (default 10000, warned),
//   rope.dimension_count (partial rotary), rope.scaling.*, attention.sliding_window,
//   gemma3.attention.sliding_window_pattern (per-layer bools; absent: llama.cpp's period 6, warned),
//   rope.freq_base_swa (Gemma 3 local theta; absent: 10000 as llama.cpp, warned), softcapping keys.
//   f32 metadata values are taken as the shortest decimal that round-trips the f32 (1e-05, not
//   9.999999747378752e-06) so that a GGUF and its HF source record the same numbers.
//   vocabSize = rows of token_embd.weight (else {arch}.vocab_size, else the token count).
//   Quirks reported in the result: llama/mistral q/k rows are permuted (qk_rows_permuted); Gemma norms
//   already hold 1 + w (norm_weights_include_offset, weight offset recorded as 0).
//   Gemma 2 / 3 attention scale as llama.cpp: head_dim (46-layer Gemma 2 27B, 62-layer Gemma 3 27B: hidden / heads). Embedding scale:
//   sqrt(hidden) rounded to f32 (what llama.cpp and an F32 HF checkpoint use).
//   From tensors: tied = no output.weight; attentionBias = blk.0.attn_q.bias or attn_qkv.bias exists
//   (attn_output.bias: kUnsupported); rope_freqs (llama3 scaling of Llama 3.1/3.2) -> freq_factors;
//   rope_factors_long + rope_factors_short (Phi-3) -> longrope with rope.scaling.original_context_length and
//   rope.scaling.attn_factor (absent: transformers' default); with another rope.scaling.type: kUnsupported.
//   Sliding window: Gemma 3 per the pattern, Gemma 2 the even layers (llama.cpp's set_swa_pattern(2); window,
//   attn / final soft-caps default to llama.cpp's 4096 / 50 / 30, warned), Phi-3 every layer (as HF),
//   ignored (warned) for llama/qwen.
//   RoPE scaling: rope.scaling.type none/linear/yarn (+ rope.scale_linear), yarn with
//   original_context_length and optional yarn_beta_fast/slow; a non-default attn_factor is kUnsupported.
//   Tokenizer: eos list = eos_token_id, eot_token_id, eom_token_id (those present); addBos defaults to
//   true for tokenizer.ggml.model "llama" (SentencePiece), addEos to false.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/gguf.h"
#include "quant/dtype.h"
#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::convert {

// Name of the file into which the converter bundles a GGUF file's tokenizer metadata
// (ModelConfig::gguf_tokenizer_json); one of rdrr::kTokenizerFileNames.
inline constexpr std::string_view kGgufTokenizerFileName = "tokenizer.gguf.json";

struct ModelConfig {
  std::string family;              // "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"
  rdrr::Architecture architecture;  // manifest struct, fully filled
  rdrr::Inference inference;        // attention/normalization/ffn/rope/output filled; execution left empty
  rdrr::TokenizerInfo tokenizer;    // ids (bos, eos list, pad), addBos/addEos; files left empty (the writer fills them)
  bool tied_embeddings = false;
  // Source quirks the converter must undo (GGUF inputs):
  bool qk_rows_permuted = false;             // llama/mistral GGUF: undo convert_hf_to_gguf's q/k row permutation
  bool norm_weights_include_offset = false;  // gemma GGUF norms already have +1 added (weight offset recorded as 0)
  // HF: the existing tokenizer.json, tokenizer.model, tokenizer_config.json, special_tokens_map.json to bundle
  // (in that order, full paths).
  std::vector<std::filesystem::path> tokenizer_files;
  // GGUF: the file's tokenizer metadata (every key starting with "tokenizer.") serialised as deterministic
  // JSON (see gguf_tokenizer_json()); the converter bundles it as kGgufTokenizerFileName.
  std::optional<std::string> gguf_tokenizer_json;
  std::vector<std::string> warnings;  // e.g. ignored leftover keys, defaults applied
};

// Reads folder/config.json (required) plus, when present, generation_config.json, tokenizer_config.json
// and tokenizer.json (for addBos/addEos). Errors: kNotFound (folder or config.json missing, no
// tokenizer.json/tokenizer.model), kParse (invalid JSON or a duplicate key, in any of the files), kSchema
// (missing or wrongly typed field, naming file and field), kUnsupported (architecture, RoPE type,
// activation, feature), kValidation (values that disagree: heads vs hidden, layer_types length, ...).
Result<ModelConfig> read_hf_model_config(const std::filesystem::path& folder);

// Reads the model configuration and the tokenizer metadata of an opened GGUF file. Errors: kSchema
// (missing or wrongly typed key), kUnsupported (architecture, RoPE scaling, per-layer shapes),
// kValidation (inconsistent values).
Result<ModelConfig> model_config_from_gguf(const GgufFile& gguf);

// "LlamaForCausalLM (llama), MistralForCausalLM (mistral), ..." entries, for error messages.
std::vector<std::string> supported_architectures();

// The Gemma embedding multiplier as HF computes it: sqrt(hidden_size) as a Python float, stored in an
// f32 buffer, cast to the embedding weight's dtype (F32, BF16 or F16; other dtypes: F32) before the
// multiply. read_hf_model_config uses config.json's dtype/torch_dtype; a converter that knows the real
// dtype of model.embed_tokens.weight can recompute it with this.
double hf_embedding_scale(uint64_t hidden_size, quant::DType weight_dtype);

// The checks rdrr::validate_manifest applies to architecture, inference and tokenizer ids, on a
// ModelConfig (kValidation / kSchema / kNonFinite with the manifest's field names). Both readers run it
// last; exposed for the converter and tests.
Status check_model_config(const ModelConfig& config);

// The GGUF tokenizer metadata as JSON text: {"format": "rdrr-gguf-tokenizer", "version": 1,
// "metadata": {<GGUF key>: <value>, ...}} with every key that starts with "tokenizer." (tokenizer.ggml.model,
// .pre, .tokens, .scores, .token_type, .merges, the special token ids, .add_bos_token, .add_eos_token,
// .add_space_prefix, tokenizer.chat_template, ...). Strings are JSON strings (invalid UTF-8: kValidation),
// integers and bools as such, f32 values as the shortest decimal that round-trips the f32, arrays as
// arrays. Keys sorted, compact, one trailing "\n": the same file always gives the same bytes.
// No "tokenizer." key at all: kSchema.
Result<std::string> gguf_tokenizer_json(const GgufFile& gguf);

}  // namespace rdrr::convert
