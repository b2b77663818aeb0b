// Strict JSON parsing for input files (SafeTensors headers, index.json, HF configs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "quant/status.h"

namespace rdrr::convert {

// Byte offset of the first invalid UTF-8 sequence in `text` (overlong forms, surrogates and code points
// above U+10FFFF are invalid), or nullopt when the whole text is valid.
std::optional<uint64_t> find_invalid_utf8(std::string_view text);

// Deepest nesting of objects/arrays parse_json_strict accepts.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON value. Fails (kParse) on invalid UTF-8, syntax errors, nesting deeper than
// kMaxJsonDepth and duplicate keys in any object (nlohmann would silently keep one of them). `what`
// names the source in messages.
Result<nlohmann::json> parse_json_strict(std::string_view text, std::string_view what);

// A JSON value for an error message: compact, invalid UTF-8 replaced, cut after 80 characters.
std::string json_brief(const nlohmann::json& j);

}  // namespace rdrr::convert
