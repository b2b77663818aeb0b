// Archives. (1) Conversion inputs packed as archives: a .tar, .tar.zst (.tzst), .tar.gz (.tgz), .tar.xz or .zip of an HF
// folder, read through libarchive. The converter needs random access (memory-mapped SafeTensors), which a
// compressed stream cannot give, so the members are streamed once into a private folder beside the output
// and removed when the conversion ends (success or not).
//
// Accepted members: regular files and folders with relative paths; absolute paths, "..", links, devices,
// duplicate paths and members beyond the size limit are errors naming the archive and the member.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "quant/status.h"

namespace rdrr {

// True when `path` names a regular file whose name ends in an archive suffix above.
bool is_archive_path(const std::filesystem::path& path);

// "llama.tar.zst" -> "llama" (the model id a folder of that name would get).
std::string archive_stem(const std::filesystem::path& path);

// Extracted contents; the folder is removed when this object is destroyed.
class ExtractedArchive {
 public:
  ExtractedArchive() = default;
  ExtractedArchive(ExtractedArchive&& o) noexcept;
  ExtractedArchive& operator=(ExtractedArchive&& o) noexcept;
  ExtractedArchive(const ExtractedArchive&) = delete;
  ExtractedArchive& operator=(const ExtractedArchive&) = delete;
  ~ExtractedArchive();

  // The model folder: the archive's single top-level folder when everything lies under one, else the
  // extraction root.
  const std::filesystem::path& model_dir() const { return model_dir_; }
  uint64_t extracted_bytes() const { return extracted_bytes_; }

 private:
  friend Result<ExtractedArchive> extract_archive(const std::filesystem::path&, const std::filesystem::path&);
  std::filesystem::path root_;
  std::filesystem::path model_dir_;
  uint64_t extracted_bytes_ = 0;
};

// Extracts `archive` into a new folder under `temp_parent` (".rdrr-src-<name>-<pid>-<n>").
// Errors: kNotFound (archive missing), kParse (not an archive libarchive reads, corrupt data), kValidation
// (unsafe or unsupported member), kIo / kNoSpace (writing).
Result<ExtractedArchive> extract_archive(const std::filesystem::path& archive, const std::filesystem::path& temp_parent);

// (2) Packs shipped as one file: `rdrr-pack PACK OUT.rdrr.tar.zst`. A pax tar, zstd-compressed, holding the
// pack's files at its root with manifest.json first and then the other files sorted by name, every member
// with mode 0644, owner 0:0 and time 0, so the same pack always gives the same bytes. Readers
// (rdrr-verify, rdrr-run, rdrr-inspect) take such a file where they take a pack folder (locate_pack).
inline constexpr std::string_view kPackArchiveSuffix = ".rdrr.tar.zst";

struct PackArchiveOptions {
  int zstd_level = 10;
  bool force = false;  // replace an existing `out`
};
// Validates the pack folder (validate_pack with hashes) first, then writes `out` atomically (temp sibling +
// rename). Errors: validate_pack's, kAlreadyExists (out exists without force), kIo / kNoSpace.
Status write_pack_archive(const std::filesystem::path& pack_dir, const std::filesystem::path& out,
                          const PackArchiveOptions& opts = {});

// A pack given as a folder or as an archive (extracted into a private folder under temp_parent, default
// the system temp folder, removed when the PackLocation is destroyed).
struct PackLocation {
  std::filesystem::path dir;
  std::optional<ExtractedArchive> extracted;
};
Result<PackLocation> locate_pack(const std::filesystem::path& path, const std::filesystem::path& temp_parent = {});

}  // namespace rdrr
