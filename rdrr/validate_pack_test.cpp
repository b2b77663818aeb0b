// validate_pack() and read_manifest_file() on real directories (a ~1 MB tiny-gemma3 pack of zeros).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "rdrr/manifest_json.h"
#include "rdrr/manifest_testutil.h"
#include "rdrr/pack_writer.h"
#include "rdrr/sha256.h"
#include "rdrr/test_temp_dir.h"
#include "rdrr/validate.h"

namespace rdrr {
namespace {

namespace fs = std::filesystem;

void ExpectError(const Status& s, StatusCode code, std::string_view fragment) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "message: " << s.message() << "\nwanted: " << fragment;
}

class PackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    manifest_ = testing::tiny_gemma3_manifest();
    ASSERT_TRUE(testing::write_pack_files(manifest_, dir_));
  }
  test::TempDir tmp_;
  Manifest manifest_;
  fs::path dir_ = tmp_.path();
};

TEST_F(PackTest, ValidPackPassesAndReads) {
  EXPECT_TRUE(validate_pack(manifest_, dir_).ok()) << validate_pack(manifest_, dir_).to_string();
  Result<Manifest> read = read_manifest_file(dir_);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_TRUE(*read == manifest_);
}

TEST_F(PackTest, VerifyHookSeesEveryListedFileAndItsErrorPropagates) {
  std::vector<std::string> seen;
  ValidateOptions options;
  options.verify_file = [&seen](const fs::path& file, uint64_t, std::string_view) {
    seen.push_back(file.filename().string());
    return Status::Ok();
  };
  ASSERT_TRUE(validate_pack(manifest_, dir_, options).ok());
  EXPECT_EQ(seen.size(), manifest_.shards.size() + manifest_.tokenizer.files.size() + manifest_.goldens.size());
  options.verify_file = [](const fs::path& file, uint64_t, std::string_view) {
    return error(StatusCode::kIntegrity, file.filename().string() + ": sha256 mismatch");
  };
  ExpectError(validate_pack(manifest_, dir_, options), StatusCode::kIntegrity,
              "shard 0: shard_00000.bin: sha256 mismatch");
}

TEST_F(PackTest, Sha256CheckCatchesWrongHashesAndPassesRealOnes) {
  ValidateOptions options;
  options.check_sha256 = true;
  ExpectError(validate_pack(manifest_, dir_, options), StatusCode::kIntegrity,
              "shard_00000.bin: sha256 de2f256064a0af797747c2b97505dc0b9f3df0de4f489eac731c23ae9ca9cc31 != ");
  for (ShardInfo& s : manifest_.shards) s.sha256_hex = sha256_file(dir_ / s.filename).value();
  for (FileRecord& f : manifest_.tokenizer.files) f.sha256_hex = sha256_file(dir_ / f.name).value();
  for (GoldenFile& g : manifest_.goldens) g.sha256_hex = sha256_file(dir_ / g.name).value();
  EXPECT_TRUE(validate_pack(manifest_, dir_, options).ok()) << validate_pack(manifest_, dir_, options).to_string();
}

TEST_F(PackTest, InvalidManifestFailsFirst) {
  manifest_.total_size_bytes = 1;
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kValidation, "totalSize 1");
}

TEST_F(PackTest, MissingPackDirectory) {
  ExpectError(validate_pack(manifest_, dir_ / "nope"), StatusCode::kNotFound, "not a pack directory");
}

TEST_F(PackTest, MissingManifestFile) {
  fs::remove(dir_ / "manifest.json");
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kNotFound, "manifest.json: missing");
  ExpectError(read_manifest_file(dir_).status(), StatusCode::kNotFound, "manifest.json");
}

TEST_F(PackTest, MissingShardFile) {
  fs::remove(dir_ / "shard_00002.bin");
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kNotFound, "shard 2 ");
}

TEST_F(PackTest, ShardSizeDiffers) {
  fs::resize_file(dir_ / "shard_00001.bin", 1000);
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kValidation,
              "shard_00001.bin: size 1000 != 65536 recorded in the manifest");
}

TEST_F(PackTest, MissingTokenizerFile) {
  fs::remove(dir_ / "tokenizer.model");
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kNotFound, "tokenizer file");
}

TEST_F(PackTest, MissingGoldenFile) {
  fs::remove(dir_ / "golden" / "hf-f32.json");
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kNotFound, "golden file");
}

TEST_F(PackTest, UnlistedFileRejectedUnlessAllowed) {
  std::ofstream(dir_ / "notes.txt") << "x";
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kValidation, "notes.txt: not listed in the manifest");
  ValidateOptions lenient;
  lenient.reject_unlisted_files = false;
  EXPECT_TRUE(validate_pack(manifest_, dir_, lenient).ok());
  fs::remove(dir_ / "notes.txt");
  std::ofstream(dir_ / "golden" / "extra.json") << "{}";
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kValidation, "extra.json: not listed in the manifest");
}

TEST_F(PackTest, SymlinkedFileRejected) {
  fs::rename(dir_ / "tokenizer.json", dir_ / "real.json");
  fs::create_symlink(dir_ / "real.json", dir_ / "tokenizer.json");
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kValidation, "not a regular file (links are not allowed)");
}

TEST_F(PackTest, SymlinkedGoldenDirRejected) {
  const test::TempDir elsewhere_dir;
  const fs::path& elsewhere = elsewhere_dir.path();
  fs::rename(dir_ / "golden", elsewhere / "golden");
  fs::create_directory_symlink(elsewhere / "golden", dir_ / "golden");
  ExpectError(validate_pack(manifest_, dir_), StatusCode::kValidation,
              "golden: not a directory (links are not allowed)");
}

TEST_F(PackTest, ReadManifestFileValidates) {
  Manifest bad = manifest_;
  bad.shards[0].index = 5;
  std::ofstream(dir_ / "manifest.json", std::ios::trunc) << serialize_manifest(bad);
  ExpectError(read_manifest_file(dir_).status(), StatusCode::kValidation, "shard 0: index 5 != position 0");
}

// The pack writer (placement rule of SPEC.md section 4) and the validator agree: a pack written by
// PackWriter passes validate_pack with real hashes, and read_manifest_file returns the same manifest.
TEST(PackWriterIntegration, WrittenPackValidatesWithHashes) {
  const test::TempDir tmp;
  const fs::path& root = tmp.path();
  Manifest m = testing::tiny_gemma3_manifest();
  PackWriterOptions options;
  options.shard_size_bytes = 65536;
  options.sync_to_disk = false;
  Result<PackWriter> writer = PackWriter::create(root / "pack", options);
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    TensorEntry& t = m.tensors[i];
    std::vector<std::byte> bytes(t.size_bytes);
    for (size_t b = 0; b < bytes.size(); ++b) bytes[b] = static_cast<std::byte>((b * 31 + i * 7) & 0xff);
    Result<TensorPlacement> placed = writer->shards().add_tensor(bytes);
    ASSERT_TRUE(placed.ok()) << placed.status().to_string();
    t.placement = *placed;
    t.sha256_hex = sha256_hex(bytes);
  }
  Result<std::vector<ShardInfo>> shards = writer->finish_shards();
  ASSERT_TRUE(shards.ok()) << shards.status().to_string();
  m.shards = *shards;
  for (FileRecord& f : m.tokenizer.files) {
    Result<PackFileEntry> e = writer->add_file(f.name, std::string(f.size_bytes, 't'));
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    f.sha256_hex = e->sha256_hex;
  }
  for (GoldenFile& g : m.goldens) {
    Result<PackFileEntry> e = writer->add_file(g.name, std::string(g.size_bytes, 'g'));
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    g.sha256_hex = e->sha256_hex;
  }
  fill_derived_fields(m);
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  ASSERT_TRUE(writer->commit(serialize_manifest(m)).ok());
  Result<Manifest> read = read_manifest_file(root / "pack");
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  EXPECT_TRUE(*read == m);
  ValidateOptions check;
  check.check_sha256 = true;
  EXPECT_TRUE(validate_pack(*read, root / "pack", check).ok())
      << validate_pack(*read, root / "pack", check).to_string();
}

}  // namespace
}  // namespace rdrr
