// Packs shipped as one file (rdrr-pack, rdrr/archive.h): reproducible bytes, the extracted pack is the
// same pack, and a damaged pack is refused before anything is written.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "convert/converter.h"
#include "rdrr/archive.h"
#include "rdrr/file_io.h"
#include "rdrr/manifest_json.h"
#include "rdrr/test_temp_dir.h"
#include "rdrr/validate.h"

namespace rdrr {
namespace {
namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PackArchive : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<test::TempDir>("pack_archive");
    dir_ = tmp_->path();
    convert::ConvertOptions o;
    o.src = fs::path(RDRR_FIXTURES_DIR) / "tiny-llama" / "hf";
    o.out = dir_ / "pack";
    o.preset = convert::Preset::kQ8_0;
    o.sync_to_disk = false;
    Result<convert::ConvertReport> r = convert::convert_model(o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }
  static void TearDownTestSuite() { tmp_.reset(); }
  static std::unique_ptr<test::TempDir> tmp_;
  static fs::path dir_;
};
std::unique_ptr<test::TempDir> PackArchive::tmp_;
fs::path PackArchive::dir_;

TEST_F(PackArchive, ReproducibleAndReadableAsAPack) {
  ASSERT_TRUE(write_pack_archive(dir_ / "pack", dir_ / "a.rdrr.tar.zst").ok());
  ASSERT_TRUE(write_pack_archive(dir_ / "pack", dir_ / "b.rdrr.tar.zst").ok());
  EXPECT_EQ(read_all(dir_ / "a.rdrr.tar.zst"), read_all(dir_ / "b.rdrr.tar.zst"));
  EXPECT_LT(fs::file_size(dir_ / "a.rdrr.tar.zst"), 3 * fs::file_size(dir_ / "pack" / "shard_00000.bin"));
  fs::path extracted;
  {
    Result<PackLocation> loc = locate_pack(dir_ / "a.rdrr.tar.zst", dir_);
    ASSERT_TRUE(loc.ok()) << loc.status().to_string();
    extracted = loc->dir;
    Result<Manifest> m = read_manifest_file(loc->dir);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    ValidateOptions vo;
    vo.check_sha256 = true;
    const Status st = validate_pack(*m, loc->dir, vo);
    EXPECT_TRUE(st.ok()) << st.to_string();
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "pack")) {
      if (!e.is_regular_file()) continue;
      const fs::path rel = e.path().lexically_relative(dir_ / "pack");
      EXPECT_EQ(read_all(loc->dir / rel), read_all(e.path())) << rel;
    }
  }
  EXPECT_FALSE(fs::exists(extracted)) << "the extracted pack outlived its PackLocation";
  // A folder is used in place.
  Result<PackLocation> folder = locate_pack(dir_ / "pack");
  ASSERT_TRUE(folder.ok());
  EXPECT_EQ(folder->dir, dir_ / "pack");
  EXPECT_FALSE(folder->extracted.has_value());
}

TEST_F(PackArchive, RefusesExistingOutputAndDamagedPacks) {
  ASSERT_TRUE(write_pack_archive(dir_ / "pack", dir_ / "c.rdrr.tar.zst").ok());
  const Status exists = write_pack_archive(dir_ / "pack", dir_ / "c.rdrr.tar.zst");
  EXPECT_EQ(exists.code(), StatusCode::kAlreadyExists) << exists.to_string();
  EXPECT_TRUE(write_pack_archive(dir_ / "pack", dir_ / "c.rdrr.tar.zst", {.force = true}).ok());

  fs::copy(dir_ / "pack", dir_ / "damaged", fs::copy_options::recursive);
  {
    std::fstream f(dir_ / "damaged" / "shard_00000.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x5a');
  }
  const Status bad = write_pack_archive(dir_ / "damaged", dir_ / "d.rdrr.tar.zst");
  EXPECT_EQ(bad.code(), StatusCode::kIntegrity) << bad.to_string();
  EXPECT_FALSE(fs::exists(dir_ / "d.rdrr.tar.zst"));
  const Status missing = write_pack_archive(dir_ / "nope", dir_ / "e.rdrr.tar.zst");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound) << missing.to_string();
}

// Disk full while writing the archive (RLIMIT_FSIZE of 256 KiB, in a child: the limit is per process) is kNoSpace
// (rdrr-pack exit 6) with nothing left, not kIo (fault_injection_e2e found "IO: ... Write error", exit 5).
TEST_F(PackArchive, DiskFullIsNoSpaceAndLeavesNothing) {
  const fs::path out = dir_ / "full.rdrr.tar.zst";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ignore_sigxfsz();
    const struct rlimit limit = {256 << 10, 256 << 10};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const Status st = write_pack_archive(dir_ / "pack", out);
    ::_exit(st.code() == StatusCode::kNoSpace ? 0 : st.ok() ? 1 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the archive was written despite the limit, 2: another error than kNoSpace";
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find("full.rdrr.tar.zst"), std::string::npos) << e.path();
  }
}

// Sources may be archives of an HF folder: the pack is byte-identical to the folder's.
TEST_F(PackArchive, ConvertsFromATarZstOfTheFolder) {
  const fs::path src = fs::path(RDRR_FIXTURES_DIR) / "tiny-llama" / "hf";
  const fs::path tarball = dir_ / "tiny-llama.tar.zst";
  {
    struct archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_zstd(a);
    ASSERT_EQ(archive_write_open_filename(a, tarball.c_str()), ARCHIVE_OK);
    for (const auto& e : fs::directory_iterator(src)) {
      if (!e.is_regular_file()) continue;
      const std::string data = read_all(e.path());
      struct archive_entry* entry = archive_entry_new();
      archive_entry_set_pathname(entry, ("tiny-llama/" + e.path().filename().string()).c_str());
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_perm(entry, 0644);
      archive_entry_set_size(entry, static_cast<la_int64_t>(data.size()));
      ASSERT_EQ(archive_write_header(a, entry), ARCHIVE_OK);
      ASSERT_EQ(archive_write_data(a, data.data(), data.size()), static_cast<la_ssize_t>(data.size()));
      archive_entry_free(entry);
    }
    archive_write_close(a);
    archive_write_free(a);
  }
  convert::ConvertOptions o;
  o.preset = convert::Preset::kQ8_0;
  o.sync_to_disk = false;
  o.model_id = "tiny-llama";
  o.src = src;
  o.out = dir_ / "from-folder";
  ASSERT_TRUE(convert::convert_model(o).ok());
  o.src = tarball;
  o.out = dir_ / "from-archive";
  Result<convert::ConvertReport> r = convert::convert_model(o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->src, tarball.string());
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "from-folder")) {
    if (!e.is_regular_file()) continue;
    const fs::path rel = e.path().lexically_relative(dir_ / "from-folder");
    EXPECT_EQ(read_all(dir_ / "from-archive" / rel), read_all(e.path())) << rel;
  }
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_NE(e.path().filename().string().rfind(".rdrr-src-", 0), 0u) << "left behind: " << e.path();
  }
  // Default model id: the archive's stem.
  o.model_id.reset();
  o.out = dir_ / "from-archive-2";
  ASSERT_TRUE(convert::convert_model(o).ok());
  Result<Manifest> m = read_manifest_file(dir_ / "from-archive-2");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->model_id, "tiny-llama");
}

}  // namespace
}  // namespace rdrr
