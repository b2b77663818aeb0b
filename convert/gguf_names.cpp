#include "convert/gguf_names.h"

#include <array>
#include <charconv>
#include <span>
#include <utility>

#include "rdrr/model_tensors.h"

namespace rdrr::convert {
namespace {

using M = ModelTensor;

// The HF side is the model tensor's stem (rdrr/model_tensors.h); either leaf (.weight / .bias) maps.
struct NamePair {
  std::string_view gguf;  // after "blk.N." for per-layer names, whole name otherwise
  ModelTensor hf;
};

constexpr std::array<NamePair, 3> kGlobal = {{
    {"token_embd", M::kEmbedTokens},
    {"output_norm", M::kFinalNorm},
    {"output", M::kLmHead},
}};

// Per-layer names shared by the llama family (llama, mistral, qwen2, qwen3, phi3).
constexpr std::array<NamePair, 18> kLayerCommon = {{
    {"attn_norm", M::kInputNorm},
    {"attn_q", M::kQProj},
    {"attn_k", M::kKProj},
    {"attn_v", M::kVProj},
    {"attn_output", M::kOProj},
    {"attn_qkv", M::kQkvProj},
    {"attn_q_norm", M::kQNorm},
    {"attn_k_norm", M::kKNorm},
    {"ffn_gate", M::kGateProj},
    {"ffn_down", M::kDownProj},
    {"ffn_norm", M::kPostAttentionNorm},
    {"ffn_up", M::kUpProj},
    // Mixture of experts (llama.cpp's names; ffn_gate_exps / ffn_up_exps are stacked into gate_up by the
    // source reader, convert/source.h).
    {"ffn_gate_inp", M::kRouter},
    {"ffn_down_exps", M::kExpertsDown},
    {"ffn_gate_shexp", M::kSharedGateProj},
    {"ffn_up_shexp", M::kSharedUpProj},
    {"ffn_down_shexp", M::kSharedDownProj},
    {"ffn_gate_inp_shexp", M::kSharedExpertGate},
}};

// Gemma 2 and 3 have four norms per layer; their ffn_norm is the pre-feedforward norm.
constexpr std::array<NamePair, 3> kLayerGemma3 = {{
    {"post_attention_norm", M::kPostAttentionNorm},
    {"ffn_norm", M::kPreFeedforwardNorm},
    {"post_ffw_norm", M::kPostFeedforwardNorm},
}};

// Phi-3 stores gate and up fused; GGUF calls the fused tensor ffn_up.
constexpr std::array<NamePair, 1> kLayerPhi3 = {{{"ffn_up", M::kGateUpProj}}};

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

// Parses "<prefix><N>.<rest>" (N >= 0); returns false when the name does not have that form.
bool split_layer(std::string_view name, std::string_view prefix, int* layer, std::string_view* rest) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  const std::string_view tail = name.substr(prefix.size());
  const auto [ptr, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), *layer);
  if (ec != std::errc() || ptr == tail.data() || ptr == tail.data() + tail.size() || *ptr != '.' || *layer < 0) {
    return false;
  }
  *rest = tail.substr(static_cast<size_t>(ptr - tail.data()) + 1);
  return true;
}

// Looks `key` (a GGUF stem, or the HF stem inside a layer) up in the architecture's tables (specific ones
// first); `from_gguf` picks the direction. Returns the other side's pair.
std::optional<NamePair> map_layer_stem(std::string_view key, std::string_view arch, bool from_gguf) {
  auto search = [&](std::span<const NamePair> table) -> std::optional<NamePair> {
    for (const NamePair& p : table) {
      if ((from_gguf ? p.gguf : model_tensor_info(p.hf).stem) == key) return p;
    }
    return std::nullopt;
  };
  if (arch == "gemma3" || arch == "gemma2") {
    if (auto m = search(kLayerGemma3)) return m;
  }
  if (arch == "phi3") {
    if (auto m = search(kLayerPhi3)) return m;
  }
  return search(kLayerCommon);
}

std::optional<std::string> gguf_to_hf(std::string_view stem, std::string_view suffix, std::string_view arch) {
  for (const NamePair& p : kGlobal) {
    if (p.gguf == stem) return model_tensor_stem(p.hf) + std::string(suffix);
  }
  int layer = -1;
  std::string_view rest;
  if (!split_layer(stem, "blk.", &layer, &rest)) return std::nullopt;
  const std::optional<NamePair> mapped = map_layer_stem(rest, arch, true);
  if (!mapped) return std::nullopt;
  return model_tensor_stem(mapped->hf, static_cast<uint32_t>(layer)) + std::string(suffix);
}

std::optional<std::string> hf_to_gguf(std::string_view stem, std::string_view suffix, std::string_view arch) {
  for (const NamePair& p : kGlobal) {
    if (model_tensor_stem(p.hf) == stem) return std::string(p.gguf) + std::string(suffix);
  }
  const std::optional<LayerTensorName> l = split_layer_name(stem);
  if (!l) return std::nullopt;
  const std::optional<NamePair> mapped = map_layer_stem(l->rest, arch, false);
  if (!mapped) return std::nullopt;
  return "blk." + std::to_string(l->layer) + "." + std::string(mapped->gguf) + std::string(suffix);
}

std::optional<std::string> map_name(std::string_view name, std::string_view arch, bool from_gguf) {
  std::string_view stem;
  std::string_view suffix;
  if (!split_suffix(name, &stem, &suffix)) return std::nullopt;
  return from_gguf ? gguf_to_hf(stem, suffix, arch) : hf_to_gguf(stem, suffix, arch);
}

}  // namespace

bool is_gguf_rope_factor_tensor(std::string_view gguf_name) {
  return gguf_name == "rope_freqs.weight" || gguf_name == "rope_factors_long.weight" ||
         gguf_name == "rope_factors_short.weight";
}

std::optional<std::string> gguf_to_hf_name(std::string_view gguf_name, std::string_view arch) {
  return map_name(gguf_name, arch, true);
}

std::optional<std::string> hf_to_gguf_name(std::string_view hf_name, std::string_view arch) {
  return map_name(hf_name, arch, false);
}

}  // namespace rdrr::convert
