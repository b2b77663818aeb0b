// Internal to the model-config readers (hf_config.cpp, hf_rope.cpp, gguf_config.cpp, tokenizer_files.cpp):
// family traits, a typed view of one JSON object of an input file, number formatting.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/model_config.h"
#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::convert::mcfg {

// How a family's config.json describes its mixture of experts (transformers' config classes).
enum class MoeStyle : uint8_t {
  kNone,
  kMixtral,  // num_local_experts, num_experts_per_tok, intermediate_size per expert; always renormalized
  kQwen,     // num_experts, num_experts_per_tok, moe_intermediate_size, norm_topk_prob, decoder_sparse_step,
             // mlp_only_layers (+ shared_expert_intermediate_size, gated, for Qwen2-MoE)
};

// What differs between the supported families (HF defaults are those of the transformers config classes).
struct FamilyTraits {
  ArchFamily family;
  std::string_view name;             // manifest family name, "llama"
  std::string_view hf_architecture;  // "LlamaForCausalLM"
  std::string_view hf_model_type;    // "llama"
  std::string_view gguf_arch;        // general.architecture; "" when the family has none (mistral: "llama")
  bool query_key_norm;               // per-head q/k RMSNorm (Qwen3, Gemma 3)
  bool gemma;                        // (1+w) norms, post-attention and pre/post-FFN norms, scaled embeddings
  bool qkv_bias;                     // q/k/v biases always present (Qwen2)
  bool qwen_sliding;                 // use_sliding_window + max_window_layers semantics (Qwen2/3)
  bool sliding_all_layers;           // sliding_window applies to every layer (Mistral, Phi-3)
  bool tied_default;                 // tie_word_embeddings when absent
  bool adds_bos_default;             // tokenizer adds BOS when nothing says otherwise
  double default_rms_eps;
  double default_rope_theta;
  MoeStyle moe = MoeStyle::kNone;
  bool shared_expert = false;        // Qwen2-MoE: a gated shared expert in every MoE layer
};

const FamilyTraits* family_by_hf_architecture(std::string_view arch);
const FamilyTraits* family_by_hf_model_type(std::string_view model_type);
const FamilyTraits* family_by_gguf_arch(std::string_view arch);
const FamilyTraits& family_traits(ArchFamily family);
std::string supported_list();  // supported_architectures() joined by ", "

// The Gemma3ForConditionalGeneration wrapper (its text_config is read as a gemma3_text config).
inline constexpr std::string_view kGemma3ConditionalArchitecture = "Gemma3ForConditionalGeneration";
inline constexpr std::string_view kGemma3ConditionalModelType = "gemma3";

// Shortest decimal text that round-trips `v` ("1e-05", "10000").
std::string fmt_double(double v);
// The double nearest to the shortest decimal that round-trips the float `f` (1e-05f -> 1e-05).
double f32_as_decimal(float f);
// get_mscale of transformers' YaRN: 1 for scale <= 1, else 0.1 * mscale * ln(scale) + 1.
double yarn_mscale(double scale, double mscale);
// LongRoPE's default attention factor (transformers' _compute_longrope_parameters): 1 for factor <= 1, else
// sqrt(1 + ln(factor) / ln(original_max_position_embeddings)).
double longrope_attention_factor(double factor, uint64_t original_max_positions);

// Reads a whole small input file (config, tokenizer config) as text. kNotFound / kIo / kParse (too large).
Result<std::string> read_text_file(const std::filesystem::path& path);
// read_text_file + rdrr::parse_json_strict; the value must be an object (kParse otherwise).
Result<nlohmann::json> read_json_object_file(const std::filesystem::path& path, std::string_view display_name);

// A typed, read-only view of one JSON object of an input file. `where` names it in errors
// ("config.json", "config.json: text_config"). JSON null counts as absent, like transformers does.
// Errors are kSchema: "<where>: field 'x': missing" / "...: expected a non-negative integer, found \"a\"".
class JsonObject {
 public:
  JsonObject(const nlohmann::json& obj, std::string where) : obj_(&obj), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  const nlohmann::json& json() const { return *obj_; }
  const nlohmann::json* find(std::string_view key) const;  // nullptr when absent or null
  bool has(std::string_view key) const { return find(key) != nullptr; }

  Result<uint64_t> req_uint(std::string_view key) const;
  Result<std::optional<uint64_t>> opt_uint(std::string_view key) const;
  Result<std::optional<double>> opt_number(std::string_view key) const;
  // A list of numbers; absent/null: empty.
  Result<std::vector<double>> number_list(std::string_view key) const;
  Result<std::optional<bool>> opt_bool(std::string_view key) const;
  Result<std::optional<std::string>> opt_string(std::string_view key) const;
  Result<std::optional<JsonObject>> opt_object(std::string_view key) const;
  // A token id or a list of them (eos_token_id); absent/null: empty.
  Result<std::vector<uint64_t>> id_list(std::string_view key) const;

  Status missing(std::string_view key) const;
  Status wrong_type(std::string_view key, std::string_view expected) const;
  std::string field(std::string_view key) const { return where_ + ": field '" + std::string(key) + "'"; }

 private:
  const nlohmann::json* obj_;
  std::string where_;
};

// Appends `id` unless already present (keeps first-seen order).
void append_unique(std::vector<uint64_t>& ids, uint64_t id);

// HF tokenizer side of read_hf_model_config (tokenizer_files.cpp): the tokenizer files to bundle, the
// special token ids (config.json, text_config, generation_config.json) and addBos/addEos.
struct HfTokenizerSources {
  const JsonObject* config;       // config.json
  const JsonObject* text_config;  // Gemma3ForConditionalGeneration's text_config, else nullptr
};
Status read_hf_tokenizer(const std::filesystem::path& folder, const HfTokenizerSources& sources,
                         const FamilyTraits& traits, ModelConfig& cfg);

// HF RoPE (hf_rope.cpp): rope_parameters / rope_theta + rope_scaling of `obj` into cfg.inference.rope.
// Needs cfg.architecture and cfg.inference.attention.layer_types filled.
Status read_hf_rope(const JsonObject& obj, const FamilyTraits& traits, ModelConfig& cfg);

// gguf_tokenizer_json() without the file name in front of errors (the caller adds it).
Result<std::string> tokenizer_json_text(const GgufFile& gguf);

}  // namespace rdrr::convert::mcfg
