#include "convert/converter.h"

#include <fcntl.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "convert/pack_manifest.h"
#include "convert/calibration.h"
#include "convert/pipeline.h"
#include "convert/source.h"
#include "rdrr/archive.h"
#include "rdrr/file_io.h"
#include "rdrr/manifest_json.h"
#include "rdrr/pack_writer.h"
#include "rdrr/sha256.h"
#include "rdrr/shard_writer.h"
#include "rdrr/validate.h"

#ifndef RDRR_VERSION
#define RDRR_VERSION "0.0.0"
#endif

namespace rdrr::convert {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// SHA-256 of the input files on a thread of its own, concurrently with the conversion (reads through
// read(2), so the page cache it fills is not counted in our RSS and the mapped reads find it warm).
class SourceHasher {
 public:
  explicit SourceHasher(std::vector<SourceFile> files) : files_(std::move(files)) {
    thread_ = std::thread([this] { result_ = hash_all(); });
  }
  ~SourceHasher() {
    cancel_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  SourceHasher(const SourceHasher&) = delete;
  SourceHasher& operator=(const SourceHasher&) = delete;

  Result<std::vector<FileRecord>> wait() {
    if (thread_.joinable()) thread_.join();
    return std::move(result_);
  }

 private:
  Result<FileRecord> hash_one(const SourceFile& f) {
    UniqueFd fd(::open(f.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_status(errno, f.path.string(), "open");
    posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    Sha256 h;
    std::vector<std::byte> buf(4u << 20);
    uint64_t total = 0;
    while (!cancel_.load()) {
      const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno_status(errno, f.path.string(), "read");
      if (n == 0) break;
      h.update(std::span<const std::byte>(buf.data(), static_cast<size_t>(n)));
      total += static_cast<uint64_t>(n);
    }
    if (cancel_.load()) return error(StatusCode::kInternal, "hashing cancelled");
    return FileRecord{f.name, total, h.finish_hex()};
  }
  Result<std::vector<FileRecord>> hash_all() {
    std::vector<FileRecord> out;
    for (const SourceFile& f : files_) {
      RDRR_ASSIGN_OR_RETURN(FileRecord r, hash_one(f));
      out.push_back(std::move(r));
    }
    return out;
  }

  std::vector<SourceFile> files_;
  std::atomic<bool> cancel_{false};
  Result<std::vector<FileRecord>> result_{error(StatusCode::kInternal, "hashing did not run")};
  std::thread thread_;
};

Status check_options(const ConvertOptions& o) {
  if (o.src.empty()) return error(StatusCode::kInvalidArgument, "SRC: empty path");
  if (o.out.empty() && !o.dry_run) return error(StatusCode::kInvalidArgument, "OUT: empty path");
  if (o.threads < 0) return error(StatusCode::kInvalidArgument, "--threads: must be >= 0");
  if (o.rmse_every_chunks < 1) return error(StatusCode::kInvalidArgument, "--rmse-every: must be >= 1");
  return validate_max_shard_bytes(o.shard_size_bytes).context("--shard-size");
}

struct Planned {
  std::vector<TensorJob> jobs;
  uint64_t bytes_in = 0;
};

using KeepSeparate = std::function<bool(const std::vector<std::string>&, const ModelConfig&)>;

// Which projections stay unfused: a layer's parts the preset would give different types (q4_k_m's Q6_K v_proj on
// use_more_bits layers beside Q4_K q/k: fusing would change their bits). So fusion rearranges rows and never
// changes a weight's type. (Parts a --tensor-type override selects never reach it: SourceOptions::overridden.)
// `qkv_any_types`: an explicit --fuse-qkv fuses q/k/v whatever types the preset would give them (the fused
// tensor then takes qkv_proj's rule, v_proj's: the wider type on q4_k_m's use_more_bits layers).
KeepSeparate keep_separate_rule(Preset preset, bool qkv_any_types) {
  return KeepSeparate([preset, qkv_any_types](const std::vector<std::string>& names, const ModelConfig& config) {
    if (qkv_any_types && classify_tensor(names.front()) == TensorRole::kAttnQ) return false;
    std::vector<PlanInput> in;
    // The preset's choice for a 2-D weight does not depend on its size.
    for (const std::string& n : names) in.push_back({n, {256, 256}});
    PlanOptions po;
    po.preset = preset;
    po.n_layers = static_cast<int>(config.architecture.num_layers);
    po.tied_embeddings = config.tied_embeddings;
    po.n_experts = config.architecture.moe.num_experts;
    const Result<std::vector<PlanEntry>> plan = plan_tensors(in, po);
    if (!plan.ok()) return true;
    return std::any_of(plan->begin(), plan->end(), [&](const PlanEntry& e) { return e.dtype != plan->front().dtype; });
  });
}

// The --tensor-type overrides, in order.
Result<std::vector<TensorTypeOverride>> parse_overrides(const ConvertOptions& o) {
  std::vector<TensorTypeOverride> out;
  for (const std::string& spec : o.tensor_types) {
    RDRR_ASSIGN_OR_RETURN(TensorTypeOverride ov, parse_tensor_type_override(spec));
    out.push_back(std::move(ov));
  }
  return out;
}

}  // namespace

Result<SourceOptions> source_options(const ConvertOptions& o) {
  RDRR_ASSIGN_OR_RETURN(std::vector<TensorTypeOverride> overrides, parse_overrides(o));
  SourceOptions so;
  so.fuse_gate_up = o.fuse_gate_up.value_or(preset_is_quantized(o.preset));
  so.fuse_qkv = o.fuse_qkv.value_or(preset_is_quantized(o.preset));
  so.overridden = [overrides = std::move(overrides)](const std::string& name) {
    return std::any_of(overrides.begin(), overrides.end(),
                       [&](const TensorTypeOverride& ov) { return std::regex_match(name, ov.regex); });
  };
  so.keep_separate = keep_separate_rule(o.preset, o.fuse_qkv.value_or(false));
  return so;
}

namespace {

Result<Planned> plan_and_place(const SourceModel& src, const ConvertOptions& o) {
  PlanOptions po;
  po.preset = o.preset;
  po.q4k_layout = *o.q4k_layout;  // resolved by convert_in_arena
  po.n_layers = static_cast<int>(src.config().architecture.num_layers);
  po.tied_embeddings = src.config().tied_embeddings;
  po.n_experts = src.config().architecture.moe.num_experts;
  RDRR_ASSIGN_OR_RETURN(po.overrides, parse_overrides(o));
  std::vector<PlanInput> inputs;
  for (const SourceTensor& t : src.tensors()) {
    PlanInput in{t.name, t.shape, {}};
    for (const SourcePart& p : t.parts) in.source_types.push_back(p.stored.type);
    inputs.push_back(std::move(in));
  }
  RDRR_ASSIGN_OR_RETURN(std::vector<PlanEntry> plan, plan_tensors(inputs, po));
  RDRR_ASSIGN_OR_RETURN(ShardPlanner placer, ShardPlanner::create(o.shard_size_bytes));
  Planned out;
  for (size_t i = 0; i < plan.size(); ++i) {
    TensorJob job;
    job.source = &src.tensors()[i];
    job.plan = std::move(plan[i]);
    RDRR_ASSIGN_OR_RETURN(job.placement, placer.place(job.plan.size_bytes));
    job.raw_parts = raw_parts_for(*job.source, job.plan);
    out.bytes_in += job.source->stored_bytes();
    out.jobs.push_back(std::move(job));
  }
  return out;
}

ConvertReport base_report(const ConvertOptions& o, const SourceModel& src, const Planned& planned, int threads) {
  ConvertReport r;
  r.src = o.src.string();
  r.out = o.out.string();
  r.format = src.format();
  r.family = src.config().family;
  r.model_id = o.model_id.value_or(src.default_model_id());
  r.quantization = quantization_label(o.preset);
  r.dry_run = o.dry_run;
  r.threads = threads;
  r.warnings = src.warnings();
  size_t widened = 0;  // GGUF tensors of types without an rdrr kernel: one line, each tensor's reason in --json
  std::string first;
  for (const TensorJob& j : planned.jobs) {
    if (!j.plan.widened) continue;
    if (widened++ == 0) first = j.plan.name + ": " + j.plan.reason;
  }
  if (widened > 0) {
    r.warnings.push_back("widened " + std::to_string(widened) + " tensor(s) to Q8_0, never narrowed (first: " + first +
                         "; each tensor's reason in --json)");
  }
  r.bytes_in = planned.bytes_in;
  for (const TensorJob& j : planned.jobs) {
    TensorReport t;
    t.name = j.plan.name;
    t.shape = j.plan.shape;
    t.source_dtype = j.source->source_dtype();
    t.dtype = j.plan.dtype;
    t.layout = j.plan.layout;
    t.reason = j.plan.reason;
    t.size_bytes = j.plan.size_bytes;
    t.placement = j.placement;
    t.passthrough = !j.raw_parts.empty() && std::all_of(j.raw_parts.begin(), j.raw_parts.end(), [](bool b) { return b; });
    r.tensors.push_back(std::move(t));
  }
  return r;
}

// Copies (HF) or writes (GGUF) the tokenizer files into the pack.
Result<std::vector<FileRecord>> bundle_tokenizer(PackWriter& pack, const ModelConfig& cfg) {
  std::vector<FileRecord> out;
  for (const fs::path& p : cfg.tokenizer_files) {
    RDRR_ASSIGN_OR_RETURN(PackFileEntry e, pack.copy_file(p, p.filename().string()));
    out.push_back({e.name, e.size_bytes, e.sha256_hex});
  }
  if (cfg.gguf_tokenizer_json) {
    RDRR_ASSIGN_OR_RETURN(PackFileEntry e, pack.add_file(kGgufTokenizerFileName, *cfg.gguf_tokenizer_json));
    out.push_back({e.name, e.size_bytes, e.sha256_hex});
  }
  return out;
}

// Runs the golden hook and adds its files to the pack and the manifest (re-validated). Returns their bytes.
Result<uint64_t> add_goldens(PackWriter& pack, Manifest& manifest, const ConvertOptions& o, SourceFormat format,
                             std::vector<std::string>& warnings) {
  GoldenContext ctx{.pack_dir = pack.temp_dir(), .manifest = &manifest, .src = o.src, .format = format};
  RDRR_ASSIGN_OR_RETURN(GoldenOutput out, o.golden_writer(ctx).context("goldens"));
  warnings.insert(warnings.end(), out.warnings.begin(), out.warnings.end());
  if (!out.flags.empty()) {  // the writer's flags replace the golden-* flags of the options
    std::map<std::string, std::string>& flags = manifest.metadata.converter.flags;
    std::erase_if(flags, [](const auto& kv) { return kv.first.starts_with("golden-"); });
    for (auto& [k, v] : out.flags) flags[k] = v;
  }
  uint64_t bytes = 0;
  for (const GoldenBlob& b : out.files) {
    RDRR_ASSIGN_OR_RETURN(PackFileEntry e, pack.add_file(b.name, b.bytes));
    manifest.goldens.push_back({e.name, e.size_bytes, e.sha256_hex, b.kind});
    bytes += e.size_bytes;
  }
  canonicalize(manifest);
  RDRR_RETURN_IF_ERROR(validate_manifest(manifest).context("manifest"));
  return bytes;
}

Result<ConvertReport> convert_in_arena(ConvertOptions o, int threads, Clock::time_point start) {
  RDRR_ASSIGN_OR_RETURN(const SourceOptions so, source_options(o));
  RDRR_ASSIGN_OR_RETURN(SourceModel src, SourceModel::open(o.src, so));
  o.fuse_gate_up = so.fuse_gate_up;
  o.fuse_qkv = so.fuse_qkv;
  if (!o.q4k_layout) {
    o.q4k_layout = src.format() == SourceFormat::kGguf ? quant::Layout::kRowWise : quant::Layout::kColumnWise;
  }
  RDRR_ASSIGN_OR_RETURN(Planned planned, plan_and_place(src, o));
  ConvertReport report = base_report(o, src, planned, threads);
  RDRR_RETURN_IF_ERROR(preflight_execution_graph(src.config(), planned.jobs, o.kv_dtype));
  // An existing output is refused before calibration, the slow part (PackWriter::create checks again).
  if (std::error_code ec; !o.out.empty() && fs::exists(fs::symlink_status(o.out, ec)) && !o.force) {
    return error(StatusCode::kAlreadyExists, o.out.string() + ": already exists (use --force to replace it)");
  }
  RDRR_ASSIGN_OR_RETURN(std::unique_ptr<GptqFactors> factors, calibrate_jobs(o, src.format(), planned.jobs, report));
  if (o.dry_run) {
    report.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return report;
  }
  PackWriterOptions pwo;
  pwo.force = o.force;
  pwo.shard_size_bytes = o.shard_size_bytes;
  pwo.sync_to_disk = o.sync_to_disk;
  RDRR_ASSIGN_OR_RETURN(PackWriter pack, PackWriter::create(o.out, pwo));
  if (const std::vector<std::string>& stale = pack.removed_scratch(); !stale.empty()) {
    report.warnings.push_back("removed " + std::to_string(stale.size()) +
                              " temporary folder(s) left next to the output by killed conversions, e.g. " +
                              stale.front());
  }
  SourceHasher hasher(src.files());

  PipelineOptions po;
  // Chunks are parallel inside (quantize_rows); a few more in flight keep the threads busy between tensors
  // without letting buffer memory grow with the thread count.
  po.max_tokens = std::min(threads, 4) + 2;
  po.allow_nonfinite = o.allow_nonfinite;
  po.rmse_every_chunks = o.rmse_every_chunks;
  po.on_progress = o.on_progress;
  if (factors) {
    po.gptq_factor = [&factors](size_t job) { return factors->factor_for(job); };
    // A calibrated chunk's column loop is sequential (GPTQ): more chunks in flight keep every thread busy.
    po.max_tokens = threads + 2;
  }
  RDRR_ASSIGN_OR_RETURN(std::vector<TensorStats> stats, run_pipeline(planned.jobs, pack.shards(), po));
  if (factors) {
    for (const std::string& w : factors->warnings()) report.warnings.push_back(w);
    factors.reset();  // the calibration engine's activations
  }
  RDRR_ASSIGN_OR_RETURN(std::vector<ShardInfo> shards, pack.finish_shards());
  RDRR_ASSIGN_OR_RETURN(std::vector<FileRecord> tokenizer, bundle_tokenizer(pack, src.config()));
  RDRR_ASSIGN_OR_RETURN(std::vector<FileRecord> source_files, hasher.wait());

  ManifestInputs mi;
  mi.source = &src;
  mi.model_id = report.model_id;
  mi.quantization = report.quantization;
  mi.jobs = &planned.jobs;
  mi.shards = shards;
  mi.tokenizer_files = tokenizer;
  mi.source_files = std::move(source_files);
  mi.flags = converter_flags(o);
  if (o.calibrator) mi.flags["calibration"] = report.calibration;
  for (const TensorStats& s : stats) mi.tensor_sha256.push_back(s.sha256_hex);
  mi.kv_dtype = o.kv_dtype;
  RDRR_ASSIGN_OR_RETURN(Manifest manifest, build_manifest(mi));
  uint64_t golden_bytes = 0;
  if (o.golden_writer) {
    RDRR_ASSIGN_OR_RETURN(golden_bytes, add_goldens(pack, manifest, o, src.format(), report.warnings));
  }
  const std::string text = serialize_manifest(manifest);
  RDRR_RETURN_IF_ERROR(pack.commit(text));

  for (size_t i = 0; i < stats.size(); ++i) {
    TensorReport& t = report.tensors[i];
    const TensorStats& s = stats[i];
    t.passthrough = s.passthrough;
    t.sampled_values = s.sampled_values;
    t.rmse = s.sampled_values ? std::sqrt(s.sq_err / static_cast<double>(s.sampled_values)) : 0.0;
    t.source_rms = s.sampled_values ? std::sqrt(s.sq_ref / static_cast<double>(s.sampled_values)) : 0.0;
    t.nonfinite_values = s.nonfinite_values;
    t.seconds = s.seconds;
    if (s.nonfinite_values > 0) {
      report.warnings.push_back("tensor " + t.name + ": " + std::to_string(s.nonfinite_values) +
                                " non-finite values (--allow-nonfinite: kept in plain types, encoded as 0 in block types)");
    }
  }
  report.shards = shards;
  report.bytes_out = text.size();
  for (const ShardInfo& s : shards) report.bytes_out += s.size_bytes;
  for (const FileRecord& f : tokenizer) report.bytes_out += f.size_bytes;
  report.bytes_out += golden_bytes;
  report.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return report;
}

}  // namespace

std::string_view converter_version() { return RDRR_VERSION; }

Result<ConvertReport> convert_model(const ConvertOptions& options) {
  if (is_archive_path(options.src)) {
    // An archive of an HF folder: extracted next to the output (rdrr/archive.h), removed afterwards.
    std::error_code ec;
    const fs::path parent = options.out.empty() ? fs::temp_directory_path(ec) : fs::absolute(options.out).parent_path();
    RDRR_ASSIGN_OR_RETURN(ExtractedArchive extracted, extract_archive(options.src, parent));
    ConvertOptions o = options;
    o.src = extracted.model_dir();
    if (!o.model_id) o.model_id = archive_stem(options.src);
    Result<ConvertReport> r = convert_model(o);
    if (r.ok()) r->src = options.src.string();
    return r;
  }
  const auto start = Clock::now();
  RDRR_RETURN_IF_ERROR(check_options(options));
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = options.threads > 0 ? options.threads : hw;
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));
  tbb::task_arena arena(threads);
  Result<ConvertReport> result = error(StatusCode::kInternal, "conversion did not run");
  arena.execute([&] { result = convert_in_arena(options, threads, start); });
  return result;
}

}  // namespace rdrr::convert
