// rdrr-digests: keep kernels/kernel-digests.json (the pinned digest of every kernel variant) in step with
// the GLSL sources. Logic in kernels/digest_table.h.
//   rdrr-digests sync  [--kernels-dir DIR] [--table FILE]   rewrite the table from sources + registry
//   rdrr-digests check [--kernels-dir DIR] [--table FILE]   exit 8 (integrity) when any entry is stale
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "kernels/digest_table.h"
#include "tools/exit_codes.h"

namespace {

int report_error(const rdrr::Status& st) {
  std::fprintf(stderr, "rdrr-digests: %s\n", st.to_string().c_str());
  return rdrr::tools::exit_code_for(st.code());
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  CLI::App app{"rdrr-digests: check or regenerate kernels/kernel-digests.json from the kernel sources"};
  app.require_subcommand(1);
  std::string kernels_dir = RDRR_KERNELS_SOURCE_DIR;
  std::string table;
  app.add_option("--kernels-dir", kernels_dir, "kernel sources (the .comp files and include/)")
      ->capture_default_str();
  app.add_option("--table", table, "digest table (default: <kernels-dir>/kernel-digests.json)");
  CLI::App* sync = app.add_subcommand("sync", "regenerate the table from the sources and the registry");
  CLI::App* check = app.add_subcommand("check", "exit non-zero when the table is stale, naming kernels and why");
  sync->fallthrough();
  check->fallthrough();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? rdrr::tools::kExitOk : rdrr::tools::kExitUsage;
  }
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
