// rdrr-convert SRC OUT: Hugging Face folder or GGUF file -> RDRR pack. Thin main: flags -> ConvertOptions,
// Status -> exit code (README "Exit codes"). The engine is convert/converter.h.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <stdexcept>
#include <iostream>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "convert/report.h"
#include "rdrr/file_io.h"
#include "tools/exit_codes.h"
#include "verify/calibration.h"
#include "verify/golden_gen.h"

namespace {

using rdrr::convert::ConvertOptions;

int fail(const rdrr::Status& s, bool json) {
  const int code = rdrr::tools::exit_code_for(s.code());
  if (json) std::cout << rdrr::convert::error_json(s, code) << std::flush;
  std::cerr << "rdrr-convert: " << s.to_string() << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  rdrr::ignore_sigxfsz();
  CLI::App app{"rdrr-convert: convert a Hugging Face folder or a GGUF file into an RDRR pack"};
  std::string src;
  std::string out;
  std::string quantize = "q4_k_m";
  std::string layout;
  std::string kv_dtype = "f16";
  bool fuse = false;
  bool no_fuse = false;
  bool fuse_qkv = false;
  bool no_fuse_qkv = false;
  std::vector<std::string> tensor_types;
  uint64_t shard_size = rdrr::kDefaultShardSizeBytes;
  int threads = 0;
  int rmse_every = 16;
  bool dry_run = false;
  bool force = false;
  bool json = false;
  bool quiet = false;
  bool allow_nonfinite = false;
  bool no_sync = false;
  std::string model_id;
  std::string golden_prompts = "4";
  rdrr::verify::GoldenOptions golden;
  std::string calibration = "auto";
  app.add_option("SRC", src, "Hugging Face model folder or .gguf file")->required();
  app.add_option("OUT", out, "pack directory to create (not needed with --dry-run)");
  app.add_option("--quantize", quantize, "preset: f32, f16, bf16, q8_0, q4_k, q4_k_m")->capture_default_str();
  app.add_option("--q4k-layout", layout,
                 "Q4_K block order: flat, row_wise, column_wise (default: row_wise for a .gguf, whose Q4_K blocks then "
                 "pass through bit-exactly; column_wise otherwise)");
  app.add_option("--kv-dtype", kv_dtype, "KV cache precision of the execution graph: f16, f32")->capture_default_str();
  app.add_flag("--fuse-gate-up", fuse, "store gate+up as one gate_up_proj (default for q8_0, q4_k, q4_k_m)");
  app.add_flag("--no-fuse-gate-up", no_fuse, "keep gate_proj and up_proj separate");
  app.add_flag("--fuse-qkv", fuse_qkv,
               "store q/k/v as one qkv_proj in every layer whose three are stored in one type (default for q8_0, "
               "q4_k, q4_k_m: on the layers where the preset also gives them one type; a stored qkv_proj stays fused)");
  app.add_flag("--no-fuse-qkv", no_fuse_qkv, "keep q_proj, k_proj and v_proj separate (a stored qkv_proj is split)");
  app.add_option("--tensor-type", tensor_types, "REGEX=TYPE override (f32 f16 bf16 q8_0 q4_k q6_k), repeatable");
  app.add_option("--shard-size", shard_size, "maximum shard bytes (multiple of 256)")->capture_default_str();
  app.add_option("--threads", threads, "worker threads (0: all cores)")->capture_default_str();
  app.add_option("--rmse-every", rmse_every, "measure the quantization RMSE on every Nth 256-row chunk (1: all)")
      ->capture_default_str();
  app.add_option("--model-id", model_id, "manifest modelId (default: folder name or GGUF general.name)");
  app.add_flag("--dry-run", dry_run, "print the plan, write nothing");
  app.add_flag("--force", force, "replace an existing pack at OUT (an rdrr pack holding only what it lists)");
  app.add_flag("--json", json, "print a machine-readable report on stdout");
  app.add_flag("--quiet", quiet, "no progress bar and no summary");
  app.add_flag("--allow-nonfinite", allow_nonfinite,
               "convert weights holding NaN/Inf (kept in F32/F16/BF16, encoded as 0 in block types)");
  app.add_flag("--no-sync", no_sync, "skip fsync (scratch output and tests)");
  app.add_option("--golden-prompts", golden_prompts,
                 "golden prompts written into the pack (source and pack reference logits), N or none")
      ->capture_default_str();
  app.add_option("--golden-tokens", golden.tokens_per_prompt, "tokens per golden prompt")->capture_default_str();
  app.add_option("--golden-steps", golden.greedy_steps, "greedy continuation steps per golden prompt")
      ->capture_default_str();
  app.add_option("--calibration", calibration,
                 "error-compensated Q4_K from calibration activations (built-in text + model samples): "
                 "auto or on (every source with a tokenizer, at any size), none")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : rdrr::tools::kExitUsage;
  }

  ConvertOptions o;
  o.src = src;
  o.out = out;
  const auto preset = rdrr::convert::parse_preset(quantize);
  if (!preset) {
    return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument,
                            "--quantize " + quantize + ": expected f32, f16, bf16, q8_0, q4_k or q4_k_m"),
                json);
  }
  o.preset = *preset;
  if (!layout.empty()) {
    const auto lay = rdrr::quant::parse_layout(layout);
    if (!lay) {
      return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument,
                              "--q4k-layout " + layout + ": expected flat, row_wise or column_wise"),
                  json);
    }
    o.q4k_layout = *lay;
  }
  const std::optional<rdrr::KvDtype> kv = rdrr::parse_kv_dtype(kv_dtype);
  if (!kv) {
    return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument, "--kv-dtype " + kv_dtype + ": expected f16 or f32"),
                json);
  }
  o.kv_dtype = *kv;
  if (fuse && no_fuse) {
    return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument, "--fuse-gate-up and --no-fuse-gate-up exclude each other"),
                json);
  }
  if (fuse || no_fuse) o.fuse_gate_up = fuse;
  if (fuse_qkv && no_fuse_qkv) {
    return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument, "--fuse-qkv and --no-fuse-qkv exclude each other"), json);
  }
  if (fuse_qkv || no_fuse_qkv) o.fuse_qkv = fuse_qkv;
  if (out.empty() && !dry_run) return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument, "OUT is required"), json);
  o.tensor_types = tensor_types;
  o.shard_size_bytes = shard_size;
  o.threads = threads;
  o.rmse_every_chunks = rmse_every;
  o.dry_run = dry_run;
  o.force = force;
  o.allow_nonfinite = allow_nonfinite;
  o.sync_to_disk = !no_sync;
  if (!model_id.empty()) o.model_id = model_id;
  if (golden_prompts == "none") {
    golden.prompts = 0;
  } else {
    try {
      size_t used = 0;
      const unsigned long n = std::stoul(golden_prompts, &used);
      if (used != golden_prompts.size() || n == 0 || n > 64) throw std::invalid_argument("range");
      golden.prompts = n;
    } catch (const std::exception&) {
      return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument,
                              "--golden-prompts " + golden_prompts + ": expected 1..64 or none"),
                  json);
    }
    if (golden.tokens_per_prompt == 0) {
      return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument, "--golden-tokens: must be >= 1"), json);
    }
    o.golden_writer = rdrr::verify::make_golden_writer(golden);
  }
  o.extra_flags = rdrr::verify::golden_flags(golden);
  if (calibration == "auto" || calibration == "on" || calibration == "none") {
    o.calibration = calibration == "auto" ? rdrr::convert::CalibrationMode::kAuto
                    : calibration == "on" ? rdrr::convert::CalibrationMode::kOn
                                          : rdrr::convert::CalibrationMode::kOff;
  } else {
    return fail(rdrr::error(rdrr::StatusCode::kInvalidArgument,
                            "--calibration " + calibration + ": expected auto, on or none"),
                json);
  }
  o.calibrator = rdrr::verify::make_calibrator();
  rdrr::convert::ProgressBar bar(stderr, !quiet && !dry_run);
  if (bar.active()) o.on_progress = [&bar](const rdrr::convert::ConvertProgress& p) { bar.update(p); };

  rdrr::Result<rdrr::convert::ConvertReport> r = rdrr::convert::convert_model(o);
  bar.finish();
  if (!r.ok()) return fail(r.status(), json);
  if (json) {
    std::cout << rdrr::convert::report_json(*r) << std::flush;
    if (dry_run && !quiet) std::cerr << rdrr::convert::plan_table(*r);
  } else if (dry_run) {
    std::cout << rdrr::convert::plan_table(*r) << std::flush;
  }
  if (!quiet && !dry_run) (json ? std::cerr : std::cout) << rdrr::convert::summary_text(*r) << std::flush;
  return rdrr::tools::kExitOk;
}
