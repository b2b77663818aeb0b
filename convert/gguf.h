// GGUF reader (versions 2 and 3, little-endian): memory-maps the file and validates it strictly.
//
// Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count; metadata entries (string key,
// u32 value type, value); tensor infos (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64
// offset); padding to general.alignment; data. Strings are u64 length + bytes.
// Version 2 and 3 share this little-endian layout (v3 only added big-endian files, which are rejected);
// version 1 (32-bit counts) is rejected.
// Rules: every count and length is bounded by the bytes left before anything is allocated; truncation
// anywhere is an error naming the entry; no duplicate metadata keys or tensor names; value types known;
// nested arrays unsupported; bools are 0 or 1; general.alignment (if present) is a u32 power of two
// (default 32); tensors have 1..4 dims, every ne > 0, ne[0] a multiple of the type's block size, a known
// and accepted type, an aligned offset, data inside the file and no overlap with another tensor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/gguf_types.h"
#include "convert/tensor_view.h"
#include "quant/status.h"
#include "rdrr/mapped_file.h"

namespace rdrr::convert {

inline constexpr uint32_t kGgufDefaultAlignment = 32;

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<uint64_t> ne;          // ne[0] = row length (fastest varying)
  uint64_t offset_bytes = 0;         // relative to the data section
  std::span<const std::byte> bytes;  // into the owning GgufFile's mapping

  std::string_view type_name() const { return ggml_type_name(type); }
  std::vector<int64_t> shape() const;  // row-major (PyTorch order): ne reversed
  uint64_t numel() const;
  // As a TensorView when the type has an rdrr dtype (F32, F16, BF16, Q8_0, Q4_K, Q6_K); else kUnsupported.
  Result<TensorView> view() const;
};

class GgufFile {
 public:
  // Errors: kNotFound/kIo (open), kParse (magic, truncation, absurd counts), kSchema (version, unknown
  // value or tensor type, wrongly typed general.alignment), kUnsupported (nested arrays, big-endian,
  // recognised but unsupported ggml types), kValidation (duplicates, dims, alignment, bounds, overlap).
  static Result<GgufFile> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset_bytes() const { return data_offset_bytes_; }

  // Metadata in file order, and typed lookups. Absent key: kNotFound; wrong type: kSchema.
  const std::vector<GgufKv>& metadata() const { return kvs_; }
  const GgufValue* find(std::string_view key) const;
  Result<uint32_t> get_u32(std::string_view key) const;
  Result<uint64_t> get_u64(std::string_view key) const;
  Result<int32_t> get_i32(std::string_view key) const;
  Result<float> get_f32(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string_view> get_string(std::string_view key) const;
  Result<const GgufArray*> get_array(std::string_view key) const;
  // Lenient numeric lookups: any integer type with a value in range (kValidation when out of range),
  // any float type.
  Result<uint64_t> get_uint(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;

  // Tensors in file order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(std::string_view name) const;
  Result<const GgufTensor*> get_tensor(std::string_view name) const;

 private:
  Status parse();
  Result<const GgufValue*> lookup(std::string_view key, GgufValueType want) const;

  MappedFile file_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_bytes_ = 0;
  std::vector<GgufKv> kvs_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace rdrr::convert
