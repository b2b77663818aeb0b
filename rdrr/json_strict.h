// Strict JSON parsing for the manifest (and any other rdrr JSON): nlohmann-json wrapped so that no
// exception escapes and the leniencies of common JSON libraries are errors.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "quant/status.h"

namespace rdrr {

// Parses `text` as exactly one JSON value. Errors, each message prefixed with `source_name`:
//   kParse      syntax error, invalid UTF-8, a leading byte-order mark, comments, or a key that occurs
//               twice in one object (message: the key and the JSON Pointer of the object);
//   kNonFinite  a number that overflows a double (e.g. 1e999); NaN/Infinity literals are syntax errors.
Result<nlohmann::json> parse_json_strict(std::string_view text, std::string_view source_name);

// RFC 6901 JSON Pointer of `parent` extended by one reference token ("~" -> "~0", "/" -> "~1").
std::string json_pointer_child(std::string_view parent, std::string_view token);

}  // namespace rdrr
