// load_tokenizer (which file, BOS/EOS ids), decode and the streaming decoder.
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "tokenizer/loaders.h"
#include "tokenizer/utf8.h"

namespace rdrr::tok {

namespace {

// tokenizer_config.json's bos_token / eos_token: a string, {"content": "..."} or null.
std::optional<std::string> config_token(const json& cfg, std::string_view key) {
  const json* v = find_field(cfg, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (const json* c = find_field(*v, "content"); c != nullptr && c->is_string()) return c->get<std::string>();
  return std::nullopt;
}

// BOS/EOS ids of a tokenizer.json: the manifest's, else tokenizer_config.json's token strings (BOS: else
// the post-processor's leading special token).
Status set_hf_ids(PipelineTokenizer& tok, const std::filesystem::path& dir, const TokenizerInfo* info) {
  std::optional<TokenId> bos;
  std::vector<TokenId> eos;
  if (info != nullptr) {
    if (info->bos_token_id) bos = static_cast<TokenId>(*info->bos_token_id);
    for (uint64_t e : info->eos_token_ids) eos.push_back(static_cast<TokenId>(e));
  }
  const auto cfg_path = dir / kTokenizerConfigJson;
  std::error_code ec;
  if ((!bos || eos.empty()) && std::filesystem::is_regular_file(cfg_path, ec)) {
    RDRR_ASSIGN_OR_RETURN(json cfg, read_json_file(cfg_path));
    if (!bos) {
      if (auto s = config_token(cfg, "bos_token")) bos = tok.piece_to_token(*s);
    }
    if (eos.empty()) {
      if (auto s = config_token(cfg, "eos_token")) {
        if (auto id = tok.piece_to_token(*s)) eos.push_back(*id);
      }
    }
  }
  // Last resort for BOS: the special token the post-processor puts in front of the text.
  const auto& post = tok.pipeline().post_template;
  if (!bos && post && !post->empty() && !post->front().is_sequence && post->front().ids.size() == 1) {
    bos = post->front().ids[0];
  }
  tok.set_ids(bos, std::move(eos));
  return Status::Ok();
}

}  // namespace

// Gives load_tokenizer_file write access to the protected id fields: the manifest's ids override what a
// tokenizer.model / tokenizer.gguf.json says.
struct TokenizerAccess {
  static void override_ids(Tokenizer& tok, const TokenizerInfo* info) {
    if (info == nullptr) return;
    if (info->bos_token_id) tok.bos_id_ = static_cast<TokenId>(*info->bos_token_id);
    if (!info->eos_token_ids.empty()) {
      tok.eos_ids_.clear();
      for (uint64_t e : info->eos_token_ids) tok.eos_ids_.push_back(static_cast<TokenId>(e));
    }
  }
};

bool Tokenizer::is_eos(TokenId id) const { return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end(); }

std::string Tokenizer::decode(std::span<const TokenId> ids, const DecodeOptions& opts) const {
  return utf8_sanitize(decode_bytes(ids, opts));
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer_file(const std::filesystem::path& file, const TokenizerInfo* info) {
  const std::string name = file.filename().string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return error(StatusCode::kNotFound, file.string() + ": no such file");
  if (name == kTokenizerJson) {
    RDRR_ASSIGN_OR_RETURN(auto tok, load_hf_tokenizer_json(file));
    RDRR_RETURN_IF_ERROR(set_hf_ids(*tok, file.parent_path(), info));
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }
  if (name == kTokenizerModel) {
    RDRR_ASSIGN_OR_RETURN(auto tok, load_sentencepiece(file, info));
    TokenizerAccess::override_ids(*tok, info);
    return tok;
  }
  if (name == kTokenizerGgufJson) {
    RDRR_ASSIGN_OR_RETURN(auto tok, load_gguf_tokenizer_json(file, info));
    TokenizerAccess::override_ids(*tok, info);
    return std::unique_ptr<Tokenizer>(std::move(tok));
  }
  return error(StatusCode::kUnsupported, file.string() + ": unknown tokenizer file name (expected " +
                                             std::string(kTokenizerJson) + ", " + std::string(kTokenizerModel) + " or " +
                                             std::string(kTokenizerGgufJson) + ")");
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::filesystem::path& dir_or_pack, const TokenizerInfo* info) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir_or_pack, ec)) return load_tokenizer_file(dir_or_pack, info);
  if (!std::filesystem::is_directory(dir_or_pack, ec)) {
    return error(StatusCode::kNotFound, dir_or_pack.string() + ": no such directory");
  }
  for (std::string_view name : {kTokenizerJson, kTokenizerModel, kTokenizerGgufJson}) {
    const auto file = dir_or_pack / name;
    if (std::filesystem::is_regular_file(file, ec)) return load_tokenizer_file(file, info);
  }
  return error(StatusCode::kNotFound, dir_or_pack.string() + ": no tokenizer (looked for " + std::string(kTokenizerJson) +
                                          ", " + std::string(kTokenizerModel) + ", " + std::string(kTokenizerGgufJson) + ")");
}

StreamDecoder::StreamDecoder(const Tokenizer& tok, DecodeOptions opts) : tok_(&tok), opts_(opts) {}

std::string StreamDecoder::push(TokenId id) {
  ids_.push_back(id);
  const std::span<const TokenId> all(ids_);
  const std::string before = tok_->decode_bytes(all.subspan(prefix_, read_ - prefix_), opts_);
  const std::string now = tok_->decode_bytes(all.subspan(prefix_), opts_);
  if (now.size() <= before.size()) return "";
  const std::string_view fresh = std::string_view(now).substr(before.size());
  if (utf8_incomplete_tail(fresh) > 0) return "";  // wait for the rest of the character
  prefix_ = read_;
  read_ = ids_.size();
  // Keep the window short: drop ids before prefix_ (they are no longer looked at).
  if (prefix_ > 64) {
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_));
    read_ -= prefix_;
    prefix_ = 0;
  }
  return utf8_sanitize(fresh);
}

std::string StreamDecoder::flush() {
  const std::span<const TokenId> all(ids_);
  const std::string before = tok_->decode_bytes(all.subspan(prefix_, read_ - prefix_), opts_);
  const std::string now = tok_->decode_bytes(all.subspan(prefix_), opts_);
  std::string out = now.size() > before.size() ? utf8_sanitize(std::string_view(now).substr(before.size())) : "";
  ids_.clear();
  prefix_ = read_ = 0;
  return out;
}

}  // namespace rdrr::tok
