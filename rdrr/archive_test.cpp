#include "rdrr/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

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

}  // namespace
}  // namespace rdrr
