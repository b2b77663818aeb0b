#include "rdrr/mapped_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rdrr/test_temp_dir.h"

namespace rdrr {
namespace {

namespace fs = std::filesystem;

fs::path write_pattern(const fs::path& p, size_t n) {
  std::ofstream out(p, std::ios::binary);
  for (size_t i = 0; i < n; ++i) out.put(static_cast<char>((i * 7 + 3) & 0xFF));
  return p;
}

std::vector<std::byte> pattern(size_t begin, size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(((begin + i) * 7 + 3) & 0xFF);
  return v;
}

TEST(MappedFile, ReadAndCopyMappedBytesGiveTheFileBytes) {
  test::TempDir tmp;
  const fs::path p = write_pattern(tmp / "weights.bin", 1 << 20);
  Result<MappedFile> opened = MappedFile::open(p);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  const MappedFile f = std::move(*opened);  // moved: the file stays readable through the new owner
  std::vector<std::byte> out(4096);
  ASSERT_TRUE(f.read(12345, out).ok());
  EXPECT_EQ(out, pattern(12345, 4096));
  for (const size_t n : {size_t{5000}, size_t{kFileReadMinBytes}, size_t{70000}}) {  // copied, then read
    std::vector<std::byte> copy(n);
    ASSERT_TRUE(copy_mapped_bytes(f.bytes().subspan(1000, n), copy).ok());
    EXPECT_EQ(copy, pattern(1000, n));
    // The mapping's last bytes.
    ASSERT_TRUE(copy_mapped_bytes(f.bytes().last(n), copy).ok());
    EXPECT_EQ(copy, pattern((1 << 20) - n, n));
  }
}

TEST(MappedFile, CopyOfOtherMemoryIsAPlainCopy) {
  const std::vector<std::byte> src = pattern(0, 300);
  std::vector<std::byte> dst(300);
  ASSERT_TRUE(copy_mapped_bytes(src, dst).ok());
  EXPECT_EQ(dst, src);
  std::vector<std::byte> small(299);
  const Status st = copy_mapped_bytes(src, small);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("300 bytes into 299"), std::string::npos) << st.to_string();
}

TEST(MappedFile, ReadOutsideTheFileIsRefused) {
  test::TempDir tmp;
  Result<MappedFile> f = MappedFile::open(write_pattern(tmp / "w.bin", 100));
  ASSERT_TRUE(f.ok());
  std::vector<std::byte> out(10);
  const Status st = f->read(95, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("w.bin"), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find("beyond its 100 bytes"), std::string::npos) << st.to_string();
  EXPECT_TRUE(f->read(90, out).ok());
}

// A file cut short after it was mapped: reading through the mapping would raise SIGBUS; the copy reads the file
// and reports the short read, naming the file.
TEST(MappedFile, FileShrunkAfterMappingIsAnIoError) {
  test::TempDir tmp;
  const fs::path p = write_pattern(tmp / "shard_00001.bin", 1 << 18);
  Result<MappedFile> f = MappedFile::open(p);
  ASSERT_TRUE(f.ok());
  fs::resize_file(p, 4096);
  std::vector<std::byte> out(kFileReadMinBytes);
  const Status st = copy_mapped_bytes(f->bytes().subspan(65536, kFileReadMinBytes), out);
  EXPECT_EQ(st.code(), StatusCode::kIo);
  EXPECT_NE(st.message().find("shard_00001.bin"), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find("shrank"), std::string::npos) << st.to_string();
  std::vector<std::byte> head(4096);
  ASSERT_TRUE(copy_mapped_bytes(f->bytes().first(4096), head).ok());
  EXPECT_EQ(head, pattern(0, 4096));
}

}  // namespace
}  // namespace rdrr
