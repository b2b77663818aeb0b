// rdrr-pack: a pack folder -> one reproducible .rdrr.tar.zst file (rdrr/archive.h) that rdrr-verify,
// rdrr-run and rdrr-inspect read where they read a pack folder.
//   rdrr-pack PACK OUT.rdrr.tar.zst [--force] [--level N]
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "rdrr/archive.h"
#include "rdrr/file_io.h"
#include "tools/exit_codes.h"

int main(int argc, char** argv) {
  rdrr::ignore_sigxfsz();  // a file size limit (disk full) is an error with exit 6, not death by SIGXFSZ
  CLI::App app{"rdrr-pack: write a pack folder as one reproducible .rdrr.tar.zst archive"};
  std::string pack, out;
  rdrr::PackArchiveOptions opts;
  app.add_option("PACK", pack, "pack folder")->required();
  app.add_option("OUT", out, "archive to write (e.g. model.rdrr.tar.zst)")->required();
  app.add_flag("--force", opts.force, "replace an existing OUT");
  app.add_option("--level", opts.zstd_level, "zstd compression level (1-19)")->capture_default_str()->check(CLI::Range(1, 19));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? rdrr::tools::kExitOk : rdrr::tools::kExitUsage;
  }
  const rdrr::Status st = rdrr::write_pack_archive(pack, out, opts);
  if (!st.ok()) {
    std::fprintf(stderr, "rdrr-pack: %s\n", st.to_string().c_str());
    return rdrr::tools::exit_code_for(st.code());
  }
  std::error_code ec;
  std::printf("%s: %llu bytes\n", out.c_str(), static_cast<unsigned long long>(std::filesystem::file_size(out, ec)));
  return rdrr::tools::kExitOk;
}
