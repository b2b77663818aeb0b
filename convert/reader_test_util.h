// Test-only helpers: build SafeTensors and GGUF bytes in memory (to corrupt them), write temp files.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "quant/status.h"
#include "rdrr/test_temp_dir.h"

namespace rdrr::convert::testing {

inline std::filesystem::path fixtures_dir() { return RDRR_FIXTURES_DIR; }

// The running test's folder (rdrr/test_temp_dir.h): created empty at the test's first call, removed when
// the next test asks for its own (the last one at exit).
inline std::filesystem::path test_dir() {
  static std::string last_test;
  static std::optional<rdrr::test::TempDir> dir;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = std::string("readers_") + info->test_suite_name() + "_" + info->name();
  if (name != last_test || !dir) {
    dir.reset();
    dir.emplace(name);
    last_test = name;
  }
  return dir->path();
}

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  // Replace rather than truncate: ext4 flushes truncated-and-rewritten files on close (auto_da_alloc).
  std::filesystem::remove(path);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

// Overwrites bytes of an existing file in place (no truncation: cheap on ext4).
inline void patch_file(const std::filesystem::path& path, uint64_t offset, const std::string& bytes) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

// Little-endian byte appenders.
template <typename T>
void put(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}
inline void put_str(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

// SafeTensors: u64 header length + header + data.
inline std::string safetensors_bytes(const std::string& header_json, const std::string& data) {
  std::string out;
  put<uint64_t>(out, header_json.size());
  return out + header_json + data;
}

// Encoded GGUF metadata values (u32 type id + payload).
inline std::string gv_u32(uint32_t v) { std::string s; put<uint32_t>(s, 4); put<uint32_t>(s, v); return s; }
inline std::string gv_i32(int32_t v) { std::string s; put<uint32_t>(s, 5); put<int32_t>(s, v); return s; }
inline std::string gv_u64(uint64_t v) { std::string s; put<uint32_t>(s, 10); put<uint64_t>(s, v); return s; }
inline std::string gv_f32(float v) { std::string s; put<uint32_t>(s, 6); put<float>(s, v); return s; }
inline std::string gv_bool(uint8_t v) { std::string s; put<uint32_t>(s, 7); put<uint8_t>(s, v); return s; }
inline std::string gv_str(const std::string& v) { std::string s; put<uint32_t>(s, 8); put_str(s, v); return s; }
inline std::string gv_str_array(const std::vector<std::string>& v) {
  std::string s;
  put<uint32_t>(s, 9);
  put<uint32_t>(s, 8);
  put<uint64_t>(s, v.size());
  for (const auto& x : v) put_str(s, x);
  return s;
}
inline std::string gv_f32_array(const std::vector<float>& v) {
  std::string s;
  put<uint32_t>(s, 9);
  put<uint32_t>(s, 6);
  put<uint64_t>(s, v.size());
  for (float x : v) put<float>(s, x);
  return s;
}

struct GgufTensorSpec {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = 0;                    // ggml id
  uint64_t size_bytes = 0;              // data bytes to reserve (computed by the caller)
  std::optional<uint64_t> offset;       // default: packed, aligned
};

// Builds a GGUF file; `layout_alignment` pads the data section and packs tensor offsets.
struct GgufSpec {
  uint32_t version = 3;
  std::vector<std::pair<std::string, std::string>> kvs;  // key -> encoded value
  std::vector<GgufTensorSpec> tensors;
  std::map<std::string, std::string> tensor_data;  // name -> its bytes; others get a filler pattern
  uint64_t layout_alignment = 32;
  std::optional<uint64_t> n_tensors_override;
  std::optional<uint64_t> n_kv_override;

  std::string build() const {
    std::string out = "GGUF";
    put<uint32_t>(out, version);
    put<uint64_t>(out, n_tensors_override.value_or(tensors.size()));
    put<uint64_t>(out, n_kv_override.value_or(kvs.size()));
    for (const auto& [k, v] : kvs) {
      put_str(out, k);
      out += v;
    }
    uint64_t next = 0;
    uint64_t data_end = 0;
    std::vector<std::pair<uint64_t, const std::string*>> given;  // offset, bytes
    for (const auto& t : tensors) {
      put_str(out, t.name);
      put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) put<uint64_t>(out, d);
      put<uint32_t>(out, t.type);
      const uint64_t off = t.offset.value_or(next);
      put<uint64_t>(out, off);
      if (auto it = tensor_data.find(t.name); it != tensor_data.end()) given.emplace_back(off, &it->second);
      next = (off + t.size_bytes + layout_alignment - 1) / layout_alignment * layout_alignment;
      if (off <= (uint64_t{1} << 20)) data_end = std::max(data_end, off + t.size_bytes);  // hostile offsets: no data
    }
    out.resize((out.size() + layout_alignment - 1) / layout_alignment * layout_alignment, '\0');
    const size_t data_start = out.size();
    out.resize(data_start + data_end, '\0');
    for (size_t i = data_start; i < out.size(); ++i) out[i] = static_cast<char>(i * 7 + 1);
    for (const auto& [off, bytes] : given) out.replace(data_start + off, bytes->size(), *bytes);
    return out;
  }
};

// Asserts an error with the given code whose message contains `fragment`.
#define EXPECT_ERROR(result_or_status, code_, fragment)                                           \
  do {                                                                                            \
    const ::rdrr::Status st_ = ::rdrr::convert::testing::status_of(result_or_status);            \
    EXPECT_EQ(st_.code(), code_) << st_.to_string();                                              \
    EXPECT_NE(st_.message().find(fragment), std::string::npos) << st_.to_string();               \
  } while (0)

inline Status status_of(const Status& s) { return s; }
template <typename T>
Status status_of(const Result<T>& r) { return r.status(); }

}  // namespace rdrr::convert::testing
