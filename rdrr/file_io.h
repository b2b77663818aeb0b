// Low-level POSIX file output for pack writing: an owned descriptor, checked writes that map
// ENOSPC/EFBIG/EDQUOT to StatusCode::kNoSpace, directory fsync, and FileSink (buffered, hashing,
// fsync-on-finish). Used by ShardWriter and PackWriter; nothing here knows about the manifest.
//
// Disk full and RLIMIT_FSIZE: a write past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills the
// process. Every tool main that writes packs must call ignore_sigxfsz() first, so that such a write
// fails with EFBIG and surfaces as kNoSpace ("shard_00003.bin: write failed: File too large").
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"
#include "rdrr/sha256.h"

namespace rdrr {

// Sets SIGXFSZ to SIG_IGN (process-wide). Call once at the start of a writing tool's main.
void ignore_sigxfsz();

// kNoSpace for ENOSPC/EFBIG/EDQUOT, kNotFound for ENOENT, kIo otherwise.
StatusCode status_code_for_errno(int err);
// "<what_path>: <action>: <strerror(err)>" with the code from status_code_for_errno.
Status errno_status(int err, std::string_view what_path, std::string_view action);

// Owned file descriptor (move-only). close() reports errors; the destructor ignores them.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept;
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes and returns 0, or the errno of a failed close(). The descriptor is released either way.
  int close();

 private:
  int fd_ = -1;
};

// Writes all of `data` (retrying short writes and EINTR). `name` is used in the error message.
Status write_all(int fd, std::span<const std::byte> data, std::string_view name);
// fsync of a directory (makes renames/creations inside it durable).
Status fsync_dir(const std::filesystem::path& dir);

struct FileDigest {
  uint64_t size_bytes = 0;
  std::string sha256_hex;
};

// A new file written front to back: buffered writes, SHA-256 of everything appended, optional fsync.
// The file is created with O_EXCL (an existing file is an error). Errors are sticky: after the first
// failure every call returns the same status. Destroying an unfinished sink closes the file and leaves it.
class FileSink {
 public:
  struct Options {
    size_t buffer_bytes = 8u << 20;  // appends smaller than this are coalesced
    bool sync_to_disk = true;        // fsync in finish()
  };

  FileSink() = default;
  FileSink(FileSink&&) noexcept = default;
  FileSink& operator=(FileSink&&) noexcept = default;

  // `display_name` names the file in error messages (e.g. "shard_00003.bin").
  static Result<FileSink> create(const std::filesystem::path& path, std::string display_name, Options options);
  static Result<FileSink> create(const std::filesystem::path& path, std::string display_name) {
    return create(path, std::move(display_name), Options{});
  }

  Status append(std::span<const std::byte> data);
  Status append_zeros(uint64_t count_bytes);
  // Flushes, fsyncs (if asked) and closes; returns size and hash. The sink is closed afterwards.
  Result<FileDigest> finish();

  uint64_t size_bytes() const { return size_bytes_; }
  bool is_open() const { return fd_.valid(); }
  const std::string& display_name() const { return name_; }

 private:
  Status flush();
  Status fail(Status status);

  UniqueFd fd_;
  std::string name_;
  Options options_;
  std::vector<std::byte> buffer_;
  size_t buffered_bytes_ = 0;
  uint64_t size_bytes_ = 0;
  Sha256 hash_;
  Status failed_;
};

// Writes a whole file at once (FileSink with no extra buffering).
Result<FileDigest> write_new_file(const std::filesystem::path& path, std::string display_name,
                                  std::span<const std::byte> data, bool sync_to_disk);

// 16 lowercase hex digits from std::random_device (for unique temporary names).
std::string random_hex_suffix();

}  // namespace rdrr
