#include "tokenizer/chat_template.h"

#include <fstream>
#include <sstream>

#include "tokenizer/jinja.h"
#include "tokenizer/json_util.h"
#include "tokenizer/tokenizer.h"

namespace rdrr::tok {

namespace {

std::string token_text(const json& cfg, std::string_view key) {
  const json* v = find_field(cfg, key);
  if (v == nullptr) return "";
  if (v->is_string()) return v->get<std::string>();
  if (const json* c = find_field(*v, "content"); c != nullptr && c->is_string()) return c->get<std::string>();
  return "";
}

Result<std::optional<ChatTemplateConfig>> from_tokenizer_config(const std::filesystem::path& file) {
  RDRR_ASSIGN_OR_RETURN(json cfg, read_json_file(file));
  const std::string name = file.filename().string();
  const json* t = find_field(cfg, "chat_template");
  if (t == nullptr) return std::optional<ChatTemplateConfig>();
  ChatTemplateConfig out;
  out.source = name;
  if (t->is_string()) {
    out.chat_template = t->get<std::string>();
  } else if (t->is_array()) {
    for (const json& e : *t) {
      const json* n = find_field(e, "name");
      const json* body = find_field(e, "template");
      if (n && body && n->is_string() && body->is_string() && n->get<std::string>() == "default") out.chat_template = body->get<std::string>();
    }
    if (out.chat_template.empty()) return field_error(StatusCode::kSchema, name, "/chat_template", "no entry named 'default'");
  } else {
    return field_error(StatusCode::kSchema, name, "/chat_template", "expected a string or a list of {name, template}");
  }
  out.bos_token = token_text(cfg, "bos_token");
  out.eos_token = token_text(cfg, "eos_token");
  return std::optional<ChatTemplateConfig>(std::move(out));
}

// transformers 5 saves the template beside tokenizer_config.json as chat_template.jinja.
Result<std::optional<ChatTemplateConfig>> from_jinja_file(const std::filesystem::path& dir) {
  const auto file = dir / kChatTemplateJinja;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return std::optional<ChatTemplateConfig>();
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return error(StatusCode::kIo, file.string() + ": read failed");
  ChatTemplateConfig out;
  out.source = std::string(kChatTemplateJinja);
  out.chat_template = ss.str();
  const auto cfg_path = dir / kTokenizerConfigJson;
  if (std::filesystem::is_regular_file(cfg_path, ec)) {
    RDRR_ASSIGN_OR_RETURN(json cfg, read_json_file(cfg_path));
    out.bos_token = token_text(cfg, "bos_token");
    out.eos_token = token_text(cfg, "eos_token");
  }
  return std::optional<ChatTemplateConfig>(std::move(out));
}

Result<std::optional<ChatTemplateConfig>> from_gguf_json(const std::filesystem::path& file) {
  RDRR_ASSIGN_OR_RETURN(json root, read_json_file(file));
  const json* md = find_field(root, "metadata");
  const json* t = md ? find_field(*md, "tokenizer.chat_template") : nullptr;
  if (t == nullptr) return std::optional<ChatTemplateConfig>();
  if (!t->is_string()) {
    return field_error(StatusCode::kSchema, file.filename().string(), "/metadata/tokenizer.chat_template", "expected a string");
  }
  ChatTemplateConfig out;
  out.source = file.filename().string();
  out.chat_template = t->get<std::string>();
  RDRR_ASSIGN_OR_RETURN(auto tok, load_tokenizer_file(file));
  if (tok->bos_id()) out.bos_token = tok->token_to_piece(*tok->bos_id());
  if (!tok->eos_ids().empty()) out.eos_token = tok->token_to_piece(tok->eos_ids().front());
  return std::optional<ChatTemplateConfig>(std::move(out));
}

}  // namespace

Result<std::string> apply_chat_template(std::string_view chat_template, std::span<const ChatMessage> messages,
                                        const ChatTemplateOptions& opts) {
  RDRR_ASSIGN_OR_RETURN(std::vector<jinja::Node> tmpl, jinja::parse(chat_template));
  jinja::Array msgs;
  for (const ChatMessage& m : messages) {
    msgs.push_back(jinja::make_object({{"role", jinja::Value(m.role)}, {"content", jinja::Value(m.content)}}));
  }
  jinja::Object globals{{"messages", jinja::make_array(std::move(msgs))},
                        {"add_generation_prompt", jinja::Value(opts.add_generation_prompt)},
                        {"bos_token", jinja::Value(opts.bos_token)},
                        {"eos_token", jinja::Value(opts.eos_token)}};
  return jinja::render(tmpl, globals);
}

Result<std::vector<TokenId>> encode_chat(const Tokenizer& tok, const ChatTemplateConfig& cfg,
                                         std::span<const ChatMessage> messages, bool add_generation_prompt) {
  RDRR_ASSIGN_OR_RETURN(std::string text, apply_chat_template(cfg.chat_template, messages,
                                                              {add_generation_prompt, cfg.bos_token, cfg.eos_token}));
  return tok.encode(text, {.add_special = false, .parse_special = true});
}

Result<ChatTemplateConfig> load_chat_template(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto cfg = dir / kTokenizerConfigJson;
  if (std::filesystem::is_regular_file(cfg, ec)) {
    RDRR_ASSIGN_OR_RETURN(auto found, from_tokenizer_config(cfg));
    if (found) return std::move(*found);
  }
  {
    RDRR_ASSIGN_OR_RETURN(auto found, from_jinja_file(dir));
    if (found) return std::move(*found);
  }
  const auto gguf = dir / kTokenizerGgufJson;
  if (std::filesystem::is_regular_file(gguf, ec)) {
    RDRR_ASSIGN_OR_RETURN(auto found, from_gguf_json(gguf));
    if (found) return std::move(*found);
  }
  return error(StatusCode::kNotFound, dir.string() + ": no chat template (looked for 'chat_template' in " +
                                          std::string(kTokenizerConfigJson) + ", " + std::string(kChatTemplateJinja) +
                                          ", 'tokenizer.chat_template' in " +
                                          std::string(kTokenizerGgufJson) + ")");
}

}  // namespace rdrr::tok
