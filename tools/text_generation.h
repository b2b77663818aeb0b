// Text generation for rdrr-run: a prompt (plain text, or a chat turn through the pack's chat template) encoded
// with the pack's bundled tokenizer, the prefill + decode loop on an Executor with a per-token callback, and
// the streaming text sink (UTF-8 safe through tok::StreamDecoder, flushed per token).
//
//   RDRR_ASSIGN_OR_RETURN(auto tok, load_pack_tokenizer(pack_dir, manifest));
//   RDRR_ASSIGN_OR_RETURN(auto ids, encode_prompt(*tok, pack_dir, {.text = "Hi", .chat = true}));
//   RDRR_ASSIGN_OR_RETURN(GenerationResult r, generate_text(exec, *tok, ids, {.max_new_tokens = 64,
//                                                             .stop_ids = eos_stop_ids(manifest)}, stdout));
//   std::fprintf(stderr, "%s\n", format_generation_stats(r).c_str());
//
// Lives in tools/ (library rdrr_text_generation) because runtime/ must not depend on tokenizer/.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quant/status.h"
#include "rdrr/manifest.h"
#include "runtime/executor.h"
#include "tokenizer/tokenizer.h"

namespace rdrr::tools {

// The tokenizer bundled in a pack (tok::load_tokenizer with the manifest's BOS/EOS ids). Errors keep
// load_tokenizer's code (kNotFound: no tokenizer file, the message lists the names looked for; kParse,
// kSchema, kUnsupported) with the context "pack DIR: no usable tokenizer".
Result<std::unique_ptr<tok::Tokenizer>> load_pack_tokenizer(const std::filesystem::path& pack_dir,
                                                            const Manifest& manifest);

struct PromptSpec {
  std::string text = {};
  bool chat = false;   // render [system], user=text through the pack's chat template, add_generation_prompt
  std::string system = {};  // chat only: a system message first when not empty
};

// The prompt's token ids. Plain: text encoded with the tokenizer's BOS/EOS rule (add_special), special
// token texts parsed. Chat: tok::load_chat_template(pack_dir) + tok::encode_chat (kNotFound naming where it
// looked when the pack has no template). kInvalidArgument when the prompt encodes to no tokens.
Result<std::vector<uint32_t>> encode_prompt(const tok::Tokenizer& tok, const std::filesystem::path& pack_dir,
                                            const PromptSpec& prompt);

// The manifest's EOS ids (tokenizer.eosTokenIds) as stop ids.
std::vector<uint32_t> eos_stop_ids(const Manifest& manifest);

struct GenerationOptions {
  uint32_t max_new_tokens = 16;          // 0: prefill only
  runtime::SampleOptions sample;
  std::vector<uint32_t> stop_ids;        // generation ends after producing one of these (it is kept)
  runtime::LogitsMode prompt_logits = runtime::LogitsMode::kNone;
};

struct GenerationResult {
  std::vector<uint32_t> tokens;  // generated ids, the stop id included when one ended generation
  bool stopped = false;          // the last token is a stop id
  bool context_full = false;     // ended before max_new_tokens because the KV cache is full
  size_t prompt_tokens = 0;
  double prefill_s = 0.0;        // wall time of the prefill (prompt through the model, first token sampled)
  double decode_s = 0.0;         // wall time of the decode loop (tokens.size() - 1 steps, sink calls included)
  std::vector<float> prompt_logits;  // per GenerationOptions::prompt_logits (runtime::PrefillResult::logits)

  size_t decode_steps() const { return tokens.empty() ? 0 : tokens.size() - 1; }
  double prefill_tok_per_s() const;
  double decode_tok_per_s() const;  // 0 when no decode step ran
};

// Called with every generated token as it arrives; a non-OK status stops generation and is returned.
using TokenSink = std::function<Status(uint32_t token)>;

// exec.reset(), prefill(prompt), then decode steps until max_new_tokens tokens, a stop id or a full KV cache
// (context_full; a prompt longer than the context is the executor's kInvalidArgument); `sink` (may be
// empty) sees each token in order. Executor errors are returned with their codes.
Result<GenerationResult> generate_tokens(runtime::Executor& exec, std::span<const uint32_t> prompt,
                                         const GenerationOptions& opts, const TokenSink& sink = {});

// generate_tokens with the text of every token streamed to `out` (StreamDecoder, special tokens skipped, so
// an EOS prints nothing), fflush per token. What is written equals tok.decode(result.tokens, skip_special)
// whenever that is valid UTF-8. kIo when writing fails.
Result<GenerationResult> generate_text(runtime::Executor& exec, const tok::Tokenizer& tok,
                                       std::span<const uint32_t> prompt, const GenerationOptions& opts,
                                       std::FILE* out);

// "prompt 12 tokens, generated 8 tokens[ (stop token)| (context full)]; prefill 0.010 s (1200.0 tok/s), decode 7 steps
// 0.050 s (140.0 tok/s)".
std::string format_generation_stats(const GenerationResult& r);

}  // namespace rdrr::tools
