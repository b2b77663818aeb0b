// Writes a pack's weight shards (shard_00000.bin, shard_00001.bin, ...) into a directory, tensor by
// tensor, hashing each shard while it is written (shards are never re-read).
//
// SHARD PLACEMENT RULE (normative; rdrr/SPEC.md restates it). S = maximum shard size in bytes, a
// multiple of 256 and >= 256 (default 67108864). Tensors are placed in the order they are written;
// initially shard 0 is current and empty (it is created with the first tensor; a pack without
// tensors has no shards). P = size of the current (last) shard so far, A = P rounded up to a multiple of 256. For a tensor of
// N bytes:
//   1. If P > 0 and A + N > S, the current shard is closed at size P (no trailing padding) and a new,
//      empty shard becomes current (P = A = 0).
//   2. Bytes P..A-1 of the current shard are zero (alignment padding); the tensor starts at offset A.
//   3. The tensor's bytes follow contiguously. When the current shard reaches S bytes while tensor
//      bytes remain, a new shard is started and the bytes continue at its offset 0.
// Consequences: every tensor starts at a multiple of 256; a tensor with N <= S is never split (it
// stays in the current shard if it fits, else starts a new one at offset 0); a tensor with N > S
// starts at offset 0 of a shard (of a new one unless the current is still empty) and has
// ceil(N / S) spans: [0, S) in each shard but the last, then [0, N - (k-1)*S) in the last; no shard is
// larger than S; every shard holds at least one byte of tensor data except in the degenerate case of
// zero-byte tensors (a zero-byte tensor gets one span of size 0 at A in the current shard, and the
// padding up to A is written); padding is always < 256 bytes and always zero. The output is a pure
// function of the sequence of (N, bytes) and S.
//
// Disk full: write errors are returned, never fatal. ENOSPC/EFBIG/EDQUOT become kNoSpace naming the
// shard ("shard_00003.bin: write failed: No space left on device"). RLIMIT_FSIZE raises SIGXFSZ,
// which kills the process unless ignored: a tool's main must call rdrr::ignore_sigxfsz() (file_io.h).
// After any write error the writer is failed: every later call returns that error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "quant/status.h"
#include "rdrr/file_io.h"
#include "rdrr/placement.h"

namespace rdrr {

// Shard names have five digits, so a pack holds at most 100000 shards.
inline constexpr uint32_t kMaxShardCount = 100000;

// kInvalidArgument unless max_shard_bytes is a multiple of kTensorAlignmentBytes and >= it.
Status validate_max_shard_bytes(uint64_t max_shard_bytes);

// The placement rule above as pure arithmetic (no I/O): lets a caller compute every placement (and
// shard sizes) before writing. ShardWriter uses it, so both always agree.
class ShardPlanner {
 public:
  static Result<ShardPlanner> create(uint64_t max_shard_bytes);

  // Places the next tensor. Errors (state unchanged): kInvalidArgument when the pack would need more
  // than kMaxShardCount shards.
  Result<TensorPlacement> place(uint64_t size_bytes);

  // Size of every shard so far; the last one may still grow.
  const std::vector<uint64_t>& shard_sizes() const { return shard_sizes_; }
  uint64_t max_shard_bytes() const { return max_shard_bytes_; }

 private:
  explicit ShardPlanner(uint64_t max_shard_bytes) : max_shard_bytes_(max_shard_bytes) {}
  uint64_t max_shard_bytes_;
  std::vector<uint64_t> shard_sizes_;
};

struct ShardWriterOptions {
  uint64_t max_shard_bytes = kDefaultShardSizeBytes;
  size_t buffer_bytes = 8u << 20;  // write buffer per open shard (appends this large bypass it)
  bool sync_to_disk = true;        // fsync each shard when it is closed
};

class ShardWriter {
 public:
  // `dir` must exist. Shard files are created on demand with O_EXCL (a stale shard is kAlreadyExists).
  static Result<ShardWriter> create(const std::filesystem::path& dir, ShardWriterOptions options = {});

  ShardWriter(ShardWriter&&) noexcept = default;
  ShardWriter& operator=(ShardWriter&&) noexcept = default;

  // Streaming: begin_tensor(N), append(chunk)... (exactly N bytes in total), end_tensor().
  Status begin_tensor(uint64_t size_bytes);
  Status append(std::span<const std::byte> chunk);
  Result<TensorPlacement> end_tensor();
  // One shot: the same bytes and placement as the streaming calls.
  Result<TensorPlacement> add_tensor(std::span<const std::byte> bytes);

  // Closes (and fsyncs) the last shard and returns every shard in index order. No tensor may be open.
  // Empty when no tensor was written. The writer accepts nothing afterwards.
  Result<std::vector<ShardInfo>> finish();

  uint64_t bytes_written() const;  // logical stream bytes so far, padding included
  bool in_tensor() const { return in_tensor_; }
  bool finished() const { return finished_; }
  const std::filesystem::path& dir() const { return dir_; }
  uint64_t max_shard_bytes() const { return planner_.max_shard_bytes(); }

 private:
  ShardWriter(std::filesystem::path dir, ShardWriterOptions options, ShardPlanner planner)
      : dir_(std::move(dir)), options_(options), planner_(std::move(planner)) {}

  Status usable() const;
  Status fail(Status status);
  Status close_current_shard();
  // Makes `shard_index` the open shard (closing the previous one) and pads it to `offset_bytes`.
  Status open_shard_at(uint32_t shard_index, uint64_t offset_bytes);

  std::filesystem::path dir_;
  ShardWriterOptions options_;
  ShardPlanner planner_;
  std::vector<ShardInfo> closed_;
  uint64_t closed_bytes_ = 0;
  FileSink sink_;
  std::optional<uint32_t> open_shard_;

  bool in_tensor_ = false;
  bool finished_ = false;
  TensorPlacement tensor_;
  size_t span_index_ = 0;
  uint64_t span_written_bytes_ = 0;
  uint64_t tensor_written_bytes_ = 0;
  Status failed_;
};

}  // namespace rdrr
