// Strict JSON for every rdrr input and output (manifests, SafeTensors headers, index files, HF configs):
// nlohmann-json wrapped so that no exception escapes and the leniencies of common JSON libraries are errors.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "quant/status.h"

namespace rdrr {

// Deepest nesting of objects/arrays parse_json_strict accepts (nlohmann's dump() and our walkers recurse).
inline constexpr int kMaxJsonDepth = 64;

// Byte offset of the first invalid UTF-8 sequence in `text` (overlong forms, surrogates and code points
// above U+10FFFF are invalid), or nullopt when the whole text is valid.
std::optional<uint64_t> find_invalid_utf8(std::string_view text);

// Parses `text` as exactly one JSON value. Errors, each message prefixed with `source_name`:
//   kParse      syntax error, invalid UTF-8 ("not valid UTF-8 at byte N"), a leading byte-order mark,
//               comments, nesting deeper than kMaxJsonDepth, or a key that occurs twice in one object
//               ("duplicate JSON key 'k' in object <JSON Pointer>");
//   kNonFinite  a number that overflows a double (e.g. 1e999); NaN/Infinity literals are syntax errors.
Result<nlohmann::json> parse_json_strict(std::string_view text, std::string_view source_name);

// RFC 6901 JSON Pointer of `parent` extended by one reference token ("~" -> "~0", "/" -> "~1").
std::string json_pointer_child(std::string_view parent, std::string_view token);

// A JSON value for an error message: compact, invalid UTF-8 replaced, cut after 80 characters.
std::string json_brief(const nlohmann::json& j);

}  // namespace rdrr
