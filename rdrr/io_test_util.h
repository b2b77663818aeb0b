// Test-only helpers for the pack I/O tests (temporary folders: rdrr/test_temp_dir.h): deterministic
// bytes, whole-file reads, and a scoped RLIMIT_FSIZE (with SIGXFSZ ignored) to simulate a full disk.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "rdrr/placement.h"

namespace rdrr {

// Readable gtest output for placement mismatches.
inline void PrintTo(const Span& s, std::ostream* os) {
  *os << "{shard " << s.shard_index << ", offset " << s.offset_bytes << ", size " << s.size_bytes << "}";
}
inline void PrintTo(const TensorPlacement& p, std::ostream* os) {
  *os << "[";
  for (size_t i = 0; i < p.spans.size(); ++i) {
    if (i > 0) *os << ", ";
    PrintTo(p.spans[i], os);
  }
  *os << "]";
}

}  // namespace rdrr

namespace rdrr::testing_io {

// Deterministic pseudo-random bytes (splitmix64), never all zero, so padding checks are meaningful.
inline std::vector<std::byte> make_bytes(uint64_t seed, size_t n) {
  std::vector<std::byte> out(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    out[i] = static_cast<std::byte>((z & 0xFF) | 1);  // odd: never zero
  }
  return out;
}

inline std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  for (size_t i = 0; i < chars.size(); ++i) out[i] = static_cast<std::byte>(chars[i]);
  return out;
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

inline std::vector<std::string> list_dir(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Lowers the soft RLIMIT_FSIZE and ignores SIGXFSZ for the scope; restores both afterwards. A write
// past the limit then fails with EFBIG instead of killing the test process.
class ScopedFileSizeLimit {
 public:
  explicit ScopedFileSizeLimit(rlim_t max_file_bytes) {
    ok_ = getrlimit(RLIMIT_FSIZE, &saved_) == 0;
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    if (!ok_) return;
    rlimit lowered = saved_;
    lowered.rlim_cur = max_file_bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &lowered) == 0;
  }
  ~ScopedFileSizeLimit() {
    if (ok_) setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  ScopedFileSizeLimit(const ScopedFileSizeLimit&) = delete;
  ScopedFileSizeLimit& operator=(const ScopedFileSizeLimit&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
  void (*old_handler_)(int) = SIG_DFL;
};

}  // namespace rdrr::testing_io
