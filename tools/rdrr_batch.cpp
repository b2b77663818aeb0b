// rdrr-batch: convert and verify a list of models (logic in tools/batch_*.h).
//   rdrr-batch JOBS [-j N] [--mem-budget SIZE] [--retries R] [--work-dir DIR] [--bin-dir DIR]
//              [--shard I/N] [--dry-run] [--verify-only]
//   rdrr-batch JOBS --report-only --shards N            merge the shard reports of N tasks
//   rdrr-batch JOBS --slurm --array-tasks N [--partition P --mem M --cpus-per-task C --time T --no-wait]
// Exit: 0 every job verified or skipped; 30 a job failed; 31 a shard report is missing; else README codes.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>

#include "rdrr/file_io.h"
#include "tools/batch_jobs.h"
#include "tools/batch_report.h"
#include "tools/batch_run.h"
#include "tools/batch_slurm.h"
#include "tools/exit_codes.h"

namespace {

namespace fs = std::filesystem;
constexpr int kExitJobsFailed = 30;
constexpr int kExitShardMissing = 31;

int fail(const rdrr::Status& st) {
  std::fprintf(stderr, "rdrr-batch: %s\n", st.to_string().c_str());
  return rdrr::tools::exit_code_for(st.code());
}

fs::path self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

int finish(const std::vector<rdrr::batch::JobResult>& results, const fs::path& report_path,
           const rdrr::batch::Shard& shard) {
  std::fputs(rdrr::batch::format_table(results).c_str(), stdout);
  rdrr::Status st = rdrr::batch::write_report(report_path, rdrr::batch::report_json(results, shard));
  if (!st.ok()) return fail(st);
  std::printf("report: %s\n", report_path.string().c_str());
  return rdrr::batch::all_ok(results) ? rdrr::tools::kExitOk : kExitJobsFailed;
}

}  // namespace

int main(int argc, char** argv) {
  rdrr::ignore_sigxfsz();  // a file size limit (disk full) is an error with exit 6, not death by SIGXFSZ
  CLI::App app{"rdrr-batch: convert and verify many models; resumable, shardable across machines"};
  std::string jobs_file, work_dir = "rdrr-batch-work", bin_dir, shard_text = "0/1", mem_budget;
  rdrr::batch::RunOptions opts;
  bool report_only = false, slurm = false, no_wait = false;
  uint32_t shards = 0;
  rdrr::batch::SlurmOptions so;
  app.add_option("JOBS", jobs_file, "jobs file: JSON {\"jobs\": [...]} or one `SOURCE OUTPUT [flags]` per line")
      ->required();
  app.add_option("-j,--parallel", opts.parallel, "jobs at a time")->capture_default_str();
  app.add_option("--mem-budget", mem_budget, "memory for concurrent jobs, e.g. 32G (default: 80% of MemAvailable)");
  app.add_option("--retries", opts.retries, "extra attempts of a failed job")->capture_default_str();
  app.add_option("--work-dir", work_dir, "logs, verify reports and batch reports")->capture_default_str();
  app.add_option("--bin-dir", bin_dir, "folder with rdrr-convert and rdrr-verify (default: next to rdrr-batch)");
  app.add_option("--shard", shard_text, "run the jobs i with i % N == I (I/N, 0 <= I < N)")->capture_default_str();
  app.add_flag("--dry-run", opts.dry_run, "list what would run, run nothing");
  app.add_flag("--verify-only", opts.verify_only, "re-verify existing packs (e.g. after `rdrr-digests repin`)");
  app.add_flag("--report-only", report_only, "merge the shard reports of --shards N tasks into report.json");
  app.add_option("--shards", shards, "number of shard reports to merge (with --report-only)");
  app.add_flag("--slurm", slurm, "submit as a Slurm job array (sbatch), wait, then merge the reports");
  app.add_option("--array-tasks", so.tasks, "Slurm array size N")->capture_default_str();
  app.add_option("--partition", so.partition, "Slurm partition");
  app.add_option("--mem", so.mem, "Slurm memory per task, e.g. 16G");
  app.add_option("--cpus-per-task", so.cpus_per_task, "Slurm CPUs per task");
  app.add_option("--time", so.time_limit, "Slurm time limit per task");
  app.add_flag("--no-wait", no_wait, "submit and return without waiting or merging");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? rdrr::tools::kExitOk : rdrr::tools::kExitUsage;
  }
  rdrr::Result<rdrr::batch::Shard> shard = rdrr::batch::parse_shard(shard_text);
  if (!shard.ok()) return fail(shard.status());
  if (!mem_budget.empty()) {
    rdrr::Result<uint64_t> b = rdrr::batch::parse_byte_size(mem_budget);
    if (!b.ok()) return fail(b.status());
    opts.mem_budget_bytes = *b;
  }
  rdrr::Result<std::vector<rdrr::batch::Job>> jobs = rdrr::batch::read_jobs(jobs_file);
  if (!jobs.ok()) return fail(jobs.status());
  opts.work_dir = fs::absolute(work_dir);
  opts.bin_dir = bin_dir.empty() ? self_dir() : fs::absolute(bin_dir);

  if (report_only) {
    if (shards == 0) return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument, "--report-only needs --shards N"));
    rdrr::Result<std::vector<rdrr::batch::JobResult>> merged = rdrr::batch::merge_shard_reports(opts.work_dir, shards);
    if (!merged.ok()) {
      std::fprintf(stderr, "rdrr-batch: %s\n", merged.status().to_string().c_str());
      return merged.status().code() == rdrr::StatusCode::kNotFound ? kExitShardMissing
                                                                   : rdrr::tools::exit_code_for(merged.status().code());
    }
    if (merged->size() != jobs->size()) {
      std::fprintf(stderr, "rdrr-batch: the shard reports hold %zu job(s), the jobs file %zu\n", merged->size(),
                   jobs->size());
      return kExitShardMissing;
    }
    return finish(*merged, rdrr::batch::merged_report_path(opts.work_dir), {0, 1});
  }

  if (slurm) {
    so.wait = !no_wait;
    std::vector<std::string> task_args = {"-j", std::to_string(opts.parallel), "--retries",
                                          std::to_string(opts.retries), "--bin-dir", opts.bin_dir.string()};
    if (opts.verify_only) task_args.push_back("--verify-only");
    if (!mem_budget.empty()) task_args.insert(task_args.end(), {"--mem-budget", mem_budget});
    rdrr::Result<int> rc = rdrr::batch::submit_slurm(self_dir() / "rdrr-batch", fs::absolute(jobs_file), opts.work_dir,
                                                     so, task_args);
    if (!rc.ok()) return fail(rc.status());
    if (*rc != 0) std::fprintf(stderr, "rdrr-batch: sbatch exited %d (see %s)\n", *rc,
                               (opts.work_dir / "logs" / "sbatch.log").string().c_str());
    if (!so.wait) return *rc == 0 ? rdrr::tools::kExitOk : kExitJobsFailed;
    rdrr::Result<std::vector<rdrr::batch::JobResult>> merged = rdrr::batch::merge_shard_reports(opts.work_dir, so.tasks);
    if (!merged.ok()) {
      std::fprintf(stderr, "rdrr-batch: %s\n", merged.status().to_string().c_str());
      return kExitShardMissing;
    }
    return finish(*merged, rdrr::batch::merged_report_path(opts.work_dir), {0, 1});
  }

  const std::vector<size_t> indices = rdrr::batch::shard_job_indices(jobs->size(), *shard);
  std::mutex print_mu;
  std::vector<rdrr::batch::JobResult> results =
      rdrr::batch::run_batch(*jobs, indices, opts, [&](const rdrr::batch::JobResult& r) {
        std::lock_guard<std::mutex> g(print_mu);
        std::fprintf(stderr, "rdrr-batch: %s: %s%s\n", r.name.c_str(), r.status.c_str(),
                     r.message.empty() ? "" : (" (" + r.message + ")").c_str());
      });
  const fs::path report = shard->count == 1 ? rdrr::batch::merged_report_path(opts.work_dir)
                                            : rdrr::batch::shard_report_path(opts.work_dir, *shard);
  return finish(results, report, *shard);
}
