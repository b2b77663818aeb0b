#include "rdrr/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "rdrr/manifest_json.h"
#include "rdrr/manifest_testutil.h"
#include "rdrr/test_temp_dir.h"

namespace rdrr {
namespace {
namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Member {
  Member(std::string p, std::string d, mode_t t = AE_IFREG, std::string l = "")
      : path(std::move(p)), data(std::move(d)), type(t), link(std::move(l)) {}
  std::string path;
  std::string data;
  mode_t type;
  std::string link;
};

// Writes an archive with libarchive: format "ustar" / "zip", filter "zstd" / "none".
void write_archive(const fs::path& out, std::string_view format, std::string_view filter,
                   const std::vector<Member>& members) {
  struct archive* a = archive_write_new();
  if (format == "zip") {
    archive_write_set_format_zip(a);
  } else {
    archive_write_set_format_pax_restricted(a);
  }
  if (filter == "zstd") archive_write_add_filter_zstd(a);
  ASSERT_EQ(archive_write_open_filename(a, out.c_str()), ARCHIVE_OK) << archive_error_string(a);
  for (const Member& m : members) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.path.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, 0644);
    if (m.type == AE_IFLNK) archive_entry_set_symlink(e, m.link.c_str());
    archive_entry_set_size(e, m.type == AE_IFREG ? static_cast<la_int64_t>(m.data.size()) : 0);
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (m.type == AE_IFREG && !m.data.empty()) {
      ASSERT_EQ(archive_write_data(a, m.data.data(), m.data.size()), static_cast<la_ssize_t>(m.data.size()));
    }
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

std::vector<Member> fixture_members(const std::string& prefix) {
  std::vector<Member> out;
  const fs::path dir = fs::path(RDRR_FIXTURES_DIR) / "tiny-llama" / "hf";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back({prefix + e.path().filename().string(), read_all(e.path())});
  }
  return out;
}

TEST(Archive, SuffixesAndStem) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  for (const char* n : {"m.tar", "m.tar.zst", "m.tzst", "m.tgz", "m.zip"}) {
    std::ofstream(d / n) << "x";
    EXPECT_TRUE(is_archive_path(d / n)) << n;
    EXPECT_EQ(archive_stem(d / n), "m");
  }
  std::ofstream(d / "m.gguf") << "x";
  EXPECT_FALSE(is_archive_path(d / "m.gguf"));
  EXPECT_FALSE(is_archive_path(d / "missing.tar"));
  fs::create_directories(d / "dir.tar");
  EXPECT_FALSE(is_archive_path(d / "dir.tar"));
}

TEST(Archive, ExtractsEveryFormatByteForByte) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  const fs::path fixture = fs::path(RDRR_FIXTURES_DIR) / "tiny-llama" / "hf";
  struct Case {
    const char* file;
    const char* format;
    const char* filter;
    const char* prefix;
  };
  for (const Case& c : {Case{"a.tar.zst", "ustar", "zstd", "tiny-llama/"}, Case{"b.tar", "ustar", "none", ""},
                        Case{"c.zip", "zip", "none", "model/"}}) {
    write_archive(d / c.file, c.format, c.filter, fixture_members(c.prefix));
    Result<ExtractedArchive> x = extract_archive(d / c.file, d);
    ASSERT_TRUE(x.ok()) << c.file << ": " << x.status().to_string();
    fs::path root;
    {
      ExtractedArchive held = std::move(*x);
      root = held.model_dir();
      EXPECT_EQ(root.filename().string(), std::string(c.prefix).empty() ? root.filename().string()
                                                                          : fs::path(c.prefix).parent_path().string());
      uint64_t bytes = 0;
      for (const auto& e : fs::directory_iterator(fixture)) {
        if (!e.is_regular_file()) continue;
        EXPECT_EQ(read_all(root / e.path().filename()), read_all(e.path())) << c.file << " " << e.path().filename();
        bytes += e.file_size();
      }
      EXPECT_EQ(held.extracted_bytes(), bytes);
    }
    EXPECT_FALSE(fs::exists(root)) << "the extraction folder outlived its owner: " << root;
  }
}

TEST(Archive, RejectsUnsafeMembers) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  struct Case {
    std::vector<Member> members;
    StatusCode code;
    std::string fragment;
  };
  const Case cases[] = {
      {{{"../evil", "x"}}, StatusCode::kValidation, "member '../evil'"},
      {{{"a/../../evil", "x"}}, StatusCode::kValidation, "'..'"},
      {{{"link", "", AE_IFLNK, "/etc/passwd"}}, StatusCode::kValidation, "links"},
      {{{"a", "x"}, {"a", "y"}}, StatusCode::kValidation, "occurs twice"},
      {{{"dir/", "", AE_IFDIR}}, StatusCode::kValidation, "no files"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const fs::path f = d / ("case" + std::to_string(i++) + ".tar");
    write_archive(f, "ustar", "none", c.members);
    Result<ExtractedArchive> x = extract_archive(f, d);
    ASSERT_FALSE(x.ok()) << f;
    EXPECT_EQ(x.status().code(), c.code) << x.status().to_string();
    EXPECT_NE(x.status().to_string().find(c.fragment), std::string::npos) << x.status().to_string();
  }
  EXPECT_FALSE(fs::exists(d / "evil"));
  std::ofstream(d / "junk.tar.zst") << "this is not an archive";
  Result<ExtractedArchive> junk = extract_archive(d / "junk.tar.zst", d);
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.status().code(), StatusCode::kParse);
  EXPECT_NE(junk.status().to_string().find("junk.tar.zst"), std::string::npos);
  Result<ExtractedArchive> missing = extract_archive(d / "missing.tar", d);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  // Nothing is left behind by the failed extractions.
  for (const auto& e : fs::directory_iterator(d)) {
    EXPECT_NE(e.path().filename().string().rfind(".rdrr-src-", 0), 0u) << e.path();
  }
}

// An archive bomb: a small archive whose member expands far past it is refused from the member's declared size,
// before any of its bytes are written; the bound scales with the archive's size.
TEST(Archive, RefusesMembersPastTheExpansionBound) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  const fs::path bomb = d / "bomb.tar.zst";
  write_archive(bomb, "ustar", "zstd", {{"config.json", "{}"}, {"model.safetensors", std::string(8u << 20, '\0')}});
  ASSERT_LT(fs::file_size(bomb), 64u << 10);  // 8 MiB of zeros in a few KiB
  ExtractOptions tight;
  tight.min_allowance_bytes = 1u << 20;
  Result<ExtractedArchive> x = extract_archive(bomb, d, tight);
  ASSERT_FALSE(x.ok());
  EXPECT_EQ(x.status().code(), StatusCode::kValidation) << x.status().to_string();
  const std::string msg = x.status().to_string();
  EXPECT_NE(msg.find("member 'model.safetensors': declares 8388608 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nothing of it was extracted"), std::string::npos) << msg;
  for (const auto& e : fs::directory_iterator(d)) {
    EXPECT_NE(e.path().filename().string().rfind(".rdrr-src-", 0), 0u) << e.path();
  }
  // The default bound (64 MiB at least) takes it; so does a ratio that covers it.
  EXPECT_TRUE(extract_archive(bomb, d).ok());
  ExtractOptions wide = tight;
  wide.max_expansion = 100000;
  EXPECT_TRUE(extract_archive(bomb, d, wide).ok());
}

// A pack archive holds manifest.json first and then only the files it lists, at their sizes; anything else is
// refused before its bytes are written.
TEST(Archive, PackArchiveMembersMustBeListedByTheManifest) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  const Manifest m = testing::tiny_gemma3_manifest();
  const std::string manifest = serialize_manifest(m);
  const ShardInfo& shard = m.shards.at(0);
  struct Case {
    std::string name;
    std::vector<Member> members;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"first.rdrr.tar.zst", {{"notes.txt", "x"}, {"manifest.json", "{}"}}, "must be manifest.json"},
      {"extra.rdrr.tar.zst", {{"manifest.json", manifest}, {"notes.txt", "x"}}, "not a file the pack's manifest lists"},
      {"size.rdrr.tar.zst",
       {{"manifest.json", manifest}, {shard.filename, std::string(shard.size_bytes + 1, 'x')}},
       "declares " + std::to_string(shard.size_bytes + 1) + " bytes, the manifest lists " +
           std::to_string(shard.size_bytes)},
  };
  for (const Case& c : cases) {
    write_archive(d / c.name, "ustar", "zstd", c.members);
    Result<PackLocation> loc = locate_pack(d / c.name, d);
    ASSERT_FALSE(loc.ok()) << c.name;
    EXPECT_EQ(loc.status().code(), StatusCode::kValidation) << loc.status().to_string();
    EXPECT_NE(loc.status().to_string().find(c.fragment), std::string::npos) << loc.status().to_string();
    EXPECT_FALSE(fs::exists(d / "notes.txt"));
  }
}

}  // namespace
}  // namespace rdrr
