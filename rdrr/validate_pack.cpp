// validate_pack(): the pack directory against its manifest (SPEC.md "Pack directory").
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "rdrr/sha256.h"
#include "rdrr/validate.h"
#include "rdrr/validate_util.h"

namespace rdrr {
namespace {

namespace fs = std::filesystem;


// kNotFound when absent, kValidation when not a regular file (symlinks included), kIo otherwise.
Status check_regular_file(const fs::path& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return error(StatusCode::kIo, what + " " + path.string() + ": cannot stat: " + ec.message());
  }
  if (!fs::exists(st)) return error(StatusCode::kNotFound, what + " " + path.string() + ": missing");
  if (!fs::is_regular_file(st)) {
    return error(StatusCode::kValidation, what + " " + path.string() + ": not a regular file (links are not allowed)");
  }
  return Status::Ok();
}

Status check_listed_file(const ListedFile& f, const fs::path& pack_dir, const ValidateOptions& options) {
  const fs::path path = pack_dir / f.name;
  RDRR_RETURN_IF_ERROR(check_regular_file(path, f.what));
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return error(StatusCode::kIo, f.what + " " + path.string() + ": cannot read size: " + ec.message());
  if (size != f.size_bytes) {
    return error(StatusCode::kValidation, f.what + " " + path.string() + ": size " + std::to_string(size) +
                                              " != " + std::to_string(f.size_bytes) + " recorded in the manifest");
  }
  if (options.check_sha256) {
    Result<std::string> actual = sha256_file(path);
    if (!actual.ok()) return actual.status().context(f.what);
    if (*actual != f.sha256_hex) {
      return error(StatusCode::kIntegrity, f.what + " " + path.string() + ": sha256 " + *actual +
                                               " != " + std::string(f.sha256_hex) + " recorded in the manifest");
    }
  }
  if (options.verify_file) {
    Status s = options.verify_file(path, f.size_bytes, f.sha256_hex);
    if (!s.ok()) return std::move(s).context(f.what);
  }
  return Status::Ok();
}

// Everything in `dir` must be in `allowed` (names relative to the pack directory, `prefix` + entry name).
Status check_no_unlisted(const fs::path& dir, const std::string& prefix, const std::set<std::string>& allowed) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = prefix + it->path().filename().string();
    if (allowed.count(name) == 0) {
      return error(StatusCode::kValidation, (dir / it->path().filename()).string() +
                                                ": not listed in the manifest (a pack holds only listed files)");
    }
  }
  if (ec) return error(StatusCode::kIo, dir.string() + ": cannot list: " + ec.message());
  return Status::Ok();
}

}  // namespace

std::vector<ListedFile> listed_files(const Manifest& m) {
  std::vector<ListedFile> files;
  for (const ShardInfo& sh : m.shards) {
    files.push_back({sh.filename, sh.size_bytes, sh.sha256_hex, "shard " + std::to_string(sh.index)});
  }
  for (const FileRecord& f : m.tokenizer.files) files.push_back({f.name, f.size_bytes, f.sha256_hex, "tokenizer file"});
  for (const GoldenFile& g : m.goldens) files.push_back({g.name, g.size_bytes, g.sha256_hex, "golden file"});
  return files;
}

Status validate_pack(const Manifest& m, const fs::path& pack_dir, const ValidateOptions& options) {
  RDRR_RETURN_IF_ERROR(validate_manifest(m));
  std::error_code ec;
  const fs::file_status dir_status = fs::status(pack_dir, ec);
  if (!fs::is_directory(dir_status)) {
    return error(StatusCode::kNotFound, pack_dir.string() + ": not a pack directory (missing or not a directory)");
  }
  RDRR_RETURN_IF_ERROR(check_regular_file(pack_dir / kManifestFilename, "manifest"));
  // golden/ must be a real directory: a link would let listed names resolve outside the pack.
  const fs::path golden_dir = pack_dir / kGoldenDirName;
  const fs::file_status golden_status = fs::symlink_status(golden_dir, ec);
  const bool has_golden_dir = fs::exists(golden_status);
  if (has_golden_dir && !fs::is_directory(golden_status)) {
    return error(StatusCode::kValidation, golden_dir.string() + ": not a directory (links are not allowed)");
  }
  const std::vector<ListedFile> files = listed_files(m);
  for (const ListedFile& f : files) RDRR_RETURN_IF_ERROR(check_listed_file(f, pack_dir, options));
  if (!options.reject_unlisted_files) return Status::Ok();

  std::set<std::string> allowed{std::string(kManifestFilename)};
  for (const ListedFile& f : files) allowed.insert(f.name);
  if (has_golden_dir) {
    allowed.insert(std::string(kGoldenDirName));
    RDRR_RETURN_IF_ERROR(check_no_unlisted(golden_dir, std::string(kGoldenDirName) + "/", allowed));
  }
  return check_no_unlisted(pack_dir, "", allowed);
}

}  // namespace rdrr
