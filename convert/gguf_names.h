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

// The inverse of gguf_to_hf_name for the same architecture.
std::optional<std::string> hf_to_gguf_name(std::string_view hf_name, std::string_view arch);

}  // namespace rdrr::convert
