#include "rdrr/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rdrr/file_io.h"
#include "rdrr/manifest_json.h"
#include "rdrr/mapped_file.h"
#include "rdrr/validate.h"

namespace rdrr {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kSuffixes[] = {".rdrr.tar.zst", ".tar", ".tar.zst", ".tzst", ".tar.gz", ".tgz", ".tar.xz", ".zip"};

struct ArchiveCloser {
  void operator()(struct archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveCloser>;

// libarchive's message for the last error; it may have none (archive_error_string returns NULL: fuzz_archive found
// a corrupt header doing so, and appending NULL to a std::string crashed).
std::string archive_message(struct archive* a) {
  const char* msg = archive_error_string(a);
  return msg != nullptr ? msg : "libarchive error " + std::to_string(archive_errno(a)) + " (no message)";
}

// A member path we accept: relative, no "..", no empty components beyond a trailing '/'.
bool safe_member_path(std::string_view p) {
  if (p.empty() || p.front() == '/' || p.find('\0') != std::string_view::npos || p.find('\\') != std::string_view::npos) {
    return false;
  }
  for (const auto& part : fs::path(std::string(p))) {
    if (part == "..") return false;
  }
  return true;
}

// Writes the current member's data to dst, stopping with kValidation once it passes `max_bytes` (its declared
// size, or what the expansion bound leaves).
Status write_member(struct archive* a, const fs::path& dst, const std::string& ctx, uint64_t max_bytes,
                    uint64_t& total) {
  const int fd = ::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return error(StatusCode::kIo, ctx + ": cannot create " + dst.string() + ": " + std::strerror(errno));
  Status st = Status::Ok();
  const void* buf = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  uint64_t written = 0;
  for (;;) {
    const int r = archive_read_data_block(a, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      st = error(StatusCode::kParse, ctx + ": " + archive_message(a));
      break;
    }
    if (static_cast<uint64_t>(offset) + size > max_bytes) {
      st = error(StatusCode::kValidation, ctx + ": data runs past " + std::to_string(max_bytes) +
                                              " bytes (its declared size or the archive's expansion bound)");
      break;
    }
    if (static_cast<uint64_t>(offset) != written) {  // sparse member: fill the hole
      if (::ftruncate(fd, offset) != 0 || ::lseek(fd, offset, SEEK_SET) < 0) {
        st = error(status_code_for_errno(errno), ctx + ": " + std::strerror(errno));
        break;
      }
      written = static_cast<uint64_t>(offset);
    }
    const auto* p = static_cast<const char*>(buf);
    size_t left = size;
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        st = error(status_code_for_errno(errno), ctx + ": writing " + dst.string() + ": " + std::strerror(errno));
        break;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (!st.ok()) break;
    written += size;
  }
  total += written;
  if (::close(fd) != 0 && st.ok()) st = error(StatusCode::kIo, ctx + ": closing " + dst.string());
  return st;
}

}  // namespace

bool is_archive_path(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  const std::string name = path.filename().string();
  for (std::string_view s : kSuffixes) {
    if (name.size() > s.size() && name.ends_with(s)) return true;
  }
  return false;
}

std::string archive_stem(const fs::path& path) {
  std::string name = path.filename().string();
  for (std::string_view s : kSuffixes) {
    if (name.size() > s.size() && name.ends_with(s)) return name.substr(0, name.size() - s.size());
  }
  return name;
}

ExtractedArchive::ExtractedArchive(ExtractedArchive&& o) noexcept
    : root_(std::move(o.root_)), model_dir_(std::move(o.model_dir_)), extracted_bytes_(o.extracted_bytes_) {
  o.root_.clear();
}

ExtractedArchive& ExtractedArchive::operator=(ExtractedArchive&& o) noexcept {
  if (this != &o) {
    if (!root_.empty()) {
      std::error_code ec;
      fs::remove_all(root_, ec);
    }
    root_ = std::move(o.root_);
    model_dir_ = std::move(o.model_dir_);
    extracted_bytes_ = o.extracted_bytes_;
    o.root_.clear();
  }
  return *this;
}

ExtractedArchive::~ExtractedArchive() {
  if (!root_.empty()) {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
}

namespace {

// Bytes free for us on the filesystem holding `dir` (UINT64_MAX when unknown).
uint64_t free_bytes(const fs::path& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(v.f_bavail) * static_cast<uint64_t>(v.f_frsize);
}

// Refuses a member whose declared size would pass the expansion bound or the free space, before any byte of it
// is written. Returns the most bytes its data may hold.
Result<uint64_t> admit_member(const std::string& ctx, struct archive_entry* entry, uint64_t extracted,
                              uint64_t allowance, const fs::path& root, const ExtractOptions& o) {
  const bool declared = archive_entry_size_is_set(entry) != 0;
  const uint64_t size = declared ? static_cast<uint64_t>(std::max<la_int64_t>(0, archive_entry_size(entry))) : 0;
  if (extracted + size > allowance) {
    return error(StatusCode::kValidation, ctx + ": declares " + std::to_string(size) + " bytes; with the " +
                                              std::to_string(extracted) + " already extracted that passes the bound of " +
                                              std::to_string(allowance) + " bytes (" + std::to_string(o.max_expansion) +
                                              " x the archive, at least " + std::to_string(o.min_allowance_bytes) +
                                              "); nothing of it was extracted");
  }
  const uint64_t avail = free_bytes(root);
  if (avail != UINT64_MAX && size + o.free_space_margin_bytes > avail) {
    return error(StatusCode::kNoSpace, ctx + ": declares " + std::to_string(size) + " bytes, " + root.string() +
                                           " has " + std::to_string(avail) + " free; nothing of it was extracted");
  }
  return declared ? size : allowance - extracted;
}

}  // namespace

Result<ExtractedArchive> extract_archive(const fs::path& archive, const fs::path& temp_parent,
                                         const ExtractOptions& options) {
  const std::string name = archive.string();
  std::error_code ec;
  if (!fs::is_regular_file(archive, ec)) return error(StatusCode::kNotFound, name + ": archive not found");
  const uint64_t archive_bytes = fs::file_size(archive, ec);
  if (ec) return error(StatusCode::kIo, name + ": cannot read its size: " + ec.message());
  const uint64_t ratio = std::max<uint64_t>(1, options.max_expansion);
  const uint64_t allowance =
      std::max(options.min_allowance_bytes, archive_bytes > UINT64_MAX / ratio ? UINT64_MAX : archive_bytes * ratio);
  ArchivePtr a(archive_read_new());
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  archive_read_support_format_zip(a.get());
  if (archive_read_open_filename(a.get(), archive.c_str(), 1 << 20) != ARCHIVE_OK) {
    return error(StatusCode::kParse, name + ": " + archive_message(a.get()));
  }
  static std::atomic<uint64_t> counter{0};
  ExtractedArchive out;
  out.root_ = temp_parent / (".rdrr-src-" + archive_stem(archive) + "-" + std::to_string(::getpid()) + "-" +
                             std::to_string(counter++));
  fs::create_directories(out.root_, ec);
  if (ec) return error(StatusCode::kIo, out.root_.string() + ": " + ec.message());
  std::set<std::string> seen;
  std::set<std::string> top_level;
  struct archive_entry* entry = nullptr;
  for (;;) {
    const int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return error(StatusCode::kParse, name + ": " + archive_message(a.get()));
    const char* raw = archive_entry_pathname(entry);
    std::string member = raw == nullptr ? "" : raw;
    while (member.starts_with("./")) member.erase(0, 2);
    if (member.empty() || member == ".") continue;
    const std::string ctx = name + ": member '" + member + "'";
    if (!safe_member_path(member)) return error(StatusCode::kValidation, ctx + ": absolute path or '..' is not allowed");
    const mode_t type = archive_entry_filetype(entry);
    if (type != AE_IFREG && type != AE_IFDIR) {
      return error(StatusCode::kValidation, ctx + ": only regular files and folders are accepted (links and devices are not)");
    }
    if (archive_entry_hardlink(entry) != nullptr) return error(StatusCode::kValidation, ctx + ": hard links are not accepted");
    std::string key = member;
    while (!key.empty() && key.back() == '/') key.pop_back();
    top_level.insert(fs::path(key).begin()->string());
    const fs::path dst = out.root_ / key;
    if (type == AE_IFDIR) {
      fs::create_directories(dst, ec);
      if (ec) return error(StatusCode::kIo, ctx + ": " + ec.message());
      continue;
    }
    if (!seen.insert(key).second) return error(StatusCode::kValidation, ctx + ": occurs twice");
    RDRR_ASSIGN_OR_RETURN(const uint64_t max_bytes,
                          admit_member(ctx, entry, out.extracted_bytes_, allowance, out.root_, options));
    if (options.check_member) {
      const uint64_t declared = archive_entry_size_is_set(entry) != 0 ? max_bytes : UINT64_MAX;
      RDRR_RETURN_IF_ERROR(options.check_member(key, declared).context(ctx));
    }
    fs::create_directories(dst.parent_path(), ec);
    if (ec) return error(StatusCode::kIo, ctx + ": " + ec.message());
    RDRR_RETURN_IF_ERROR(write_member(a.get(), dst, ctx, max_bytes, out.extracted_bytes_));
    if (options.member_written) RDRR_RETURN_IF_ERROR(options.member_written(key, dst).context(ctx));
  }
  if (seen.empty()) return error(StatusCode::kValidation, name + ": the archive holds no files");
  out.model_dir_ = out.root_;
  if (top_level.size() == 1 && fs::is_directory(out.root_ / *top_level.begin(), ec)) {
    out.model_dir_ = out.root_ / *top_level.begin();
  }
  return out;
}

namespace {

struct WriterCloser {
  void operator()(struct archive* a) const { archive_write_free(a); }
};
using WriterPtr = std::unique_ptr<struct archive, WriterCloser>;

// A failed libarchive write as a Status: kNoSpace for ENOSPC/EFBIG/EDQUOT (disk full, file size limit), so that
// rdrr-pack exits 6 like every other writer; kIo otherwise.
Status archive_write_error(struct archive* a, const std::string& what) {
  return error(status_code_for_errno(archive_errno(a)), what + ": " + archive_message(a));
}

Status add_file_member(struct archive* a, const fs::path& file, const std::string& member, const std::string& ctx) {
  std::error_code ec;
  const uint64_t size = fs::file_size(file, ec);
  if (ec) return error(StatusCode::kIo, file.string() + ": " + ec.message());
  struct archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, member.c_str());
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, static_cast<la_int64_t>(size));
  archive_entry_set_mtime(e, 0, 0);
  archive_entry_set_uid(e, 0);
  archive_entry_set_gid(e, 0);
  const int hr = archive_write_header(a, e);
  archive_entry_free(e);
  if (hr != ARCHIVE_OK) return archive_write_error(a, ctx + ": " + member);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error(StatusCode::kIo, file.string() + ": " + std::strerror(errno));
  std::vector<char> buf(4 << 20);
  Status st = Status::Ok();
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      st = error(StatusCode::kIo, file.string() + ": " + std::strerror(errno));
      break;
    }
    if (n == 0) break;
    if (archive_write_data(a, buf.data(), static_cast<size_t>(n)) != n) {
      st = archive_write_error(a, ctx + ": " + member);
      break;
    }
  }
  ::close(fd);
  return st;
}

}  // namespace

Status write_pack_archive(const fs::path& pack_dir, const fs::path& out, const PackArchiveOptions& opts) {
  const std::string ctx = "rdrr-pack " + out.string();
  RDRR_ASSIGN_OR_RETURN(Manifest m, read_manifest_file(pack_dir));
  ValidateOptions vo;
  vo.check_sha256 = true;
  RDRR_RETURN_IF_ERROR(validate_pack(m, pack_dir, vo));
  std::error_code ec;
  if (fs::exists(fs::symlink_status(out, ec)) && !opts.force) {
    return error(StatusCode::kAlreadyExists, out.string() + ": already exists (use --force to replace it)");
  }
  // Members: manifest.json first (a streaming reader learns the layout before the data), then sorted.
  std::vector<std::string> members;
  for (auto it = fs::recursive_directory_iterator(pack_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      const std::string rel = it->path().lexically_relative(pack_dir).generic_string();
      if (rel != "manifest.json") members.push_back(rel);
    }
  }
  if (ec) return error(StatusCode::kIo, pack_dir.string() + ": " + ec.message());
  std::sort(members.begin(), members.end());
  members.insert(members.begin(), "manifest.json");

  fs::path tmp = out;
  tmp += ".tmp-" + std::to_string(::getpid());
  WriterPtr a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  archive_write_add_filter_zstd(a.get());
  const std::string level = "zstd:compression-level=" + std::to_string(opts.zstd_level);
  archive_write_set_options(a.get(), level.c_str());
  if (archive_write_open_filename(a.get(), tmp.c_str()) != ARCHIVE_OK) {
    return error(StatusCode::kIo, ctx + ": " + archive_message(a.get()));
  }
  Status st = Status::Ok();
  for (const std::string& member : members) {
    st = add_file_member(a.get(), pack_dir / member, member, ctx);
    if (!st.ok()) break;
  }
  if (st.ok() && archive_write_close(a.get()) != ARCHIVE_OK) st = archive_write_error(a.get(), ctx);
  a.reset();
  if (st.ok()) {
    fs::rename(tmp, out, ec);
    if (ec) st = error(StatusCode::kIo, out.string() + ": " + ec.message());
  }
  if (!st.ok()) fs::remove(tmp, ec);
  return st;
}

Result<PackLocation> locate_pack(const fs::path& path, const fs::path& temp_parent) {
  PackLocation loc;
  std::error_code ec;
  if (fs::is_directory(path, ec) || !is_archive_path(path)) {
    loc.dir = path;
    return loc;
  }
  const fs::path parent = temp_parent.empty() ? fs::temp_directory_path(ec) : temp_parent;
  // manifest.json first, then only what it lists, at the listed sizes: checked before each member is written.
  std::optional<std::map<std::string, uint64_t>> listed;
  ExtractOptions o;
  o.check_member = [&listed](const std::string& member, uint64_t declared) -> Status {
    if (!listed) {
      if (member == "manifest.json") return Status::Ok();
      return error(StatusCode::kValidation, "the first file of a pack archive must be manifest.json");
    }
    const auto it = listed->find(member);
    if (it == listed->end()) return error(StatusCode::kValidation, "not a file the pack's manifest lists");
    if (declared != UINT64_MAX && declared != it->second) {
      return error(StatusCode::kValidation, "declares " + std::to_string(declared) + " bytes, the manifest lists " +
                                                std::to_string(it->second));
    }
    return Status::Ok();
  };
  o.member_written = [&listed](const std::string& member, const fs::path& file) -> Status {
    if (listed || member != "manifest.json") return Status::Ok();
    RDRR_ASSIGN_OR_RETURN(const MappedFile f, MappedFile::open(file));
    RDRR_ASSIGN_OR_RETURN(const Manifest m,
                          parse_manifest(std::string_view(reinterpret_cast<const char*>(f.bytes().data()), f.bytes().size()),
                                         "manifest.json"));
    listed.emplace();
    for (const ListedFile& lf : listed_files(m)) (*listed)[lf.name] = lf.size_bytes;
    return Status::Ok();
  };
  RDRR_ASSIGN_OR_RETURN(ExtractedArchive x, extract_archive(path, parent, o));
  loc.dir = x.model_dir();
  loc.extracted = std::move(x);
  return loc;
}

}  // namespace rdrr
