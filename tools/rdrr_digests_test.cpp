// rdrr-digests end to end on a temporary copy of kernels/: check passes on a synced table, fails (exit 8)
// naming the affected kernels after an include edit, and sync fixes it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {
namespace fs = std::filesystem;

struct ToolRun {
  int exit_code;
  std::string output;  // stdout and stderr
};

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
  const fs::path dir = fs::temp_directory_path() / ("rdrr_digests_cli_" + std::to_string(::getpid()));
  fs::remove_all(dir);
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
  fs::remove_all(dir);
}

}  // namespace
