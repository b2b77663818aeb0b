// Archives. (1) Conversion inputs packed as archives: a .tar, .tar.zst (.tzst), .tar.gz (.tgz), .tar.xz or .zip of an HF
// folder, read through libarchive. The converter needs random access (memory-mapped SafeTensors), which a
// compressed stream cannot give, so the members are streamed once into a private folder beside the output
// and removed when the conversion ends (success or not).
//
// Accepted members: regular files and folders with relative paths; absolute paths, "..", links, devices and
// duplicate paths are errors naming the archive and the member. Nothing is extracted past the expansion bound
// (ExtractOptions: by default 64 MiB or 100 x the archive's size, whichever is larger; real weights compress
// about 1.1-1.5 x) or past the free space of the target filesystem: a member whose declared size would cross
// either is refused before any of its bytes are written, and one whose data runs past its declared size or
// the bound is stopped there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "quant/status.h"

namespace rdrr {

// True when `path` names a regular file whose name ends in an archive suffix above.
bool is_archive_path(const std::filesystem::path& path);

// "llama.tar.zst" -> "llama" (the model id a folder of that name would get).
std::string archive_stem(const std::filesystem::path& path);

struct ExtractOptions {
  uint64_t max_expansion = 100;                // extracted bytes per archive byte ...
  uint64_t min_allowance_bytes = 64ull << 20;  // ... or this many, whichever is larger
  uint64_t free_space_margin_bytes = 64ull << 20;  // left free on the target filesystem
  // Called before a regular member is written (path inside the archive, declared size): an error refuses the
  // archive with nothing more written. Pack archives use it to accept only what the manifest lists.
  std::function<Status(const std::string& member, uint64_t declared_bytes)> check_member;
  // Called after a regular member is written, with its extracted path.
  std::function<Status(const std::string& member, const std::filesystem::path& file)> member_written;
};

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
  friend Result<ExtractedArchive> extract_archive(const std::filesystem::path&, const std::filesystem::path&,
                                                  const ExtractOptions&);
  std::filesystem::path root_;
  std::filesystem::path model_dir_;
  uint64_t extracted_bytes_ = 0;
};

// Extracts `archive` into a new folder under `temp_parent` (".rdrr-src-<name>-<pid>-<n>").
// Errors: kNotFound (archive missing), kParse (not an archive libarchive reads, corrupt data), kValidation
// (unsafe or unsupported member, a member past the expansion bound or whose data exceeds its declared size),
// kNoSpace (a member that would not fit the free space), kIo (writing), and check_member's.
Result<ExtractedArchive> extract_archive(const std::filesystem::path& archive, const std::filesystem::path& temp_parent,
                                         const ExtractOptions& options = {});

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
// the system temp folder, removed when the PackLocation is destroyed). A pack archive must hold manifest.json
// first (rdrr-pack writes it so); every later member must be a file the manifest lists, with the listed size,
// else it is refused (kValidation, naming the member) before its bytes are written.
struct PackLocation {
  std::filesystem::path dir;
  std::optional<ExtractedArchive> extracted;
};
Result<PackLocation> locate_pack(const std::filesystem::path& path, const std::filesystem::path& temp_parent = {});

}  // namespace rdrr
