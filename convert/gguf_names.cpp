#include "convert/gguf_names.h"

#include <array>
#include <charconv>
#include <span>
#include <utility>

namespace rdrr::convert {
namespace {

struct NamePair {
  std::string_view gguf;  // after "blk.N." for per-layer names, whole name otherwise
  std::string_view hf;    // after "model.layers.N." for per-layer names
};

constexpr std::array<NamePair, 3> kGlobal = {{
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
}};

// Per-layer names shared by the llama family (llama, mistral, qwen2, qwen3, phi3).
constexpr std::array<NamePair, 12> kLayerCommon = {{
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_qkv", "self_attn.qkv_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_down", "mlp.down_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_up", "mlp.up_proj"},
}};

// Gemma 3 has four norms per layer; its ffn_norm is the pre-feedforward norm.
constexpr std::array<NamePair, 3> kLayerGemma3 = {{
    {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_norm", "pre_feedforward_layernorm"},
    {"post_ffw_norm", "post_feedforward_layernorm"},
}};

// Phi-3 stores gate and up fused; GGUF calls the fused tensor ffn_up.
constexpr std::array<NamePair, 1> kLayerPhi3 = {{{"ffn_up", "mlp.gate_up_proj"}}};

// Splits "<stem>.<suffix>" where suffix is "weight" or "bias".
bool split_suffix(std::string_view name, std::string_view* stem, std::string_view* suffix) {
  for (std::string_view s : {std::string_view(".weight"), std::string_view(".bias")}) {
    if (name.size() > s.size() && name.substr(name.size() - s.size()) == s) {
      *stem = name.substr(0, name.size() - s.size());
      *suffix = s;
      return true;
    }
  }
  return false;
}

// Parses "<prefix><N>.<rest>"; returns false when the name does not have that form.
bool split_layer(std::string_view name, std::string_view prefix, int* layer, std::string_view* rest) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  const std::string_view tail = name.substr(prefix.size());
  const auto [ptr, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), *layer);
  if (ec != std::errc() || ptr == tail.data() || ptr == tail.data() + tail.size() || *ptr != '.') return false;
  *rest = tail.substr(static_cast<size_t>(ptr - tail.data()) + 1);
  return true;
}

// Looks `key` up in the architecture's tables (specific ones first); `from_gguf` picks the direction.
std::optional<std::string_view> map_layer_stem(std::string_view key, std::string_view arch, bool from_gguf) {
  auto search = [&](std::span<const NamePair> table) -> std::optional<std::string_view> {
    for (const NamePair& p : table) {
      if ((from_gguf ? p.gguf : p.hf) == key) return from_gguf ? p.hf : p.gguf;
    }
    return std::nullopt;
  };
  if (arch == "gemma3") {
    if (auto m = search(kLayerGemma3)) return m;
  }
  if (arch == "phi3") {
    if (auto m = search(kLayerPhi3)) return m;
  }
  return search(kLayerCommon);
}

std::optional<std::string> map_name(std::string_view name, std::string_view arch, bool from_gguf) {
  std::string_view stem;
  std::string_view suffix;
  if (!split_suffix(name, &stem, &suffix)) return std::nullopt;
  for (const NamePair& p : kGlobal) {
    if ((from_gguf ? p.gguf : p.hf) == stem) return std::string(from_gguf ? p.hf : p.gguf) + std::string(suffix);
  }
  int layer = -1;
  std::string_view rest;
  if (!split_layer(stem, from_gguf ? "blk." : "model.layers.", &layer, &rest)) return std::nullopt;
  const std::optional<std::string_view> mapped = map_layer_stem(rest, arch, from_gguf);
  if (!mapped) return std::nullopt;
  return std::string(from_gguf ? "model.layers." : "blk.") + std::to_string(layer) + "." + std::string(*mapped) +
         std::string(suffix);
}

}  // namespace

std::optional<std::string> gguf_to_hf_name(std::string_view gguf_name, std::string_view arch) {
  return map_name(gguf_name, arch, true);
}

std::optional<std::string> hf_to_gguf_name(std::string_view hf_name, std::string_view arch) {
  return map_name(hf_name, arch, false);
}

}  // namespace rdrr::convert
