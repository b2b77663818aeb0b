#include "rdrr/validate_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rdrr::vutil {

using rdrr::find_invalid_utf8;

bool is_lower_hex(std::string_view s, size_t length) {
  if (s.size() != length) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string fmt_double(double v) {
  char buf[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

namespace {
Status invalid(std::string_view field, std::string_view value, std::string_view why) {
  return error(StatusCode::kValidation, std::string(field) + " " + quote(value) + ": " + std::string(why));
}
bool has_control(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}
}  // namespace

Status check_plain_file_name(std::string_view field, std::string_view name) {
  if (name.empty()) return invalid(field, name, "unsafe file name (empty)");
  if (name.size() > 255) return invalid(field, name, "unsafe file name (longer than 255 bytes)");
  if (name.find('/') != std::string_view::npos) return invalid(field, name, "unsafe file name (contains '/')");
  if (name.find('\\') != std::string_view::npos) {
    return invalid(field, name, "unsafe file name (contains a backslash)");
  }
  if (has_control(name)) return invalid(field, name, "unsafe file name (NUL or control character)");
  if (name.front() == '.') return invalid(field, name, "unsafe file name (starts with '.', e.g. \"..\")");
  if (find_invalid_utf8(name)) return invalid(field, name, "unsafe file name (invalid UTF-8)");
  return Status::Ok();
}

Status check_relative_path(std::string_view field, std::string_view path) {
  if (path.empty()) return invalid(field, path, "unsafe path (empty)");
  if (path.front() == '/') return invalid(field, path, "unsafe path (absolute)");
  if (path.size() > kMaxRelativePathBytes) return invalid(field, path, "unsafe path (too long)");
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t end = std::min(path.find('/', begin), path.size());
    const std::string_view part = path.substr(begin, end - begin);
    if (part == "..") return invalid(field, path, "unsafe path (\"..\" component)");
    Status s = check_plain_file_name(field, part);
    if (!s.ok()) return invalid(field, path, "unsafe path (bad component " + quote(part) + ")");
    begin = end + 1;
  }
  return Status::Ok();
}

Status check_token(std::string_view field, std::string_view value, size_t max_bytes, std::string_view forbidden) {
  if (value.empty()) return invalid(field, value, "must not be empty");
  if (value.size() > max_bytes) {
    return invalid(field, value, "longer than " + std::to_string(max_bytes) + " bytes");
  }
  for (char c : value) {
    if (c <= 0x20 || c >= 0x7f) return invalid(field, value, "must be printable ASCII without spaces");
    if (forbidden.find(c) != std::string_view::npos) {
      return invalid(field, value, std::string("must not contain '") + c + "'");
    }
  }
  return Status::Ok();
}

Status check_identifier(std::string_view field, std::string_view value, size_t max_bytes, bool allow_upper,
                        std::string_view extra) {
  if (value.empty()) return invalid(field, value, "must not be empty");
  if (value.size() > max_bytes) {
    return invalid(field, value, "longer than " + std::to_string(max_bytes) + " bytes");
  }
  for (char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (allow_upper && c >= 'A' && c <= 'Z') ||
                    extra.find(c) != std::string_view::npos;
    if (!ok) {
      return invalid(field, value,
                     std::string("may only contain ") + (allow_upper ? "[A-Za-z0-9]" : "[a-z0-9]") +
                         (extra.empty() ? "" : " and " + quote(extra)));
    }
  }
  return Status::Ok();
}

Status check_text(std::string_view field, std::string_view value, size_t max_bytes, bool allow_empty) {
  if (value.empty() && !allow_empty) return error(StatusCode::kSchema, std::string(field) + ": must not be empty");
  if (value.size() > max_bytes) return invalid(field, value, "longer than " + std::to_string(max_bytes) + " bytes");
  if (find_invalid_utf8(value)) return invalid(field, value, "not valid UTF-8");
  if (has_control(value)) return invalid(field, value, "contains a control character");
  return Status::Ok();
}

Status check_sha256_hex(std::string_view field, std::string_view hex) {
  if (!is_lower_hex(hex, 64)) {
    return error(StatusCode::kSchema,
                 std::string(field) + ": " + quote(hex) + " is not a sha256 (64 lowercase hex digits)");
  }
  return Status::Ok();
}

Status check_finite(std::string_view field, double v) {
  if (!std::isfinite(v)) return error(StatusCode::kNonFinite, std::string(field) + ": not finite");
  return Status::Ok();
}

Status check_positive(std::string_view field, double v) {
  RDRR_RETURN_IF_ERROR(check_finite(field, v));
  if (!(v > 0)) {
    return error(StatusCode::kValidation, std::string(field) + ": must be > 0, got " + fmt_double(v));
  }
  return Status::Ok();
}

}  // namespace rdrr::vutil
