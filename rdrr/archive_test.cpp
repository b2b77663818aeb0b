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

// Fuzzer reproducer (tests/fuzz, fuzz_archive): a 1047-byte zip on which archive_read_next_header fails without an
// error message (archive_error_string returns NULL); appending that to the error text crashed. Now a kParse error.
TEST(Archive, HeaderErrorWithoutMessageIsAParseError) {
  const test::TempDir tmp;
  const std::string hex =
      "504b0304140008000800000021000000000000000000cf0200001000140074696e792f636f6e6669672e6a736f6e555401000075780b"
      "0001040000000004000000006592cb4ec3301045f7fd8a2a6ba8924000b14562055f8090358da7ad55bf648f0b05f1ef8ced366d210b"
      "4b39779ed7fe9ecde70d8471a308474a0163f3387f63c8f845838167179e2045d02faf0de3f7ab9240849694b362a92067ac4047fc23"
      "c9e0bc4bc46abb688bb6745190dba2154a32ee0a94b4f7c87fcd4a3ba09bbe29142f43fb02370852486518dc1c8892926360cc6d9aa8"
      "746ace79545fb9743fdc15aaac22059a611001ec1aeb6cfd41240c06a502db63e2d055cdc0a7f02eaab2179a254aa9ec3a9e4768ffdf"
      "0be3246a71dc4f673beb78361971322aaf95131f26ed30be863d8638ad9f952deec50e74c229ab6a9e9d39f3cb26ad2b0f48017871bb"
      "16e427d38389c2ba6004fa5ca3c3eb76a882f3283c043048b5f7777d0c45a00d12e4f896bf7aa99374d852e20a92a6fc567e4a455228"
      "3e5c9097be9d4ce2f16c5cf12cdc4eecf8604b72a161d1dd2fdaea578a28461833b903855413776e84e5f1a6bab6bf9dfdcc7e01504b"
      "0708e29d5c436c010000cf0267ac4047fc23c9e0bc4bc46abb688bb6745190dba2154a32ee0a94b4f7c87fcd4a3b2b0f48017871bb16"
      "e427d38389c2ba6004fa5ca3c3eb76a882f3283c043048b5f7777d0c45a00d12e4f873616d706c655f70e20a92a6fc567e4a4552283e"
      "5c9097be9d4ce2f16c5cf12cdc4eecf8604b72a161d1dd2fdaea578a28461837b903855413776e84e5f1a6bab6bf9dfdcc7e01504b07"
      "08e29d5c436c010000cf020000504b0304146f6b656e697a65725f636f6e6669672e6a736f6e555401000075780b0001040000000004"
      "00000000558fcf0ac2300c87ef7d8ad2b3200a5e4476f019bc87d8655a96b56369c13ff8ee76dd1cf396fcbe2f24792badcd156d4bbe"
      "36476d62c8957bd1206653501028d9084f524da965420fa98759c7e88207e9d1000000009264b141162a22fd8d6f7ff34e808345ce69"
      "1cd2a496001ac724103c3fd7ac0b353174f800267f8bf7cc0ebb7d41cbc1601965dc6e2ecb0fe7f9b16226d8ae6ec95d65d4477d0150"
      "4b070863de2cb59900000001010000504b0304140008000800000021000000000000000000c30000001b00140074696e792f67656e65"
      "726174696f6e5f636f6e6669672e6a736f6e555401000075780b000104000000000400000000558e410a02310c00ef7d45e959165710"
      "c1cf84daa66e71db4893ee45fcbbb178702f39cc4c425ec65a07a95181423d57085453bebbab95d6f1f0b53762107a60851c95cf03e2"
      "1e9e06a42ecf2ee045b04aa6ca6a925f19ffed9263d435162fb80fa4f9ca895ac1c6b0e9d0131ab8f3345fa6a31b4d67040000000050"
      "4b050600000000030003000b010000900300000000";
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  ASSERT_EQ(bytes.size(), 1047u);
  std::ofstream(tmp / "source.zip", std::ios::binary) << bytes;
  Result<ExtractedArchive> x = extract_archive(tmp / "source.zip", tmp.path());
  ASSERT_FALSE(x.ok());
  EXPECT_EQ(x.status().code(), StatusCode::kParse) << x.status().to_string();
  EXPECT_NE(x.status().message().find("source.zip"), std::string::npos) << x.status().to_string();
}

}  // namespace
}  // namespace rdrr
