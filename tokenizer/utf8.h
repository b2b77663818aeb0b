// Internal to tokenizer/: UTF-8 helpers shared by the models, the decoders and the stream decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdrr::tok {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD
inline constexpr std::string_view kMetaspace = "\xE2\x96\x81";         // U+2581 "▁"

// Length in bytes of the valid UTF-8 character starting at text[pos], or 0 when the bytes there are not
// a complete valid character (invalid lead byte, bad continuation, overlong form, surrogate, > U+10FFFF,
// or cut off by the end of text).
size_t utf8_char_len(std::string_view text, size_t pos);

// Number of bytes at the end of `text` that form a valid but incomplete UTF-8 character prefix (0..3).
size_t utf8_incomplete_tail(std::string_view text);

// `text` with every invalid byte sequence replaced by U+FFFD (one per invalid byte).
std::string utf8_sanitize(std::string_view text);

// Appends the UTF-8 encoding of code point `cp` (<= 0x10FFFF, not a surrogate) to `out`.
void utf8_append(std::string& out, uint32_t cp);

// Decodes the valid character at text[pos] (length utf8_char_len > 0) into its code point.
uint32_t utf8_decode_at(std::string_view text, size_t pos);

// Byte of a "<0xNN>" byte-fallback piece, or nullopt.
std::optional<uint8_t> parse_byte_piece(std::string_view piece);

// "<0x0A>"
std::string byte_piece(uint8_t byte);

// GPT-2 byte-level alphabet: the UTF-8 text of the character standing for `byte`, and the inverse
// (nullopt for characters outside the alphabet).
std::string_view byte_level_char(uint8_t byte);
std::optional<uint8_t> byte_level_byte(uint32_t cp);

// Replaces every occurrence of `from` (non-empty) in `text` by `to`.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

}  // namespace rdrr::tok
