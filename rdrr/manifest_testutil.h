// Test support (linked into rdrr's test binaries only): realistic manifests built in code.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "rdrr/manifest.h"

namespace rdrr::testing {

// A deterministic 64-hex-digit string derived from `seed` (well-formed, not a real digest).
std::string fake_sha256(std::string_view seed);

// Places tensors (in the given order) into shards the way SPEC.md "Placement" prescribes: each start
// aligned to 256 bytes, a tensor larger than the room left split at the shard end and continued at
// offset 0 of the next shards. Sets every tensor's placement and rebuilds m.shards (fake hashes).
void place_tensors(Manifest& m, uint64_t shard_cap_bytes);

// A tiny-gemma3-like Q4_K_M manifest (fixtures/tiny-gemma3: 3 layers, hidden 256, MQA 4/1 x 64,
// sliding layers 0-1, tied Q6_K embedding, Q6_K v/down on the last layer, F32 norms, Q4_K row_wise
// elsewhere) with an execution graph, tokenizer files, goldens and provenance. With the default
// 64 KiB shards the embedding spans four shards. Canonical and derived fields filled; valid.
Manifest tiny_gemma3_manifest(uint64_t shard_cap_bytes = 65536);

// Writes a pack for `m` into `dir` (created): manifest.json, zero-filled shards and placeholder
// tokenizer/golden files of the recorded sizes. Returns false (with gtest failures) on I/O errors.
bool write_pack_files(const Manifest& m, const std::filesystem::path& dir);

}  // namespace rdrr::testing
