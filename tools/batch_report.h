// rdrr-batch reports: the JSON report of one run (or one shard), the human table, and the merge of the
// per-shard reports (`rdrr-batch --report-only`).
//
// Report: {"version": 1, "shard": "I/N", "jobs": [<job result>...], "summary": {"total", "verified",
// "skipped", "failed", "dry_run"}}; a job result has the fields of JobResult (batch_run.h) under the same
// names, with "verify" holding rdrr-verify's own JSON report. Shard I of N writes
// <work>/report.shard-I-of-N.json; a plain run and the merge write <work>/report.json.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/status.h"
#include "tools/batch_jobs.h"
#include "tools/batch_run.h"

namespace rdrr::batch {

nlohmann::json result_to_json(const JobResult& r);
Result<JobResult> result_from_json(const nlohmann::json& j, const std::string& ctx);

nlohmann::json report_json(const std::vector<JobResult>& results, const Shard& shard);
std::filesystem::path shard_report_path(const std::filesystem::path& work_dir, const Shard& shard);
std::filesystem::path merged_report_path(const std::filesystem::path& work_dir);

// Writes atomically (temp + rename).
Status write_report(const std::filesystem::path& path, const nlohmann::json& report);

// Reads the N shard reports of `shard_count` and merges them, jobs by index. kNotFound names every
// missing shard report (a task that never ran or crashed), kParse/kSchema a malformed one.
Result<std::vector<JobResult>> merge_shard_reports(const std::filesystem::path& work_dir, uint32_t shard_count);

// One line per job: name, status, attempts, seconds, source and pack MiB, verify gates; then a summary.
std::string format_table(const std::vector<JobResult>& results);

// True when no job failed.
bool all_ok(const std::vector<JobResult>& results);

}  // namespace rdrr::batch
