// Tokenizer side of the model config: the HF tokenizer files to bundle, special token ids and
// addBos/addEos (read_hf_tokenizer), and the GGUF tokenizer metadata as JSON (gguf_tokenizer_json).
#include <cmath>
#include <cstring>
#include <system_error>

#include "rdrr/json_strict.h"
#include "convert/model_config_internal.h"
#include "rdrr/mapped_file.h"

namespace rdrr::convert {
namespace mcfg {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kHfTokenizerFiles[] = {"tokenizer.json", "tokenizer.model", "tokenizer_config.json",
                                                  "special_tokens_map.json", "chat_template.jinja"};
constexpr std::string_view kTokenizerJson = "tokenizer.json";
constexpr std::string_view kTokenizerConfig = "tokenizer_config.json";
constexpr std::string_view kGenerationConfig = "generation_config.json";
// Gemma3TextConfig's special token defaults (used only when no file names them).
constexpr uint64_t kGemmaDefaultBos = 2;
constexpr uint64_t kGemmaDefaultEos = 1;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // follows symlinks (HF cache folders link into blobs/)
}

// What tokenizer.json's post-processor adds around a single sequence.
struct PostProcessor {
  bool adds_bos = false;
  bool adds_eos = false;
  std::optional<uint64_t> bos_id;
  std::optional<uint64_t> eos_id;
};

std::optional<uint64_t> special_token_id(const json& tmpl, const json& item) {
  const json& tok = item["SpecialToken"];
  if (!tok.is_object() || !tok.contains("id") || !tok["id"].is_string()) return std::nullopt;
  const auto specials = tmpl.find("special_tokens");
  if (specials == tmpl.end() || !specials->is_object()) return std::nullopt;
  const auto entry = specials->find(tok["id"].get<std::string>());
  if (entry == specials->end() || !entry->is_object()) return std::nullopt;
  const auto ids = entry->find("ids");
  if (ids == entry->end() || !ids->is_array() || ids->size() != 1 || !(*ids)[0].is_number_unsigned()) {
    return std::nullopt;
  }
  return (*ids)[0].get<uint64_t>();
}

// Reads only "post_processor" of tokenizer.json (the vocabulary is skipped while parsing: real files are
// tens of MB). Returns nullopt when the post-processor is of a kind this does not interpret.
Result<std::optional<PostProcessor>> read_post_processor(const fs::path& path) {
  RDRR_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  const auto* text = reinterpret_cast<const char*>(file.bytes().data());
  const json::parser_callback_t keep_post_processor = [](int depth, json::parse_event_t event, json& parsed) {
    return !(event == json::parse_event_t::key && depth == 1 && parsed != "post_processor");
  };
  json doc;
  try {
    doc = json::parse(text, text + file.size_bytes(), keep_post_processor);
  } catch (const json::exception& e) {
    return error(StatusCode::kParse, std::string(kTokenizerJson) + ": " + e.what());
  }
  if (!doc.is_object()) return error(StatusCode::kParse, std::string(kTokenizerJson) + ": expected a JSON object");
  PostProcessor out;
  const json pp = doc.value("post_processor", json());
  if (pp.is_null()) return std::optional<PostProcessor>(out);  // no post-processor: nothing is added
  if (!pp.is_object()) return std::optional<PostProcessor>();
  const json* tmpl = nullptr;
  const std::string type = pp.value("type", "");
  if (type == "TemplateProcessing") {
    tmpl = &pp;
  } else if (type == "Sequence" && pp.contains("processors") && pp["processors"].is_array()) {
    for (const json& p : pp["processors"]) {
      if (p.is_object() && p.value("type", "") == "TemplateProcessing") tmpl = &p;
      else if (!p.is_object() || p.value("type", "") != "ByteLevel") return std::optional<PostProcessor>();
    }
  } else if (type != "ByteLevel") {
    return std::optional<PostProcessor>();
  }
  if (tmpl == nullptr) return std::optional<PostProcessor>(out);  // ByteLevel only: nothing is added
  const auto single = tmpl->find("single");
  if (single == tmpl->end() || !single->is_array()) return std::optional<PostProcessor>();
  bool after_sequence = false;
  for (const json& item : *single) {
    if (!item.is_object()) return std::optional<PostProcessor>();
    if (item.contains("Sequence")) {
      after_sequence = true;
    } else if (item.contains("SpecialToken")) {
      const std::optional<uint64_t> id = special_token_id(*tmpl, item);
      if (after_sequence) {
        out.adds_eos = true;
        if (!out.eos_id) out.eos_id = id;
      } else {
        out.adds_bos = true;
        if (!out.bos_id) out.bos_id = id;
      }
    }
  }
  return std::optional<PostProcessor>(out);
}

// An optional JSON object file of the checkpoint (nullopt when absent).
Result<std::optional<json>> read_optional_json(const fs::path& folder, std::string_view name) {
  const fs::path path = folder / name;
  if (!is_file(path)) return std::optional<json>();
  RDRR_ASSIGN_OR_RETURN(json j, read_json_object_file(path, name));
  return std::optional<json>(std::move(j));
}

struct TokenIds {
  std::optional<uint64_t> bos;
  std::vector<uint64_t> eos;
  std::optional<uint64_t> pad;
};

// bos/pad: generation_config.json over text_config over config.json; eos: the union in config order.
Result<TokenIds> read_token_ids(const std::vector<const JsonObject*>& sources, std::vector<std::string>& warnings) {
  TokenIds ids;
  std::string bos_from;
  for (const JsonObject* src : sources) {
    RDRR_ASSIGN_OR_RETURN(std::vector<uint64_t> bos, src->id_list("bos_token_id"));
    if (bos.size() > 1) return src->wrong_type("bos_token_id", "one token id");
    if (!bos.empty()) {
      if (ids.bos && *ids.bos != bos[0]) {
        warnings.push_back(src->field("bos_token_id") + " (" + std::to_string(bos[0]) + ") overrides " + bos_from +
                           " (" + std::to_string(*ids.bos) + ")");
      }
      ids.bos = bos[0];
      bos_from = src->field("bos_token_id");
    }
    RDRR_ASSIGN_OR_RETURN(std::vector<uint64_t> eos, src->id_list("eos_token_id"));
    for (uint64_t id : eos) append_unique(ids.eos, id);
    RDRR_ASSIGN_OR_RETURN(std::vector<uint64_t> pad, src->id_list("pad_token_id"));
    if (pad.size() > 1) return src->wrong_type("pad_token_id", "one token id");
    if (!pad.empty()) ids.pad = pad[0];
  }
  return ids;
}

Status collect_tokenizer_files(const fs::path& folder, ModelConfig& cfg) {
  for (std::string_view name : kHfTokenizerFiles) {
    if (is_file(folder / name)) cfg.tokenizer_files.push_back(folder / name);
  }
  if (!is_file(folder / "tokenizer.json") && !is_file(folder / "tokenizer.model")) {
    return error(StatusCode::kNotFound, folder.string() + ": neither tokenizer.json nor tokenizer.model found");
  }
  return Status::Ok();
}

}  // namespace

Status read_hf_tokenizer(const fs::path& folder, const HfTokenizerSources& sources, const FamilyTraits& traits,
                         ModelConfig& cfg) {
  RDRR_RETURN_IF_ERROR(collect_tokenizer_files(folder, cfg));
  RDRR_ASSIGN_OR_RETURN(std::optional<json> gen_json, read_optional_json(folder, kGenerationConfig));
  RDRR_ASSIGN_OR_RETURN(std::optional<json> tok_json, read_optional_json(folder, kTokenizerConfig));
  std::vector<const JsonObject*> id_sources{sources.config};
  if (sources.text_config) id_sources.push_back(sources.text_config);
  std::optional<JsonObject> gen;
  if (gen_json) id_sources.push_back(&gen.emplace(*gen_json, std::string(kGenerationConfig)));
  RDRR_ASSIGN_OR_RETURN(TokenIds ids, read_token_ids(id_sources, cfg.warnings));

  TokenizerInfo& tok = cfg.tokenizer;
  std::optional<bool> add_bos, add_eos;
  if (tok_json) {
    const JsonObject tc(*tok_json, std::string(kTokenizerConfig));
    RDRR_ASSIGN_OR_RETURN(add_bos, tc.opt_bool("add_bos_token"));
    RDRR_ASSIGN_OR_RETURN(add_eos, tc.opt_bool("add_eos_token"));
  }
  std::optional<PostProcessor> post;
  if ((!add_bos || !add_eos) && is_file(folder / kTokenizerJson)) {
    RDRR_ASSIGN_OR_RETURN(post, read_post_processor(folder / kTokenizerJson));
    if (!post) cfg.warnings.push_back("tokenizer.json: post_processor not interpreted; family defaults for BOS/EOS");
  }
  if (!add_bos) add_bos = post ? post->adds_bos : traits.adds_bos_default && (ids.bos || traits.gemma);
  if (!add_eos) add_eos = post ? post->adds_eos : false;
  if (!ids.bos && post && post->bos_id) {
    cfg.warnings.push_back("bos_token_id taken from tokenizer.json's post_processor (" + std::to_string(*post->bos_id) + ")");
    ids.bos = post->bos_id;
  }
  if (traits.gemma && !ids.bos) {
    cfg.warnings.push_back("bos_token_id: absent, using the transformers default " + std::to_string(kGemmaDefaultBos));
    ids.bos = kGemmaDefaultBos;
  }
  if (traits.gemma && ids.eos.empty()) {
    cfg.warnings.push_back("eos_token_id: absent, using the transformers default " + std::to_string(kGemmaDefaultEos));
    ids.eos.push_back(kGemmaDefaultEos);
  }
  if (ids.eos.empty()) {
    return error(StatusCode::kSchema, "config.json: field 'eos_token_id': missing (also in generation_config.json)");
  }
  if (*add_bos && !ids.bos) {
    return error(StatusCode::kSchema, "config.json: field 'bos_token_id': missing, but the tokenizer adds BOS");
  }
  if (post && post->bos_id && ids.bos && *post->bos_id != *ids.bos && *add_bos) {
    cfg.warnings.push_back("tokenizer.json's post_processor prepends token " + std::to_string(*post->bos_id) +
                           ", bos_token_id is " + std::to_string(*ids.bos));
  }
  tok.add_bos_token = *add_bos;
  tok.add_eos_token = *add_eos;
  tok.bos_token_id = ids.bos;
  tok.eos_token_ids = std::move(ids.eos);
  tok.pad_token_id = ids.pad;
  return Status::Ok();
}

namespace {

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

Status check_utf8(const std::string& s, const std::string& where) {
  if (const auto bad = find_invalid_utf8(s)) {
    return error(StatusCode::kValidation, where + ": invalid UTF-8 at byte " + std::to_string(*bad));
  }
  return Status::Ok();
}

Result<nlohmann::json> float_json(double v, bool is_f32, const std::string& where) {
  if (!std::isfinite(v)) return error(StatusCode::kNonFinite, where + ": " + mcfg::fmt_double(v) + " is not finite");
  return nlohmann::json(is_f32 ? mcfg::f32_as_decimal(static_cast<float>(v)) : v);
}

Result<nlohmann::json> array_json(const GgufArray& a, const std::string& key) {
  nlohmann::json out = nlohmann::json::array();
  if (a.elem_type == GgufValueType::kString) {
    for (size_t i = 0; i < a.strings.size(); ++i) {
      RDRR_RETURN_IF_ERROR(check_utf8(a.strings[i], key + "[" + std::to_string(i) + "]"));
      out.push_back(a.strings[i]);
    }
    return out;
  }
  const uint32_t size = gguf_value_type_size(a.elem_type);
  for (uint64_t i = 0; i < a.count; ++i) {
    const std::byte* p = a.raw.data() + i * size;
    switch (a.elem_type) {
      case GgufValueType::kU8: out.push_back(load<uint8_t>(p)); break;
      case GgufValueType::kI8: out.push_back(load<int8_t>(p)); break;
      case GgufValueType::kU16: out.push_back(load<uint16_t>(p)); break;
      case GgufValueType::kI16: out.push_back(load<int16_t>(p)); break;
      case GgufValueType::kU32: out.push_back(load<uint32_t>(p)); break;
      case GgufValueType::kI32: out.push_back(load<int32_t>(p)); break;
      case GgufValueType::kU64: out.push_back(load<uint64_t>(p)); break;
      case GgufValueType::kI64: out.push_back(load<int64_t>(p)); break;
      case GgufValueType::kBool: out.push_back(load<uint8_t>(p) != 0); break;
      case GgufValueType::kF32: {
        RDRR_ASSIGN_OR_RETURN(nlohmann::json v, float_json(load<float>(p), true, key + "[" + std::to_string(i) + "]"));
        out.push_back(std::move(v));
        break;
      }
      case GgufValueType::kF64: {
        RDRR_ASSIGN_OR_RETURN(nlohmann::json v, float_json(load<double>(p), false, key + "[" + std::to_string(i) + "]"));
        out.push_back(std::move(v));
        break;
      }
      default:
        return error(StatusCode::kUnsupported, key + ": array of " + std::string(gguf_value_type_name(a.elem_type)));
    }
  }
  return out;
}

Result<nlohmann::json> value_json(const GgufValue& v, const std::string& key) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) return nlohmann::json(*u);
  if (const auto* i = std::get_if<int64_t>(&v.data)) return nlohmann::json(*i);
  if (const auto* d = std::get_if<double>(&v.data)) return float_json(*d, v.type == GgufValueType::kF32, key);
  if (const auto* b = std::get_if<bool>(&v.data)) return nlohmann::json(*b);
  if (const auto* s = std::get_if<std::string>(&v.data)) {
    RDRR_RETURN_IF_ERROR(check_utf8(*s, key));
    return nlohmann::json(*s);
  }
  return array_json(std::get<GgufArray>(v.data), key);
}

}  // namespace

Result<std::string> tokenizer_json_text(const GgufFile& gguf) {
  nlohmann::json metadata = nlohmann::json::object();
  for (const GgufKv& kv : gguf.metadata()) {
    if (kv.key.rfind("tokenizer.", 0) != 0) continue;
    RDRR_RETURN_IF_ERROR(check_utf8(kv.key, "metadata key"));
    RDRR_ASSIGN_OR_RETURN(metadata[kv.key], value_json(kv.value, kv.key));
  }
  if (metadata.empty()) return error(StatusCode::kSchema, "no tokenizer metadata (tokenizer.* keys)");
  const nlohmann::json doc = {{"format", "rdrr-gguf-tokenizer"}, {"version", 1}, {"metadata", std::move(metadata)}};
  try {
    return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict) + "\n";
  } catch (const nlohmann::json::exception& e) {
    return error(StatusCode::kInternal, std::string("tokenizer JSON: ") + e.what());
  }
}

}  // namespace mcfg

Result<std::string> gguf_tokenizer_json(const GgufFile& gguf) {
  return mcfg::tokenizer_json_text(gguf).context(gguf.path().string());
}

}  // namespace rdrr::convert
