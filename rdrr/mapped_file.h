// Read-only memory-mapped file (RAII, move-only). Used by the shard reader and the input readers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

#include "quant/status.h"

namespace rdrr {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Maps the whole file read-only. An empty file maps to an empty span. Errors: kNotFound, kIo.
  static Result<MappedFile> open(const std::filesystem::path& path);

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_bytes_}; }
  uint64_t size_bytes() const { return size_bytes_; }
  const std::filesystem::path& path() const { return path_; }

  // Tells the kernel the given range is no longer needed (releases page cache pages from our RSS).
  void release(uint64_t offset_bytes, uint64_t length_bytes) const;
  // Hints sequential reading of the given range.
  void will_need(uint64_t offset_bytes, uint64_t length_bytes) const;

 private:
  void reset();
  void* data_ = nullptr;
  uint64_t size_bytes_ = 0;
  std::filesystem::path path_;
};

}  // namespace rdrr
