// Kernel-ref digests (digest.h) and the digest table (digest_table.h): definition, include handling,
// errors, and staleness detection on a temporary copy of kernels/.
#include "kernels/digest.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kernels/digest_table.h"
#include "kernels/registry.h"
#include "rdrr/sha256.h"
#include "rdrr/test_temp_dir.h"

namespace rdrr::kernels {
namespace {
namespace fs = std::filesystem;

using test::TempDir;

void write(const fs::path& p, std::string_view text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

KernelVariantSource variant(std::string file = "k.comp") {
  return KernelVariantSource{"k", std::move(file), "main", {{"W_Q4_K", ""}, {"B", "2"}}, {{1, 4}, {0, 64}}};
}

std::string digest_of(const KernelVariantSource& v, const fs::path& dir) {
  Result<KernelDigest> d = kernel_digest(v, dir);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return d.ok() ? d->digest : std::string();
}

TEST(KernelDigest, HashesExpandedSourceEntryDefinesAndSpecInTheDocumentedOrder) {
  TempDir t;
  write(t.path() / "k.comp", "#version 450\r\n  #  include \"inc.glsl\"\r\nvoid main() {}\r\n");
  write(t.path() / "include/inc.glsl", "float f();\n");
  const std::string expected_input =
      "#version 450\nfloat f();\n\nvoid main() {}\n\n@@entry:main\n@@define:B=2\n@@define:W_Q4_K=\n@@spec:0=64\n@@spec:1=4";
  Result<KernelDigest> d = kernel_digest(variant(), t.path());
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->digest, "sha256:" + sha256_hex(expected_input));
  ASSERT_EQ(d->sources.size(), 2u);
  EXPECT_EQ(d->sources.at("include/inc.glsl"), "sha256:" + sha256_hex(std::string_view("float f();\n")));
  EXPECT_EQ(d->sources.at("k.comp"),
            "sha256:" + sha256_hex(std::string_view("#version 450\n  #  include \"inc.glsl\"\nvoid main() {}\n")));
}

TEST(KernelDigest, CrlfAndLfGiveTheSameDigest) {
  TempDir a, b;
  write(a.path() / "k.comp", "#include \"inc.glsl\"\nvoid main() {}\n");
  write(a.path() / "include/inc.glsl", "float f();\nfloat g();\n");
  write(b.path() / "k.comp", "#include \"inc.glsl\"\r\nvoid main() {}\r\n");
  write(b.path() / "include/inc.glsl", "float f();\r\nfloat g();\r\n");
  EXPECT_EQ(digest_of(variant(), a.path()), digest_of(variant(), b.path()));
}

TEST(KernelDigest, IncludeEditChangesDigestAndLocalIncludeWins) {
  TempDir t;
  write(t.path() / "k.comp", "#include \"inc.glsl\"\nvoid main() {}\n");
  write(t.path() / "include/inc.glsl", "#include \"nested.glsl\"\n");
  write(t.path() / "include/nested.glsl", "float f();\n");
  const std::string before = digest_of(variant(), t.path());
  write(t.path() / "include/nested.glsl", "float f(); // edited\n");
  const std::string after_nested = digest_of(variant(), t.path());
  EXPECT_NE(before, after_nested);
  write(t.path() / "inc.glsl", "float local();\n");  // beside the including file: resolved before include/
  Result<KernelDigest> local = kernel_digest(variant(), t.path());
  ASSERT_TRUE(local.ok()) << local.status().to_string();
  EXPECT_NE(local->digest, after_nested);
  EXPECT_EQ(local->sources.count("inc.glsl"), 1u);
  EXPECT_EQ(local->sources.count("include/inc.glsl"), 0u);
}

TEST(KernelDigest, EntryDefinesAndSpecConstantsChangeTheDigest) {
  TempDir t;
  write(t.path() / "k.comp", "void main() {}\n");
  const std::string base = digest_of(variant(), t.path());
  KernelVariantSource v = variant();
  v.entry = "main2";
  EXPECT_NE(digest_of(v, t.path()), base);
  v = variant();
  v.defines["B"] = "3";
  EXPECT_NE(digest_of(v, t.path()), base);
  v = variant();
  v.defines.erase("W_Q4_K");
  EXPECT_NE(digest_of(v, t.path()), base);
  v = variant();
  v.spec[1] = 8;
  EXPECT_NE(digest_of(v, t.path()), base);
  v = variant();
  v.spec[2] = 0;
  EXPECT_NE(digest_of(v, t.path()), base);
}

TEST(KernelDigest, MissingIncludeIsAnErrorNamingFileAndLine) {
  TempDir t;
  write(t.path() / "k.comp", "#version 450\n#include \"absent.glsl\"\n");
  Result<KernelDigest> d = kernel_digest(variant(), t.path());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("k.comp:2"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("absent.glsl"), std::string::npos) << d.status().message();
  Result<KernelDigest> no_source = kernel_digest(variant("nope.comp"), t.path());
  ASSERT_FALSE(no_source.ok());
  EXPECT_EQ(no_source.status().code(), StatusCode::kNotFound);
}

TEST(KernelDigest, CyclesAndOtherIncludeFormsAreErrors) {
  TempDir t;
  write(t.path() / "k.comp", "#include \"a.glsl\"\n");
  write(t.path() / "include/a.glsl", "#include \"b.glsl\"\n");
  write(t.path() / "include/b.glsl", "#include \"a.glsl\"\n");
  Result<KernelDigest> cyc = kernel_digest(variant(), t.path());
  ASSERT_FALSE(cyc.ok());
  EXPECT_EQ(cyc.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cyc.status().message().find("include cycle through include/a.glsl"), std::string::npos)
      << cyc.status().message();
  write(t.path() / "k.comp", "#include <a.glsl>\n");
  Result<KernelDigest> angle = kernel_digest(variant(), t.path());
  ASSERT_FALSE(angle.ok());
  EXPECT_EQ(angle.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(angle.status().message().find("unsupported include form"), std::string::npos);
}

TEST(KernelDigest, VariantFromRegistryParsesDefinesAndRejectsDuplicates) {
  const KernelInfo* k = find_kernel("gemv_q4_k_col");
  ASSERT_NE(k, nullptr);
  Result<KernelVariantSource> v = variant_from_registry(*k);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->defines, (std::map<std::string, std::string>{{"COLUMN_WISE", ""}, {"W_Q4_K", ""}}));
  EXPECT_EQ(v->spec.size(), k->spec.size());
  KernelInfo dup = *k;
  dup.defines = "A=1 A=2";
  Result<KernelVariantSource> bad = variant_from_registry(dup);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("define A given twice"), std::string::npos);
}

TEST(DigestTable, CoversEveryRegistryKernelAndRoundTrips) {
  Result<std::vector<DigestEntry>> table = compute_digest_table(RDRR_KERNELS_SOURCE_DIR);
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  ASSERT_EQ(table->size(), all_kernels().size());
  for (const DigestEntry& e : *table) EXPECT_NE(find_kernel(e.variant.name), nullptr) << e.variant.name;
  const std::string text = digest_table_to_json(*table);
  Result<std::vector<DigestEntry>> parsed = parse_digest_table(text, "t");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(*parsed, *table);
  EXPECT_TRUE(diff_digest_table(text, *table).empty());
}

TEST(DigestTable, EmbeddedTableMatchesTheSources) {
  EXPECT_EQ(embedded_digest_table_json(), read(fs::path(RDRR_KERNELS_SOURCE_DIR) / kDigestTableFile))
      << "rebuild after rdrr-digests sync";
  Result<std::vector<DigestEntry>> table = compute_digest_table(RDRR_KERNELS_SOURCE_DIR);
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  for (const DigestEntry& e : *table) {
    Result<std::string> pinned = pinned_kernel_digest(e.variant.name);
    ASSERT_TRUE(pinned.ok()) << pinned.status().to_string();
    EXPECT_EQ(*pinned, e.digest.digest) << e.variant.name << ": run rdrr-digests sync";
  }
  Result<std::string> none = pinned_kernel_digest("no_such_kernel");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
}

TEST(DigestTable, IncludeEditMakesCheckNameAffectedKernelsAndSyncFixesIt) {
  TempDir t;
  fs::copy(RDRR_KERNELS_SOURCE_DIR, t.path(), fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  const fs::path table = t.path() / kDigestTableFile;
  Result<bool> first = sync_digest_table_file(t.path(), table);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  Result<std::vector<std::string>> clean = check_digest_table_file(t.path(), table);
  ASSERT_TRUE(clean.ok()) << clean.status().to_string();
  EXPECT_TRUE(clean->empty());

  const fs::path inc = t.path() / "include/q8_0.glsl";
  write(inc, read(inc) + "// edited\n");
  Result<std::vector<std::string>> stale = check_digest_table_file(t.path(), table);
  ASSERT_TRUE(stale.ok()) << stale.status().to_string();
  std::string all;
  for (const std::string& p : *stale) all += p + "\n";
  for (const char* name : {"gemv_q8_0", "dequant_q8_0", "embed_q8_0"}) {
    EXPECT_NE(all.find(std::string(name) + ": digest sha256:"), std::string::npos) << all;
  }
  EXPECT_NE(all.find("kernels/include/q8_0.glsl changed"), std::string::npos) << all;
  EXPECT_EQ(all.find("rms_norm:"), std::string::npos) << all;  // does not include q8_0.glsl

  Result<bool> fixed = sync_digest_table_file(t.path(), table);
  ASSERT_TRUE(fixed.ok()) << fixed.status().to_string();
  EXPECT_TRUE(*fixed);
  Result<std::vector<std::string>> after = check_digest_table_file(t.path(), table);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_TRUE(after->empty());
  Result<bool> again = sync_digest_table_file(t.path(), table);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(DigestTable, ReportsMissingExtraAndMalformedEntries) {
  Result<std::vector<DigestEntry>> fresh = compute_digest_table(RDRR_KERNELS_SOURCE_DIR);
  ASSERT_TRUE(fresh.ok()) << fresh.status().to_string();
  std::vector<DigestEntry> edited = *fresh;
  DigestEntry extra = edited.front();
  extra.variant.name = "zz_removed";
  edited.erase(edited.begin());
  edited.push_back(extra);
  std::string all;
  for (const std::string& p : diff_digest_table(digest_table_to_json(edited), *fresh)) all += p + "\n";
  EXPECT_NE(all.find(fresh->front().variant.name + ": missing from kernel-digests.json"), std::string::npos) << all;
  EXPECT_NE(all.find("zz_removed: in kernel-digests.json but not a registry kernel"), std::string::npos) << all;

  Result<std::vector<DigestEntry>> unknown = parse_digest_table(R"({"version":1,"kernels":[{"name":"x","bogus":1}]})", "t");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kSchema);
  EXPECT_NE(unknown.status().message().find("/kernels/0: unknown field 'bogus'"), std::string::npos);
  Result<std::vector<DigestEntry>> version = parse_digest_table(R"({"version":2,"kernels":[]})", "t");
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.status().code(), StatusCode::kSchema);
  Result<std::vector<DigestEntry>> not_json = parse_digest_table("{", "t");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().code(), StatusCode::kParse);
}

}  // namespace
}  // namespace rdrr::kernels
