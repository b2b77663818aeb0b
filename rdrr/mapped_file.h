// Read-only memory-mapped file (RAII, move-only). Used by the shard reader and the input readers.
//
// The file stays open while it is mapped: bytes read once per pass (weights streamed by the converter and the
// reference engines) are copied with pread (read(), copy_mapped_bytes) rather than through the mapping. On a page
// cache that is released between passes, a mapping costs a page fault per 64 KiB and page-table work per read,
// several times slower than the kernel's own copy (bench/README.md, "Reading weights").
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

  // Copies bytes [offset_bytes, offset_bytes + out.size()) of the file into out (pread). Errors: kInvalidArgument
  // (outside the file), kIo (the read failed or the file shrank), naming the file.
  Status read(uint64_t offset_bytes, std::span<std::byte> out) const;

  // Tells the kernel the given range is no longer needed (releases page cache pages from our RSS).
  void release(uint64_t offset_bytes, uint64_t length_bytes) const;
  // Hints sequential reading of the given range.
  void will_need(uint64_t offset_bytes, uint64_t length_bytes) const;

 private:
  void reset();
  void* data_ = nullptr;
  uint64_t size_bytes_ = 0;
  int fd_ = -1;
  std::filesystem::path path_;
};

// Copies src into dst (same size). Where src lies inside the mapping of a live MappedFile and is at least
// kFileReadMinBytes long, the bytes come from the file (MappedFile::read); shorter spans (a column_wise row range
// is one short span per input) and any other memory are copied (a system call per short span costs more). Errors: those of read, kInvalidArgument (sizes).
inline constexpr uint64_t kFileReadMinBytes = uint64_t{16} << 10;
Status copy_mapped_bytes(std::span<const std::byte> src, std::span<std::byte> dst);

}  // namespace rdrr
