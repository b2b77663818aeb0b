// Internal to tokenizer/: the HF tokenizers pipeline that tokenizer.json and tokenizer.gguf.json both load
// into: added tokens -> normalizers -> pre-tokenizers -> BPE model -> post-processor, and the decoder
// chain. Semantics follow huggingface/tokenizers (see README.md for the supported subset).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "quant/status.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"

namespace rdrr::tok {

struct AddedToken {
  std::string content;
  TokenId id = 0;
  bool special = false;
  bool lstrip = false;  // absorb whitespace before it
  bool rstrip = false;  // absorb whitespace after it
};

// ---- normalizers (whole text segment -> text segment) ----
struct NormPrepend { std::string prepend; };
struct NormReplace { std::optional<Regex> regex; std::string literal; std::string content; };
struct NormUnicode { std::string form; };  // "NFC", "NFKC", "NFD", "NFKD"
struct NormStrip { bool left = false; bool right = false; };
using Normalizer = std::variant<NormPrepend, NormReplace, NormUnicode, NormStrip>;

// ---- pre-tokenizers (split -> splits) ----
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
struct PreSplit { std::optional<Regex> regex; std::string literal; SplitBehavior behavior = SplitBehavior::kIsolated; bool invert = false; };
struct PreByteLevel { bool add_prefix_space = false; std::optional<Regex> regex; };  // regex: GPT-2 split when use_regex
struct PreMetaspace { std::string replacement; enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways; bool split = true; };
using PreTokenizer = std::variant<PreSplit, PreByteLevel, PreMetaspace>;  // Digits/Whitespace load as PreSplit

// ---- model ----
struct BpeModel {
  enum class Mode { kMerges, kScores };  // HF merges by rank; SentencePiece/llama.cpp merges by piece score
  Mode mode = Mode::kMerges;
  std::vector<std::string> pieces;                     // id -> piece ("" for holes)
  std::unordered_map<std::string, TokenId> vocab;      // piece -> id
  std::unordered_map<uint64_t, std::pair<uint32_t, TokenId>> merges;  // (left id << 32 | right id) -> (rank, new id)
  std::vector<float> scores;                           // kScores: id -> score
  bool byte_fallback = false;
  std::optional<TokenId> unk_id;
  bool fuse_unk = false;
  bool ignore_merges = false;
  std::vector<TokenId> byte_ids;                       // 256 entries when every <0xNN> piece exists
};

// ---- post-processor: TemplateProcessing "single" ----
struct TemplatePiece { bool is_sequence = false; std::vector<TokenId> ids; };

// ---- decoders (list of token strings -> list of token strings) ----
struct DecReplace { std::string pattern; std::string content; };
struct DecByteFallback {};
struct DecFuse {};
struct DecStrip { std::string content; size_t start = 0; size_t stop = 0; };
struct DecByteLevel {};
struct DecMetaspace { std::string replacement; bool strip_first = true; };
using Decoder = std::variant<DecReplace, DecByteFallback, DecFuse, DecStrip, DecByteLevel, DecMetaspace>;

struct Pipeline {
  std::vector<AddedToken> added;          // matched in the raw text, longest first at each position
  std::vector<Normalizer> normalizers;
  std::vector<PreTokenizer> pre_tokenizers;
  BpeModel model;
  std::optional<std::vector<TemplatePiece>> post_template;  // nullopt: no post-processor
  std::vector<Decoder> decoders;
  bool has_decoder = false;  // without one, tokens are joined with " " (as tokenizers does)
};

// The tokenizer over a Pipeline (tokenizer.json, tokenizer.gguf.json).
class PipelineTokenizer final : public Tokenizer {
 public:
  PipelineTokenizer(Pipeline p, std::string source_file, std::string model_kind);
  Result<std::vector<TokenId>> encode(std::string_view text, const EncodeOptions& opts) const override;
  std::string decode_bytes(std::span<const TokenId> ids, const DecodeOptions& opts) const override;
  std::string token_to_piece(TokenId id) const override;
  std::optional<TokenId> piece_to_token(std::string_view piece) const override;
  bool is_special(TokenId id) const override;
  size_t vocab_size() const override;

  void set_ids(std::optional<TokenId> bos, std::vector<TokenId> eos) {
    bos_id_ = bos;
    eos_ids_ = std::move(eos);
  }
  const Pipeline& pipeline() const { return p_; }

 private:
  Status encode_segment(std::string_view text, bool at_start, std::vector<TokenId>& out) const;
  Pipeline p_;
  std::unordered_map<TokenId, size_t> added_by_id_;
  std::unordered_map<unsigned char, std::vector<size_t>> added_by_first_byte_;  // longest first
};

// BPE over one pre-tokenized word (bpe.cpp).
Status bpe_encode_word(const BpeModel& m, std::string_view word, std::vector<TokenId>& out);

// Fills model.byte_ids from the <0xNN> pieces (left empty when any is missing).
void index_byte_pieces(BpeModel& m);

// Unicode normalization through ICU (normalize.cpp). Errors: kInvalidArgument (bad form / text).
Result<std::string> unicode_normalize(std::string_view text, const std::string& form);

}  // namespace rdrr::tok
