#include "convert/gguf_types.h"

#include <array>
#include <cstring>

namespace rdrr::convert {
namespace {

constexpr std::array<GgmlTypeInfo, 15> kAccepted = {{
    {GgmlType::kF32, "F32", 1, 4},       {GgmlType::kF16, "F16", 1, 2},       {GgmlType::kQ4_0, "Q4_0", 32, 18},
    {GgmlType::kQ4_1, "Q4_1", 32, 20},   {GgmlType::kQ5_0, "Q5_0", 32, 22},   {GgmlType::kQ5_1, "Q5_1", 32, 24},
    {GgmlType::kQ8_0, "Q8_0", 32, 34},   {GgmlType::kQ8_1, "Q8_1", 32, 36},   {GgmlType::kQ2_K, "Q2_K", 256, 84},
    {GgmlType::kQ3_K, "Q3_K", 256, 110}, {GgmlType::kQ4_K, "Q4_K", 256, 144}, {GgmlType::kQ5_K, "Q5_K", 256, 176},
    {GgmlType::kQ6_K, "Q6_K", 256, 210}, {GgmlType::kQ8_K, "Q8_K", 256, 292}, {GgmlType::kBF16, "BF16", 1, 2},
}};

// Every id ggml has used, by value (empty: never assigned).
constexpr std::array<std::string_view, 40> kAllNames = {
    "F32",     "F16",     "Q4_0",     "Q4_1",       "Q4_2",       "Q4_3",       "Q5_0",     "Q5_1",
    "Q8_0",    "Q8_1",    "Q2_K",     "Q3_K",       "Q4_K",       "Q5_K",       "Q6_K",     "Q8_K",
    "IQ2_XXS", "IQ2_XS",  "IQ3_XXS",  "IQ1_S",      "IQ4_NL",     "IQ3_S",      "IQ2_S",    "IQ4_XS",
    "I8",      "I16",     "I32",      "I64",        "F64",        "IQ1_M",      "BF16",     "Q4_0_4_4",
    "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",  "TQ2_0",      "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
};

template <typename T>
T load_le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // little-endian host (static_assert in gguf.cpp)
  return v;
}

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const GgmlTypeInfo& info : kAccepted) {
    if (static_cast<uint32_t>(info.type) == id) return info;
  }
  return std::nullopt;
}

std::optional<std::string_view> ggml_type_id_name(uint32_t id) {
  if (id >= kAllNames.size()) return std::nullopt;
  return kAllNames[id];
}

std::string_view ggml_type_name(GgmlType t) {
  const auto info = ggml_type_info(static_cast<uint32_t>(t));
  return info ? info->name : std::string_view("?");
}

std::optional<quant::DType> ggml_to_dtype(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return quant::DType::kF32;
    case GgmlType::kF16: return quant::DType::kF16;
    case GgmlType::kBF16: return quant::DType::kBF16;
    case GgmlType::kQ8_0: return quant::DType::kQ8_0;
    case GgmlType::kQ4_K: return quant::DType::kQ4_K;
    case GgmlType::kQ6_K: return quant::DType::kQ6_K;
    case GgmlType::kQ4_0: return quant::DType::kQ4_0;
    case GgmlType::kQ5_0: return quant::DType::kQ5_0;
    case GgmlType::kQ5_K: return quant::DType::kQ5_K;
    default: return std::nullopt;
  }
}

std::string_view gguf_value_type_name(GgufValueType t) {
  static constexpr std::array<std::string_view, kGgufValueTypeCount> kNames = {
      "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < kNames.size() ? kNames[i] : std::string_view("?");
}

uint32_t gguf_value_type_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8: case GgufValueType::kI8: case GgufValueType::kBool: return 1;
    case GgufValueType::kU16: case GgufValueType::kI16: return 2;
    case GgufValueType::kU32: case GgufValueType::kI32: case GgufValueType::kF32: return 4;
    case GgufValueType::kU64: case GgufValueType::kI64: case GgufValueType::kF64: return 8;
    default: return 0;
  }
}

Result<std::vector<int64_t>> GgufArray::to_ints() const {
  std::vector<int64_t> out;
  out.reserve(count);
  const uint32_t size = gguf_value_type_size(elem_type);
  for (uint64_t i = 0; i < count; ++i) {
    const std::byte* p = raw.data() + i * size;
    switch (elem_type) {
      case GgufValueType::kU8: case GgufValueType::kBool: out.push_back(load_le<uint8_t>(p)); break;
      case GgufValueType::kI8: out.push_back(load_le<int8_t>(p)); break;
      case GgufValueType::kU16: out.push_back(load_le<uint16_t>(p)); break;
      case GgufValueType::kI16: out.push_back(load_le<int16_t>(p)); break;
      case GgufValueType::kU32: out.push_back(load_le<uint32_t>(p)); break;
      case GgufValueType::kI32: out.push_back(load_le<int32_t>(p)); break;
      case GgufValueType::kI64: out.push_back(load_le<int64_t>(p)); break;
      case GgufValueType::kU64: {
        const auto v = load_le<uint64_t>(p);
        if (v > static_cast<uint64_t>(INT64_MAX)) {
          return error(StatusCode::kValidation, "array element " + std::to_string(i) + ": u64 value " +
                                                    std::to_string(v) + " does not fit int64");
        }
        out.push_back(static_cast<int64_t>(v));
        break;
      }
      default:
        return error(StatusCode::kSchema, "expected an integer array, found an array of " +
                                              std::string(gguf_value_type_name(elem_type)));
    }
  }
  return out;
}

Result<std::vector<float>> GgufArray::to_f32() const {
  if (elem_type != GgufValueType::kF32 && elem_type != GgufValueType::kF64) {
    return error(StatusCode::kSchema, "expected an f32 array, found an array of " +
                                          std::string(gguf_value_type_name(elem_type)));
  }
  std::vector<float> out(count);
  for (uint64_t i = 0; i < count; ++i) {
    out[i] = elem_type == GgufValueType::kF32 ? load_le<float>(raw.data() + i * 4)
                                              : static_cast<float>(load_le<double>(raw.data() + i * 8));
  }
  return out;
}

}  // namespace rdrr::convert
