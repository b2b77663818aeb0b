// Chat templates: the Jinja template of tokenizer_config.json ("chat_template") rendered over a
// conversation, as transformers' apply_chat_template(messages, tokenize=False, add_generation_prompt=...)
// does. A documented subset of Jinja (README.md "Chat templates"): enough for the Llama-3, Qwen2 (ChatML)
// and Gemma templates and most others; anything outside it is a kParse/kUnsupported error, never a
// silently different prompt.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "quant/status.h"
#include "tokenizer/tokenizer.h"

namespace rdrr::tok {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", ...
  std::string content;  // plain text
};

struct ChatTemplateOptions {
  bool add_generation_prompt = true;  // end with the header that starts the assistant's turn
  std::string bos_token;              // template variables bos_token / eos_token (token texts)
  std::string eos_token;
};

// Renders `chat_template` with the variables messages, add_generation_prompt, bos_token, eos_token.
// Errors: kParse (template syntax, with the line), kInvalidArgument (raise_exception(...) in the template,
// its message included; type errors), kUnsupported (a filter/test/function/statement outside the subset).
Result<std::string> apply_chat_template(std::string_view chat_template, std::span<const ChatMessage> messages,
                                        const ChatTemplateOptions& opts);

// transformers 5 writes the template to this file instead of tokenizer_config.json's "chat_template".
inline constexpr std::string_view kChatTemplateJinja = "chat_template.jinja";

struct ChatTemplateConfig {
  std::string chat_template;
  std::string bos_token;  // token texts for the template (may be empty)
  std::string eos_token;
  std::string source;     // "tokenizer_config.json" or "tokenizer.gguf.json"
};

// The chat template of a pack / checkpoint folder: tokenizer_config.json's "chat_template" (a string, or
// the entry named "default" of a list of {name, template}) with its bos_token / eos_token, else
// chat_template.jinja (with tokenizer_config.json's bos/eos tokens), else tokenizer.gguf.json's tokenizer.chat_template with the pieces of its bos/eos ids. Errors: kNotFound
// (no template; the message says where it looked), kParse/kSchema (malformed file, naming file and field).
Result<ChatTemplateConfig> load_chat_template(const std::filesystem::path& dir);

// The prompt ids of a conversation, as transformers' apply_chat_template(tokenize=True): the template
// rendered with cfg's bos/eos texts, then encoded with add_special = false (the template writes BOS itself;
// adding it again would double it) and special token texts parsed ("<|im_start|>" -> its id).
Result<std::vector<TokenId>> encode_chat(const Tokenizer& tok, const ChatTemplateConfig& cfg,
                                         std::span<const ChatMessage> messages, bool add_generation_prompt = true);

}  // namespace rdrr::tok
