// `rdrr-digests repin`: after a kernel edit (and `rdrr-digests sync`), rewrite the kernel digests pinned in
// existing packs' manifests (inference.execution.kernels.<key>.digest) to the ones compiled into this build,
// when the edited kernels still run those packs.
//
// Per pack: read and validate manifest.json; for every kernels-map entry whose digest differs from
// pinned_kernel_digest(key), refuse the whole pack (kUnsupported, naming pack and kernel key, nothing
// written) when the kernel no longer exists in the registry, its file or entry changed, or the graph with
// the new digests fails check_execution_graph (without digests; e.g. the kernel no longer accepts a
// tensor's dtype / layout). Otherwise set the new digests, append one metadata.kernelRepins entry
// {kernel, from, to} per kernel (key order) and rewrite manifest.json atomically (temporary sibling, fsync,
// rename, directory fsync). Nothing else in the manifest changes: the canonical serialisation of the
// edited manifest differs from the old only in those digests and kernelRepins.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::graph {

struct RepinOptions {
  bool dry_run = false;       // compute and report the changes, write nothing
  bool sync_to_disk = true;   // fsync the new manifest and the pack directory
};

struct PackRepinResult {
  std::filesystem::path pack;
  std::vector<KernelRepin> changes;  // empty: already pinned to this build
  bool written = false;              // manifest.json rewritten (false with dry_run or no changes)
};

// The packs PATH names: PATH itself when it holds manifest.json, otherwise every folder below PATH that
// holds one (recursively; a pack's own subfolders are not searched), sorted by path. kNotFound when PATH
// does not exist or holds no pack, kIo when a folder cannot be listed.
Result<std::vector<std::filesystem::path>> find_packs(const std::filesystem::path& path);

// The digest changes that re-pin `m` to this build, applied to a copy that is then checked (graph
// checks without digests). kUnsupported refusals as above (message names the kernel key and why);
// kValidation when the manifest has no execution graph.
Result<std::vector<KernelRepin>> plan_repin(const Manifest& m);

// Sets the new digests and appends the kernelRepins entries.
void apply_repin(Manifest& m, const std::vector<KernelRepin>& changes);

// Re-pins one pack folder. Errors name the pack ("<pack>: ...") with the codes of read_manifest_file,
// plan_repin and the file writes (kIo, kNoSpace).
Result<PackRepinResult> repin_pack(const std::filesystem::path& pack_dir, const RepinOptions& options = {});

}  // namespace rdrr::graph
