#include "tools/batch_slurm.h"

#include <fstream>

#include "tools/batch_run.h"

namespace rdrr::batch {
namespace fs = std::filesystem;
namespace {

// Single-quoted for bash.
std::string sh_quote(const std::string& s) {
  std::string out(1, '\'');
  for (char c : s) {
    if (c == '\'') {
      out.append("'\\''");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

}  // namespace

std::string sbatch_script(const fs::path& batch_bin, const fs::path& jobs_file, const fs::path& work_dir,
                          const SlurmOptions& o, const std::vector<std::string>& task_args) {
  std::vector<std::string> lines = {"#!/bin/bash", "#SBATCH --job-name=rdrr-batch"};
  auto sbatch = [&lines](std::string_view key, const std::string& value) {
    std::string l("#SBATCH --");
    l.append(key).append("=").append(value);
    lines.push_back(std::move(l));
  };
  sbatch("array", "0-" + std::to_string(o.tasks == 0 ? 0 : o.tasks - 1));
  sbatch("output", (work_dir / "logs" / "slurm-%A_%a.out").string());
  if (!o.partition.empty()) sbatch("partition", o.partition);
  if (!o.mem.empty()) sbatch("mem", o.mem);
  if (o.cpus_per_task != 0) sbatch("cpus-per-task", std::to_string(o.cpus_per_task));
  if (!o.time_limit.empty()) sbatch("time", o.time_limit);
  lines.emplace_back("set -eu");
  std::string exec_line("exec ");
  exec_line.append(sh_quote(batch_bin.string())).append(" ").append(sh_quote(jobs_file.string()));
  exec_line.append(" --work-dir ").append(sh_quote(work_dir.string()));
  exec_line.append(" --shard \"${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}\"");
  for (const std::string& a : task_args) exec_line.append(" ").append(sh_quote(a));
  lines.push_back(std::move(exec_line));
  std::string s;
  for (const std::string& l : lines) s.append(l).append("\n");
  return s;
}

Result<int> submit_slurm(const fs::path& batch_bin, const fs::path& jobs_file, const fs::path& work_dir,
                         const SlurmOptions& o, const std::vector<std::string>& task_args) {
  std::error_code ec;
  fs::create_directories(work_dir / "logs", ec);
  if (ec) return error(StatusCode::kIo, work_dir.string() + ": " + ec.message());
  const fs::path script = work_dir / "rdrr-batch.sbatch";
  {
    std::ofstream out(script, std::ios::binary | std::ios::trunc);
    out << sbatch_script(batch_bin, jobs_file, work_dir, o, task_args);
    if (!out.good()) return error(StatusCode::kIo, script.string() + ": cannot write");
  }
  // sbatch from PATH: posix_spawn needs a path, so go through /usr/bin/env.
  std::vector<std::string> argv = {"/usr/bin/env", "sbatch", "--parsable"};
  if (o.wait) argv.push_back("--wait");
  argv.push_back(script.string());
  return run_process(argv, work_dir / "logs" / "sbatch.log");
}

}  // namespace rdrr::batch
