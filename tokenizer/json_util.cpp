#include "tokenizer/json_util.h"

#include <fstream>
#include <sstream>

#include "rdrr/json_strict.h"

namespace rdrr::tok {

namespace {

constexpr uint64_t kMaxTokenizerFileBytes = 256ull << 20;

std::string child(const std::string& ptr, std::string_view key) { return rdrr::json_pointer_child(ptr, key); }

}  // namespace

Result<json> read_json_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) {
    return error(ec == std::errc::no_such_file_or_directory ? StatusCode::kNotFound : StatusCode::kIo,
                 path.string() + ": " + ec.message());
  }
  if (size > kMaxTokenizerFileBytes) {
    return error(StatusCode::kParse, path.string() + ": " + std::to_string(size) + " bytes > limit " +
                                         std::to_string(kMaxTokenizerFileBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(StatusCode::kIo, path.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return error(StatusCode::kIo, path.string() + ": read failed");
  return parse_json_strict(ss.str(), path.filename().string());
}

Status field_error(StatusCode code, const std::string& file, const std::string& ptr, std::string_view msg) {
  return error(code, file + ": " + (ptr.empty() ? std::string("/") : ptr) + ": " + std::string(msg));
}

const json* find_field(const json& obj, std::string_view key, bool null_is_absent) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(std::string(key));
  if (it == obj.end()) return nullptr;
  if (null_is_absent && it->is_null()) return nullptr;
  return &*it;
}

Result<std::string> FieldReader::string(const json& obj, const std::string& ptr, std::string_view key) const {
  const json* v = find_field(obj, key);
  if (v == nullptr) return error(child(ptr, key), "missing");
  if (!v->is_string()) return error(child(ptr, key), "expected a string, got " + rdrr::json_brief(*v));
  return v->get<std::string>();
}

Result<std::string> FieldReader::string_or(const json& obj, const std::string& ptr, std::string_view key,
                                           std::string dflt) const {
  if (find_field(obj, key) == nullptr) return dflt;
  return string(obj, ptr, key);
}

Result<bool> FieldReader::boolean_or(const json& obj, const std::string& ptr, std::string_view key, bool dflt) const {
  const json* v = find_field(obj, key);
  if (v == nullptr) return dflt;
  if (!v->is_boolean()) return error(child(ptr, key), "expected a boolean, got " + rdrr::json_brief(*v));
  return v->get<bool>();
}

Result<int64_t> FieldReader::integer(const json& obj, const std::string& ptr, std::string_view key) const {
  const json* v = find_field(obj, key);
  if (v == nullptr) return error(child(ptr, key), "missing");
  if (!v->is_number_integer()) return error(child(ptr, key), "expected an integer, got " + rdrr::json_brief(*v));
  return v->get<int64_t>();
}

Result<int64_t> FieldReader::integer_or(const json& obj, const std::string& ptr, std::string_view key,
                                        int64_t dflt) const {
  if (find_field(obj, key) == nullptr) return dflt;
  return integer(obj, ptr, key);
}

Result<const json*> FieldReader::array(const json& obj, const std::string& ptr, std::string_view key) const {
  const json* v = find_field(obj, key);
  if (v == nullptr) return error(child(ptr, key), "missing");
  if (!v->is_array()) return error(child(ptr, key), "expected an array, got " + rdrr::json_brief(*v));
  return v;
}

Result<const json*> FieldReader::object(const json& obj, const std::string& ptr, std::string_view key) const {
  const json* v = find_field(obj, key);
  if (v == nullptr) return error(child(ptr, key), "missing");
  if (!v->is_object()) return error(child(ptr, key), "expected an object, got " + rdrr::json_brief(*v));
  return v;
}

}  // namespace rdrr::tok
