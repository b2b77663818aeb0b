// How fast weights can be read from a memory-mapped file, pass after pass (the converter and the streaming
// reference read every weight once per pass and release the pages in between): one JSON object per mode on
// stdout, {"mode", "bytes", "passes", "gb_per_s"} (the best pass).
//   mapped_released  memcpy from the mapping in 256 KiB pieces, MappedFile::release after each pass (page faults
//                    and page-table work on every pass: the reads before pread)
//   mapped_resident  the same without the release (pages stay mapped; counts in the RSS)
//   pread            copy_mapped_bytes in 256 KiB pieces (pread: what rdrr reads with now)
// Usage: bench_read FILE [--passes N]   (run once first so the file is in the page cache)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rdrr/mapped_file.h"

namespace {

constexpr size_t kPiece = size_t{256} << 10;

template <typename F>
double best_gb_per_s(uint64_t bytes, int passes, F&& pass) {
  double best = 0.0;
  for (int i = 0; i < passes; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!pass()) return -1.0;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(bytes) / 1e9 / s);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_read FILE [--passes N]\n");
    return 2;
  }
  int passes = 3;
  if (argc >= 4 && std::string(argv[2]) == "--passes") passes = std::max(1, std::atoi(argv[3]));
  rdrr::Result<rdrr::MappedFile> f = rdrr::MappedFile::open(argv[1]);
  if (!f.ok()) {
    std::fprintf(stderr, "%s\n", f.status().to_string().c_str());
    return 1;
  }
  const std::span<const std::byte> all = f->bytes();
  std::vector<std::byte> buf(kPiece);
  const auto memcpy_pass = [&](bool release) {
    for (uint64_t o = 0; o < all.size(); o += kPiece) {
      const uint64_t n = std::min<uint64_t>(kPiece, all.size() - o);
      std::memcpy(buf.data(), all.data() + o, n);
    }
    if (release) f->release(0, all.size());
    return true;
  };
  const auto pread_pass = [&]() {
    for (uint64_t o = 0; o < all.size(); o += kPiece) {
      const uint64_t n = std::min<uint64_t>(kPiece, all.size() - o);
      if (!rdrr::copy_mapped_bytes(all.subspan(o, n), std::span(buf).first(n)).ok()) return false;
    }
    return true;
  };
  const std::pair<const char*, double> rows[] = {
      {"mapped_released", best_gb_per_s(all.size(), passes, [&] { return memcpy_pass(true); })},
      {"mapped_resident", best_gb_per_s(all.size(), passes, [&] { return memcpy_pass(false); })},
      {"pread", best_gb_per_s(all.size(), passes, pread_pass)},
  };
  for (const auto& [mode, gbs] : rows) {
    std::printf("{\"mode\": \"%s\", \"bytes\": %llu, \"passes\": %d, \"gb_per_s\": %.3f}\n", mode,
                static_cast<unsigned long long>(all.size()), passes, gbs);
  }
  return 0;
}
