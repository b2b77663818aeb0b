#include "rdrr/sha256.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rdrr/io_test_util.h"
#include "rdrr/test_temp_dir.h"

namespace rdrr {
namespace {

using testing_io::make_bytes;
using test::TempDir;

// FIPS 180-2 / NIST example vectors.
constexpr const char* kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr const char* kAbc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr const char* kTwoBlock = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
constexpr const char* kMillionA = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(std::string_view("")), kEmpty);
  EXPECT_EQ(sha256_hex(std::string_view("abc")), kAbc);
  EXPECT_EQ(sha256_hex(std::string_view("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")), kTwoBlock);
}

TEST(Sha256, MillionAIncrementalInOddChunks) {
  Sha256 h;
  const std::string chunk(997, 'a');  // prime-sized chunks cross block boundaries everywhere
  size_t left = 1000000;
  while (left > 0) {
    const size_t n = std::min(left, chunk.size());
    h.update(std::string_view(chunk.data(), n));
    left -= n;
  }
  EXPECT_EQ(h.finish_hex(), kMillionA);
}

TEST(Sha256, FinishResetsForReuse) {
  Sha256 h;
  h.update(std::string_view("abc"));
  EXPECT_EQ(h.finish_hex(), kAbc);
  EXPECT_EQ(h.finish_hex(), kEmpty);
  h.update(std::string_view("abc"));
  const Sha256Digest d = h.finish();
  EXPECT_EQ(to_hex(d), kAbc);
}

TEST(Sha256, MovedHasherKeepsState) {
  Sha256 a;
  a.update(std::string_view("ab"));
  Sha256 b(std::move(a));
  b.update(std::string_view("c"));
  EXPECT_EQ(b.finish_hex(), kAbc);
}

TEST(Sha256, IsSha256Hex) {
  EXPECT_TRUE(is_sha256_hex(kAbc));
  EXPECT_FALSE(is_sha256_hex(""));
  EXPECT_FALSE(is_sha256_hex(std::string(kAbc).substr(1)));
  std::string upper(kAbc);
  upper[0] = 'B';
  EXPECT_FALSE(is_sha256_hex(upper));
  EXPECT_FALSE(is_sha256_hex(std::string(kAbc) + "0"));
}

TEST(Sha256, FileMatchesOneShotAcrossReadChunks) {
  TempDir tmp;
  // Larger than the 4 MiB read chunk and not a multiple of it.
  const std::vector<std::byte> data = make_bytes(7, (9u << 20) + 123);
  const auto path = tmp.path() / "blob.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  }
  Result<std::string> hex = sha256_file(path);
  ASSERT_TRUE(hex.ok()) << hex.status().to_string();
  EXPECT_EQ(*hex, sha256_hex(data));

  Sha256 pieces;
  pieces.update(std::span(data).first(5));
  pieces.update(std::span(data).subspan(5));
  EXPECT_EQ(pieces.finish_hex(), *hex);
}

TEST(Sha256, FileEmpty) {
  TempDir tmp;
  testing_io::write_file(tmp.path() / "empty", "");
  Result<std::string> hex = sha256_file(tmp.path() / "empty");
  ASSERT_TRUE(hex.ok());
  EXPECT_EQ(*hex, kEmpty);
}

TEST(Sha256, FileMissingIsNotFoundNamingPath) {
  TempDir tmp;
  Result<std::string> hex = sha256_file(tmp.path() / "nope.bin");
  ASSERT_FALSE(hex.ok());
  EXPECT_EQ(hex.status().code(), StatusCode::kNotFound);
  EXPECT_NE(hex.status().message().find("nope.bin"), std::string::npos) << hex.status().message();
}

TEST(Sha256, FileDirectoryIsIoError) {
  TempDir tmp;
  Result<std::string> hex = sha256_file(tmp.path());
  ASSERT_FALSE(hex.ok());
  EXPECT_EQ(hex.status().code(), StatusCode::kIo);
  EXPECT_NE(hex.status().message().find("not a regular file"), std::string::npos) << hex.status().message();
}

}  // namespace
}  // namespace rdrr
