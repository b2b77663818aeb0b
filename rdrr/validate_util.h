// Internal to rdrr/: value checks shared by the validators.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "quant/status.h"
#include "rdrr/json_strict.h"

namespace rdrr::vutil {

inline constexpr size_t kMaxRelativePathBytes = 1024;

bool is_lower_hex(std::string_view s, size_t length);  // exactly `length` digits 0-9a-f

// kValidation unless `name` is a safe plain file name: 1-255 bytes of valid UTF-8, no '/', '\\', NUL or
// other control character, not starting with '.' (so neither "." nor ".." nor hidden files).
Status check_plain_file_name(std::string_view field, std::string_view name);
// A relative path of plain file names joined by '/' (no leading '/', no empty, "." or ".." component).
Status check_relative_path(std::string_view field, std::string_view path);
// Printable ASCII without spaces, 1..max_bytes, none of `forbidden`.
Status check_token(std::string_view field, std::string_view value, size_t max_bytes, std::string_view forbidden = {});
// 1..max_bytes of [a-z0-9] (plus [A-Z] when allow_upper) and the characters in `extra`.
Status check_identifier(std::string_view field, std::string_view value, size_t max_bytes, bool allow_upper,
                        std::string_view extra);
// Valid UTF-8, no control characters, 1..max_bytes (0..max_bytes when allow_empty).
Status check_text(std::string_view field, std::string_view value, size_t max_bytes, bool allow_empty = false);
Status check_sha256_hex(std::string_view field, std::string_view hex);  // kSchema
Status check_finite(std::string_view field, double v);                  // kNonFinite
Status check_positive(std::string_view field, double v);                // kNonFinite, then kValidation

std::string quote(std::string_view s);  // "\"s\"", control characters as \\xNN
std::string fmt_double(double v);       // shortest "%g" form that round-trips

}  // namespace rdrr::vutil
