// kernels/kernel-digests.json: the digest of every registry kernel variant (kernels/digest.h), checked in,
// embedded into rdrr_kernels at build time, and kept fresh by `rdrr-digests sync|check` (ctest runs check).
//
// Format (deterministic: entries sorted by name, object keys sorted, 2-space indent, trailing LF):
//   {"version": 1, "kernels": [{"name", "file", "entry", "defines": {NAME: value}, "spec": {"<id>": value},
//                               "sources": {"<relative path>": "sha256:<hex>"}, "digest": "sha256:<hex>"}]}
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/digest.h"
#include "quant/status.h"

namespace rdrr::kernels {

inline constexpr std::string_view kDigestTableFile = "kernel-digests.json";

struct DigestEntry {
  KernelVariantSource variant;
  KernelDigest digest;
  bool operator==(const DigestEntry& o) const;
};

// One entry per registry kernel (all_kernels()), sorted by name, digests computed from kernels_dir.
Result<std::vector<DigestEntry>> compute_digest_table(const std::filesystem::path& kernels_dir);

std::string digest_table_to_json(const std::vector<DigestEntry>& entries);
// Strict: kParse (not JSON), kSchema (missing / wrongly typed / unknown field, version != 1, bad digest).
Result<std::vector<DigestEntry>> parse_digest_table(std::string_view text, std::string_view source_name);

// Human-readable problems of `table_text` against `fresh` (empty = up to date): stale digests with the
// files / fields that changed, entries missing from or extra in the table, non-canonical formatting.
std::vector<std::string> diff_digest_table(std::string_view table_text, const std::vector<DigestEntry>& fresh);

// `rdrr-digests check`: the problems of table_path against kernels_dir (errors: unreadable or malformed
// table, unreadable sources). `rdrr-digests sync`: rewrites table_path; returns whether it changed.
Result<std::vector<std::string>> check_digest_table_file(const std::filesystem::path& kernels_dir,
                                                          const std::filesystem::path& table_path);
Result<bool> sync_digest_table_file(const std::filesystem::path& kernels_dir, const std::filesystem::path& table_path);

// The kernel-digests.json compiled into this build, and the pinned digest of one kernel from it
// (kNotFound for a name the table lacks).
std::string_view embedded_digest_table_json();
Result<std::string> pinned_kernel_digest(std::string_view kernel_name);

}  // namespace rdrr::kernels
