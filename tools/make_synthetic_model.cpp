// rdrr-make-synthetic-model --shape llama-3.2-1b|llama-3.1-8b|tiny|qwen3-30b-a3b|mixtral-8x7b|tiny-qwen3-moe|
//                           tiny-mixtral [dims...] [--dtype bf16|f16|f32]
//                           --out DIR [--seed N] [--max-shard-size BYTES] [--threads N] [--force] [--json]
// Writes a random-weight Hugging Face checkpoint folder (see tools/synthetic_model.h).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <tbb/global_control.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "quant/dtype.h"
#include "rdrr/file_io.h"
#include "tools/exit_codes.h"
#include "tools/synthetic_model.h"

namespace {

struct DimFlags {
  std::optional<int64_t> hidden, layers, heads, kv_heads, head_dim, ffn, vocab, max_positions;
  std::optional<bool> tied;
  std::optional<double> rope_theta, rope_factor;
};

void add_dim_flags(CLI::App& app, DimFlags& f) {
  app.add_option("--hidden-size", f.hidden, "hidden size (overrides the preset)");
  app.add_option("--num-layers", f.layers, "decoder layers");
  app.add_option("--num-heads", f.heads, "attention heads");
  app.add_option("--num-kv-heads", f.kv_heads, "key/value heads (default: --num-heads)");
  app.add_option("--head-dim", f.head_dim, "head dimension (default: hidden / heads)");
  app.add_option("--intermediate-size", f.ffn, "MLP intermediate size");
  app.add_option("--vocab-size", f.vocab, "vocabulary size (>= 258)");
  app.add_option("--max-position-embeddings", f.max_positions, "context length in config.json");
  app.add_option("--tie-embeddings", f.tied, "true: no lm_head.weight (embedding reused)");
  app.add_option("--rope-theta", f.rope_theta, "RoPE base");
  app.add_option("--rope-factor", f.rope_factor, "llama3 rope_scaling factor");
}

// The preset (or a custom shape from the flags alone) with the flags applied.
rdrr::Result<rdrr::tools::SyntheticShape> resolve_shape(const std::string& preset, const DimFlags& f) {
  rdrr::tools::SyntheticShape s;
  if (!preset.empty()) {
    auto p = rdrr::tools::synthetic_shape_preset(preset);
    if (!p) return rdrr::error(rdrr::StatusCode::kInvalidArgument, "--shape " + preset + ": unknown preset");
    s = *p;
  } else if (!f.hidden || !f.layers || !f.heads || !f.ffn || !f.vocab) {
    return rdrr::error(rdrr::StatusCode::kInvalidArgument,
                       "without --shape, give --hidden-size, --num-layers, --num-heads, --intermediate-size and "
                       "--vocab-size");
  }
  if (f.hidden) s.hidden_size = *f.hidden;
  if (f.layers) s.num_layers = *f.layers;
  if (f.heads) s.num_heads = *f.heads;
  if (f.kv_heads) s.num_kv_heads = *f.kv_heads;
  if (f.head_dim) s.head_dim = *f.head_dim;
  if (f.ffn) s.intermediate_size = *f.ffn;
  if (f.vocab) s.vocab_size = *f.vocab;
  if (f.max_positions) s.max_position_embeddings = *f.max_positions;
  if (f.tied) s.tie_word_embeddings = *f.tied;
  if (f.rope_theta) s.rope_theta = *f.rope_theta;
  if (f.rope_factor) s.rope_factor = *f.rope_factor;
  if (preset.empty()) {
    if (!f.kv_heads) s.num_kv_heads = s.num_heads;
    if (!f.head_dim && s.num_heads > 0) s.head_dim = s.hidden_size / s.num_heads;
  }
  if (f.hidden || f.layers || f.heads || f.kv_heads || f.head_dim || f.ffn || f.vocab) s.name = "custom";
  return s;
}

int fail(const rdrr::Status& s) {
  std::fprintf(stderr, "rdrr-make-synthetic-model: %s\n", s.to_string().c_str());
  return rdrr::tools::exit_code_for(s.code());
}

void print_summary(const std::string& shape, rdrr::quant::DType dtype, const std::string& out,
                   const rdrr::tools::SyntheticModelSummary& summary, double wall_s, bool json) {
  const double gb = static_cast<double>(summary.file_bytes) / 1e9;
  const std::string dtype_str(rdrr::quant::dtype_name(dtype));
  if (json) {
    nlohmann::ordered_json j;
    j["shape"] = shape;
    j["dtype"] = dtype_str;
    j["out"] = out;
    j["files"] = summary.safetensors_files.size();
    j["params"] = summary.params;
    j["tensor_bytes"] = summary.tensor_bytes;
    j["file_bytes"] = summary.file_bytes;
    j["wall_s"] = wall_s;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s: %s %s, %lld parameters, %zu safetensors file(s), %.2f GB in %.1f s (%.2f GB/s)\n", out.c_str(),
                shape.c_str(), dtype_str.c_str(), static_cast<long long>(summary.params),
                summary.safetensors_files.size(), gb, wall_s, gb / wall_s);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write a random-weight Hugging Face checkpoint (LlamaForCausalLM; Qwen3-MoE and Mixtral presets) of a "
               "given shape"};
  std::string preset, dtype_name = "bf16", out;
  uint64_t seed = 0, max_shard_bytes = 5'000'000'000;
  int threads = 0;
  bool force = false, json = false;
  DimFlags dims;
  app.add_option("--shape", preset,
                 "preset: llama-3.2-1b, llama-3.1-8b, tiny, qwen3-30b-a3b, mixtral-8x7b, tiny-qwen3-moe, tiny-mixtral");
  add_dim_flags(app, dims);
  app.add_option("--dtype", dtype_name, "bf16 (default), f16 or f32");
  app.add_option("--out", out, "output folder")->required();
  app.add_option("--seed", seed, "random seed (default 0)");
  app.add_option("--max-shard-size", max_shard_bytes, "bytes per .safetensors shard (default 5000000000)");
  app.add_option("--threads", threads, "worker threads (default: all cores)");
  app.add_flag("--force", force, "overwrite a checkpoint already in --out");
  app.add_flag("--json", json, "print the summary as one JSON object");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? rdrr::tools::kExitOk : rdrr::tools::kExitUsage;
  }
  rdrr::ignore_sigxfsz();
  std::optional<tbb::global_control> limit;
  if (threads > 0) limit.emplace(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads));

  auto shape = resolve_shape(preset, dims);
  if (!shape.ok()) return fail(shape.status());
  std::string upper;
  for (char c : dtype_name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const auto dtype = rdrr::quant::parse_dtype(upper);
  if (!dtype || rdrr::quant::is_block_quantized(*dtype)) {
    return fail(
        rdrr::error(rdrr::StatusCode::kInvalidArgument, "--dtype " + dtype_name + ": expected bf16, f16 or f32"));
  }
  rdrr::tools::SyntheticModelOptions options;
  options.shape = *shape;
  options.dtype = *dtype;
  options.out_dir = out;
  options.seed = seed;
  options.max_shard_bytes = max_shard_bytes;
  options.force = force;
  const auto start = std::chrono::steady_clock::now();
  auto summary = rdrr::tools::write_synthetic_model(options);
  if (!summary.ok()) return fail(summary.status());
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_summary(shape->name, *dtype, out, *summary, wall_s, json);
  return rdrr::tools::kExitOk;
}
