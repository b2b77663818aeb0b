// Atomic creation of a pack directory. Everything is written into a temporary sibling of the output
// directory, "<out>.tmp-<pid>-<16 hex>" (same filesystem, so the final rename is atomic); manifest.json
// is written last, then every file and directory is fsynced and the temporary directory is renamed to
// <out>. Until commit() the temporary directory has no manifest.json, so a crash while writing leaves
// only a ".tmp-" sibling that is not a pack (a crash inside commit(), between writing manifest.json and
// the rename, can leave one with a manifest: ".tmp-" directories are always garbage, never packs).
// Destroying an uncommitted PackWriter removes its temporary directory; a failed commit() removes the
// manifest.json it wrote there. Not thread-safe: one thread drives a PackWriter.
//
//   RDRR_ASSIGN_OR_RETURN(PackWriter pack, PackWriter::create(out, {.force = force}));
//   pack.shards().begin_tensor(n); pack.shards().append(chunk); ... pack.shards().end_tensor();
//   RDRR_ASSIGN_OR_RETURN(std::vector<ShardInfo> shards, pack.finish_shards());
//   RDRR_ASSIGN_OR_RETURN(PackFileEntry tok, pack.copy_file(src / "tokenizer.json", "tokenizer.json"));
//   RDRR_RETURN_IF_ERROR(pack.commit(manifest_text));   // built from shards, placements, tok
//
// Replacing (force): the existing <out> must be an empty directory, or an rdrr pack holding only what its
// manifest lists: manifest.json parses as an rdrr manifest (parse_manifest; not validated), and every
// entry is manifest.json, a listed shard or tokenizer file, or golden/ holding only listed golden files.
// Anything else (a foreign manifest.json, a file the manifest does not list) is refused even with force,
// naming the first unexpected entry, so that a mistyped --out never deletes user data.
// The swap uses renameat2(RENAME_EXCHANGE) where the filesystem supports it (atomic: <out> is always a
// complete pack); otherwise <out> is renamed to "<out>.old-<pid>-<hex>", the new pack renamed in (on
// failure the old one is renamed back), and the old one removed. Removing the old pack is best effort.
//
// Killed writers (SIGKILL, power loss) leave their scratch siblings behind: create() removes every
// "<out>.tmp-<pid>-<16 hex>" and "<out>.old-<pid>-<16 hex>" of the same <out> whose <pid> names no
// running process (kill(pid, 0) fails with ESRCH), best effort, and lists them in removed_scratch().
// Any other name, and the siblings of live processes (a concurrent writer), are left alone. The pid test
// is local: two hosts writing the same <out> on a shared filesystem at once is not supported.
//
// Writing tools must call rdrr::ignore_sigxfsz() (file_io.h) so a file size limit is an error, not death.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"
#include "rdrr/placement.h"
#include "rdrr/shard_writer.h"

namespace rdrr {

struct PackWriterOptions {
  bool force = false;                                   // replace an existing pack at out_dir
  uint64_t shard_size_bytes = kDefaultShardSizeBytes;  // maximum shard size (multiple of 256)
  size_t write_buffer_bytes = 8u << 20;
  bool sync_to_disk = true;  // fsync files and directories before the rename (turn off only in tests)
};

// An extra file in the pack (tokenizer, goldens, ...): pack-relative name, size, hash.
struct PackFileEntry {
  std::string name;  // e.g. "tokenizer.json", "golden/prompt_0.json"
  uint64_t size_bytes = 0;
  std::string sha256_hex;
  bool operator==(const PackFileEntry&) const = default;
};

// kInvalidArgument unless `name` is a safe pack-relative path: non-empty, '/'-separated components,
// no absolute path, no backslash, no control characters, no empty, "." or ".." component, and not
// reserved (manifest.json, or a top-level shard_*.bin). Message: pack file name "<name>": <reason>.
Status validate_pack_file_name(std::string_view name);

class PackWriter {
 public:
  static constexpr const char* kManifestFilename = "manifest.json";

  // Errors: kAlreadyExists (out_dir exists and !force, or exists but is not a replaceable pack; nothing
  // is changed then), kNotFound (parent directory missing), kIo (parent not a directory / not writable,
  // or a pack's manifest.json that cannot be read), each naming the path; kInvalidArgument (bad shard size).
  static Result<PackWriter> create(const std::filesystem::path& out_dir, PackWriterOptions options = {});

  ~PackWriter();  // removes the temporary directory unless committed
  PackWriter(PackWriter&&) noexcept = default;
  PackWriter& operator=(PackWriter&&) noexcept = default;

  // The shard writer, writing into the temporary directory.
  ShardWriter& shards() { return *shards_; }
  // Finishes the shard writer and returns the shard list (needed for the manifest). Required before commit.
  Result<std::vector<ShardInfo>> finish_shards();

  // Extra files, written (and fsynced) immediately; parent directories inside the pack are created.
  // Errors: kInvalidArgument (bad name), kAlreadyExists (name added twice), kIo / kNoSpace.
  Result<PackFileEntry> add_file(std::string_view name, std::span<const std::byte> bytes);
  Result<PackFileEntry> add_file(std::string_view name, std::string_view text);
  Result<PackFileEntry> copy_file(const std::filesystem::path& src, std::string_view name);

  // Writes manifest.json, fsyncs, and renames the pack into place (see the header comment).
  // Errors: kInvalidArgument (finish_shards not called, or already committed), kAlreadyExists (out_dir
  // appeared meanwhile without force), kIo / kNoSpace. On error the temporary directory remains owned
  // (and is removed by the destructor); the previous pack at out_dir, if any, is untouched.
  Status commit(std::string_view manifest_json_text);

  const std::filesystem::path& out_dir() const { return out_dir_; }
  const std::filesystem::path& temp_dir() const { return temp_.path; }
  const std::vector<PackFileEntry>& files() const { return files_; }
  bool committed() const { return committed_; }
  // Names (in <out>'s parent, sorted) of the stale scratch siblings create() removed.
  const std::vector<std::string>& removed_scratch() const { return removed_scratch_; }

 private:
  // Owns a directory tree and removes it on destruction (move clears the source).
  struct OwnedDir {
    std::filesystem::path path;
    OwnedDir() = default;
    explicit OwnedDir(std::filesystem::path p) : path(std::move(p)) {}
    ~OwnedDir();
    OwnedDir(OwnedDir&& other) noexcept;
    OwnedDir& operator=(OwnedDir&& other) noexcept;
    void release() { path.clear(); }
  };

  PackWriter() = default;
  Status check_open() const;
  Result<std::filesystem::path> prepare_entry(std::string_view name);
  Status sync_tree() const;
  Status swap_into_place();

  OwnedDir temp_;  // declared first: destroyed after the shard writer has closed its file
  std::filesystem::path out_dir_;
  PackWriterOptions options_;
  std::optional<ShardWriter> shards_;
  bool shards_finished_ = false;
  bool committed_ = false;
  std::vector<PackFileEntry> files_;
  std::set<std::string, std::less<>> names_;
  std::set<std::filesystem::path> subdirs_;  // created inside the temporary directory
  std::vector<std::string> removed_scratch_;
};

}  // namespace rdrr
