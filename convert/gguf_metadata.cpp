// GgufFile lookups (metadata and tensors) and GgufTensor helpers.
#include <limits>

#include "convert/gguf.h"

namespace rdrr::convert {
namespace {

template <typename T>
Result<T> narrow_uint(std::string_view key, uint64_t v) {
  if (v > std::numeric_limits<T>::max()) {
    return error(StatusCode::kValidation, "metadata key '" + std::string(key) + "': value " + std::to_string(v) +
                                              " out of range");
  }
  return static_cast<T>(v);
}

}  // namespace

std::vector<int64_t> GgufTensor::shape() const {
  return {ne.rbegin(), ne.rend()};  // each ne <= INT64_MAX (checked at parse)
}

uint64_t GgufTensor::numel() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  return n;
}

Result<TensorView> GgufTensor::view() const {
  const auto dtype = ggml_to_dtype(type);
  if (!dtype) {
    return error(StatusCode::kUnsupported, "tensor '" + name + "': ggml type " + std::string(type_name()) +
                                               " has no rdrr dtype (dequantize it first)");
  }
  TensorView v;
  v.name = name;
  v.dtype = *dtype;
  for (int64_t d : shape()) v.shape.push_back(d);
  v.bytes = bytes;
  return v;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

Result<const GgufValue*> GgufFile::lookup(std::string_view key, GgufValueType want) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return error(StatusCode::kNotFound, path().string() + ": no metadata key '" + std::string(key) + "'");
  if (v->type != want) {
    return error(StatusCode::kSchema, path().string() + ": metadata key '" + std::string(key) + "': expected " +
                                          std::string(gguf_value_type_name(want)) + ", found " +
                                          std::string(gguf_value_type_name(v->type)));
  }
  return v;
}

Result<uint32_t> GgufFile::get_u32(std::string_view key) const {
  RDRR_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key, GgufValueType::kU32));
  return static_cast<uint32_t>(std::get<uint64_t>(v->data));
}

Result<uint64_t> GgufFile::get_u64(std::string_view key) const {
  RDRR_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key, GgufValueType::kU64));
  return std::get<uint64_t>(v->data);
}

Result<int32_t> GgufFile::get_i32(std::string_view key) const {
  RDRR_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key, GgufValueType::kI32));
  return static_cast<int32_t>(std::get<int64_t>(v->data));
}

Result<float> GgufFile::get_f32(std::string_view key) const {
  RDRR_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key, GgufValueType::kF32));
  return static_cast<float>(std::get<double>(v->data));
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  RDRR_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key, GgufValueType::kBool));
  return std::get<bool>(v->data);
}

Result<std::string_view> GgufFile::get_string(std::string_view key) const {
  RDRR_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key, GgufValueType::kString));
  return std::string_view(std::get<std::string>(v->data));
}

Result<const GgufArray*> GgufFile::get_array(std::string_view key) const {
  RDRR_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key, GgufValueType::kArray));
  return &std::get<GgufArray>(v->data);
}

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return error(StatusCode::kNotFound, path().string() + ": no metadata key '" + std::string(key) + "'");
  if (const auto* u = std::get_if<uint64_t>(&v->data)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v->data)) {
    if (*i >= 0) return static_cast<uint64_t>(*i);
    return error(StatusCode::kValidation, path().string() + ": metadata key '" + std::string(key) + "': value " +
                                              std::to_string(*i) + " is negative");
  }
  return error(StatusCode::kSchema, path().string() + ": metadata key '" + std::string(key) +
                                        "': expected an integer, found " + std::string(gguf_value_type_name(v->type)));
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v != nullptr) {
    if (const auto* i = std::get_if<int64_t>(&v->data)) return *i;
  }
  RDRR_ASSIGN_OR_RETURN(uint64_t u, get_uint(key));
  Result<int64_t> r = narrow_uint<int64_t>(key, u);
  return std::move(r).context(path().string());
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return error(StatusCode::kNotFound, path().string() + ": no metadata key '" + std::string(key) + "'");
  if (const auto* d = std::get_if<double>(&v->data)) return *d;
  return error(StatusCode::kSchema, path().string() + ": metadata key '" + std::string(key) +
                                        "': expected f32 or f64, found " + std::string(gguf_value_type_name(v->type)));
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<const GgufTensor*> GgufFile::get_tensor(std::string_view name) const {
  if (const GgufTensor* t = find_tensor(name)) return t;
  return error(StatusCode::kNotFound, path().string() + ": no tensor '" + std::string(name) + "'");
}

}  // namespace rdrr::convert
