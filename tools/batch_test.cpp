#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "rdrr/test_temp_dir.h"
#include "tools/batch_jobs.h"
#include "tools/batch_report.h"
#include "tools/batch_run.h"
#include "tools/batch_slurm.h"

namespace rdrr::batch {
namespace {
namespace fs = std::filesystem;

void write(const fs::path& p, std::string_view text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

TEST(BatchJobs, JsonJobsResolveRelativeToTheFile) {
  const fs::path f = "/data/jobs/list.json";
  Result<std::vector<Job>> jobs = parse_jobs(R"({"jobs": [
      {"source": "m/llama", "output": "/packs/llama-q4", "flags": ["--quantize", "q4_k_m"], "mem": "2G"},
      {"source": "m/qwen", "output": "out/qwen", "name": "qwen-f16", "verify_flags": ["--skip-gpu"]}]})", f);
  ASSERT_TRUE(jobs.ok()) << jobs.status().to_string();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].source, fs::path("/data/jobs/m/llama"));
  EXPECT_EQ((*jobs)[0].output, fs::path("/packs/llama-q4"));
  EXPECT_EQ((*jobs)[0].name, "llama-q4");
  EXPECT_EQ((*jobs)[0].convert_flags, (std::vector<std::string>{"--quantize", "q4_k_m"}));
  EXPECT_EQ((*jobs)[0].mem_bytes, 2ull << 30);
  EXPECT_EQ((*jobs)[1].name, "qwen-f16");
  EXPECT_EQ((*jobs)[1].output, fs::path("/data/jobs/out/qwen"));
  EXPECT_EQ((*jobs)[1].verify_flags, std::vector<std::string>{"--skip-gpu"});
}

TEST(BatchJobs, PlainListWithComments) {
  Result<std::vector<Job>> jobs = parse_jobs("# models\n\nsrc/a out/a --quantize f16  # half\n  src/b out/b\n", "j.txt");
  ASSERT_TRUE(jobs.ok()) << jobs.status().to_string();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].convert_flags, (std::vector<std::string>{"--quantize", "f16"}));
  EXPECT_EQ((*jobs)[1].source, fs::path("src/b"));
  EXPECT_TRUE((*jobs)[1].convert_flags.empty());
}

TEST(BatchJobs, Errors) {
  struct Case {
    std::string text;
    StatusCode code;
    std::string fragment;
  };
  const Case cases[] = {
      {"", StatusCode::kValidation, "no jobs"},
      {"{\"jobs\": [}", StatusCode::kParse, "f.json"},
      {"{\"jobs\": 3}", StatusCode::kSchema, "expected {\"jobs\""},
      {"{\"jobs\": [], \"x\": 1}", StatusCode::kSchema, "unknown field 'x'"},
      {"{\"jobs\": [{\"source\": \"a\"}]}", StatusCode::kSchema, "jobs[0]: missing field 'output'"},
      {"{\"jobs\": [{\"source\": \"a\", \"output\": \"b\", \"flag\": []}]}", StatusCode::kSchema, "unknown field 'flag'"},
      {"{\"jobs\": [{\"source\": \"a\", \"output\": \"b\", \"flags\": [1]}]}", StatusCode::kSchema, "jobs[0].flags"},
      {"{\"jobs\": [{\"source\": \"a\", \"output\": \"b\", \"mem\": \"3X\"}]}", StatusCode::kValidation, "unknown unit"},
      {"{\"jobs\": [{\"source\": \"a\", \"output\": \"b\", \"name\": \"a b\"}]}", StatusCode::kValidation, "name 'a b'"},
      {"{\"jobs\": [{\"source\": \"a\", \"output\": \"x/b\"}, {\"source\": \"c\", \"output\": \"y/b\"}]}",
       StatusCode::kValidation, "duplicate name 'b'"},
      {"a out/a\nb out/a\n", StatusCode::kValidation, "duplicate"},
      {"lonely\n", StatusCode::kSchema, "f.json:1: expected `SOURCE OUTPUT"},
  };
  for (const Case& c : cases) {
    Result<std::vector<Job>> r = parse_jobs(c.text, "f.json");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), c.code) << c.text << " -> " << r.status().to_string();
    EXPECT_NE(r.status().to_string().find(c.fragment), std::string::npos) << c.text << " -> " << r.status().to_string();
  }
  Result<std::vector<Job>> missing = read_jobs("/nonexistent/jobs.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// A JSON jobs file whose jobs write `outputs` (names out0, out1, ...), parsed from `dir`/jobs.json.
Result<std::vector<Job>> jobs_writing(const fs::path& dir, const std::vector<std::string>& outputs) {
  std::string text = "{\"jobs\": [";
  for (size_t i = 0; i < outputs.size(); ++i) {
    text += std::string(i ? ", " : "") + "{\"source\": \"src\", \"output\": \"" + outputs[i] +
            "\", \"name\": \"out" + std::to_string(i) + "\"}";
  }
  return parse_jobs(text + "]}", dir / "jobs.json");
}

// Two jobs writing the same folder (through a trailing slash, "..", or a symlink) or one inside the other
// would leave an outer pack holding the inner one's files: the jobs file is refused, naming both jobs.
TEST(BatchJobs, OutputsThatNestOrAliasAreRefused) {
  const test::TempDir tmp;
  const fs::path d = fs::canonical(tmp.path());
  fs::create_directories(d / "real");
  fs::create_directories(d / "x");
  fs::create_directory_symlink(d / "real", d / "link");
  const std::string dup = "duplicate output: ";
  struct Case {
    std::vector<std::string> outputs;
    std::string fragment;
  };
  const Case cases[] = {
      {{"a", "a/b"}, "nested outputs: job 1 'out1' (" + (d / "a/b").string() + ") lies inside job 0 'out0' (" +
                         (d / "a").string() + ")"},
      {{"a/b/c", "a"}, "nested outputs: job 0 'out0' (" + (d / "a/b/c").string() + ") lies inside job 1 'out1' ("},
      {{"real/p", "real/p/"}, dup + "job 1 'out1' (" + (d / "real/p").string() + ") and job 0 'out0' (" +
                                  (d / "real/p").string() + ") are the same folder " + (d / "real/p").string()},
      {{"p", "x/../p/"}, dup + "job 1 'out1' (" + (d / "p").string() + ") and job 0 'out0'"},
      {{"q", "x/../q"}, dup + "job 1 'out1'"},
      {{"real/p", "link/p"}, dup + "job 1 'out1' (" + (d / "link/p").string() + ") and job 0 'out0' (" +
                                 (d / "real/p").string() + ") are the same folder " + (d / "real/p").string()},
      {{"link/p/q", "real"}, "nested outputs: job 0 'out0' (" + (d / "link/p/q").string() + ") lies inside job 1"},
      {{"m", d.string() + "/m/"}, dup + "job 1 'out1'"},
  };
  for (const Case& c : cases) {
    const Result<std::vector<Job>> r = jobs_writing(d, c.outputs);
    ASSERT_FALSE(r.ok()) << c.outputs[0] << " " << c.outputs[1];
    EXPECT_EQ(r.status().code(), StatusCode::kValidation);
    EXPECT_NE(r.status().message().find(c.fragment), std::string::npos)
        << "expected '" << c.fragment << "' in: " << r.status().message();
    EXPECT_NE(r.status().message().find((d / "jobs.json").string()), std::string::npos) << r.status().message();
  }
  // Plain list: a trailing slash no longer hides the alias, and the default name drops it.
  const Result<std::vector<Job>> list = parse_jobs("src/a out/p\nsrc/b out/p/\n", d / "jobs.txt");
  EXPECT_EQ(list.status().code(), StatusCode::kValidation);
  EXPECT_NE(list.status().message().find("duplicate output: job 1 'p'"), std::string::npos) << list.status().message();
  const Result<std::vector<Job>> one = parse_jobs("src/a out/p/\n", d / "jobs.txt");
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ((*one)[0].name, "p");
  EXPECT_EQ((*one)[0].output, d / "out/p");
  // Siblings that share a prefix are apart.
  const Result<std::vector<Job>> apart = jobs_writing(d, {"a", "ab", "a-b", "a.b", "b/a", "real/p", "link/q"});
  EXPECT_TRUE(apart.ok()) << apart.status().to_string();
}

TEST(BatchJobs, ShardsPartitionTheJobs) {
  for (uint32_t n : {1u, 2u, 3u, 7u}) {
    std::vector<int> seen(10, 0);
    for (uint32_t i = 0; i < n; ++i) {
      for (size_t j : shard_job_indices(10, {i, n})) {
        EXPECT_EQ(j % n, i);
        ++seen[j];
      }
    }
    for (int s : seen) EXPECT_EQ(s, 1);
  }
  Result<Shard> s = parse_shard("2/3");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 2u);
  EXPECT_EQ(s->count, 3u);
  for (const char* bad : {"3/3", "1/0", "x/2", "1", "1/2/3", "-1/2", ""}) {
    Result<Shard> b = parse_shard(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(BatchJobs, ByteSizes) {
  EXPECT_EQ(*parse_byte_size("123"), 123u);
  EXPECT_EQ(*parse_byte_size("4K"), 4096u);
  EXPECT_EQ(*parse_byte_size("512M"), 512ull << 20);
  EXPECT_EQ(*parse_byte_size("8GiB"), 8ull << 30);
  EXPECT_EQ(*parse_byte_size("1TB"), 1ull << 40);
  for (const char* bad : {"", "G", "1Q", "99999999999T"}) EXPECT_FALSE(parse_byte_size(bad).ok()) << bad;
}

TEST(BatchJobs, FingerprintFollowsSourcesAndFlags) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  write(d / "src/config.json", "{}");
  write(d / "src/sub/model.safetensors", "abc");
  Job job{"a", d / "src", d / "out", {"--quantize", "f16"}, {}, 0};
  Result<std::string> a = job_fingerprint(job);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->rfind("sha256:", 0), 0u);
  EXPECT_EQ(*job_fingerprint(job), *a);
  Job other_flags = job;
  other_flags.convert_flags = {"--quantize", "q8_0"};
  EXPECT_NE(*job_fingerprint(other_flags), *a);
  write(d / "src/sub/model.safetensors", "abcd");
  EXPECT_NE(*job_fingerprint(job), *a);
  const std::string b = *job_fingerprint(job);
  write(d / "src/extra.json", "1");
  EXPECT_NE(*job_fingerprint(job), b);
  Job missing = job;
  missing.source = d / "nope";
  Result<std::string> m = job_fingerprint(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(source_bytes(d / "src"), 4u + 2u + 1u);
  EXPECT_EQ(estimate_job_mem_bytes(job), (512ull << 20) + 7 * 5 / 2);
}

TEST(BatchRun, ProcessExitCodesAndLogs) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  Result<int> ok = run_process({"/bin/sh", "-c", "echo hello; echo oops >&2; exit 0"}, d / "l.log");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 0);
  Result<int> three = run_process({"/bin/sh", "-c", "exit 3"}, d / "l.log");
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(*three, 3);
  Result<int> killed = run_process({"/bin/sh", "-c", "kill -9 $$"}, d / "l.log");
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(*killed, 128 + 9);
  std::ifstream in(d / "l.log");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("hello"), std::string::npos);
  EXPECT_NE(all.find("oops"), std::string::npos);
  Result<int> missing = run_process({"/nonexistent/rdrr-convert"}, d / "l.log");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// Fake tools (shell scripts standing in for rdrr-convert / rdrr-verify: the batch logic is under test,
// the real tools run in tests/batch_e2e_test.cpp).
fs::path fake_bin(const fs::path& d, std::string_view convert_body, std::string_view verify_body) {
  const fs::path bin = d / "bin";
  write(bin / "rdrr-convert", "#!/bin/sh\n" + std::string(convert_body) + "\n");
  write(bin / "rdrr-verify", "#!/bin/sh\n" + std::string(verify_body) + "\n");
  fs::permissions(bin / "rdrr-convert", fs::perms::owner_all);
  fs::permissions(bin / "rdrr-verify", fs::perms::owner_all);
  return bin;
}

constexpr std::string_view kConvertOk = "mkdir -p \"$2\" && echo '{}' > \"$2/manifest.json\" && echo run >> \"$2.count\"";
constexpr std::string_view kVerifyOk =
    "echo '{\"pass\": true, \"gates\": [{\"name\": \"structure\", \"status\": \"PASS\"}]}' > \"$3\"";

TEST(BatchRun, RunsSkipsRetriesAndResumes) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  write(d / "src/a/config.json", "{}");
  write(d / "src/b/config.json", "{}");
  std::vector<Job> jobs = {{"a", d / "src/a", d / "out/a", {}, {}, 1}, {"b", d / "src/b", d / "out/b", {}, {}, 1},
                           {"c", d / "src/missing", d / "out/c", {}, {}, 1}};
  RunOptions o;
  o.bin_dir = fake_bin(d, kConvertOk, kVerifyOk);
  o.work_dir = d / "work";
  o.parallel = 2;
  const std::vector<size_t> all = {0, 1, 2};
  std::vector<JobResult> r = run_batch(jobs, all, o);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].status, "verified") << r[0].message;
  EXPECT_EQ(r[1].status, "verified") << r[1].message;
  EXPECT_EQ(r[0].verify.value("pass", false), true);
  EXPECT_EQ(r[2].status, "failed");
  EXPECT_EQ(r[2].failed_stage, "fingerprint");
  EXPECT_FALSE(all_ok(r));
  EXPECT_TRUE(fs::exists(d / "out/a.rdrr-batch.json"));

  // Second run: a and b are verified and unchanged -> skipped without running anything.
  std::vector<JobResult> again = run_batch(jobs, {0, 1}, o);
  EXPECT_EQ(again[0].status, "skipped");
  EXPECT_EQ(again[1].status, "skipped");
  std::ifstream count(d / "out/a.count");
  std::string lines((std::istreambuf_iterator<char>(count)), std::istreambuf_iterator<char>());
  EXPECT_EQ(lines, "run\n");
  // A changed source file re-runs the job; a dry run says so without running.
  write(d / "src/a/config.json", "{\"changed\": 1}");
  RunOptions dry = o;
  dry.dry_run = true;
  EXPECT_EQ(run_batch(jobs, {0, 1}, dry)[0].status, "would_run");
  EXPECT_EQ(run_batch(jobs, {0, 1}, dry)[1].status, "would_skip");
  EXPECT_EQ(run_batch(jobs, {0}, o)[0].status, "verified");
  // Verify-only re-verifies an unchanged pack.
  RunOptions vo = o;
  vo.verify_only = true;
  EXPECT_EQ(run_batch(jobs, {1}, vo)[0].status, "verified");
}

TEST(BatchRun, FailedJobIsRetriedOnce) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  write(d / "src/a/config.json", "{}");
  std::vector<Job> jobs = {{"a", d / "src/a", d / "out/a", {}, {}, 1}};
  RunOptions o;
  o.bin_dir = fake_bin(d, kConvertOk, "echo '{\"pass\": false, \"gates\": []}' > \"$3\"; exit 24");
  o.work_dir = d / "work";
  std::vector<JobResult> r = run_batch(jobs, {0}, o);
  EXPECT_EQ(r[0].status, "failed");
  EXPECT_EQ(r[0].failed_stage, "verify");
  EXPECT_EQ(r[0].exit_code, 24);
  EXPECT_EQ(r[0].attempts, 2u);
  EXPECT_FALSE(fs::exists(d / "out/a.rdrr-batch.json"));
  EXPECT_NE(format_table(r).find("1 failed"), std::string::npos);
}

TEST(BatchReport, ShardReportsMerge) {
  const test::TempDir tmp;
  const fs::path& d = tmp.path();
  JobResult a;
  a.index = 1;
  a.name = "b";
  a.status = "verified";
  JobResult b;
  b.index = 0;
  b.name = "a";
  b.status = "failed";
  b.failed_stage = "convert";
  ASSERT_TRUE(write_report(shard_report_path(d, {1, 2}), report_json({a}, {1, 2})).ok());
  Result<std::vector<JobResult>> missing = merge_shard_reports(d, 2);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("report.shard-0-of-2.json"), std::string::npos);
  ASSERT_TRUE(write_report(shard_report_path(d, {0, 2}), report_json({b}, {0, 2})).ok());
  Result<std::vector<JobResult>> merged = merge_shard_reports(d, 2);
  ASSERT_TRUE(merged.ok()) << merged.status().to_string();
  ASSERT_EQ(merged->size(), 2u);
  EXPECT_EQ((*merged)[0].name, "a");
  EXPECT_EQ((*merged)[1].name, "b");
  EXPECT_FALSE(all_ok(*merged));
}

TEST(BatchSlurm, ScriptRunsOneShardPerArrayTask) {
  SlurmOptions o;
  o.tasks = 3;
  o.partition = "debug";
  o.mem = "4G";
  o.cpus_per_task = 2;
  const std::string s = sbatch_script("/opt/rdrr/rdrr-batch", "/jobs/it's.json", "/shared/work", o, {"-j", "2"});
  EXPECT_EQ(s.rfind("#!/bin/bash\n", 0), 0u);
  EXPECT_NE(s.find("#SBATCH --array=0-2\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --partition=debug\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --mem=4G\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --cpus-per-task=2\n"), std::string::npos);
  EXPECT_NE(s.find("'/jobs/it'\\''s.json'"), std::string::npos);
  EXPECT_NE(s.find("--shard \"${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}\" '-j' '2'"), std::string::npos);
}

}  // namespace
}  // namespace rdrr::batch
