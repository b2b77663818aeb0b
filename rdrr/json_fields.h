// Internal to rdrr/: typed, strict access to the fields of a parsed JSON object, with errors (kSchema)
// that name the JSON Pointer of the value. Used by the manifest reader.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "quant/status.h"
#include "rdrr/json_strict.h"

namespace rdrr::json_fields {

using nlohmann::json;

Status schema_error(const std::string& path, std::string_view message);

// Scalar conversions. Integers must be JSON integers (no fraction, no exponent), >= 0 and <= max.
Status to_uint(const json& v, const std::string& path, uint64_t max, uint64_t& out);
Status to_int(const json& v, const std::string& path, int64_t& out);  // |x| <= 2^53
Status to_double(const json& v, const std::string& path, double& out);
Status to_bool(const json& v, const std::string& path, bool& out);
Status to_string(const json& v, const std::string& path, size_t max_bytes, std::string& out);
Status expect_array(const json& v, const std::string& path, size_t max_entries);

template <typename T>
constexpr uint64_t max_uint_for() {
  constexpr uint64_t kTypeMax = std::numeric_limits<T>::max();
  return kTypeMax < (1ull << 53) ? kTypeMax : (1ull << 53);
}

// An object being read: every key looked at is remembered; finish() rejects the others.
class Object {
 public:
  static Result<Object> open(const json& v, std::string path);

  const std::string& path() const { return path_; }
  std::string child(std::string_view key) const { return json_pointer_child(path_, key); }

  const json* get(std::string_view key);           // nullptr when absent
  Result<const json*> need(std::string_view key);  // kSchema when absent
  Status finish() const;                           // kSchema on the first unknown key

  template <typename T>
  Status req_uint(std::string_view key, T& out) {
    RDRR_ASSIGN_OR_RETURN(const json* v, need(key));
    uint64_t x = 0;
    RDRR_RETURN_IF_ERROR(to_uint(*v, child(key), max_uint_for<T>(), x));
    out = static_cast<T>(x);
    return Status::Ok();
  }
  template <typename T>
  Status opt_uint(std::string_view key, std::optional<T>& out) {
    out.reset();
    if (get(key) == nullptr) return Status::Ok();
    T x{};
    RDRR_RETURN_IF_ERROR(req_uint(key, x));
    out = x;
    return Status::Ok();
  }
  Status req_double(std::string_view key, double& out);
  Status opt_double(std::string_view key, std::optional<double>& out);
  Status req_bool(std::string_view key, bool& out);
  Status req_string(std::string_view key, std::string& out, size_t max_bytes);
  Status opt_string(std::string_view key, std::optional<std::string>& out, size_t max_bytes);

  // A string field holding one of an enum's spellings.
  template <typename E>
  Status req_enum(std::string_view key, std::optional<E> (*parse)(std::string_view), E& out) {
    std::string s;
    RDRR_RETURN_IF_ERROR(req_string(key, s, 64));
    const std::optional<E> e = parse(s);
    if (!e) return schema_error(child(key), "unknown value \"" + s + "\"");
    out = *e;
    return Status::Ok();
  }

 private:
  Object(const json* j, std::string path) : j_(j), path_(std::move(path)) {}
  const json* j_;
  std::string path_;
  std::set<std::string, std::less<>> used_;
};

}  // namespace rdrr::json_fields
