// tokenizer.model through Debian's libsentencepiece. Control pieces (<s>, </s>, <start_of_turn> in
// models that mark them so) are matched in the text before SentencePiece sees it (as transformers does
// for special tokens), each text fragment is encoded on its own. Decoding keeps raw bytes (<0xNN> pieces)
// so that StreamDecoder can hold back incomplete characters; the leading space that SentencePiece's dummy
// prefix adds is stripped from the start of the text, as SentencePiece and transformers do.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <exception>

#include "tokenizer/loaders.h"
#include "tokenizer/utf8.h"

namespace rdrr::tok {

namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  Status init(const std::filesystem::path& file, const TokenizerInfo* info) {
    sentencepiece::util::Status st;
    try {
      st = sp_.Load(file.string());
    } catch (const std::exception& e) {
      // libsentencepiece throws for some malformed models instead of returning its Status (darts_clone:
      // "failed to insert key: zero-length key" for an empty piece; found by tests/fuzz fuzz_tokenizer_model).
      return error(StatusCode::kParse, file.filename().string() + ": SentencePiece: " + e.what());
    }
    if (!st.ok()) return error(StatusCode::kParse, file.filename().string() + ": SentencePiece: " + st.ToString());
    source_file_ = file.filename().string();
    model_kind_ = "sentencepiece";
    const int n = sp_.GetPieceSize();
    for (int i = 0; i < n; ++i) {
      if (sp_.IsControl(i) && !sp_.IdToPiece(i).empty()) controls_.push_back({sp_.IdToPiece(i), i});
    }
    std::stable_sort(controls_.begin(), controls_.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    std::vector<std::string> probe;
    if (sp_.Encode("a", &probe).ok() && !probe.empty()) dummy_prefix_ = probe[0].rfind(kMetaspace, 0) == 0;
    if (sp_.bos_id() >= 0) bos_id_ = sp_.bos_id();
    if (sp_.eos_id() >= 0) eos_ids_ = {sp_.eos_id()};
    if (info != nullptr) {
      add_bos_ = info->add_bos_token;
      add_eos_ = info->add_eos_token;
    }
    return Status::Ok();
  }

  Result<std::vector<TokenId>> encode(std::string_view text, const EncodeOptions& opts) const override {
    for (size_t pos = 0; pos < text.size();) {
      const size_t len = utf8_char_len(text, pos);
      if (len == 0) return error(StatusCode::kInvalidArgument, "encode: text is not valid UTF-8 at byte " + std::to_string(pos));
      pos += len;
    }
    std::vector<TokenId> out;
    if (opts.add_special && add_bos_ && bos_id_) out.push_back(*bos_id_);
    size_t seg = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      const auto hit = opts.parse_special ? match_control(text, pos) : controls_.end();
      if (hit == controls_.end()) {
        ++pos;
        continue;
      }
      RDRR_RETURN_IF_ERROR(encode_fragment(text.substr(seg, pos - seg), out));
      out.push_back(hit->second);
      pos += hit->first.size();
      seg = pos;
    }
    RDRR_RETURN_IF_ERROR(encode_fragment(text.substr(seg), out));
    if (opts.add_special && add_eos_ && !eos_ids_.empty()) out.push_back(eos_ids_.front());
    return out;
  }

  std::string decode_bytes(std::span<const TokenId> ids, const DecodeOptions& opts) const override {
    std::string out;
    const int n = sp_.GetPieceSize();
    for (TokenId id : ids) {
      if (id < 0 || id >= n) continue;
      if (opts.skip_special && is_special(id)) continue;
      const std::string& piece = sp_.IdToPiece(id);
      if (sp_.IsByte(id)) {
        if (const auto b = parse_byte_piece(piece)) out += static_cast<char>(*b);
      } else if (sp_.IsUnknown(id)) {
        out += sp_.IdToPiece(id);
      } else {
        out += replace_all(piece, kMetaspace, " ");
      }
    }
    if (dummy_prefix_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
  }

  std::string token_to_piece(TokenId id) const override {
    if (id < 0 || id >= sp_.GetPieceSize()) return "";
    return sp_.IdToPiece(id);
  }
  std::optional<TokenId> piece_to_token(std::string_view piece) const override {
    const int id = sp_.PieceToId(std::string(piece));
    if (id < 0 || sp_.IdToPiece(id) != piece) return std::nullopt;
    return id;
  }
  bool is_special(TokenId id) const override { return sp_.IsControl(id) || sp_.IsUnknown(id); }
  size_t vocab_size() const override { return static_cast<size_t>(sp_.GetPieceSize()); }

 private:
  using Control = std::pair<std::string, TokenId>;

  std::vector<Control>::const_iterator match_control(std::string_view text, size_t pos) const {
    return std::find_if(controls_.begin(), controls_.end(),
                        [&](const Control& c) { return text.compare(pos, c.first.size(), c.first) == 0; });
  }

  Status encode_fragment(std::string_view text, std::vector<TokenId>& out) const {
    if (text.empty()) return Status::Ok();
    std::vector<int> ids;
    const auto st = sp_.Encode(std::string(text), &ids);
    if (!st.ok()) return error(StatusCode::kInternal, source_file_ + ": SentencePiece encode: " + st.ToString());
    out.insert(out.end(), ids.begin(), ids.end());
    return Status::Ok();
  }

  sentencepiece::SentencePieceProcessor sp_;
  std::vector<Control> controls_;  // longest first
  bool dummy_prefix_ = false;
  bool add_bos_ = true;
  bool add_eos_ = false;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_sentencepiece(const std::filesystem::path& file, const TokenizerInfo* info) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    return error(StatusCode::kNotFound, file.string() + ": no such file");
  }
  auto tok = std::make_unique<SentencePieceTokenizer>();
  RDRR_RETURN_IF_ERROR(tok->init(file, info));
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

}  // namespace rdrr::tok
