// Shared parts of the model-config readers: family traits, JSON field access, number formatting,
// the Gemma embedding scale, and check_model_config().
#include <array>
#include <charconv>
#include <cmath>
#include <set>
#include <system_error>

#include "convert/model_config_internal.h"
#include "quant/f16.h"
#include "rdrr/json_strict.h"
#include "rdrr/mapped_file.h"
#include "rdrr/validate.h"

namespace rdrr::convert {
namespace mcfg {
namespace {

using nlohmann::json;

// Columns: family, name, HF architecture, model_type, GGUF arch; query_key_norm, gemma, qkv_bias, qwen_sliding,
// sliding_all_layers, tied_default, adds_bos_default; default rms_norm_eps, default rope_theta; MoE style, shared
// expert.
// clang-format off
constexpr MoeStyle kNoMoe = MoeStyle::kNone;
constexpr std::array<FamilyTraits, 10> kFamilies = {{
    {ArchFamily::kLlama,   "llama",   "LlamaForCausalLM",   "llama",       "llama",  false, false, false, false, false, false, true,  1e-6, 10000.0, kNoMoe,              false},
    {ArchFamily::kMistral, "mistral", "MistralForCausalLM", "mistral",     "",       false, false, false, false, true,  false, true,  1e-6, 10000.0, kNoMoe,              false},
    {ArchFamily::kQwen2,   "qwen2",   "Qwen2ForCausalLM",   "qwen2",       "qwen2",  false, false, true,  true,  false, false, false, 1e-6, 10000.0, kNoMoe,              false},
    {ArchFamily::kQwen3,   "qwen3",   "Qwen3ForCausalLM",   "qwen3",       "qwen3",  true,  false, false, true,  false, false, false, 1e-6, 10000.0, kNoMoe,              false},
    {ArchFamily::kGemma3,  "gemma3",  "Gemma3ForCausalLM",  "gemma3_text", "gemma3", true,  true,  false, false, false, true,  true,  1e-6, 1000000.0, kNoMoe,              false},
    {ArchFamily::kPhi3,    "phi3",    "Phi3ForCausalLM",    "phi3",        "phi3",   false, false, false, false, true,  false, true,  1e-5, 10000.0, kNoMoe,              false},
    {ArchFamily::kGemma2,  "gemma2",  "Gemma2ForCausalLM",  "gemma2",      "gemma2", false, true,  false, false, false, true,  true,  1e-6, 10000.0, kNoMoe,              false},
    // Mixture-of-experts families: the dense family's traits plus the MoE style (Mixtral GGUFs say llama).
    {ArchFamily::kMixtral,  "mixtral",   "MixtralForCausalLM",  "mixtral",   "", false, false, false, false, true,  false, true,  1e-5, 1000000.0, MoeStyle::kMixtral, false},
    {ArchFamily::kQwen2Moe, "qwen2_moe", "Qwen2MoeForCausalLM", "qwen2_moe", "qwen2moe", false, false, true,  true,  false, false, false, 1e-6, 10000.0,   MoeStyle::kQwen,    true},
    {ArchFamily::kQwen3Moe, "qwen3_moe", "Qwen3MoeForCausalLM", "qwen3_moe", "qwen3moe", true,  false, false, true,  false, false, false, 1e-6, 10000.0,   MoeStyle::kQwen,    false},
}};
// clang-format on

constexpr uint64_t kMaxConfigFileBytes = 64ull << 20;

std::string brief(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

}  // namespace

const FamilyTraits* family_by_hf_architecture(std::string_view arch) {
  for (const FamilyTraits& t : kFamilies) {
    if (t.hf_architecture == arch) return &t;
  }
  return nullptr;
}

const FamilyTraits* family_by_hf_model_type(std::string_view model_type) {
  for (const FamilyTraits& t : kFamilies) {
    if (t.hf_model_type == model_type) return &t;
  }
  return nullptr;
}

const FamilyTraits* family_by_gguf_arch(std::string_view arch) {
  for (const FamilyTraits& t : kFamilies) {
    if (!t.gguf_arch.empty() && t.gguf_arch == arch) return &t;
  }
  return nullptr;
}

const FamilyTraits& family_traits(ArchFamily family) {
  for (const FamilyTraits& t : kFamilies) {
    if (t.family == family) return t;
  }
  return kFamilies[0];
}

std::string supported_list() {
  std::string out;
  for (const std::string& s : supported_architectures()) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string fmt_double(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

double f32_as_decimal(float f) {
  if (!std::isfinite(f)) return static_cast<double>(f);
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);  // shortest form that round-trips the float
  double d = 0;
  std::from_chars(buf, r.ptr, d);
  return d;
}

double yarn_mscale(double scale, double mscale) {
  if (scale <= 1) return 1.0;
  return 0.1 * mscale * std::log(scale) + 1.0;
}

double longrope_attention_factor(double factor, uint64_t original_max_positions) {
  if (factor <= 1.0) return 1.0;
  return std::sqrt(1.0 + std::log(factor) / std::log(static_cast<double>(original_max_positions)));
}

Result<std::string> read_text_file(const std::filesystem::path& path) {
  RDRR_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(path));
  if (f.size_bytes() > kMaxConfigFileBytes) {
    return error(StatusCode::kParse, path.string() + ": " + std::to_string(f.size_bytes()) +
                                         " bytes, over the limit of " + std::to_string(kMaxConfigFileBytes));
  }
  return std::string(reinterpret_cast<const char*>(f.bytes().data()), f.bytes().size());
}

Result<nlohmann::json> read_json_object_file(const std::filesystem::path& path, std::string_view display_name) {
  RDRR_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  RDRR_ASSIGN_OR_RETURN(json j, rdrr::parse_json_strict(text, display_name));
  if (!j.is_object()) {
    return error(StatusCode::kParse, std::string(display_name) + ": expected a JSON object, found " + brief(j));
  }
  return j;
}

const json* JsonObject::find(std::string_view key) const {
  const auto it = obj_->find(std::string(key));
  if (it == obj_->end() || it->is_null()) return nullptr;
  return &*it;
}

Status JsonObject::missing(std::string_view key) const { return error(StatusCode::kSchema, field(key) + ": missing"); }

Status JsonObject::wrong_type(std::string_view key, std::string_view expected) const {
  const nlohmann::json* v = find(key);
  return error(StatusCode::kSchema,
               field(key) + ": expected " + std::string(expected) + ", found " + (v ? brief(*v) : "null"));
}

Result<uint64_t> JsonObject::req_uint(std::string_view key) const {
  RDRR_ASSIGN_OR_RETURN(std::optional<uint64_t> v, opt_uint(key));
  if (!v) return missing(key);
  return *v;
}

Result<std::optional<uint64_t>> JsonObject::opt_uint(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::optional<uint64_t>();
  if (v->is_number_unsigned()) return std::optional<uint64_t>(v->get<uint64_t>());
  if (v->is_number_float()) {  // 4096.0: accepted when integral (Python json keeps floats as floats)
    const double d = v->get<double>();
    if (d >= 0 && d <= 9007199254740992.0 && std::floor(d) == d) {
      return std::optional<uint64_t>(static_cast<uint64_t>(d));
    }
  }
  return wrong_type(key, "a non-negative integer");
}

Result<std::optional<double>> JsonObject::opt_number(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::optional<double>();
  if (!v->is_number()) return wrong_type(key, "a number");
  return std::optional<double>(v->get<double>());
}

Result<std::vector<double>> JsonObject::number_list(std::string_view key) const {
  const nlohmann::json* v = find(key);
  std::vector<double> out;
  if (v == nullptr) return out;
  if (!v->is_array()) return wrong_type(key, "a list of numbers");
  for (const nlohmann::json& x : *v) {
    if (!x.is_number()) return wrong_type(key, "a list of numbers");
    out.push_back(x.get<double>());
  }
  return out;
}

Result<std::optional<bool>> JsonObject::opt_bool(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return wrong_type(key, "true or false");
  return std::optional<bool>(v->get<bool>());
}

Result<std::optional<std::string>> JsonObject::opt_string(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return wrong_type(key, "a string");
  return std::optional<std::string>(v->get<std::string>());
}

Result<std::optional<JsonObject>> JsonObject::opt_object(std::string_view key) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return std::optional<JsonObject>();
  if (!v->is_object()) return wrong_type(key, "an object");
  return std::optional<JsonObject>(JsonObject(*v, where_ + ": " + std::string(key)));
}

Result<std::vector<uint64_t>> JsonObject::id_list(std::string_view key) const {
  const nlohmann::json* v = find(key);
  std::vector<uint64_t> out;
  if (v == nullptr) return out;
  if (v->is_number_unsigned()) {
    out.push_back(v->get<uint64_t>());
    return out;
  }
  if (!v->is_array()) return wrong_type(key, "a token id or a list of token ids");
  for (const nlohmann::json& e : *v) {
    if (!e.is_number_unsigned()) return wrong_type(key, "a token id or a list of token ids");
    append_unique(out, e.get<uint64_t>());
  }
  return out;
}

void append_unique(std::vector<uint64_t>& ids, uint64_t id) {
  for (uint64_t x : ids) {
    if (x == id) return;
  }
  ids.push_back(id);
}

}  // namespace mcfg

std::vector<std::string> supported_architectures() {
  std::vector<std::string> out;
  for (const mcfg::FamilyTraits& t : mcfg::kFamilies) {
    out.push_back(std::string(t.hf_architecture) + " (" + std::string(t.hf_model_type) + ")");
  }
  out.push_back(std::string(mcfg::kGemma3ConditionalArchitecture) + " (" +
                std::string(mcfg::kGemma3ConditionalModelType) + ", text model only)");
  return out;
}

double hf_embedding_scale(uint64_t hidden_size, quant::DType weight_dtype) {
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(hidden_size)));  // torch.tensor(float): f32
  switch (weight_dtype) {
    case quant::DType::kBF16:
      return static_cast<double>(quant::bf16_to_f32(quant::f32_to_bf16(scale)));
    case quant::DType::kF16:
      return static_cast<double>(quant::f16_to_f32(quant::f32_to_f16(scale)));
    default:
      return static_cast<double>(scale);
  }
}

namespace {

Status invalid(std::string msg) { return error(StatusCode::kValidation, std::move(msg)); }

}  // namespace

Status check_model_config(const ModelConfig& c) {
  if (!parse_arch_family(c.family) || *parse_arch_family(c.family) != c.architecture.family) {
    return invalid("family: \"" + c.family + "\" does not match architecture.family \"" +
                   std::string(arch_family_name(c.architecture.family)) + "\"");
  }
  RDRR_RETURN_IF_ERROR(validate_model_parameters(c.architecture, c.inference, c.tokenizer));
  if (c.inference.output.tie_word_embeddings != c.tied_embeddings) {
    return invalid("inference.output.tieWordEmbeddings disagrees with tied_embeddings");
  }
  return Status::Ok();
}

}  // namespace rdrr::convert
