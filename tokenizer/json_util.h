// Internal to tokenizer/: reading fields of tokenizer JSON files with errors that name the file and the
// field (JSON Pointer), e.g. "tokenizer.json: /model/merges/3: expected a string or a pair of strings".
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "quant/status.h"

namespace rdrr::tok {

using nlohmann::json;

// Reads and strictly parses a JSON file (rdrr::parse_json_strict). kNotFound / kIo / kParse, naming it.
Result<json> read_json_file(const std::filesystem::path& path);

Status field_error(StatusCode code, const std::string& file, const std::string& ptr, std::string_view msg);

// A field of object `obj` at JSON Pointer `ptr`: nullptr when absent (or JSON null when null_is_absent).
const json* find_field(const json& obj, std::string_view key, bool null_is_absent = true);

struct FieldReader {
  std::string file;  // for messages

  Result<std::string> string(const json& obj, const std::string& ptr, std::string_view key) const;
  Result<std::string> string_or(const json& obj, const std::string& ptr, std::string_view key, std::string dflt) const;
  Result<bool> boolean_or(const json& obj, const std::string& ptr, std::string_view key, bool dflt) const;
  Result<int64_t> integer(const json& obj, const std::string& ptr, std::string_view key) const;
  Result<int64_t> integer_or(const json& obj, const std::string& ptr, std::string_view key, int64_t dflt) const;
  // The value must be an array / object (kSchema otherwise, or when absent).
  Result<const json*> array(const json& obj, const std::string& ptr, std::string_view key) const;
  Result<const json*> object(const json& obj, const std::string& ptr, std::string_view key) const;
  Status error(const std::string& ptr, std::string_view msg) const { return field_error(StatusCode::kSchema, file, ptr, msg); }
  Status unsupported(const std::string& ptr, std::string_view msg) const {
    return field_error(StatusCode::kUnsupported, file, ptr, msg);
  }
};

}  // namespace rdrr::tok
