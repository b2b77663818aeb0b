// libFuzzer target: archive members. The input is an archive (tar, pax, zip, any compression libarchive
// detects): extracted as a conversion source (member names, types, sizes, the expansion bound), then opened
// as a pack archive (manifest.json first, only listed members at their sizes), whose manifest is read.
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "rdrr/archive.h"
#include "rdrr/manifest_json.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = rdrr::fuzz::scratch_dir();
  const auto source = dir / "source.tar.zst";
  rdrr::fuzz::write_bytes(source, rdrr::fuzz::as_view(data, size));
  {
    rdrr::ExtractOptions opts;
    opts.min_allowance_bytes = 1 << 20;  // keep each input's disk traffic small
    auto extracted = rdrr::extract_archive(source, dir, opts);
    if (extracted.ok()) (void)extracted->model_dir();
  }
  const auto pack = dir / "pack.rdrr.tar.zst";
  std::error_code ec;
  std::filesystem::rename(source, pack, ec);
  if (ec) return 0;
  auto located = rdrr::locate_pack(pack, dir);
  if (located.ok()) (void)rdrr::read_manifest_file(located->dir);
  return 0;
}
