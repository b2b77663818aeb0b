// PipelineTokenizer: encode (added tokens, normalizers, pre-tokenizers, BPE, post-processor) and decode
// (the decoder chain) with huggingface/tokenizers semantics.
#include <algorithm>

#include "tokenizer/pipeline.h"
#include "tokenizer/utf8.h"

namespace rdrr::tok {

namespace {

struct Split {
  std::string text;
  bool first = false;  // starts at offset 0 of the original text (Metaspace prepend_scheme "first")
};

struct Piece {
  size_t begin;
  size_t end;
  bool is_match;
};

// The text cut into alternating non-match / match pieces (empty pieces dropped).
std::vector<Piece> cut(std::string_view text, const std::vector<std::pair<size_t, size_t>>& matches, bool invert) {
  std::vector<Piece> pieces;
  size_t pos = 0;
  for (const auto& [b, e] : matches) {
    if (b > pos) pieces.push_back({pos, b, invert});
    pieces.push_back({b, e, !invert});
    pos = e;
  }
  if (pos < text.size()) pieces.push_back({pos, text.size(), invert});
  return pieces;
}

std::vector<std::string> apply_behavior(std::string_view text, const std::vector<Piece>& pieces, SplitBehavior b) {
  std::vector<std::string> out;
  bool pending_next = false;  // kMergedWithNext: the last piece was a delimiter waiting for its successor
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    const std::string_view s = text.substr(p.begin, p.end - p.begin);
    switch (b) {
      case SplitBehavior::kRemoved:
        if (!p.is_match) out.emplace_back(s);
        break;
      case SplitBehavior::kIsolated:
        out.emplace_back(s);
        break;
      case SplitBehavior::kMergedWithPrevious:
        if (p.is_match && !out.empty() && i > 0 && !pieces[i - 1].is_match) {
          out.back() += s;
        } else {
          out.emplace_back(s);
        }
        break;
      case SplitBehavior::kMergedWithNext:
        if (pending_next) {
          out.back() += s;
        } else {
          out.emplace_back(s);
        }
        pending_next = p.is_match;
        break;
      case SplitBehavior::kContiguous:
        if (i > 0 && p.is_match && pieces[i - 1].is_match) {
          out.back() += s;
        } else {
          out.emplace_back(s);
        }
        break;
    }
  }
  return out;
}

Result<std::vector<std::pair<size_t, size_t>>> find_literal(std::string_view text, const std::string& lit) {
  std::vector<std::pair<size_t, size_t>> m;
  if (lit.empty()) return m;
  for (size_t pos = text.find(lit); pos != std::string_view::npos; pos = text.find(lit, pos + lit.size())) {
    m.emplace_back(pos, pos + lit.size());
  }
  return m;
}

Status pre_split(const PreSplit& p, std::vector<Split>& splits) {
  std::vector<Split> out;
  for (Split& s : splits) {
    std::vector<std::pair<size_t, size_t>> matches;
    if (p.regex) {
      RDRR_ASSIGN_OR_RETURN(matches, p.regex->find_all(s.text));
    } else {
      RDRR_ASSIGN_OR_RETURN(matches, find_literal(s.text, p.literal));
    }
    bool first = s.first;
    for (std::string& t : apply_behavior(s.text, cut(s.text, matches, p.invert), p.behavior)) {
      out.push_back({std::move(t), first});
      first = false;
    }
  }
  splits = std::move(out);
  return Status::Ok();
}

Status pre_byte_level(const PreByteLevel& p, std::vector<Split>& splits) {
  std::vector<Split> out;
  for (Split& s : splits) {
    if (p.add_prefix_space && (s.text.empty() || s.text[0] != ' ')) {
      std::string spaced(1, ' ');
      spaced += s.text;
      s.text = std::move(spaced);
    }
    std::vector<std::string> parts;
    if (p.regex) {
      RDRR_ASSIGN_OR_RETURN(auto matches, p.regex->find_all(s.text));
      parts = apply_behavior(s.text, cut(s.text, matches, false), SplitBehavior::kIsolated);
    } else {
      parts.push_back(std::move(s.text));
    }
    bool first = s.first;
    for (const std::string& t : parts) {
      std::string mapped;
      for (char c : t) mapped += byte_level_char(static_cast<uint8_t>(c));
      out.push_back({std::move(mapped), first});
      first = false;
    }
  }
  splits = std::move(out);
  return Status::Ok();
}

void pre_metaspace(const PreMetaspace& p, std::vector<Split>& splits) {
  std::vector<Split> out;
  for (Split& s : splits) {
    std::string t = replace_all(s.text, " ", p.replacement);
    const bool starts = t.compare(0, p.replacement.size(), p.replacement) == 0;
    if (!starts && (p.prepend == PreMetaspace::Prepend::kAlways || (p.prepend == PreMetaspace::Prepend::kFirst && s.first))) {
      t.insert(0, p.replacement);
    }
    if (!p.split) {
      out.push_back({std::move(t), s.first});
      continue;
    }
    auto matches = find_literal(t, p.replacement);
    bool first = s.first;
    for (std::string& part : apply_behavior(t, cut(t, *matches, false), SplitBehavior::kMergedWithNext)) {
      out.push_back({std::move(part), first});
      first = false;
    }
  }
  splits = std::move(out);
}

Result<std::string> normalize(const std::vector<Normalizer>& norms, std::string text) {
  for (const Normalizer& n : norms) {
    if (const auto* p = std::get_if<NormPrepend>(&n)) {
      if (!text.empty()) text.insert(0, p->prepend);
    } else if (const auto* r = std::get_if<NormReplace>(&n)) {
      if (!r->regex) {
        if (!r->literal.empty()) text = replace_all(text, r->literal, r->content);
        continue;
      }
      RDRR_ASSIGN_OR_RETURN(auto matches, r->regex->find_all(text));
      std::string out;
      size_t pos = 0;
      for (const auto& [b, e] : matches) {
        out.append(text, pos, b - pos);
        out += r->content;
        pos = e;
      }
      out.append(text, pos);
      text = std::move(out);
    } else if (const auto* u = std::get_if<NormUnicode>(&n)) {
      RDRR_ASSIGN_OR_RETURN(text, unicode_normalize(text, u->form));
    } else if (const auto* s = std::get_if<NormStrip>(&n)) {
      const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
      size_t b = 0;
      size_t e = text.size();
      if (s->left) while (b < e && is_space(text[b])) ++b;
      if (s->right) while (e > b && is_space(text[e - 1])) --e;
      text = text.substr(b, e - b);
    }
  }
  return text;
}

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

PipelineTokenizer::PipelineTokenizer(Pipeline p, std::string source_file, std::string model_kind) : p_(std::move(p)) {
  source_file_ = std::move(source_file);
  model_kind_ = std::move(model_kind);
  for (size_t i = 0; i < p_.added.size(); ++i) {
    added_by_id_.emplace(p_.added[i].id, i);
    if (!p_.added[i].content.empty()) {
      added_by_first_byte_[static_cast<unsigned char>(p_.added[i].content[0])].push_back(i);
    }
  }
  for (auto& [byte, list] : added_by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return p_.added[a].content.size() > p_.added[b].content.size();
    });
  }
}

Status PipelineTokenizer::encode_segment(std::string_view text, bool at_start, std::vector<TokenId>& out) const {
  if (text.empty()) return Status::Ok();
  RDRR_ASSIGN_OR_RETURN(std::string normalized, normalize(p_.normalizers, std::string(text)));
  std::vector<Split> splits{{std::move(normalized), at_start}};
  for (const PreTokenizer& pt : p_.pre_tokenizers) {
    if (const auto* s = std::get_if<PreSplit>(&pt)) {
      RDRR_RETURN_IF_ERROR(pre_split(*s, splits));
    } else if (const auto* bl = std::get_if<PreByteLevel>(&pt)) {
      RDRR_RETURN_IF_ERROR(pre_byte_level(*bl, splits));
    } else if (const auto* ms = std::get_if<PreMetaspace>(&pt)) {
      pre_metaspace(*ms, splits);
    }
  }
  for (const Split& s : splits) RDRR_RETURN_IF_ERROR(bpe_encode_word(p_.model, s.text, out));
  return Status::Ok();
}

Result<std::vector<TokenId>> PipelineTokenizer::encode(std::string_view text, const EncodeOptions& opts) const {
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_char_len(text, pos);
    if (len == 0) return error(StatusCode::kInvalidArgument, "encode: text is not valid UTF-8 at byte " + std::to_string(pos));
    pos += len;
  }
  std::vector<TokenId> ids;
  size_t seg_begin = 0;  // start of the pending text segment
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* hit = nullptr;
    const auto it = added_by_first_byte_.find(static_cast<unsigned char>(text[pos]));
    if (it != added_by_first_byte_.end()) {
      for (size_t idx : it->second) {
        const AddedToken& a = p_.added[idx];
        if ((a.special && !opts.parse_special) || text.compare(pos, a.content.size(), a.content) != 0) continue;
        hit = &a;
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t seg_end = pos;
    if (hit->lstrip) while (seg_end > seg_begin && is_ascii_space(text[seg_end - 1])) --seg_end;
    RDRR_RETURN_IF_ERROR(encode_segment(text.substr(seg_begin, seg_end - seg_begin), seg_begin == 0, ids));
    ids.push_back(hit->id);
    pos += hit->content.size();
    if (hit->rstrip) while (pos < text.size() && is_ascii_space(text[pos])) ++pos;
    seg_begin = pos;
  }
  RDRR_RETURN_IF_ERROR(encode_segment(text.substr(seg_begin), seg_begin == 0, ids));
  if (!opts.add_special || !p_.post_template) return ids;
  std::vector<TokenId> out;
  for (const TemplatePiece& t : *p_.post_template) {
    const auto& src = t.is_sequence ? ids : t.ids;
    out.insert(out.end(), src.begin(), src.end());
  }
  return out;
}

std::string PipelineTokenizer::decode_bytes(std::span<const TokenId> ids, const DecodeOptions& opts) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (TokenId id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= vocab_size()) continue;
    if (opts.skip_special && is_special(id)) continue;
    tokens.push_back(token_to_piece(id));
  }
  if (!p_.has_decoder) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) joined += ' ';
      joined += tokens[i];
    }
    return joined;
  }
  for (const Decoder& d : p_.decoders) {
    if (const auto* r = std::get_if<DecReplace>(&d)) {
      for (std::string& t : tokens) t = replace_all(t, r->pattern, r->content);
    } else if (std::holds_alternative<DecByteFallback>(d)) {
      for (std::string& t : tokens) {
        if (const auto b = parse_byte_piece(t)) t = std::string(1, static_cast<char>(*b));
      }
    } else if (std::holds_alternative<DecFuse>(d)) {
      std::string all;
      for (const std::string& t : tokens) all += t;
      tokens.assign(1, std::move(all));
    } else if (const auto* s = std::get_if<DecStrip>(&d)) {
      for (std::string& t : tokens) {
        size_t b = 0;
        for (size_t i = 0; i < s->start && t.compare(b, s->content.size(), s->content) == 0; ++i) b += s->content.size();
        size_t e = t.size();
        for (size_t i = 0; i < s->stop && e >= b + s->content.size() &&
                           t.compare(e - s->content.size(), s->content.size(), s->content) == 0; ++i) {
          e -= s->content.size();
        }
        t = t.substr(b, e - b);
      }
    } else if (std::holds_alternative<DecByteLevel>(d)) {
      std::string all;
      for (const std::string& t : tokens) {
        std::string bytes;
        bool ok = true;
        for (size_t pos = 0; pos < t.size() && ok;) {
          const size_t len = utf8_char_len(t, pos);
          const auto b = len ? byte_level_byte(utf8_decode_at(t, pos)) : std::nullopt;
          if (!b) ok = false; else bytes += static_cast<char>(*b);
          pos += len ? len : 1;
        }
        all += ok ? bytes : t;
      }
      tokens.assign(1, std::move(all));
    } else if (const auto* m = std::get_if<DecMetaspace>(&d)) {
      for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = replace_all(tokens[i], m->replacement, (i == 0 && m->strip_first) ? "" : " ");
      }
    }
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

std::string PipelineTokenizer::token_to_piece(TokenId id) const {
  if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) return p_.added[it->second].content;
  if (id < 0 || static_cast<size_t>(id) >= p_.model.pieces.size()) return "";
  return p_.model.pieces[static_cast<size_t>(id)];
}

std::optional<TokenId> PipelineTokenizer::piece_to_token(std::string_view piece) const {
  for (const AddedToken& a : p_.added) {
    if (a.content == piece) return a.id;
  }
  const auto it = p_.model.vocab.find(std::string(piece));
  if (it == p_.model.vocab.end()) return std::nullopt;
  return it->second;
}

bool PipelineTokenizer::is_special(TokenId id) const {
  const auto it = added_by_id_.find(id);
  return it != added_by_id_.end() && p_.added[it->second].special;
}

size_t PipelineTokenizer::vocab_size() const {
  size_t n = p_.model.pieces.size();
  for (const AddedToken& a : p_.added) n = std::max(n, static_cast<size_t>(a.id) + 1);
  return n;
}

}  // namespace rdrr::tok
