// BPE over one pre-tokenized word: HF tokenizers' BPE (merge ranks, byte fallback, unk fusing,
// ignore_merges) and the SentencePiece/llama.cpp variant (merge the adjacent pair whose concatenation is
// the highest-scoring piece). Both pick the best pair with a heap, ties to the leftmost: O(n log n).
#include <queue>

#include "tokenizer/pipeline.h"
#include "tokenizer/utf8.h"

namespace rdrr::tok {

namespace {

struct Symbol {
  size_t begin = 0;  // byte span in the word
  size_t len = 0;
  TokenId id = -1;   // -1: not in the vocabulary (kScores mode only)
  int prev = -1;
  int next = -1;
};

struct Candidate {
  double priority = 0;  // lower first
  int left = 0;
  int right = 0;
  size_t left_len = 0;
  size_t right_len = 0;
  TokenId new_id = -1;
  bool operator>(const Candidate& o) const {
    if (priority != o.priority) return priority > o.priority;
    return left > o.left;
  }
};

class Merger {
 public:
  Merger(const BpeModel& m, std::string_view word, std::vector<Symbol> syms)
      : m_(m), word_(word), syms_(std::move(syms)) {}

  std::vector<Symbol>& run() {
    for (size_t i = 0; i + 1 < syms_.size(); ++i) consider(static_cast<int>(i));
    while (!heap_.empty()) {
      const Candidate c = heap_.top();
      heap_.pop();
      Symbol& l = syms_[c.left];
      if (l.len != c.left_len || l.next != c.right) continue;
      Symbol& r = syms_[c.right];
      if (r.len != c.right_len) continue;
      l.len += r.len;
      l.id = c.new_id;
      l.next = r.next;
      if (r.next >= 0) syms_[r.next].prev = c.left;
      r.len = 0;  // dead
      if (l.prev >= 0) consider(l.prev);
      if (l.next >= 0) consider(c.left);
    }
    return syms_;
  }

 private:
  void consider(int left) {
    const Symbol& l = syms_[left];
    if (l.next < 0) return;
    const Symbol& r = syms_[l.next];
    Candidate c{0, left, l.next, l.len, r.len, -1};
    if (m_.mode == BpeModel::Mode::kMerges) {
      if (l.id < 0 || r.id < 0) return;
      const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(l.id)) << 32) | static_cast<uint32_t>(r.id);
      const auto it = m_.merges.find(key);
      if (it == m_.merges.end()) return;
      c.priority = it->second.first;
      c.new_id = it->second.second;
    } else {
      const auto it = m_.vocab.find(std::string(word_.substr(l.begin, l.len + r.len)));
      if (it == m_.vocab.end()) return;
      const auto id = static_cast<size_t>(it->second);
      c.priority = id < m_.scores.size() ? -static_cast<double>(m_.scores[id]) : 0.0;
      c.new_id = it->second;
    }
    heap_.push(c);
  }

  const BpeModel& m_;
  std::string_view word_;
  std::vector<Symbol> syms_;
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap_;
};

Status unknown_char(std::string_view ch) {
  return error(StatusCode::kInvalidArgument,
               "BPE: character '" + utf8_sanitize(ch) + "' is not in the vocabulary and there is no byte "
               "fallback or unk token");
}

// HF: one symbol per character; characters outside the vocabulary become <0xNN> byte symbols (byte
// fallback) or the unk token (consecutive unks fused when fuse_unk).
Status initial_symbols_hf(const BpeModel& m, std::string_view word, std::vector<Symbol>& syms) {
  bool prev_unk = false;
  size_t pos = 0;
  std::string ch;
  while (pos < word.size()) {
    size_t len = utf8_char_len(word, pos);
    if (len == 0) len = 1;
    ch.assign(word.substr(pos, len));
    const auto it = m.vocab.find(ch);
    if (it != m.vocab.end()) {
      syms.push_back({pos, len, it->second});
      prev_unk = false;
    } else if (m.byte_fallback && m.byte_ids.size() == 256) {
      for (size_t i = 0; i < len; ++i) syms.push_back({pos + i, 1, m.byte_ids[static_cast<unsigned char>(word[pos + i])]});
      prev_unk = false;
    } else if (m.unk_id) {
      if (m.fuse_unk && prev_unk) {
        syms.back().len += len;
      } else {
        syms.push_back({pos, len, *m.unk_id});
      }
      prev_unk = true;
    } else {
      return unknown_char(ch);
    }
    pos += len;
  }
  return Status::Ok();
}

}  // namespace

void index_byte_pieces(BpeModel& m) {
  std::vector<TokenId> ids(256, -1);
  for (int b = 0; b < 256; ++b) {
    const auto it = m.vocab.find(byte_piece(static_cast<uint8_t>(b)));
    if (it == m.vocab.end()) {
      m.byte_ids.clear();
      return;
    }
    ids[static_cast<size_t>(b)] = it->second;
  }
  m.byte_ids = std::move(ids);
}

Status bpe_encode_word(const BpeModel& m, std::string_view word, std::vector<TokenId>& out) {
  if (word.empty()) return Status::Ok();
  if (m.ignore_merges) {
    const auto it = m.vocab.find(std::string(word));
    if (it != m.vocab.end()) {
      out.push_back(it->second);
      return Status::Ok();
    }
  }
  std::vector<Symbol> syms;
  if (m.mode == BpeModel::Mode::kMerges) {
    RDRR_RETURN_IF_ERROR(initial_symbols_hf(m, word, syms));
  } else {
    size_t pos = 0;
    while (pos < word.size()) {
      size_t len = utf8_char_len(word, pos);
      if (len == 0) len = 1;
      const auto it = m.vocab.find(std::string(word.substr(pos, len)));
      syms.push_back({pos, len, it == m.vocab.end() ? -1 : it->second});
      pos += len;
    }
  }
  for (size_t i = 0; i < syms.size(); ++i) {
    syms[i].prev = static_cast<int>(i) - 1;
    syms[i].next = i + 1 < syms.size() ? static_cast<int>(i + 1) : -1;
  }
  Merger merger(m, word, std::move(syms));
  const std::vector<Symbol>& merged = merger.run();
  for (int i = 0; i >= 0; i = merged[static_cast<size_t>(i)].next) {
    const Symbol& s = merged[static_cast<size_t>(i)];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    // kScores: a character outside the vocabulary -> its bytes (llama.cpp), else unk.
    const std::string_view text = word.substr(s.begin, s.len);
    if (m.byte_ids.size() == 256) {
      for (char c : text) out.push_back(m.byte_ids[static_cast<unsigned char>(c)]);
    } else if (m.unk_id) {
      out.push_back(*m.unk_id);
    } else {
      return unknown_char(text);
    }
  }
  return Status::Ok();
}

}  // namespace rdrr::tok
