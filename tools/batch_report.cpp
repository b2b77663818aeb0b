#include "tools/batch_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "rdrr/json_strict.h"

namespace rdrr::batch {
namespace fs = std::filesystem;

nlohmann::json result_to_json(const JobResult& r) {
  return {{"index", r.index},
          {"name", r.name},
          {"source", r.source},
          {"output", r.output},
          {"status", r.status},
          {"failed_stage", r.failed_stage},
          {"exit_code", r.exit_code},
          {"attempts", r.attempts},
          {"seconds", r.seconds},
          {"source_bytes", r.source_bytes},
          {"pack_bytes", r.pack_bytes},
          {"fingerprint", r.fingerprint},
          {"verify", r.verify},
          {"message", r.message}};
}

Result<JobResult> result_from_json(const nlohmann::json& j, const std::string& ctx) {
  if (!j.is_object()) return error(StatusCode::kSchema, ctx + ": expected an object");
  JobResult r;
  try {
    r.index = j.at("index").get<size_t>();
    r.name = j.at("name").get<std::string>();
    r.source = j.at("source").get<std::string>();
    r.output = j.at("output").get<std::string>();
    r.status = j.at("status").get<std::string>();
    r.failed_stage = j.at("failed_stage").get<std::string>();
    r.exit_code = j.at("exit_code").get<int>();
    r.attempts = j.at("attempts").get<uint32_t>();
    r.seconds = j.at("seconds").get<double>();
    r.source_bytes = j.at("source_bytes").get<uint64_t>();
    r.pack_bytes = j.at("pack_bytes").get<uint64_t>();
    r.fingerprint = j.at("fingerprint").get<std::string>();
    r.verify = j.at("verify");
    r.message = j.at("message").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return error(StatusCode::kSchema, ctx + ": " + e.what());
  }
  return r;
}

nlohmann::json report_json(const std::vector<JobResult>& results, const Shard& shard) {
  nlohmann::json jobs = nlohmann::json::array();
  size_t verified = 0, skipped = 0, failed = 0, dry = 0;
  for (const JobResult& r : results) {
    jobs.push_back(result_to_json(r));
    if (r.status == "verified") ++verified;
    else if (r.status == "skipped") ++skipped;
    else if (r.status == "failed") ++failed;
    else ++dry;
  }
  return {{"version", 1},
          {"shard", std::to_string(shard.index) + "/" + std::to_string(shard.count)},
          {"jobs", jobs},
          {"summary",
           {{"total", results.size()}, {"verified", verified}, {"skipped", skipped}, {"failed", failed}, {"dry_run", dry}}}};
}

fs::path shard_report_path(const fs::path& work_dir, const Shard& shard) {
  return work_dir / ("report.shard-" + std::to_string(shard.index) + "-of-" + std::to_string(shard.count) + ".json");
}

fs::path merged_report_path(const fs::path& work_dir) { return work_dir / "report.json"; }

Status write_report(const fs::path& path, const nlohmann::json& report) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << report.dump(2) << "\n";
    if (!out.good()) return error(StatusCode::kIo, tmp.string() + ": cannot write");
  }
  fs::rename(tmp, path, ec);
  if (ec) return error(StatusCode::kIo, path.string() + ": " + ec.message());
  return Status::Ok();
}

Result<std::vector<JobResult>> merge_shard_reports(const fs::path& work_dir, uint32_t shard_count) {
  std::vector<JobResult> all;
  std::string missing;
  for (uint32_t i = 0; i < shard_count; ++i) {
    const fs::path p = shard_report_path(work_dir, {i, shard_count});
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      missing += (missing.empty() ? "" : ", ") + p.string();
      continue;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    RDRR_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_strict(ss.str(), p.string()));
    if (!j.contains("jobs") || !j["jobs"].is_array()) return error(StatusCode::kSchema, p.string() + ": no jobs array");
    for (size_t k = 0; k < j["jobs"].size(); ++k) {
      RDRR_ASSIGN_OR_RETURN(JobResult r, result_from_json(j["jobs"][k], p.string() + ": jobs[" + std::to_string(k) + "]"));
      all.push_back(std::move(r));
    }
  }
  if (!missing.empty()) {
    return error(StatusCode::kNotFound, "missing shard report(s): " + missing + " (did every array task run?)");
  }
  std::sort(all.begin(), all.end(), [](const JobResult& a, const JobResult& b) { return a.index < b.index; });
  return all;
}

namespace {

// "6/6 pass" or "4/6 pass, FAIL integrity" from rdrr-verify's report ({"gates": [{name, status}]}).
std::string gates_summary(const nlohmann::json& verify) {
  if (!verify.is_object() || !verify.contains("gates") || !verify["gates"].is_array()) return "-";
  size_t pass = 0, total = 0;
  std::string first_fail;
  for (const nlohmann::json& g : verify["gates"]) {
    const std::string status = g.value("status", "");
    if (status == "SKIP" || status == "skip") continue;
    ++total;
    if (status == "PASS" || status == "pass") {
      ++pass;
    } else if (first_fail.empty()) {
      first_fail = g.value("name", "?");
    }
  }
  std::string s = std::to_string(pass) + "/" + std::to_string(total) + " pass";
  if (!first_fail.empty()) s += ", FAIL " + first_fail;
  return s;
}

}  // namespace

std::string format_table(const std::vector<JobResult>& results) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-12s %4s %9s %10s %10s  %s\n", "job", "status", "try", "seconds", "src MiB",
                "pack MiB", "verify");
  out += line;
  size_t failed = 0;
  for (const JobResult& r : results) {
    std::snprintf(line, sizeof line, "%-28s %-12s %4u %9.1f %10.1f %10.1f  %s\n", r.name.c_str(), r.status.c_str(),
                  r.attempts, r.seconds, static_cast<double>(r.source_bytes) / 1048576.0,
                  static_cast<double>(r.pack_bytes) / 1048576.0, gates_summary(r.verify).c_str());
    out += line;
    if (r.status == "failed") {
      ++failed;
      out += "    " + r.failed_stage + ": " + r.message + "\n";
    }
  }
  out += std::to_string(results.size()) + " job(s), " + std::to_string(failed) + " failed\n";
  return out;
}

bool all_ok(const std::vector<JobResult>& results) {
  return std::none_of(results.begin(), results.end(), [](const JobResult& r) { return r.status == "failed"; });
}

}  // namespace rdrr::batch
