#include "tokenizer/utf8.h"

#include <array>

namespace rdrr::tok {

namespace {

bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

// Expected length from the lead byte and the allowed range of the second byte (RFC 3629 table).
struct Lead {
  size_t len;
  unsigned char lo;
  unsigned char hi;
};

Lead lead_info(unsigned char c) {
  if (c < 0x80) return {1, 0, 0};
  if (c >= 0xC2 && c <= 0xDF) return {2, 0x80, 0xBF};
  if (c == 0xE0) return {3, 0xA0, 0xBF};
  if (c >= 0xE1 && c <= 0xEC) return {3, 0x80, 0xBF};
  if (c == 0xED) return {3, 0x80, 0x9F};
  if (c >= 0xEE && c <= 0xEF) return {3, 0x80, 0xBF};
  if (c == 0xF0) return {4, 0x90, 0xBF};
  if (c >= 0xF1 && c <= 0xF3) return {4, 0x80, 0xBF};
  if (c == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

struct ByteLevelTables {
  std::array<std::string, 256> chars;
  std::array<int, 512> inverse{};  // code point (< 512) -> byte, -1 when not in the alphabet
  ByteLevelTables() {
    inverse.fill(-1);
    uint32_t extra = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
      const uint32_t cp = printable ? b : 256 + extra++;
      utf8_append(chars[b], cp);
      inverse[cp] = static_cast<int>(b);
    }
  }
};

const ByteLevelTables& byte_level_tables() {
  static const ByteLevelTables tables;
  return tables;
}

}  // namespace

size_t utf8_char_len(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  const auto c0 = static_cast<unsigned char>(text[pos]);
  const Lead l = lead_info(c0);
  if (l.len <= 1) return l.len;
  if (pos + l.len > text.size()) return 0;
  const auto c1 = static_cast<unsigned char>(text[pos + 1]);
  if (c1 < l.lo || c1 > l.hi) return 0;
  for (size_t i = 2; i < l.len; ++i) {
    if (!is_cont(static_cast<unsigned char>(text[pos + i]))) return 0;
  }
  return l.len;
}

size_t utf8_incomplete_tail(std::string_view text) {
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t pos = n - back;
    const auto c = static_cast<unsigned char>(text[pos]);
    if (is_cont(c)) continue;
    const Lead l = lead_info(c);
    if (l.len <= back) return 0;  // ASCII, invalid lead, or a complete character
    // A valid prefix: the second byte (if present) in range, the rest continuation bytes.
    if (back >= 2) {
      const auto c1 = static_cast<unsigned char>(text[pos + 1]);
      if (c1 < l.lo || c1 > l.hi) return 0;
    }
    return back;
  }
  return 0;
}

std::string utf8_sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t len = utf8_char_len(text, pos);
    if (len == 0) {
      out += kReplacementChar;
      ++pos;
    } else {
      out.append(text.substr(pos, len));
      pos += len;
    }
  }
  return out;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint32_t utf8_decode_at(std::string_view text, size_t pos) {
  const size_t len = utf8_char_len(text, pos);
  const auto c0 = static_cast<unsigned char>(text[pos]);
  if (len <= 1) return c0;
  uint32_t cp = c0 & (0x7Fu >> len);
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3Fu);
  return cp;
}

std::optional<uint8_t> parse_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
  uint32_t v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = piece[i];
    uint32_t d;
    if (c >= '0' && c <= '9') {
      d = static_cast<uint32_t>(c - '0');
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<uint32_t>(c - 'A' + 10);
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<uint32_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    v = v * 16 + d;
  }
  return static_cast<uint8_t>(v);
}

std::string byte_piece(uint8_t byte) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string s = "<0x";
  s += kHex[byte >> 4];
  s += kHex[byte & 15];
  s += '>';
  return s;
}

std::string_view byte_level_char(uint8_t byte) { return byte_level_tables().chars[byte]; }

std::optional<uint8_t> byte_level_byte(uint32_t cp) {
  if (cp >= 512) return std::nullopt;
  const int b = byte_level_tables().inverse[cp];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace rdrr::tok
