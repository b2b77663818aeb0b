// rdrr-batch on a Slurm cluster: one job array whose task I of N runs `rdrr-batch JOBS --shard I/N`
// (outputs and the work folder on a shared filesystem), then `rdrr-batch JOBS --report-only --shards N`
// merges the per-task reports.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "quant/status.h"

namespace rdrr::batch {

struct SlurmOptions {
  std::string partition;       // --partition (empty: the cluster default)
  std::string mem;             // --mem per task, e.g. "16G" (empty: the cluster default)
  uint32_t cpus_per_task = 0;  // --cpus-per-task (0: the cluster default)
  std::string time_limit;      // --time (empty: the partition default)
  uint32_t tasks = 1;          // array size N
  bool wait = true;            // sbatch --wait: block until every task ended, then merge
};

// The sbatch script: #SBATCH lines, then exec of `batch_bin JOBS --work-dir WORK --shard
// $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT` plus `task_args` (e.g. -j, --retries, --bin-dir).
std::string sbatch_script(const std::filesystem::path& batch_bin, const std::filesystem::path& jobs_file,
                          const std::filesystem::path& work_dir, const SlurmOptions& opts,
                          const std::vector<std::string>& task_args);

// Writes the script to <work>/rdrr-batch.sbatch and runs `sbatch --parsable [--wait]` on it (log in
// <work>/logs/sbatch.log). Returns sbatch's exit status (with --wait: non-zero when a task failed).
Result<int> submit_slurm(const std::filesystem::path& batch_bin, const std::filesystem::path& jobs_file,
                         const std::filesystem::path& work_dir, const SlurmOptions& opts,
                         const std::vector<std::string>& task_args);

}  // namespace rdrr::batch
