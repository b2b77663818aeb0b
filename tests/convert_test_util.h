// Test helpers for the rdrr-convert end-to-end tests: run the built binary (RDRR_CONVERT_BIN), temp
// folders (rdrr/test_temp_dir.h), file reads, and decoding a packed tensor back to float32.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "quant/f16.h"
#include "quant/layout.h"
#include "rdrr/manifest.h"
#include "rdrr/shard_reader.h"
#include "rdrr/test_temp_dir.h"

namespace rdrr::convert_test {

namespace fs = std::filesystem;

inline fs::path fixtures() { return RDRR_FIXTURES_DIR; }
inline fs::path hf_dir(const std::string& model) { return fixtures() / model / "hf"; }
inline fs::path gguf_file(const std::string& model) { return fixtures() / model / "gguf" / (model + "-q4_k_m.gguf"); }

using ::rdrr::test::TempDir;

inline std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_text(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs rdrr-convert with `args` through /bin/sh; `prefix` is shell code run first (e.g. "ulimit -f 64;").
inline RunResult run_convert(const std::vector<std::string>& args, const std::string& prefix = "") {
  const TempDir io("convert_run");  // the child's stdout and stderr
  const fs::path base = io / "run";
  // Appends only (GCC 12 -O3 reports a false -Wrestrict on `"lit" + std::string&&`).
  std::string cmd = prefix;
  cmd += " exec ";
  cmd += shell_quote(RDRR_CONVERT_BIN);
  for (const std::string& a : args) {
    cmd += ' ';
    cmd += shell_quote(a);
  }
  cmd += " >";
  cmd += shell_quote(base.string() + ".out");
  cmd += " 2>";
  cmd += shell_quote(base.string() + ".err");
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(base.string() + ".out");
  r.err = read_text(base.string() + ".err");
  return r;
}

// Decodes a packed tensor ([N, K] logical shape, any dtype/layout) to float32, row-major.
inline std::vector<float> decode_tensor(const ShardReader& reader, const TensorEntry& e) {
  Result<TensorBytes> tb = reader.tensor_bytes(e.name, e.placement);
  EXPECT_TRUE(tb.ok()) << tb.status().to_string();
  if (!tb.ok()) return {};
  const std::span<const std::byte> bytes = tb->bytes();
  uint64_t n = 1;
  for (uint64_t d : e.shape) n *= d;
  std::vector<float> out(n);
  if (e.dtype == quant::DType::kF32) {
    std::memcpy(out.data(), bytes.data(), n * 4);
  } else if (e.dtype == quant::DType::kF16 || e.dtype == quant::DType::kBF16) {
    std::vector<uint16_t> h(n);
    std::memcpy(h.data(), bytes.data(), n * 2);
    if (e.dtype == quant::DType::kF16) {
      quant::f16_to_f32(h, out);
    } else {
      quant::bf16_to_f32(h, out);
    }
  } else {
    const auto rows = static_cast<int64_t>(e.shape[0]);
    const auto cols = static_cast<int64_t>(e.shape[1]);
    const std::span<const uint8_t> src(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    const Status s = quant::dequantize_matrix({e.dtype, *e.layout, src, rows, cols, out});
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return out;
}

}  // namespace rdrr::convert_test
