// Reads a pack's shards through read-only memory maps: tensor bytes without copies where possible,
// every span bounds-checked against the actual shard file sizes, and SHA-256 verification of shards.
// Independent of the manifest: the caller passes the shard list (ShardInfo) and tensor placements.
// All const methods may be called from several threads at once (mappings are read-only).
//
//   RDRR_ASSIGN_OR_RETURN(ShardReader reader, ShardReader::open(pack_dir, shards));
//   RDRR_ASSIGN_OR_RETURN(TensorBytes t, reader.tensor_bytes("blk.0.attn_q.weight", placement));
//   use(t.bytes());                                 // zero copy for single-span tensors
//   RDRR_RETURN_IF_ERROR(reader.verify_all());      // names the first shard whose hash differs
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"
#include "rdrr/mapped_file.h"
#include "rdrr/placement.h"

namespace rdrr {

// A tensor's bytes: a view into the mapping (single span) or an owned gathered copy (several spans).
// Views stay valid while the ShardReader that produced them is alive.
class TensorBytes {
 public:
  static TensorBytes view(std::span<const std::byte> bytes) {
    TensorBytes t;
    t.view_ = bytes;
    return t;
  }
  static TensorBytes owned(std::vector<std::byte> bytes) {
    TensorBytes t;
    t.owned_ = std::move(bytes);
    t.view_ = t.owned_;
    t.is_owned_ = true;
    return t;
  }
  TensorBytes(TensorBytes&& other) noexcept { *this = std::move(other); }
  TensorBytes& operator=(TensorBytes&& other) noexcept {
    if (this == &other) return *this;
    is_owned_ = other.is_owned_;
    owned_ = std::move(other.owned_);
    view_ = is_owned_ ? std::span<const std::byte>(owned_) : other.view_;
    other.view_ = {};
    other.is_owned_ = false;
    return *this;
  }
  TensorBytes(const TensorBytes&) = delete;
  TensorBytes& operator=(const TensorBytes&) = delete;

  std::span<const std::byte> bytes() const { return view_; }
  bool is_copy() const { return is_owned_; }

 private:
  TensorBytes() = default;
  std::vector<std::byte> owned_;
  std::span<const std::byte> view_;
  bool is_owned_ = false;
};

class ShardReader {
 public:
  // Maps dir/<shards[i].filename> for every shard (filename defaults to shard_filename(index) when
  // empty). shards[i].index must equal i and filenames must be plain names (no '/', not "." or "..").
  // Sizes are NOT compared here (see check_sizes); tensor reads are bounds-checked against the real
  // file sizes. Errors: kValidation (bad list), kNotFound / kIo (file), each naming the shard.
  static Result<ShardReader> open(const std::filesystem::path& dir, std::vector<ShardInfo> shards);

  size_t shard_count() const { return files_.size(); }
  const ShardInfo& shard_info(uint32_t index) const { return shards_[index]; }
  uint64_t shard_file_size(uint32_t index) const { return files_[index].size_bytes(); }

  // kValidation naming the first shard whose file size differs from ShardInfo::size_bytes.
  Status check_sizes() const;

  // The bytes of one span, bounds-checked. Errors (kValidation), prefixed by the caller's context:
  // "span 1: shard index 7 >= shard count 3", "span 1: offset end 91234 > shard_00003.bin size 90000".
  Result<std::span<const std::byte>> span_bytes(const Span& span) const;
  // Every span of a tensor as views, in order. Errors are prefixed "tensor <name>: ".
  Result<std::vector<std::span<const std::byte>>> tensor_spans(std::string_view name,
                                                               const TensorPlacement& placement) const;
  // A view for a single-span tensor, a gathered copy otherwise.
  Result<TensorBytes> tensor_bytes(std::string_view name, const TensorPlacement& placement) const;
  // Gathers into a caller buffer (e.g. a mapped staging buffer); out.size() must equal the tensor size.
  Status read_tensor(std::string_view name, const TensorPlacement& placement, std::span<std::byte> out) const;
  // Drops the mapped pages of a tensor's spans from this process's RSS (the page cache keeps them; a later read
  // faults them back in). Spans outside the files are ignored.
  void release_tensor(const TensorPlacement& placement) const;
  // SHA-256 of a tensor's bytes (spans concatenated), lowercase hex.
  Result<std::string> tensor_sha256(std::string_view name, const TensorPlacement& placement) const;

  // Hashes the shard (releasing pages as it goes) and compares with expected_sha256. Errors:
  // kIntegrity "shard_00003.bin: sha256 mismatch: expected <hex>, actual <hex>".
  Status verify_shard(uint32_t index, std::string_view expected_sha256) const;
  // Against ShardInfo::sha256_hex, also checking sizes first (kIntegrity on a size mismatch).
  Status verify_shard(uint32_t index) const;
  // Verifies every shard (in parallel); returns the error of the lowest-index bad shard, with the
  // total number of bad shards appended when more than one is bad.
  Status verify_all() const;
  // Indices of all shards that fail verify_shard(index), ascending.
  std::vector<uint32_t> bad_shards() const;

  const std::filesystem::path& dir() const { return dir_; }

 private:
  ShardReader() = default;
  std::filesystem::path dir_;
  std::vector<ShardInfo> shards_;
  std::vector<MappedFile> files_;
};

// A named tensor for tensors_overlapping (the caller keeps the placement alive).
struct TensorRef {
  std::string_view name;
  const TensorPlacement* placement = nullptr;
};

// Names of the tensors with at least one byte in [begin_bytes, end_bytes) of shard `shard_index`, in
// the order given. Pass (0, UINT64_MAX) for "every tensor in the shard" (e.g. to name the tensors
// hit by a shard that failed verify_shard). Zero-byte tensors overlap nothing.
std::vector<std::string> tensors_overlapping(std::span<const TensorRef> tensors, uint32_t shard_index,
                                             uint64_t begin_bytes, uint64_t end_bytes);

}  // namespace rdrr
