#include "tools/text_generation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "tokenizer/chat_template.h"

namespace rdrr::tools {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Status write_all(std::FILE* out, const std::string& text) {
  if (text.empty()) return Status::Ok();
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) {
    return error(StatusCode::kIo, "writing the generated text failed");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<tok::Tokenizer>> load_pack_tokenizer(const std::filesystem::path& pack_dir,
                                                            const Manifest& manifest) {
  std::string listed;
  for (const FileRecord& f : manifest.tokenizer.files) listed += (listed.empty() ? "" : ", ") + f.name;
  return tok::load_tokenizer(pack_dir, &manifest.tokenizer)
      .context("pack " + pack_dir.string() + ": no usable tokenizer (manifest tokenizer.files: " + listed + ")");
}

Result<std::vector<uint32_t>> encode_prompt(const tok::Tokenizer& tok, const std::filesystem::path& pack_dir,
                                            const PromptSpec& prompt) {
  std::vector<tok::TokenId> ids;
  if (prompt.chat) {
    RDRR_ASSIGN_OR_RETURN(tok::ChatTemplateConfig cfg, tok::load_chat_template(pack_dir).context(
                                                           "pack " + pack_dir.string() + ": --chat"));
    std::vector<tok::ChatMessage> messages;
    if (!prompt.system.empty()) messages.push_back({"system", prompt.system});
    messages.push_back({"user", prompt.text});
    RDRR_ASSIGN_OR_RETURN(ids, tok::encode_chat(tok, cfg, messages, /*add_generation_prompt=*/true)
                                   .context("chat template from " + cfg.source));
  } else {
    RDRR_ASSIGN_OR_RETURN(ids, tok.encode(prompt.text, {.add_special = true, .parse_special = true})
                                   .context("--prompt"));
  }
  if (ids.empty()) return error(StatusCode::kInvalidArgument, "--prompt: the prompt encodes to no tokens");
  std::vector<uint32_t> out;
  out.reserve(ids.size());
  for (tok::TokenId id : ids) {
    if (id < 0) return error(StatusCode::kInternal, "--prompt: tokenizer returned a negative id");
    out.push_back(static_cast<uint32_t>(id));
  }
  return out;
}

std::vector<uint32_t> eos_stop_ids(const Manifest& manifest) {
  std::vector<uint32_t> out;
  for (uint64_t id : manifest.tokenizer.eos_token_ids) {
    if (id <= UINT32_MAX) out.push_back(static_cast<uint32_t>(id));
  }
  return out;
}

double GenerationResult::prefill_tok_per_s() const {
  return prefill_s > 0.0 ? double(prompt_tokens) / prefill_s : 0.0;
}

double GenerationResult::decode_tok_per_s() const {
  return decode_steps() > 0 && decode_s > 0.0 ? double(decode_steps()) / decode_s : 0.0;
}

Result<GenerationResult> generate_tokens(runtime::Executor& exec, std::span<const uint32_t> prompt,
                                         const GenerationOptions& opts, const TokenSink& sink) {
  GenerationResult r;
  r.prompt_tokens = prompt.size();
  exec.reset();
  const Clock::time_point t0 = Clock::now();
  RDRR_ASSIGN_OR_RETURN(runtime::PrefillResult first, exec.prefill(prompt, opts.prompt_logits, opts.sample));
  r.prefill_s = seconds_since(t0);
  r.prompt_logits = std::move(first.logits);
  if (opts.max_new_tokens == 0) return r;
  const auto is_stop = [&](uint32_t t) {
    return std::find(opts.stop_ids.begin(), opts.stop_ids.end(), t) != opts.stop_ids.end();
  };
  const Clock::time_point t1 = Clock::now();
  uint32_t token = first.next_token;
  while (true) {
    r.tokens.push_back(token);
    if (sink) RDRR_RETURN_IF_ERROR(sink(token));
    if (is_stop(token)) {
      r.stopped = true;
      break;
    }
    if (r.tokens.size() >= opts.max_new_tokens) break;
    if (exec.position() >= exec.context_length()) {
      r.context_full = true;
      break;
    }
    RDRR_ASSIGN_OR_RETURN(token, exec.decode(opts.sample));
  }
  r.decode_s = seconds_since(t1);
  return r;
}

Result<GenerationResult> generate_text(runtime::Executor& exec, const tok::Tokenizer& tok,
                                       std::span<const uint32_t> prompt, const GenerationOptions& opts,
                                       std::FILE* out) {
  tok::StreamDecoder stream(tok, {.skip_special = true});
  const TokenSink sink = [&](uint32_t token) { return write_all(out, stream.push(static_cast<tok::TokenId>(token))); };
  RDRR_ASSIGN_OR_RETURN(GenerationResult r, generate_tokens(exec, prompt, opts, sink));
  RDRR_RETURN_IF_ERROR(write_all(out, stream.flush()));
  return r;
}

std::string format_generation_stats(const GenerationResult& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "prompt %zu tokens, generated %zu tokens%s; prefill %.3f s (%.1f tok/s)",
                r.prompt_tokens, r.tokens.size(),
                r.stopped ? " (stop token)" : (r.context_full ? " (context full)" : ""), r.prefill_s,
                r.prefill_tok_per_s());
  std::string s = buf;
  if (r.decode_steps() > 0) {
    std::snprintf(buf, sizeof buf, ", decode %zu steps %.3f s (%.1f tok/s)", r.decode_steps(), r.decode_s,
                  r.decode_tok_per_s());
    s += buf;
  }
  return s;
}

}  // namespace rdrr::tools
