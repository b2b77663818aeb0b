// rdrr-digests end to end on a temporary copy of kernels/: check passes on a synced table, fails (exit 8)
// naming the affected kernels after an include edit, and sync fixes it. repin on packs written here.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
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

namespace {
namespace fs = std::filesystem;

struct ToolRun {
  int exit_code;
  std::string output;  // stdout and stderr
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

ToolRun run_tool(const std::string& args) {
  const std::string cmd = std::string(RDRR_DIGESTS_TOOL) + " " + args + " 2>&1";
  ToolRun r{-1, ""};
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(RdrrDigests, CheckFailsNamingKernelsAfterIncludeEditAndSyncFixesIt) {
  const rdrr::test::TempDir tmp;
  const fs::path dir = tmp / "kernels";
  fs::copy(RDRR_KERNELS_SOURCE_DIR, dir, fs::copy_options::recursive);
  const std::string flags = "--kernels-dir " + dir.string();

  ToolRun sync = run_tool("sync " + flags);
  ASSERT_EQ(sync.exit_code, 0) << sync.output;
  ToolRun clean = run_tool("check " + flags);
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_NE(clean.output.find("up to date"), std::string::npos) << clean.output;

  std::ofstream(dir / "include/q4_k.glsl", std::ios::app) << "// edited\n";
  ToolRun stale = run_tool("check " + flags);
  EXPECT_EQ(stale.exit_code, 8) << stale.output;
  for (const char* name : {"gemv_q4_k:", "gemv_q4_k_col:", "dequant_q4_k:", "embed_q4_k:"}) {
    EXPECT_NE(stale.output.find(std::string("stale: ") + name), std::string::npos) << name << "\n" << stale.output;
  }
  EXPECT_NE(stale.output.find("kernels/include/q4_k.glsl changed"), std::string::npos) << stale.output;
  EXPECT_EQ(stale.output.find("stale: rms_norm:"), std::string::npos) << stale.output;

  ToolRun fix = run_tool("sync " + flags);
  EXPECT_EQ(fix.exit_code, 0) << fix.output;
  EXPECT_NE(fix.output.find("updated"), std::string::npos) << fix.output;
  ToolRun after = run_tool("check " + flags);
  EXPECT_EQ(after.exit_code, 0) << after.output;

  fs::remove(dir / "kernel-digests.json");
  ToolRun missing = run_tool("check " + flags);
  EXPECT_EQ(missing.exit_code, 4) << missing.output;
  EXPECT_NE(missing.output.find("run rdrr-digests sync"), std::string::npos) << missing.output;
  ToolRun usage = run_tool("frobnicate");
  EXPECT_EQ(usage.exit_code, 2) << usage.output;
}

TEST(RdrrDigests, RepinRewritesStalePacksUnderAFolderAndRefusesBrokenOnes) {
  using rdrr::Manifest;
  const rdrr::test::TempDir tmp;
  const fs::path& root = tmp.path();
  Manifest good = rdrr::testing::tiny_gemma3_manifest();
  good.inference.execution = rdrr::graph::plan_execution_graph(good).value();
  Manifest stale = good;
  const std::string old_digest = "sha256:" + std::string(64, 'c');
  stale.inference.execution->kernels.at("rms_norm").digest = old_digest;
  ASSERT_TRUE(rdrr::testing::write_pack_files(good, root / "packs" / "a-current"));
  ASSERT_TRUE(rdrr::testing::write_pack_files(stale, root / "packs" / "b-stale"));
  const fs::path stale_manifest = root / "packs" / "b-stale" / "manifest.json";
  const std::string before = read_text(stale_manifest);

  ToolRun dry = run_tool("repin --dry-run " + (root / "packs").string());
  EXPECT_EQ(dry.exit_code, 0) << dry.output;
  EXPECT_NE(dry.output.find("a-current: up to date"), std::string::npos) << dry.output;
  EXPECT_NE(dry.output.find("b-stale: would repin rms_norm: " + old_digest + " -> "), std::string::npos) << dry.output;
  EXPECT_EQ(read_text(stale_manifest), before);

  ToolRun fix = run_tool("repin " + (root / "packs").string());
  EXPECT_EQ(fix.exit_code, 0) << fix.output;
  EXPECT_NE(fix.output.find("b-stale: repinned rms_norm: " + old_digest), std::string::npos) << fix.output;
  rdrr::Result<Manifest> after = rdrr::read_manifest_file(root / "packs" / "b-stale");
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_TRUE(rdrr::graph::check_execution_graph(*after).ok());
  ASSERT_EQ(after->metadata.kernel_repins.size(), 1u);
  EXPECT_EQ(after->metadata.kernel_repins[0].from, old_digest);
  ToolRun again = run_tool("repin " + (root / "packs" / "b-stale").string());
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("b-stale: up to date"), std::string::npos) << again.output;

  // A pinned kernel that this build no longer has: refused, exit 9, the pack untouched.
  Manifest gone = good;
  rdrr::KernelSpec spec = gone.inference.execution->kernels.at("glu");
  spec.digest = old_digest;
  gone.inference.execution->kernels.emplace("glu_v0", spec);
  ASSERT_TRUE(rdrr::testing::write_pack_files(gone, root / "gone"));
  const std::string gone_before = read_text(root / "gone" / "manifest.json");
  ToolRun refused = run_tool("repin " + (root / "gone").string());
  EXPECT_EQ(refused.exit_code, 9) << refused.output;
  EXPECT_NE(refused.output.find("refusing to repin kernel 'glu_v0'"), std::string::npos) << refused.output;
  EXPECT_EQ(read_text(root / "gone" / "manifest.json"), gone_before);

  ToolRun none = run_tool("repin " + (root / "nothing-here").string());
  EXPECT_EQ(none.exit_code, 4) << none.output;
}

}  // namespace
