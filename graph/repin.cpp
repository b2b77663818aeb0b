#include "graph/repin.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <span>
#include <system_error>

#include "graph/graph_check.h"
#include "graph/graph_ops.h"
#include "kernels/digest_table.h"
#include "kernels/registry.h"
#include "rdrr/file_io.h"
#include "rdrr/manifest_json.h"
#include "rdrr/validate.h"

namespace rdrr::graph {
namespace {

namespace fs = std::filesystem;

std::string q(std::string_view s) { return single_quoted(s); }

bool is_pack(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kManifestFilename, ec);
}

Status collect_packs(const fs::path& dir, std::vector<fs::path>& out) {
  std::error_code ec;
  std::vector<fs::path> subdirs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_directory(type_ec) && !it->is_symlink(type_ec)) subdirs.push_back(it->path());
  }
  if (ec) return error(StatusCode::kIo, dir.string() + ": cannot list: " + ec.message());
  std::sort(subdirs.begin(), subdirs.end());
  for (const fs::path& sub : subdirs) {
    if (is_pack(sub)) {
      out.push_back(sub);
    } else {
      RDRR_RETURN_IF_ERROR(collect_packs(sub, out));
    }
  }
  return Status::Ok();
}

Status refuse(const std::string& key, const std::string& why) {
  return error(StatusCode::kUnsupported, "refusing to repin kernel " + q(key) + ": " + why);
}

// Writes `text` as <pack>/manifest.json through a temporary sibling: write + fsync, rename, fsync dir.
Status replace_manifest(const fs::path& pack_dir, const std::string& text, bool sync_to_disk) {
  const fs::path target = pack_dir / kManifestFilename;
  std::string temp_name(".");
  temp_name.append(kManifestFilename);
  temp_name.append(".repin-");
  temp_name.append(random_hex_suffix());
  const fs::path temp = pack_dir / temp_name;
  const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
  Result<FileDigest> written =
      write_new_file(temp, temp.filename().string(), std::span<const std::byte>(bytes, text.size()), sync_to_disk);
  if (!written.ok()) {
    std::error_code ec;
    fs::remove(temp, ec);
    return written.status();
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    std::error_code ec;
    fs::remove(temp, ec);
    return errno_status(err, temp.string(), "cannot rename to " + target.string());
  }
  return sync_to_disk ? fsync_dir(pack_dir) : Status::Ok();
}

}  // namespace

Result<std::vector<fs::path>> find_packs(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return error(StatusCode::kNotFound, path.string() + ": no such file or directory");
  if (is_pack(path)) return std::vector<fs::path>{path};
  if (!fs::is_directory(path, ec)) {
    return error(StatusCode::kNotFound, path.string() + ": not a pack folder (no manifest.json) nor a folder");
  }
  std::vector<fs::path> packs;
  RDRR_RETURN_IF_ERROR(collect_packs(path, packs));
  if (packs.empty()) return error(StatusCode::kNotFound, path.string() + ": no pack (folder with manifest.json) found");
  return packs;
}

Result<std::vector<KernelRepin>> plan_repin(const Manifest& m) {
  if (!m.inference.execution) {
    return error(StatusCode::kValidation, "inference.execution: missing (nothing pinned; re-convert the pack)");
  }
  std::vector<KernelRepin> changes;
  for (const auto& [key, spec] : m.inference.execution->kernels) {
    const kernels::KernelInfo* k = kernels::find_kernel(key);
    if (k == nullptr) return refuse(key, "this build has no such kernel (re-convert the pack)");
    Result<std::string> compiled = kernels::pinned_kernel_digest(key);
    if (!compiled.ok()) return refuse(key, compiled.status().message());
    if (*compiled == spec.digest) continue;
    if (spec.file != k->file || spec.entry != k->entry) {
      return refuse(key, "pinned " + q(spec.file) + " entry " + q(spec.entry) + ", this build's kernel is " +
                             q(k->file) + " entry " + q(k->entry) + " (re-convert the pack)");
    }
    changes.push_back(KernelRepin{key, spec.digest, *compiled});
  }
  if (changes.empty()) return changes;
  Manifest repinned = m;
  apply_repin(repinned, changes);
  GraphCheckOptions no_digests;
  no_digests.check_digests = false;
  const Status graph = check_execution_graph(repinned, no_digests);
  if (!graph.ok()) {
    std::string keys;
    for (const KernelRepin& c : changes) {
      if (!keys.empty()) keys.append(", ");
      keys.append(q(c.kernel));
    }
    return error(StatusCode::kUnsupported, "refusing to repin kernel(s) " + keys +
                                               ": this build can no longer run the pack's graph (re-convert "
                                               "the pack): " + graph.to_string());
  }
  return changes;
}

void apply_repin(Manifest& m, const std::vector<KernelRepin>& changes) {
  for (const KernelRepin& c : changes) {
    m.inference.execution->kernels.at(c.kernel).digest = c.to;
    m.metadata.kernel_repins.push_back(c);
  }
}

Result<PackRepinResult> repin_pack(const fs::path& pack_dir, const RepinOptions& options) {
  const std::string where = pack_dir.string();
  Result<Manifest> read = read_manifest_file(pack_dir);
  if (!read.ok()) return Status(read.status()).context(where);
  Manifest m = std::move(read).value();
  PackRepinResult result;
  result.pack = pack_dir;
  Result<std::vector<KernelRepin>> changes = plan_repin(m);
  if (!changes.ok()) return Status(changes.status()).context(where);
  result.changes = std::move(changes).value();
  if (result.changes.empty() || options.dry_run) return result;
  apply_repin(m, result.changes);
  const Status valid = validate_manifest(m);
  if (!valid.ok()) return Status(valid).context(where + ": re-pinned manifest");
  RDRR_RETURN_IF_ERROR(replace_manifest(pack_dir, serialize_manifest(m), options.sync_to_disk).context(where));
  result.written = true;
  return result;
}

}  // namespace rdrr::graph
