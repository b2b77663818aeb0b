// Shared by the libFuzzer targets of tests/fuzz/: a private scratch folder per process (the parsers read
// files, so each input is written to a file there), and splitting one input into several files' bytes.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace rdrr::fuzz {

// "\n\x01\n" separates the files of a multi-file input (config.json, then tokenizer_config.json, ...).
inline constexpr std::string_view kPartSeparator = "\n\x01\n";

// $TMPDIR/rdrr-fuzz-XXXXXX, created on first use, removed at normal exit (a crashing run leaves it).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/rdrr-fuzz-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return std::filesystem::path(templ);
  }();
  return dir;
}

// Writes `bytes` to `path` (replacing it). Aborts on I/O failure: that is the harness, not the parser.
inline void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

inline std::string_view as_view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits `input` on kPartSeparator into at most `max_parts` parts (the last one keeps any further separators).
inline std::vector<std::string_view> split_parts(std::string_view input, size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = input.find(kPartSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + kPartSeparator.size());
  }
  parts.push_back(input);
  return parts;
}

}  // namespace rdrr::fuzz
