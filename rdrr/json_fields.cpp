#include "rdrr/json_fields.h"

namespace rdrr::json_fields {

Status schema_error(const std::string& path, std::string_view message) {
  std::string msg = path.empty() ? "(root)" : path;
  msg += ": ";
  msg += message;
  return error(StatusCode::kSchema, std::move(msg));
}

namespace {
std::string got(const json& v) {
  if (v.is_number() || v.is_boolean() || v.is_null()) return v.dump();
  return v.type_name();
}
}  // namespace

Status to_uint(const json& v, const std::string& path, uint64_t max, uint64_t& out) {
  if (v.is_number_unsigned()) {
    const uint64_t x = v.get<uint64_t>();
    if (x > max) {
      return schema_error(path, "integer " + std::to_string(x) + " exceeds the limit " + std::to_string(max));
    }
    out = x;
    return Status::Ok();
  }
  if (v.is_number_integer()) return schema_error(path, "must be a non-negative integer, got " + got(v));
  return schema_error(path, "must be an integer, got " + got(v));
}

Status to_int(const json& v, const std::string& path, int64_t& out) {
  constexpr int64_t kLimit = int64_t{1} << 53;
  if (v.is_number_unsigned()) {
    const uint64_t x = v.get<uint64_t>();
    if (x > static_cast<uint64_t>(kLimit)) return schema_error(path, "integer " + got(v) + " exceeds 2^53");
    out = static_cast<int64_t>(x);
    return Status::Ok();
  }
  if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    if (x < -kLimit) return schema_error(path, "integer " + got(v) + " is below -2^53");
    out = x;
    return Status::Ok();
  }
  return schema_error(path, "must be an integer, got " + got(v));
}

Status to_double(const json& v, const std::string& path, double& out) {
  if (!v.is_number()) return schema_error(path, "must be a number, got " + got(v));
  out = v.get<double>();  // the strict parser already rejected numbers that overflow
  return Status::Ok();
}

Status to_bool(const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) return schema_error(path, "must be true or false, got " + got(v));
  out = v.get<bool>();
  return Status::Ok();
}

Status to_string(const json& v, const std::string& path, size_t max_bytes, std::string& out) {
  if (!v.is_string()) return schema_error(path, "must be a string, got " + got(v));
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() > max_bytes) {
    return schema_error(
        path, "string of " + std::to_string(s.size()) + " bytes exceeds the limit of " + std::to_string(max_bytes));
  }
  out = s;
  return Status::Ok();
}

Status expect_array(const json& v, const std::string& path, size_t max_entries) {
  if (!v.is_array()) return schema_error(path, "must be an array, got " + got(v));
  if (v.size() > max_entries) {
    return schema_error(
        path, "array of " + std::to_string(v.size()) + " entries exceeds the limit of " + std::to_string(max_entries));
  }
  return Status::Ok();
}

Result<Object> Object::open(const json& v, std::string path) {
  if (!v.is_object()) return schema_error(path, "must be an object, got " + got(v));
  return Object(&v, std::move(path));
}

const json* Object::get(std::string_view key) {
  used_.emplace(key);
  const auto it = j_->find(std::string(key));
  return it == j_->end() ? nullptr : &*it;
}

Result<const json*> Object::need(std::string_view key) {
  const json* v = get(key);
  if (v == nullptr) return schema_error(path_, "missing required field \"" + std::string(key) + "\"");
  return v;
}

Status Object::finish() const {
  for (const auto& item : j_->items()) {
    if (used_.find(item.key()) == used_.end()) {
      return schema_error(path_, "unknown field \"" + item.key() + "\"");
    }
  }
  return Status::Ok();
}

Status Object::req_double(std::string_view key, double& out) {
  RDRR_ASSIGN_OR_RETURN(const json* v, need(key));
  return to_double(*v, child(key), out);
}

Status Object::opt_double(std::string_view key, std::optional<double>& out) {
  out.reset();
  const json* v = get(key);
  if (v == nullptr) return Status::Ok();
  double x = 0;
  RDRR_RETURN_IF_ERROR(to_double(*v, child(key), x));
  out = x;
  return Status::Ok();
}

Status Object::req_bool(std::string_view key, bool& out) {
  RDRR_ASSIGN_OR_RETURN(const json* v, need(key));
  return to_bool(*v, child(key), out);
}

Status Object::req_string(std::string_view key, std::string& out, size_t max_bytes) {
  RDRR_ASSIGN_OR_RETURN(const json* v, need(key));
  return to_string(*v, child(key), max_bytes, out);
}

Status Object::opt_string(std::string_view key, std::optional<std::string>& out, size_t max_bytes) {
  out.reset();
  const json* v = get(key);
  if (v == nullptr) return Status::Ok();
  std::string s;
  RDRR_RETURN_IF_ERROR(to_string(*v, child(key), max_bytes, s));
  out = std::move(s);
  return Status::Ok();
}

}  // namespace rdrr::json_fields
