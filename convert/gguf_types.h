// GGUF building blocks: ggml tensor types (ids, names, block geometry) and typed metadata values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "quant/dtype.h"
#include "quant/status.h"

namespace rdrr::convert {

// ggml tensor type ids as stored in GGUF tensor infos. Only the types the reader accepts are named here;
// the other ids ggml defines (IQ*, TQ*, I8..I64, F64, MXFP4, removed repacked types) are recognised by
// ggml_type_id_name() and rejected as unsupported.
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15, kBF16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;     // "Q4_K"
  uint32_t block_elems;      // values per block (1 for F32/F16/BF16)
  uint32_t block_bytes;      // bytes per block
};

// Info for an accepted type id, or nullopt (unknown or unsupported id).
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);
// Name of any ggml type id ggml has defined ("IQ2_XXS" for 16), or nullopt for ids it never used.
std::optional<std::string_view> ggml_type_id_name(uint32_t id);
std::string_view ggml_type_name(GgmlType t);
// The rdrr dtype with the same bytes (F32, F16, BF16, Q8_0, Q4_K, Q6_K), or nullopt.
std::optional<quant::DType> ggml_to_dtype(GgmlType t);

// GGUF metadata value types (ids as stored).
enum class GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
  kU64 = 10, kI64 = 11, kF64 = 12,
};
inline constexpr uint32_t kGgufValueTypeCount = 13;
std::string_view gguf_value_type_name(GgufValueType t);  // "u32", "string", "array", ...
// Bytes of one scalar of this type (0 for string and array).
uint32_t gguf_value_type_size(GgufValueType t);

// A metadata array (nested arrays are rejected by the reader).
struct GgufArray {
  GgufValueType elem_type = GgufValueType::kU8;
  uint64_t count = 0;
  std::vector<std::string> strings;  // elem_type == kString
  std::vector<std::byte> raw;        // other types: count * size little-endian scalars

  // Integer or bool elements widened to int64 (u64 values above INT64_MAX: kValidation); else kSchema.
  Result<std::vector<int64_t>> to_ints() const;
  // f32 (exact) or f64 (narrowed) elements; else kSchema.
  Result<std::vector<float>> to_f32() const;
};

struct GgufValue {
  GgufValueType type = GgufValueType::kU8;
  // u8/u16/u32/u64 -> uint64_t; i8/i16/i32/i64 -> int64_t; f32/f64 -> double; bool; string; array.
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> data;
};

struct GgufKv {
  std::string key;
  GgufValue value;
};

}  // namespace rdrr::convert
