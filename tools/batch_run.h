// rdrr-batch execution: runs each job's conversion (rdrr-convert) then its verification (rdrr-verify) as
// child processes, N at a time within a memory budget, retrying a failed job, and skipping a job whose
// output is already a verified pack of the same source fingerprint and flags.
//
// The record of a verified pack lives next to it (a pack folder holds only listed files):
//   <output>.rdrr-batch.json = {"version": 1, "fingerprint": "sha256:...", "manifest_sha256": "<hex>",
//                               "verify": <rdrr-verify --json report>}
// A job is skipped when that record's fingerprint equals the job's (batch_jobs.h job_fingerprint) and its
// manifest_sha256 equals the current manifest.json's, so a re-run after a crash resumes where it stopped.
// Logs: <work>/logs/<name>.convert.log, <name>.verify.log; verify reports: <work>/reports/<name>.verify.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/status.h"
#include "tools/batch_jobs.h"

namespace rdrr::batch {

struct RunOptions {
  std::filesystem::path bin_dir;   // holds rdrr-convert and rdrr-verify
  std::filesystem::path work_dir;  // logs/ and reports/ are created below it
  uint32_t parallel = 1;           // jobs at a time
  uint64_t mem_budget_bytes = 0;   // sum of running jobs' estimates; 0: 80% of MemAvailable. One job always runs.
  uint32_t retries = 1;            // extra attempts of a failed job
  bool verify_only = false;        // re-verify existing packs (after `rdrr-digests repin`); never converts
  bool dry_run = false;            // decide and report, run nothing
};

struct JobResult {
  size_t index = 0;        // position in the jobs file
  std::string name;
  std::string source;
  std::string output;
  // "verified", "skipped" (already verified, unchanged), "failed", "would_run", "would_skip", "would_verify"
  std::string status;
  std::string failed_stage;  // "fingerprint", "convert", "verify", "pack" (verify-only without a pack)
  int exit_code = 0;         // of the failed stage's process
  uint32_t attempts = 0;
  double seconds = 0;
  uint64_t source_bytes = 0;
  uint64_t pack_bytes = 0;
  std::string fingerprint;
  nlohmann::json verify;  // the rdrr-verify JSON report (null when none was written)
  std::string message;
};

// Runs jobs[i] for i in `indices` and returns their results in that order. on_done (optional) is called,
// serialized, as each job finishes.
std::vector<JobResult> run_batch(const std::vector<Job>& jobs, const std::vector<size_t>& indices,
                                 const RunOptions& opts, const std::function<void(const JobResult&)>& on_done = {});

// Runs argv[0] (a path) with argv[1..], stdout and stderr appended to log_path; returns the exit status,
// 128 + signal when killed by a signal, or an error when it cannot be started.
Result<int> run_process(const std::vector<std::string>& argv, const std::filesystem::path& log_path);

// MemAvailable from /proc/meminfo (0 when unknown).
uint64_t available_memory_bytes();

}  // namespace rdrr::batch
