#include "rdrr/file_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cerrno>

#include "rdrr/io_test_util.h"
#include "rdrr/sha256.h"
#include "rdrr/test_temp_dir.h"

namespace rdrr {
namespace {

using testing_io::make_bytes;
using testing_io::read_file;
using test::TempDir;

TEST(FileIo, ErrnoMapping) {
  EXPECT_EQ(status_code_for_errno(ENOSPC), StatusCode::kNoSpace);
  EXPECT_EQ(status_code_for_errno(EFBIG), StatusCode::kNoSpace);
  EXPECT_EQ(status_code_for_errno(EDQUOT), StatusCode::kNoSpace);
  EXPECT_EQ(status_code_for_errno(ENOENT), StatusCode::kNotFound);
  EXPECT_EQ(status_code_for_errno(EACCES), StatusCode::kIo);
  const Status s = errno_status(ENOSPC, "shard_00003.bin", "write failed");
  EXPECT_EQ(s.message(), "shard_00003.bin: write failed: No space left on device");
}

TEST(FileIo, WriteToDevFullIsNoSpace) {
  UniqueFd fd(::open("/dev/full", O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) GTEST_SKIP() << "/dev/full not available";
  const std::vector<std::byte> data = make_bytes(1, 4096);
  const Status s = write_all(fd.get(), data, "shard_00003.bin");
  EXPECT_EQ(s.code(), StatusCode::kNoSpace);
  EXPECT_EQ(s.message(), "shard_00003.bin: write failed: No space left on device");
}

TEST(FileIo, SinkBuffersHashesAndWritesExactBytes) {
  TempDir tmp;
  FileSink::Options options;
  options.buffer_bytes = 100;
  Result<FileSink> sink = FileSink::create(tmp.path() / "f.bin", "f.bin", options);
  ASSERT_TRUE(sink.ok()) << sink.status().to_string();
  const std::vector<std::byte> a = make_bytes(1, 30);
  const std::vector<std::byte> b = make_bytes(2, 250);  // bypasses the buffer
  ASSERT_TRUE(sink->append(a).ok());
  ASSERT_TRUE(sink->append_zeros(77).ok());
  ASSERT_TRUE(sink->append(b).ok());
  ASSERT_TRUE(sink->append({}).ok());
  EXPECT_EQ(sink->size_bytes(), 30u + 77u + 250u);
  Result<FileDigest> digest = sink->finish();
  ASSERT_TRUE(digest.ok()) << digest.status().to_string();
  std::vector<std::byte> expected = a;
  expected.resize(expected.size() + 77, std::byte{0});
  expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(read_file(tmp.path() / "f.bin"), expected);
  EXPECT_EQ(digest->size_bytes, expected.size());
  EXPECT_EQ(digest->sha256_hex, sha256_hex(expected));
  EXPECT_FALSE(sink->is_open());
  EXPECT_EQ(sink->finish().status().code(), StatusCode::kInternal);
}

TEST(FileIo, SinkRefusesExistingFile) {
  TempDir tmp;
  testing_io::write_file(tmp.path() / "x.bin", "old");
  Result<FileSink> sink = FileSink::create(tmp.path() / "x.bin", "x.bin");
  ASSERT_FALSE(sink.ok());
  EXPECT_EQ(sink.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(sink.status().message().find("x.bin"), std::string::npos);
}

TEST(FileIo, SinkFileSizeLimitIsNoSpaceAndSticky) {
  TempDir tmp;
  Result<FileSink> sink = FileSink::create(tmp.path() / "big.bin", "big.bin");
  ASSERT_TRUE(sink.ok());
  Status first;
  {
    testing_io::ScopedFileSizeLimit limit(1000);
    ASSERT_TRUE(limit.ok());
    const std::vector<std::byte> data = make_bytes(3, 1u << 20);
    first = sink->append(data);                      // direct write: hits the limit now
    if (first.ok()) first = sink->finish().status();  // (or at the final flush)
  }
  EXPECT_EQ(first.code(), StatusCode::kNoSpace);
  EXPECT_NE(first.message().find("big.bin: write failed"), std::string::npos) << first.message();
  EXPECT_EQ(sink->append(make_bytes(4, 10)).code(), StatusCode::kNoSpace);  // sticky
}

}  // namespace
}  // namespace rdrr
