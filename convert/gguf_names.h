// GGUF tensor names <-> canonical Hugging Face names (the names RDRR manifests use).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rdrr::convert {

// Maps a GGUF tensor name ("blk.3.attn_q.weight") to the HF name ("model.layers.3.self_attn.q_proj.weight")
// for GGUF architecture `arch` (general.architecture: llama, qwen2, qwen3, gemma3, phi3, ...).
// Returns nullopt for names this mapping does not know (the caller reports them).
std::optional<std::string> gguf_to_hf_name(std::string_view gguf_name, std::string_view arch);

// rope_freqs.weight, rope_factors_long.weight, rope_factors_short.weight: per-pair RoPE factors, which
// model_config_from_gguf reads into the manifest's inference.rope (not weights; gguf_to_hf_name knows none).
bool is_gguf_rope_factor_tensor(std::string_view gguf_name);

// The inverse of gguf_to_hf_name for the same architecture.
std::optional<std::string> hf_to_gguf_name(std::string_view hf_name, std::string_view arch);

}  // namespace rdrr::convert
