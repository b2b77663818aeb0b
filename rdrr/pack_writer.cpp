#include "rdrr/pack_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "rdrr/file_io.h"
#include "rdrr/manifest.h"
#include "rdrr/manifest_json.h"
#include "rdrr/mapped_file.h"

namespace rdrr {
namespace fs = std::filesystem;
namespace {

constexpr size_t kCopyChunkBytes = 4u << 20;

Status bad_name(std::string_view name, std::string_view reason) {
  std::string msg = "pack file name \"";
  msg.append(name).append("\": ").append(reason);
  return error(StatusCode::kInvalidArgument, std::move(msg));
}

std::string unique_suffix() { return std::to_string(::getpid()) + "-" + random_hex_suffix(); }

Status refuse_replacing(const fs::path& out, const std::string& why) {
  return error(StatusCode::kAlreadyExists,
               out.string() + ": " + why + "; refusing to replace it even with force (nothing was changed)");
}

// The manifest of the pack at `out`, parsed (schema only: replacing needs to know what the pack lists, not
// whether it is valid). Refusal when there is none or it is not an rdrr manifest.
Result<Manifest> replaceable_manifest(const fs::path& out) {
  const fs::path path = out / PackWriter::kManifestFilename;
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path, ec))) {
    return refuse_replacing(out, "exists and is not an rdrr pack (no manifest.json file)");
  }
  Result<MappedFile> file = MappedFile::open(path);
  if (!file.ok()) return file.status().context(out.string() + ": cannot read its manifest.json");
  if (file->size_bytes() > kMaxManifestBytes) {
    return refuse_replacing(out, "exists and is not an rdrr pack (manifest.json is larger than any rdrr manifest)");
  }
  const auto bytes = file->bytes();
  Result<Manifest> m = parse_manifest(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                                      PackWriter::kManifestFilename);
  if (!m.ok()) return refuse_replacing(out, "exists and is not an rdrr pack (" + m.status().message() + ")");
  return m;
}

// The entries of `dir`, sorted by name; `dir` must be a real folder. kIo when it cannot be listed.
Result<std::vector<fs::directory_entry>> sorted_entries(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    entries.push_back(*it);
  }
  if (ec) return error(StatusCode::kIo, dir.string() + ": cannot list: " + ec.message());
  std::sort(entries.begin(), entries.end(),
            [](const fs::directory_entry& a, const fs::directory_entry& b) { return a.path() < b.path(); });
  return entries;
}

// Every entry of `dir` must be a non-folder whose pack-relative name (`prefix` + its name) is in `files`,
// or, at the top, the golden folder (then checked the same way).
Status check_only_listed(const fs::path& out, const fs::path& dir, const std::string& prefix,
                         const std::set<std::string, std::less<>>& files) {
  RDRR_ASSIGN_OR_RETURN(std::vector<fs::directory_entry> entries, sorted_entries(dir));
  for (const fs::directory_entry& e : entries) {
    const std::string name = prefix + e.path().filename().string();
    std::error_code ec;
    const bool is_dir = fs::is_directory(e.symlink_status(ec));
    if (prefix.empty() && name == kGoldenDirName && is_dir) {
      RDRR_RETURN_IF_ERROR(check_only_listed(out, e.path(), name + "/", files));
    } else if (!files.contains(name)) {
      return refuse_replacing(out, "is an rdrr pack that holds \"" + name + "\", which its manifest does not list");
    } else if (is_dir) {
      return refuse_replacing(out, "holds a folder \"" + name + "\" where its manifest lists a file");
    }
  }
  return Status::Ok();
}

// With force, the existing entry at `out` may be replaced only if it is an empty folder, or an rdrr pack
// (manifest.json parses as an rdrr manifest) holding nothing but what its manifest lists: manifest.json,
// shards, tokenizer files, golden/ and its golden files. Anything else may be a user's data.
Status check_replaceable(const fs::path& out) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out, ec);
  if (!fs::is_directory(st)) return refuse_replacing(out, "exists and is not a directory");
  if (fs::is_empty(out, ec) && !ec) return Status::Ok();
  RDRR_ASSIGN_OR_RETURN(Manifest m, replaceable_manifest(out));
  std::set<std::string, std::less<>> files{PackWriter::kManifestFilename};
  for (const ShardInfo& s : m.shards) files.insert(s.filename);
  for (const FileRecord& f : m.tokenizer.files) files.insert(f.name);
  for (const GoldenFile& g : m.goldens) files.insert(g.name);
  return check_only_listed(out, out, "", files);
}

// The pid in a scratch sibling name of the output `base`: "<base>.tmp-<pid>-<16 hex>" or
// "<base>.old-<pid>-<16 hex>" (unique_suffix()); nullopt for any other name.
std::optional<pid_t> scratch_sibling_pid(std::string_view name, std::string_view base) {
  if (!name.starts_with(base)) return std::nullopt;
  name.remove_prefix(base.size());
  if (!name.starts_with(".tmp-") && !name.starts_with(".old-")) return std::nullopt;
  name.remove_prefix(5);
  const size_t dash = name.find('-');
  if (dash == std::string_view::npos || dash == 0 || name.front() == '0') return std::nullopt;
  const std::string_view hex = name.substr(dash + 1);
  const auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (hex.size() != 16 || !std::all_of(hex.begin(), hex.end(), is_hex)) return std::nullopt;
  int64_t pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + dash, pid);
  if (ec != std::errc() || end != name.data() + dash || pid <= 0 || pid > INT_MAX) return std::nullopt;
  return static_cast<pid_t>(pid);
}

// True when process `pid` no longer runs: kill(pid, 0) fails with ESRCH, or (Linux) it is a zombie, dead but not
// yet reaped: a writer killed together with its parent (rdrr-batch) stays one until init gets to it.
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');  // "pid (comm) S ...": comm may hold spaces and parentheses
  return paren != std::string::npos && paren + 2 < line.size() && (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

// Removes the scratch siblings of `out` whose writer process no longer exists (process_gone): a killed writer
// never ran its destructor. Siblings of live processes (a concurrent writer, or
// one whose pid was reused) and every other name are left alone. Best effort; returns the removed names.
std::vector<std::string> remove_stale_scratch(const fs::path& parent, const std::string& base) {
  std::vector<std::string> stale;
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::optional<pid_t> pid = scratch_sibling_pid(name, base);
    if (pid && *pid != ::getpid() && process_gone(*pid)) stale.push_back(name);
  }
  std::sort(stale.begin(), stale.end());
  std::vector<std::string> removed;
  for (const std::string& name : stale) {  // after listing: never remove entries under a running iterator
    std::error_code removal;
    fs::remove_all(parent / name, removal);
    if (!removal) removed.push_back(name);
  }
  return removed;
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

// rename(2) that fails with EEXIST instead of replacing an existing (empty) directory, where supported.
int rename_noreplace(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  const int err = errno;
  if (err != EINVAL && err != ENOSYS) return err;
  if (path_exists(to)) return EEXIST;  // filesystem without RENAME_NOREPLACE: best-effort check
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

Status rename_status(int err, const fs::path& from, const fs::path& to) {
  return errno_status(err, from.string(), "cannot rename to " + to.string());
}

}  // namespace

Status validate_pack_file_name(std::string_view name) {
  if (name.empty()) return bad_name(name, "is empty");
  if (name.size() > 1024) return bad_name(name, "is longer than 1024 bytes");
  if (name.front() == '/') return bad_name(name, "is an absolute path");
  for (char c : name) {
    if (c == '\\') return bad_name(name, "contains a backslash");
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return bad_name(name, "contains a control character");
  }
  size_t start = 0;
  for (;;) {
    const size_t slash = name.find('/', start);
    const std::string_view part = name.substr(start, slash == std::string_view::npos ? name.npos : slash - start);
    if (part.empty()) return bad_name(name, "has an empty path component");
    if (part == "." || part == "..") return bad_name(name, "has a '.' or '..' component");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (name == PackWriter::kManifestFilename) return bad_name(name, "is reserved (written by commit)");
  if (name.find('/') == std::string_view::npos && name.starts_with("shard_") && name.ends_with(".bin")) {
    return bad_name(name, "is reserved for weight shards");
  }
  return Status::Ok();
}

// ---- OwnedDir ----

PackWriter::OwnedDir::~OwnedDir() {
  if (path.empty()) return;
  std::error_code ec;
  fs::remove_all(path, ec);  // best effort: nothing to report from a destructor
}

PackWriter::OwnedDir::OwnedDir(OwnedDir&& other) noexcept : path(std::move(other.path)) { other.path.clear(); }

PackWriter::OwnedDir& PackWriter::OwnedDir::operator=(OwnedDir&& other) noexcept {
  if (this != &other) {
    OwnedDir old(std::move(*this));  // removes our previous tree, if any
    path = std::move(other.path);
    other.path.clear();
  }
  return *this;
}

// ---- PackWriter ----

Result<PackWriter> PackWriter::create(const fs::path& out_dir, PackWriterOptions options) {
  RDRR_RETURN_IF_ERROR(validate_max_shard_bytes(options.shard_size_bytes));
  fs::path out = out_dir;
  if (!out.has_filename()) out = out.parent_path();  // "packs/model/" -> "packs/model"
  if (out.empty() || out.filename() == "." || out.filename() == "..") {
    return error(StatusCode::kInvalidArgument, "output directory \"" + out_dir.string() + "\": needs a final name");
  }
  if (path_exists(out)) {
    if (!options.force) {
      return error(StatusCode::kAlreadyExists, out.string() + ": already exists (use --force to replace it)");
    }
    RDRR_RETURN_IF_ERROR(check_replaceable(out));
  }
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  std::error_code ec;
  const fs::file_status parent_status = fs::status(parent, ec);
  if (!fs::exists(parent_status)) {
    return error(StatusCode::kNotFound, parent.string() + ": parent directory of " + out.string() + " does not exist");
  }
  if (!fs::is_directory(parent_status)) {
    return error(StatusCode::kIo, parent.string() + ": parent of " + out.string() + " is not a directory");
  }

  PackWriter writer;
  writer.out_dir_ = out;
  writer.options_ = options;
  writer.removed_scratch_ = remove_stale_scratch(parent, out.filename().string());
  const fs::path temp = parent / (out.filename().string() + ".tmp-" + unique_suffix());
  if (::mkdir(temp.c_str(), 0755) != 0) {
    const int err = errno;
    return errno_status(err, temp.string(), "cannot create temporary pack directory").context(out.string());
  }
  writer.temp_ = OwnedDir(temp);
  ShardWriterOptions shard_options;
  shard_options.max_shard_bytes = options.shard_size_bytes;
  shard_options.buffer_bytes = options.write_buffer_bytes;
  shard_options.sync_to_disk = options.sync_to_disk;
  RDRR_ASSIGN_OR_RETURN(ShardWriter shards, ShardWriter::create(temp, shard_options));
  writer.shards_.emplace(std::move(shards));
  return writer;
}

PackWriter::~PackWriter() = default;

Status PackWriter::check_open() const {
  if (committed_) return error(StatusCode::kInvalidArgument, out_dir_.string() + ": pack already committed");
  if (temp_.path.empty()) return error(StatusCode::kInternal, "pack writer: used after move");
  return Status::Ok();
}

Result<std::vector<ShardInfo>> PackWriter::finish_shards() {
  RDRR_RETURN_IF_ERROR(check_open());
  RDRR_ASSIGN_OR_RETURN(std::vector<ShardInfo> infos, shards_->finish());
  shards_finished_ = true;
  return infos;
}

Result<fs::path> PackWriter::prepare_entry(std::string_view name) {
  RDRR_RETURN_IF_ERROR(check_open());
  RDRR_RETURN_IF_ERROR(validate_pack_file_name(name));
  if (names_.contains(name)) {
    return error(StatusCode::kAlreadyExists, "pack file name \"" + std::string(name) + "\": added twice");
  }
  const fs::path dest = temp_.path / fs::path(std::string(name));
  // Create intermediate directories one by one, remembering them for the fsync in commit.
  fs::path dir = temp_.path;
  const fs::path rel = fs::path(std::string(name)).parent_path();
  for (const fs::path& part : rel) {
    dir /= part;
    if (subdirs_.contains(dir)) continue;
    if (::mkdir(dir.c_str(), 0755) != 0) {
      const int err = errno;
      return errno_status(err, std::string(name), "cannot create directory " + part.string());
    }
    subdirs_.insert(dir);
  }
  return dest;
}

Result<PackFileEntry> PackWriter::add_file(std::string_view name, std::span<const std::byte> bytes) {
  RDRR_ASSIGN_OR_RETURN(fs::path dest, prepare_entry(name));
  RDRR_ASSIGN_OR_RETURN(FileDigest digest, write_new_file(dest, std::string(name), bytes, options_.sync_to_disk));
  PackFileEntry entry{std::string(name), digest.size_bytes, std::move(digest.sha256_hex)};
  names_.insert(entry.name);
  files_.push_back(entry);
  return entry;
}

Result<PackFileEntry> PackWriter::add_file(std::string_view name, std::string_view text) {
  return add_file(name, std::as_bytes(std::span(text.data(), text.size())));
}

Result<PackFileEntry> PackWriter::copy_file(const fs::path& src, std::string_view name) {
  RDRR_ASSIGN_OR_RETURN(fs::path dest, prepare_entry(name));
  UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) {
    const int err = errno;
    return errno_status(err, src.string(), "cannot open");
  }
  struct stat st {};
  if (fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return error(StatusCode::kIo, src.string() + ": not a regular file");
  }
  FileSink::Options sink_options;
  sink_options.buffer_bytes = 1;  // we already read in large chunks
  sink_options.sync_to_disk = options_.sync_to_disk;
  RDRR_ASSIGN_OR_RETURN(FileSink sink, FileSink::create(dest, std::string(name), sink_options));
  std::vector<std::byte> buffer(kCopyChunkBytes);
  for (;;) {
    const ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
    if (n < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      return errno_status(err, src.string(), "read failed");
    }
    if (n == 0) break;
    RDRR_RETURN_IF_ERROR(sink.append(std::span(buffer.data(), static_cast<size_t>(n))));
  }
  RDRR_ASSIGN_OR_RETURN(FileDigest digest, sink.finish());
  PackFileEntry entry{std::string(name), digest.size_bytes, std::move(digest.sha256_hex)};
  names_.insert(entry.name);
  files_.push_back(entry);
  return entry;
}

Status PackWriter::sync_tree() const {
  if (!options_.sync_to_disk) return Status::Ok();
  for (const fs::path& dir : subdirs_) RDRR_RETURN_IF_ERROR(fsync_dir(dir));
  return fsync_dir(temp_.path);
}

Status PackWriter::swap_into_place() {
  const fs::path& temp = temp_.path;
  if (!path_exists(out_dir_)) {
    const int err = rename_noreplace(temp, out_dir_);
    if (err == EEXIST || err == ENOTEMPTY) {
      return error(StatusCode::kAlreadyExists, out_dir_.string() + ": appeared while the pack was being written");
    }
    if (err != 0) return rename_status(err, temp, out_dir_);
    temp_.release();
    return Status::Ok();
  }
  if (!options_.force) {  // create() refused an existing out_dir, so it appeared since then
    return error(StatusCode::kAlreadyExists,
                 out_dir_.string() + ": appeared while the pack was being written (use --force to replace it)");
  }
  RDRR_RETURN_IF_ERROR(check_replaceable(out_dir_));
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, out_dir_.c_str(), RENAME_EXCHANGE) == 0) {
    // The old pack now sits at the temporary path: invalidate it first, then delete it (temp_ owns it).
    ::unlink((temp / kManifestFilename).c_str());
    temp_ = OwnedDir();
    return Status::Ok();
  }
  const int exchange_err = errno;
  if (exchange_err != EINVAL && exchange_err != ENOSYS) return rename_status(exchange_err, temp, out_dir_);
  // No RENAME_EXCHANGE on this filesystem: move the old pack aside, move the new one in.
  const fs::path aside = out_dir_.string() + ".old-" + unique_suffix();
  if (::rename(out_dir_.c_str(), aside.c_str()) != 0) {
    const int aside_err = errno;
    return rename_status(aside_err, out_dir_, aside);
  }
  const int err = rename_noreplace(temp, out_dir_);
  if (err != 0) {
    ::rename(aside.c_str(), out_dir_.c_str());  // put the old pack back
    return rename_status(err, temp, out_dir_);
  }
  temp_.release();
  OwnedDir old(aside);  // removed when this scope ends
  return Status::Ok();
}

Status PackWriter::commit(std::string_view manifest_json_text) {
  RDRR_RETURN_IF_ERROR(check_open());
  if (!shards_finished_) {
    return error(StatusCode::kInvalidArgument, out_dir_.string() + ": commit before finish_shards()");
  }
  const auto manifest_bytes = std::as_bytes(std::span(manifest_json_text.data(), manifest_json_text.size()));
  RDRR_RETURN_IF_ERROR(write_new_file(temp_.path / kManifestFilename, kManifestFilename, manifest_bytes,
                                      options_.sync_to_disk)
                           .status());
  RDRR_RETURN_IF_ERROR(sync_tree());
  Status swapped = swap_into_place();
  if (!swapped.ok()) {
    // Never leave a valid-looking pack at the temporary path.
    ::unlink((temp_.path / kManifestFilename).c_str());
    return swapped;
  }
  committed_ = true;
  if (options_.sync_to_disk) {
    const fs::path parent = out_dir_.has_parent_path() ? out_dir_.parent_path() : fs::path(".");
    Status synced = fsync_dir(parent);
    if (!synced.ok()) return synced.context(out_dir_.string() + ": renamed into place, but not durable");
  }
  return Status::Ok();
}

}  // namespace rdrr
