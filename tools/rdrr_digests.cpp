// rdrr-digests: keep kernels/kernel-digests.json (the pinned digest of every kernel variant) in step with
// the GLSL sources. Logic in kernels/digest_table.h.
//   rdrr-digests sync  [--kernels-dir DIR] [--table FILE]   rewrite the table from sources + registry
//   rdrr-digests check [--kernels-dir DIR] [--table FILE]   exit 8 (integrity) when any entry is stale
//   rdrr-digests repin PATH... [--dry-run]                  re-pin packs' kernel digests to this build
//       (graph/repin.h). PATH: a pack folder, or a folder searched recursively for packs (sorted). Every
//       pack is processed; exit 0 when all are pinned to this build (or, with --dry-run, could be), else
//       the code of the first failure: 9 (unsupported) when a pack is refused (a pinned kernel is gone,
//       moved, or no longer runs the pack), 3 invalid manifest, 4 no pack found, 5 / 6 I/O.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/repin.h"
#include "kernels/digest_table.h"
#include "rdrr/file_io.h"
#include "tools/exit_codes.h"

namespace {

int report_error(const rdrr::Status& st) {
  std::fprintf(stderr, "rdrr-digests: %s\n", st.to_string().c_str());
  return rdrr::tools::exit_code_for(st.code());
}

int run_repin(const std::vector<std::string>& paths, bool dry_run) {
  rdrr::graph::RepinOptions options;
  options.dry_run = dry_run;
  int exit_code = rdrr::tools::kExitOk;
  auto fail = [&](const rdrr::Status& st) {
    const int code = report_error(st);
    if (exit_code == rdrr::tools::kExitOk) exit_code = code;
  };
  for (const std::string& path : paths) {
    rdrr::Result<std::vector<std::filesystem::path>> packs = rdrr::graph::find_packs(path);
    if (!packs.ok()) {
      fail(packs.status());
      continue;
    }
    for (const std::filesystem::path& pack : *packs) {
      rdrr::Result<rdrr::graph::PackRepinResult> r = rdrr::graph::repin_pack(pack, options);
      if (!r.ok()) {
        fail(r.status());
        continue;
      }
      if (r->changes.empty()) {
        std::printf("%s: up to date\n", pack.string().c_str());
        continue;
      }
      for (const rdrr::KernelRepin& c : r->changes) {
        std::printf("%s: %s %s: %s -> %s\n", pack.string().c_str(), dry_run ? "would repin" : "repinned",
                    c.kernel.c_str(), c.from.c_str(), c.to.c_str());
      }
    }
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  rdrr::ignore_sigxfsz();  // a file size limit (disk full) is an error with exit 6, not death by SIGXFSZ
  namespace fs = std::filesystem;
  CLI::App app{"rdrr-digests: check or regenerate kernels/kernel-digests.json from the kernel sources, and "
               "re-pin packs to it"};
  app.require_subcommand(1);
  std::string kernels_dir = RDRR_KERNELS_SOURCE_DIR;
  std::string table;
  app.add_option("--kernels-dir", kernels_dir, "kernel sources (the .comp files and include/)")
      ->capture_default_str();
  app.add_option("--table", table, "digest table (default: <kernels-dir>/kernel-digests.json)");
  CLI::App* sync = app.add_subcommand("sync", "regenerate the table from the sources and the registry");
  CLI::App* check = app.add_subcommand("check", "exit non-zero when the table is stale, naming kernels and why");
  CLI::App* repin = app.add_subcommand("repin", "re-pin the kernel digests of packs (a pack folder, or every pack "
                                                "under a folder) to this build's kernels");
  std::vector<std::string> repin_paths;
  bool dry_run = false;
  repin->add_option("PATH", repin_paths, "pack folder or folder of packs")->required();
  repin->add_flag("--dry-run", dry_run, "print what would change, write nothing");
  sync->fallthrough();
  check->fallthrough();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? rdrr::tools::kExitOk : rdrr::tools::kExitUsage;
  }
  if (repin->parsed()) return run_repin(repin_paths, dry_run);
  const fs::path table_path = table.empty() ? fs::path(kernels_dir) / rdrr::kernels::kDigestTableFile : fs::path(table);

  if (sync->parsed()) {
    rdrr::Result<bool> changed = rdrr::kernels::sync_digest_table_file(kernels_dir, table_path);
    if (!changed.ok()) return report_error(changed.status());
    std::printf("%s: %s\n", table_path.string().c_str(), *changed ? "updated" : "up to date");
    return rdrr::tools::kExitOk;
  }
  rdrr::Result<std::vector<std::string>> problems = rdrr::kernels::check_digest_table_file(kernels_dir, table_path);
  if (!problems.ok()) return report_error(problems.status());
  if (problems->empty()) {
    std::printf("%s: up to date\n", table_path.string().c_str());
    return rdrr::tools::kExitOk;
  }
  for (const std::string& p : *problems) std::fprintf(stderr, "stale: %s\n", p.c_str());
  std::fprintf(stderr, "rdrr-digests: %zu problem(s) in %s; run `rdrr-digests sync` after reviewing the kernel changes\n",
               problems->size(), table_path.string().c_str());
  return rdrr::tools::exit_code_for(rdrr::StatusCode::kIntegrity);
}
