// Where bytes live in a pack: shared by the shard writer/reader and the manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rdrr {

inline constexpr uint64_t kTensorAlignmentBytes = 256;         // every tensor start in a shard
inline constexpr uint64_t kDefaultShardSizeBytes = 64ull << 20;  // 67108864, as in the original RDRR

// One contiguous piece of a tensor inside one shard.
struct Span {
  uint32_t shard_index = 0;
  uint64_t offset_bytes = 0;  // from the start of the shard file
  uint64_t size_bytes = 0;
  bool operator==(const Span&) const = default;
};

// A tensor's bytes: one span normally, several (in order) when it crosses shards.
struct TensorPlacement {
  std::vector<Span> spans;
  uint64_t total_bytes() const {
    uint64_t n = 0;
    for (const Span& s : spans) n += s.size_bytes;
    return n;
  }
  bool operator==(const TensorPlacement&) const = default;
};

// One shard file: shard_NNNNN.bin.
struct ShardInfo {
  uint32_t index = 0;
  std::string filename;         // "shard_00000.bin"
  uint64_t size_bytes = 0;
  std::string sha256_hex;       // 64 lowercase hex digits
  uint64_t stream_offset_bytes = 0;  // running offset of this shard in the logical byte stream
  bool operator==(const ShardInfo&) const = default;
};

std::string shard_filename(uint32_t index);  // "shard_00042.bin"

}  // namespace rdrr
