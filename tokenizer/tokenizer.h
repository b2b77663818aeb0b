// rdrr tokenizers: text <-> token ids for the tokenizer bundled in a pack (or an HF checkpoint folder).
//
//   RDRR_ASSIGN_OR_RETURN(auto tok, tok::load_tokenizer(pack_dir, &manifest.tokenizer));
//   RDRR_ASSIGN_OR_RETURN(std::vector<tok::TokenId> ids, tok->encode("Once upon a time"));
//   tok::StreamDecoder out(*tok, {.skip_special = true});
//   for (TokenId id : generated) std::cout << out.push(id) << std::flush;   // complete UTF-8 only
//   std::cout << out.flush();
//
// Sources, first present wins: tokenizer.json (HF tokenizers: BPE with byte fallback, byte-level BPE with
// regex pre-tokenization), tokenizer.model (SentencePiece, through libsentencepiece), tokenizer.gguf.json
// (a GGUF file's tokenizer.* metadata as written by the converter: "llama" = SentencePiece-style scores,
// "gpt2" = byte-level BPE with merges). README.md lists the supported components.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::tok {

using TokenId = int32_t;

struct EncodeOptions {
  bool add_special = true;    // add BOS/EOS (post-processor template, add_bos_token / add_eos_token)
  bool parse_special = true;  // special/added token texts in the input ("<|im_start|>") become their ids
};

struct DecodeOptions {
  bool skip_special = false;  // drop special tokens (BOS, EOS, control tokens) from the text
};

// The files load_tokenizer looks for, in order of preference.
inline constexpr std::string_view kTokenizerJson = "tokenizer.json";
inline constexpr std::string_view kTokenizerModel = "tokenizer.model";
inline constexpr std::string_view kTokenizerGgufJson = "tokenizer.gguf.json";
inline constexpr std::string_view kTokenizerConfigJson = "tokenizer_config.json";

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text (valid UTF-8, else kInvalidArgument) to token ids.
  virtual Result<std::vector<TokenId>> encode(std::string_view text, const EncodeOptions& opts = {}) const = 0;

  // Token ids to text. Invalid UTF-8 (e.g. a byte-fallback sequence cut short) becomes U+FFFD per byte;
  // ids outside the vocabulary are skipped.
  std::string decode(std::span<const TokenId> ids, const DecodeOptions& opts = {}) const;

  // The decoded bytes before UTF-8 repair (may end inside a multi-byte character). decode() and
  // StreamDecoder are built on it.
  virtual std::string decode_bytes(std::span<const TokenId> ids, const DecodeOptions& opts) const = 0;

  // The vocabulary entry as stored ("▁the", "Ġthe", "<0x0A>", "<s>"); "" when id is out of range.
  virtual std::string token_to_piece(TokenId id) const = 0;
  virtual std::optional<TokenId> piece_to_token(std::string_view piece) const = 0;
  virtual bool is_special(TokenId id) const = 0;
  virtual size_t vocab_size() const = 0;

  std::optional<TokenId> bos_id() const { return bos_id_; }
  const std::vector<TokenId>& eos_ids() const { return eos_ids_; }
  bool is_eos(TokenId id) const;
  // Which file it came from ("tokenizer.json", ...) and which model ("bpe", "sentencepiece",
  // "gguf-llama", "gguf-gpt2").
  const std::string& source_file() const { return source_file_; }
  const std::string& model_kind() const { return model_kind_; }

 protected:
  std::optional<TokenId> bos_id_;
  std::vector<TokenId> eos_ids_;
  std::string source_file_;
  std::string model_kind_;
  friend struct TokenizerAccess;
};

// Loads the tokenizer from a pack directory or an HF checkpoint folder (tokenizer.json > tokenizer.model >
// tokenizer.gguf.json). `manifest_info` (optional) supplies what the tokenizer files may lack or that the
// model config decides: EOS ids (manifest eosTokenIds, which include generation_config's), the BOS id,
// and, for tokenizer.model / tokenizer.gguf.json, addBosToken/addEosToken. tokenizer.json's own
// post-processor stays authoritative for BOS/EOS insertion (it is what transformers does).
// Errors: kNotFound (no tokenizer file; the message lists the names looked for), kIo, kParse (malformed
// JSON / model file, naming the file), kSchema (missing or wrongly typed field, naming file and field),
// kUnsupported (unknown model / normalizer / pre-tokenizer / decoder type, naming it).
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::filesystem::path& dir_or_pack,
                                                  const TokenizerInfo* manifest_info = nullptr);

// Loads one specific file (tokenizer.json, tokenizer.model or tokenizer.gguf.json, by its name).
Result<std::unique_ptr<Tokenizer>> load_tokenizer_file(const std::filesystem::path& file,
                                                       const TokenizerInfo* manifest_info = nullptr);

// Incremental detokenizer for streaming generation. push() returns the text that became final with this
// token: always complete, valid UTF-8 (a character whose bytes span several byte-fallback or byte-level
// tokens is held back until complete). The concatenation of every push() and flush() equals
// tok.decode(all ids) whenever that text is valid UTF-8. Cost per token is bounded (it re-decodes a short
// window, not the whole sequence).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, DecodeOptions opts = {});
  std::string push(TokenId id);
  // The held-back rest (an incomplete character becomes U+FFFD per byte); the decoder then starts over.
  std::string flush();

 private:
  const Tokenizer* tok_;
  DecodeOptions opts_;
  std::vector<TokenId> ids_;
  size_t prefix_ = 0;  // ids_[prefix_, read_) were emitted already and give the window its context
  size_t read_ = 0;
};

}  // namespace rdrr::tok
