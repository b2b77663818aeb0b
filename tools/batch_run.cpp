#include "tools/batch_run.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "rdrr/file_io.h"
#include "rdrr/json_strict.h"
#include "rdrr/sha256.h"

extern char** environ;

namespace rdrr::batch {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kRecordSuffix = ".rdrr-batch.json";

fs::path record_path(const Job& job) {
  fs::path p = job.output;
  p += std::string(kRecordSuffix);
  return p;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The verified record of job's output, or null when absent or unreadable.
nlohmann::json read_record(const Job& job) {
  std::error_code ec;
  if (!fs::is_regular_file(record_path(job), ec)) return nullptr;
  Result<nlohmann::json> j = parse_json_strict(read_text(record_path(job)), record_path(job).string());
  return j.ok() && j->is_object() ? *j : nlohmann::json(nullptr);
}

std::string manifest_sha256(const Job& job) {
  Result<std::string> h = sha256_file(job.output / "manifest.json");
  return h.ok() ? *h : std::string();
}

uint64_t folder_bytes(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  return source_bytes(dir);
}

// Writes the record atomically (temp file + rename) so that a crash never leaves a half-written one.
Status write_record(const Job& job, const std::string& fingerprint, const nlohmann::json& verify) {
  nlohmann::json rec = {{"version", 1},
                        {"fingerprint", fingerprint},
                        {"manifest_sha256", manifest_sha256(job)},
                        {"verify", verify}};
  const std::string text = rec.dump(2) + "\n";
  fs::path tmp = record_path(job);
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.good()) return error(StatusCode::kIo, tmp.string() + ": cannot write");
  }
  std::error_code ec;
  fs::rename(tmp, record_path(job), ec);
  if (ec) return error(StatusCode::kIo, record_path(job).string() + ": " + ec.message());
  return Status::Ok();
}

nlohmann::json read_verify_report(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return nullptr;
  Result<nlohmann::json> j = parse_json_strict(read_text(p), p.string());
  return j.ok() ? *j : nlohmann::json(nullptr);
}

struct JobRunner {
  const Job& job;
  const RunOptions& opts;
  JobResult r;

  fs::path log(std::string_view stage) const { return opts.work_dir / "logs" / (job.name + "." + std::string(stage) + ".log"); }
  fs::path verify_report_path() const { return opts.work_dir / "reports" / (job.name + ".verify.json"); }

  // One attempt; true when the pack verified.
  bool attempt() {
    std::error_code ec;
    if (!opts.verify_only) {
      fs::create_directories(job.output.parent_path(), ec);  // rdrr-convert creates only the pack folder itself
      std::vector<std::string> argv = {(opts.bin_dir / "rdrr-convert").string(), job.source.string(),
                                       job.output.string()};
      argv.insert(argv.end(), job.convert_flags.begin(), job.convert_flags.end());
      argv.push_back("--force");
      Result<int> rc = run_process(argv, log("convert"));
      if (!rc.ok() || *rc != 0) {
        r.failed_stage = "convert";
        r.exit_code = rc.ok() ? *rc : -1;
        r.message = rc.ok() ? "rdrr-convert exited " + std::to_string(*rc) + ", see " + log("convert").string()
                            : rc.status().to_string();
        return false;
      }
    } else if (!fs::is_regular_file(job.output / "manifest.json", ec)) {
      r.failed_stage = "pack";
      r.exit_code = 0;
      r.message = job.output.string() + ": no pack to verify (manifest.json missing)";
      return false;
    }
    fs::create_directories(verify_report_path().parent_path(), ec);
    fs::remove(verify_report_path(), ec);
    std::vector<std::string> argv = {(opts.bin_dir / "rdrr-verify").string(), job.output.string(), "--json",
                                     verify_report_path().string()};
    argv.insert(argv.end(), job.verify_flags.begin(), job.verify_flags.end());
    Result<int> rc = run_process(argv, log("verify"));
    r.verify = read_verify_report(verify_report_path());
    if (!rc.ok() || *rc != 0) {
      r.failed_stage = "verify";
      r.exit_code = rc.ok() ? *rc : -1;
      r.message = rc.ok() ? "rdrr-verify exited " + std::to_string(*rc) + ", see " + log("verify").string()
                          : rc.status().to_string();
      return false;
    }
    r.failed_stage.clear();
    r.exit_code = 0;
    r.message.clear();
    return true;
  }

  JobResult run(size_t index) {
    const auto t0 = std::chrono::steady_clock::now();
    r.index = index;
    r.name = job.name;
    r.source = job.source.string();
    r.output = job.output.string();
    r.source_bytes = source_bytes(job.source);
    Result<std::string> fp = job_fingerprint(job);
    if (fp.ok()) r.fingerprint = *fp;
    const nlohmann::json rec = read_record(job);
    const bool up_to_date = fp.ok() && rec.is_object() && rec.value("fingerprint", "") == *fp &&
                            rec.value("manifest_sha256", "") == manifest_sha256(job) && !manifest_sha256(job).empty();
    if (!fp.ok() && !opts.verify_only) {
      r.status = "failed";
      r.failed_stage = "fingerprint";
      r.message = fp.status().to_string();
    } else if (up_to_date && !opts.verify_only) {
      r.status = opts.dry_run ? "would_skip" : "skipped";
      r.verify = rec.contains("verify") ? rec["verify"] : nlohmann::json(nullptr);
    } else if (opts.dry_run) {
      r.status = opts.verify_only ? "would_verify" : "would_run";
    } else {
      bool ok = false;
      while (!ok && r.attempts <= opts.retries) {
        ++r.attempts;
        ok = attempt();
      }
      r.status = ok ? "verified" : "failed";
      if (ok && fp.ok()) {
        Status st = write_record(job, *fp, r.verify);
        if (!st.ok()) r.message = "verified, but the record was not written: " + st.to_string();
      }
    }
    r.pack_bytes = folder_bytes(job.output);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
};

}  // namespace

Result<int> run_process(const std::vector<std::string>& argv, const fs::path& log_path) {
  if (argv.empty()) return error(StatusCode::kInvalidArgument, "run_process: empty argv");
  std::error_code ec;
  fs::create_directories(log_path.parent_path(), ec);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    return error(StatusCode::kNotFound, "cannot start " + argv[0] + ": " + std::strerror(err));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return error(StatusCode::kInternal, "waitpid(" + argv[0] + "): " + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

std::vector<JobResult> run_batch(const std::vector<Job>& jobs, const std::vector<size_t>& indices,
                                 const RunOptions& opts, const std::function<void(const JobResult&)>& on_done) {
  std::vector<JobResult> results(indices.size());
  const uint32_t parallel = opts.parallel == 0 ? 1 : opts.parallel;
  uint64_t budget = opts.mem_budget_bytes;
  if (budget == 0) budget = available_memory_bytes() / 10 * 8;
  std::mutex mu;
  std::condition_variable cv;
  uint32_t running = 0;
  uint64_t mem_in_use = 0;
  std::vector<std::thread> threads;
  for (size_t pos = 0; pos < indices.size(); ++pos) {
    const Job& job = jobs[indices[pos]];
    const uint64_t est = opts.dry_run ? 0 : estimate_job_mem_bytes(job);
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return running < parallel && (running == 0 || budget == 0 || mem_in_use + est <= budget); });
    ++running;
    mem_in_use += est;
    lk.unlock();
    threads.emplace_back([&, pos, est] {
      JobRunner runner{jobs[indices[pos]], opts, {}};
      JobResult r = runner.run(indices[pos]);
      std::lock_guard<std::mutex> g(mu);
      results[pos] = std::move(r);
      if (on_done) on_done(results[pos]);
      --running;
      mem_in_use -= est;
      cv.notify_all();
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace rdrr::batch
