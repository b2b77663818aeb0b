// rdrr-bench: prefill and decode throughput of packs on a Vulkan device, with llama-bench's interface and
// output so the two compare directly.
//   rdrr-bench -m PACK [-m PACK ...] [-p 512] [-n 128] [-d 0] [-r 5] [-o md|json] [--ctx N] [--no-coopmat]
// Tests: ppP (a prompt of P tokens in one prefill() call) and tgN (N single-token decode() steps) for every P
// of -p and N of -n (0: none), each at every depth of -d (that many tokens already in the KV cache, filled
// untimed before the test). Prompt ids are deterministic pseudo-random ids below the vocabulary size.
// Each test runs once untimed (warm-up: builds its pipelines and faults the weights in), then -r times.
// Per repetition: wall t/s = tokens / wall seconds of the executor calls (first token in .. last token out,
// host waits included); GPU t/s = tokens / device seconds of those calls' submissions (one timestamp pair per
// submission: ExecutorOptions::gpu_span; decode steps queued ahead overlap the host, not each other; 0 on a
// queue without timestamps).
// Reported: mean and sample standard deviation over the repetitions. Model columns: the pack's tensor bytes
// and parameter count (manifest), its backend and device. Exit codes: tools/exit_codes.h.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rdrr/archive.h"
#include "rdrr/file_io.h"
#include "rdrr/manifest_json.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/pack.h"
#include "tools/exit_codes.h"

namespace {

using rdrr::Result;
using rdrr::Status;
using rdrr::StatusCode;
namespace rt = rdrr::runtime;
using Clock = std::chrono::steady_clock;

struct Test {
  uint32_t n_prompt = 0;  // pp test: prompt tokens (0: a tg test)
  uint32_t n_gen = 0;     // tg test: decode steps
  uint32_t depth = 0;     // tokens in the KV cache before the test
  std::string name() const {
    std::string s = n_prompt != 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen);
    return depth == 0 ? s : s + " @ d" + std::to_string(depth);
  }
  uint32_t tokens() const { return n_prompt != 0 ? n_prompt : n_gen; }
};

struct Stats {
  std::vector<double> samples;  // t/s per repetition
  double mean() const {
    double s = 0;
    for (double v : samples) s += v;
    return samples.empty() ? 0.0 : s / static_cast<double>(samples.size());
  }
  double sd() const {
    if (samples.size() < 2) return 0.0;
    const double m = mean();
    double s = 0;
    for (double v : samples) s += (v - m) * (v - m);
    return std::sqrt(s / static_cast<double>(samples.size() - 1));
  }
};

struct Model {
  std::string path;
  rdrr::Manifest manifest;
  uint64_t bytes = 0;   // tensor bytes
  uint64_t params = 0;  // tensor elements
};

struct Row {
  const Model* model;
  Test test;
  Stats wall, gpu;
};

// Deterministic ids in [0, vocab) (SplitMix64 from the position), the same for every pack and run.
std::vector<uint32_t> prompt_ids(uint32_t n, uint64_t vocab, uint64_t salt) {
  std::vector<uint32_t> out(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t z = (salt * 0x100000001b3ull + i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    out[i] = static_cast<uint32_t>((z ^ (z >> 31)) % vocab);
  }
  return out;
}

// One repetition: (wall seconds, GPU seconds) of the timed calls.
Result<std::pair<double, double>> run_once(rt::Executor& ex, const Test& t) {
  const uint64_t vocab = ex.vocab_size();
  ex.reset();
  if (t.depth > 0) RDRR_RETURN_IF_ERROR(ex.prefill(prompt_ids(t.depth, vocab, 1)).status());
  if (t.n_prompt != 0) {
    const std::vector<uint32_t> ids = prompt_ids(t.n_prompt, vocab, 2);
    ex.clear_gpu_span();
    const auto t0 = Clock::now();
    RDRR_RETURN_IF_ERROR(ex.prefill(ids).status());
    return std::pair{std::chrono::duration<double>(Clock::now() - t0).count(), ex.gpu_span_ms() / 1e3};
  }
  if (t.depth == 0) RDRR_RETURN_IF_ERROR(ex.prefill(prompt_ids(1, vocab, 3)).status());  // a first sampled token
  ex.clear_gpu_span();
  const auto t0 = Clock::now();
  for (uint32_t i = 0; i < t.n_gen; ++i) RDRR_RETURN_IF_ERROR(ex.decode().status());
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double gpu = ex.gpu_span_ms() / 1e3;
  ex.reset();  // drops the step queued ahead
  return std::pair{wall, gpu};
}

struct Args {
  std::vector<std::string> packs;
  std::vector<uint32_t> prompts{512}, gens{128}, depths{0};
  uint32_t reps = 5;
  std::string output = "md";
  uint32_t ctx = 0;
  bool no_coopmat = false;
};

Result<Model> load_model(const std::string& path) {
  Model m;
  m.path = path;
  RDRR_ASSIGN_OR_RETURN(m.manifest, rdrr::read_manifest_file(path));
  for (const rdrr::TensorEntry& t : m.manifest.tensors) {
    m.bytes += t.size_bytes;
    uint64_t n = 1;
    for (uint64_t d : t.shape) n *= d;
    m.params += n;
  }
  return m;
}

// The tests of -p / -n / -d, and the context they need.
std::vector<Test> tests_of(const Args& a, uint32_t& ctx_needed) {
  std::vector<Test> out;
  ctx_needed = 1;
  for (uint32_t d : a.depths) {
    for (uint32_t p : a.prompts) {
      if (p != 0) out.push_back({p, 0, d});
    }
    for (uint32_t n : a.gens) {
      if (n != 0) out.push_back({0, n, d});
    }
  }
  for (const Test& t : out) ctx_needed = std::max(ctx_needed, t.depth + std::max(t.n_prompt, t.n_gen) + 1);
  return out;
}

Status bench_model(const Args& a, rt::Device& dev, const Model& m, std::vector<Row>& rows) {
  uint32_t ctx_needed = 0;
  const std::vector<Test> tests = tests_of(a, ctx_needed);
  rt::PackLoadOptions lopts;
  lopts.manifest = m.manifest;
  RDRR_ASSIGN_OR_RETURN(std::unique_ptr<rt::Pack> pack, rt::Pack::load(dev, m.path, lopts));
  rt::ExecutorOptions eopts;
  eopts.context_length = a.ctx != 0 ? a.ctx : ctx_needed;
  if (eopts.context_length < ctx_needed || ctx_needed > m.manifest.architecture.max_seq_len) {
    return rdrr::error(StatusCode::kInvalidArgument,
                       m.path + ": the tests need a context of " + std::to_string(ctx_needed) + " positions (depth + "
                       "tokens + 1); --ctx is " + std::to_string(eopts.context_length) + ", architecture.maxSeqLen " +
                       std::to_string(m.manifest.architecture.max_seq_len));
  }
  eopts.cooperative_matrix = !a.no_coopmat;
  eopts.gpu_span = dev.caps().timestamp_valid_bits != 0;  // without timestamps: wall time only (GPU t/s 0)
  RDRR_ASSIGN_OR_RETURN(std::unique_ptr<rt::Executor> ex, rt::Executor::create(dev, *pack, eopts));
  for (const Test& t : tests) {
    Row row{&m, t, {}, {}};
    for (uint32_t r = 0; r <= a.reps; ++r) {  // repetition 0: the warm-up
      Result<std::pair<double, double>> s = run_once(*ex, t);
      if (!s.ok()) return Status(s.status()).context(m.path + " " + t.name());
      if (r == 0) continue;
      row.wall.samples.push_back(t.tokens() / s->first);
      row.gpu.samples.push_back(s->second > 0 ? t.tokens() / s->second : 0.0);
    }
    rows.push_back(std::move(row));
  }
  return Status::Ok();
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  const double mib = double(b) / (1 << 20);
  if (mib >= 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", mib / 1024);
  else std::snprintf(buf, sizeof buf, "%.2f MiB", mib);
  return buf;
}

std::string human_params(uint64_t n) {
  char buf[32];
  if (n >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.2f B", double(n) / 1e9);
  else std::snprintf(buf, sizeof buf, "%.2f M", double(n) / 1e6);
  return buf;
}

std::string mean_sd(const Stats& s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f ± %.2f", s.mean(), s.sd());
  return buf;
}

void print_markdown(const std::vector<Row>& rows, const std::string& backend) {
  std::printf("| model | size | params | backend | test | t/s | GPU t/s |\n");
  std::printf("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
  for (const Row& r : rows) {
    const rdrr::Manifest& mf = r.model->manifest;
    std::printf("| %s %s | %s | %s | %s | %s | %s | %s |\n", mf.model_id.c_str(), mf.quantization.c_str(),
                human_bytes(r.model->bytes).c_str(), human_params(r.model->params).c_str(), backend.c_str(),
                r.test.name().c_str(), mean_sd(r.wall).c_str(), mean_sd(r.gpu).c_str());
  }
}

void print_json(const std::vector<Row>& rows, const std::string& device, uint32_t reps) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    const rdrr::Manifest& mf = r.model->manifest;
    out.push_back({{"model_filename", r.model->path},
                   {"model_id", mf.model_id},
                   {"model_type", std::string(rdrr::arch_family_name(mf.architecture.family)) + " " + mf.quantization},
                   {"model_size", r.model->bytes},
                   {"model_n_params", r.model->params},
                   {"backends", "Vulkan"},
                   {"gpu_info", device},
                   {"n_prompt", r.test.n_prompt},
                   {"n_gen", r.test.n_gen},
                   {"n_depth", r.test.depth},
                   {"test", r.test.name()},
                   {"repetitions", reps},
                   {"avg_ts", r.wall.mean()},
                   {"stddev_ts", r.wall.sd()},
                   {"samples_ts", r.wall.samples},
                   {"gpu_avg_ts", r.gpu.mean()},
                   {"gpu_stddev_ts", r.gpu.sd()},
                   {"gpu_samples_ts", r.gpu.samples}});
  }
  std::printf("%s\n", out.dump(1).c_str());
}

int report_error(const Status& st) {
  std::fprintf(stderr, "rdrr-bench: %s\n", st.to_string().c_str());
  return rdrr::tools::exit_code_for(st.code());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdrr-bench: prefill (ppP) and decode (tgN) tokens per second of packs, llama-bench style"};
  Args a;
  app.add_option("-m,--model", a.packs, "pack folder or .rdrr.tar.zst (repeatable)")->required();
  app.add_option("-p,--n-prompt", a.prompts, "prompt sizes (comma-separated; 0: no pp test)")
      ->delimiter(',')->capture_default_str();
  app.add_option("-n,--n-gen", a.gens, "decode steps (comma-separated; 0: no tg test)")
      ->delimiter(',')->capture_default_str();
  app.add_option("-d,--n-depth", a.depths, "tokens already in the KV cache (comma-separated)")
      ->delimiter(',')->capture_default_str();
  app.add_option("-r,--repetitions", a.reps, "timed repetitions per test (after one warm-up)")
      ->check(CLI::Range(1u, 1000u))->capture_default_str();
  app.add_option("-o,--output", a.output, "md or json")->check(CLI::IsMember({"md", "json"}))->capture_default_str();
  app.add_option("--ctx", a.ctx, "context length (0: what the tests need)")->capture_default_str();
  app.add_flag("--no-coopmat", a.no_coopmat, "prefill GEMMs in f32 even where the device has cooperative matrices");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? rdrr::tools::kExitOk : rdrr::tools::kExitUsage;
  }
  std::vector<Model> models;
  std::vector<rdrr::PackLocation> locations;  // an archive is extracted to a temp folder that lives as long
  for (std::string& p : a.packs) {
    Result<rdrr::PackLocation> loc = rdrr::locate_pack(p);
    if (!loc.ok()) return report_error(loc.status());
    p = loc->dir.string();
    locations.push_back(std::move(*loc));
    Result<Model> m = load_model(p);
    if (!m.ok()) return report_error(m.status());
    models.push_back(std::move(*m));
  }
  Result<std::unique_ptr<rt::Device>> dev = rt::Device::create(rt::device_options_from_env());
  if (!dev.ok()) return report_error(dev.status());
  const std::string device = (*dev)->caps().desc.name;
  std::vector<Row> rows;
  for (const Model& m : models) {
    if (Status st = bench_model(a, **dev, m, rows); !st.ok()) return report_error(st);
  }
  if (a.output == "json") {
    print_json(rows, device, a.reps);
  } else {
    print_markdown(rows, "Vulkan (" + device + ")");
  }
  return rdrr::tools::kExitOk;
}
