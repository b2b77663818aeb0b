#include "graph/repin.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "kernels/digest_table.h"
#include "graph/graph_check.h"
#include "graph/graph_plan.h"
#include "rdrr/manifest_json.h"
#include "rdrr/manifest_testutil.h"
#include "rdrr/test_temp_dir.h"
#include "rdrr/validate.h"

namespace rdrr::graph {
namespace {

using namespace rdrr::kernels;  // registry, digests, kernel choice

namespace fs = std::filesystem;

const std::string kStale = "sha256:" + std::string(64, 'e');

Manifest pinned_manifest() {
  Manifest m = testing::tiny_gemma3_manifest();
  m.inference.execution = plan_execution_graph(m).value();
  return m;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path write_pack(const Manifest& m, const test::TempDir& tmp) {
  const fs::path dir = tmp / "pack";
  EXPECT_TRUE(testing::write_pack_files(m, dir));
  return dir;
}

TEST(Repin, StaleDigestFailsCheckThenRepinFixesItChangingOnlyDigestAndProvenance) {
  const Manifest good = pinned_manifest();
  Manifest stale = good;
  const std::string compiled = stale.inference.execution->kernels.at("attention_f16").digest;
  stale.inference.execution->kernels.at("attention_f16").digest = kStale;
  ASSERT_TRUE(validate_manifest(stale).ok());
  EXPECT_EQ(check_execution_graph(stale).code(), StatusCode::kIntegrity);
  const test::TempDir tmp;
  const fs::path dir = write_pack(stale, tmp);

  Result<PackRepinResult> r = repin_pack(dir, {});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->written);
  ASSERT_EQ(r->changes.size(), 1u);
  EXPECT_EQ(r->changes[0], (KernelRepin{"attention_f16", kStale, compiled}));

  Result<Manifest> after = read_manifest_file(dir);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_TRUE(check_execution_graph(*after).ok()) << check_execution_graph(*after).to_string();
  // Byte-stable apart from the digest and the provenance entry.
  Manifest expected = good;
  expected.metadata.kernel_repins = {{"attention_f16", kStale, compiled}};
  EXPECT_EQ(read_text(dir / "manifest.json"), serialize_manifest(expected));
  ValidateOptions vo;  // no temporary file left behind
  EXPECT_TRUE(validate_pack(*after, dir, vo).ok()) << validate_pack(*after, dir, vo).to_string();

  // A second run finds nothing to do and leaves the bytes alone; a later re-pin appends.
  const std::string bytes = read_text(dir / "manifest.json");
  Result<PackRepinResult> again = repin_pack(dir, {});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->changes.empty());
  EXPECT_FALSE(again->written);
  EXPECT_EQ(read_text(dir / "manifest.json"), bytes);
}

TEST(Repin, SecondRepinAppendsToProvenance) {
  Manifest m = pinned_manifest();
  const std::string a = "sha256:" + std::string(64, 'a');
  m.metadata.kernel_repins = {{"rms_norm", a, kStale}};
  m.inference.execution->kernels.at("rms_norm").digest = kStale;
  Result<std::vector<KernelRepin>> changes = plan_repin(m);
  ASSERT_TRUE(changes.ok()) << changes.status().to_string();
  apply_repin(m, *changes);
  ASSERT_EQ(m.metadata.kernel_repins.size(), 2u);
  EXPECT_EQ(m.metadata.kernel_repins[0].from, a);
  EXPECT_EQ(m.metadata.kernel_repins[1].from, kStale);
  EXPECT_EQ(m.metadata.kernel_repins[1].to, pinned_kernel_digest("rms_norm").value());
  EXPECT_TRUE(validate_manifest(m).ok());
}

TEST(Repin, DryRunReportsAndWritesNothing) {
  Manifest m = pinned_manifest();
  m.inference.execution->kernels.at("rms_norm").digest = kStale;
  const test::TempDir tmp;
  const fs::path dir = write_pack(m, tmp);
  const std::string before = read_text(dir / "manifest.json");
  RepinOptions o;
  o.dry_run = true;
  Result<PackRepinResult> r = repin_pack(dir, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->written);
  ASSERT_FALSE(r->changes.empty());
  EXPECT_EQ(r->changes.front().kernel, "rms_norm");
  EXPECT_EQ(read_text(dir / "manifest.json"), before);
}

void expect_refused(const Manifest& m, StatusCode code, const std::vector<std::string>& frags) {
  const test::TempDir tmp;
  const fs::path dir = write_pack(m, tmp);
  const std::string before = read_text(dir / "manifest.json");
  Result<PackRepinResult> r = repin_pack(dir, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  for (const std::string& f : frags) {
    EXPECT_NE(r.status().message().find(f), std::string::npos) << r.status().message() << "\n  lacks: " << f;
  }
  EXPECT_EQ(read_text(dir / "manifest.json"), before);
}

TEST(Repin, RefusesKernelMissingFromTheRegistry) {
  Manifest m = pinned_manifest();
  KernelSpec old = m.inference.execution->kernels.at("glu");
  old.digest = kStale;
  m.inference.execution->kernels.emplace("glu_v0", old);
  expect_refused(m, StatusCode::kUnsupported, {"pack", "'glu_v0'", "no such kernel"});
}

TEST(Repin, RefusesKernelWhoseFileOrEntryChanged) {
  Manifest m = pinned_manifest();
  KernelSpec& glu = m.inference.execution->kernels.at("glu");
  glu.digest = kStale;
  glu.file = "glu_v0.comp";
  expect_refused(m, StatusCode::kUnsupported, {"'glu'", "'glu_v0.comp'", "'glu.comp'"});
}

TEST(Repin, RefusesWhenTheKernelNoLongerAcceptsTheTensor) {
  Manifest m = pinned_manifest();
  // As if gemv_q4_k_vec had been edited and now read only column_wise blocks: a row_wise o_proj.
  for (TensorEntry& t : m.tensors) {
    if (t.name == "model.layers.1.self_attn.o_proj.weight") t.layout = quant::Layout::kColumnWise;
  }
  fill_derived_fields(m);  // [256, 256]: the same size in either layout
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  m.inference.execution->kernels.at("gemv_q4_k_vec").digest = kStale;
  expect_refused(m, StatusCode::kUnsupported,
                 {"'gemv_q4_k_vec'", "no longer run", "o_proj.weight", "column_wise"});
}

TEST(Repin, RefusesPackWithoutGraph) {
  Manifest m = pinned_manifest();
  m.inference.execution.reset();
  expect_refused(m, StatusCode::kValidation, {"inference.execution: missing"});
}

TEST(Repin, FindPacksSearchesFoldersRecursivelyInOrder) {
  const Manifest m = pinned_manifest();
  const test::TempDir tmp;
  const fs::path& root = tmp.path();
  ASSERT_TRUE(testing::write_pack_files(m, root / "b" / "p2"));
  ASSERT_TRUE(testing::write_pack_files(m, root / "a"));
  ASSERT_TRUE(testing::write_pack_files(m, root / "b" / "p1"));
  fs::create_directories(root / "c" / "empty");
  Result<std::vector<fs::path>> packs = find_packs(root);
  ASSERT_TRUE(packs.ok()) << packs.status().to_string();
  EXPECT_EQ(*packs, (std::vector<fs::path>{root / "a", root / "b" / "p1", root / "b" / "p2"}));
  Result<std::vector<fs::path>> one = find_packs(root / "a");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<fs::path>{root / "a"});
  EXPECT_EQ(find_packs(root / "c").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(find_packs(root / "nope").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace rdrr::graph
