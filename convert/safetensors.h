// SafeTensors reader: memory-maps a .safetensors file (or a sharded HF folder) and validates it strictly.
//
// File layout: u64 little-endian header length N, N bytes of UTF-8 JSON
//   {"__metadata__": {str: str}, name: {"dtype": D, "shape": [..], "data_offsets": [begin, end]}, ...}
// then the data section; offsets are relative to its start. Accepted dtypes: F32, F16, BF16.
// Rules (as strict as the reference safetensors library, or stricter): header length <= 100,000,000 and
// within the file; UTF-8 JSON object with no duplicate keys; each tensor entry has exactly dtype, shape
// and data_offsets; shape is a list of non-negative integers; data_offsets is [begin, end] with
// begin <= end; end - begin == numel * dtype size (no overflow); the tensors cover the data section
// exactly, without overlaps or holes; __metadata__ maps strings to strings.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "convert/tensor_view.h"
#include "quant/status.h"
#include "rdrr/mapped_file.h"

namespace rdrr::convert {

// Longest header the reference library accepts.
inline constexpr uint64_t kSafeTensorsMaxHeaderBytes = 100'000'000;

class SafeTensorsFile {
 public:
  // Errors: kNotFound/kIo (open), kParse (framing, JSON, UTF-8, duplicate keys), kSchema (field types,
  // unknown dtype), kUnsupported (known but unsupported dtype), kValidation (sizes, bounds, overlaps, holes).
  static Result<SafeTensorsFile> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return file_.path(); }
  // All tensors, sorted by name. Byte spans point into this object's mapping (valid while it lives;
  // moving the object keeps them valid).
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(std::string_view name) const;  // nullptr when absent
  Result<const TensorView*> get(std::string_view name) const;  // kNotFound when absent
  const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }
  uint64_t data_offset_bytes() const { return data_offset_bytes_; }  // 8 + header length
  const MappedFile& mapped_file() const { return file_; }

 private:
  MappedFile file_;
  uint64_t data_offset_bytes_ = 0;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string, std::less<>> metadata_;
};

// An HF checkpoint folder: model.safetensors, or model.safetensors.index.json naming the shards.
class SafeTensorsModel {
 public:
  // `path` is a folder (model.safetensors is preferred when both it and the index exist) or a single
  // .safetensors file. Index rules: {"weight_map": {tensor: file}, "metadata": {...}?}; file names are
  // plain names (no '/', '\\', '.', '..'); every listed file exists and opens; every mapped tensor is
  // in its file; no tensor is in two files; no file holds a tensor the map does not list.
  static Result<SafeTensorsModel> open(const std::filesystem::path& path);

  const std::vector<SafeTensorsFile>& files() const { return files_; }  // shards in file-name order
  // All tensors of all shards, sorted by name.
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(std::string_view name) const;
  Result<const TensorView*> get(std::string_view name) const;
  // The shard (index into files()) holding a tensor; -1 when absent.
  int shard_of(std::string_view name) const;

 private:
  Status build_index();
  std::vector<SafeTensorsFile> files_;
  std::vector<TensorView> tensors_;
  std::vector<int> tensor_shard_;  // parallel to tensors_
};

}  // namespace rdrr::convert
