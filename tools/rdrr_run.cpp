// rdrr-run: run a pack on a Vulkan device from its manifest-pinned execution graph (runtime/executor.h).
//   rdrr-run PACK --tokens 1,2,3 -n 32 [--temperature T --top-k K --seed S] [--logits OUT.f32] [--ctx N]
//            [--gemv-prefill-rows R] [--no-coopmat] [--profile] [--verify-hashes]
//   rdrr-run PACK --prompt "text" [--chat [--system TEXT]] -n 32 [--ignore-eos] [sampling, --ctx, ...]
// --tokens: prints the generated token ids (space-separated, one line) on stdout; -n 0 runs the prefill only.
// --logits writes every prompt position's logits as raw little-endian f32, row-major [n_prompt, vocab]
// (row t = the distribution of token t + 1). --profile prints per-op GPU time on stderr.
// --prompt: encodes the text with the pack's bundled tokenizer (--chat: as the user turn of the pack's chat
// template, with the assistant header), streams the decoded text to stdout as tokens arrive and stops at
// any EOS id of the manifest (unless --ignore-eos) or after -n tokens. Both modes end with the prompt /
// generated token counts and prefill / decode tok/s on stderr. Exit codes: tools/exit_codes.h (a pack
// without a tokenizer or chat template: 4).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <bit>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "rdrr/file_io.h"
#include "rdrr/manifest_json.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/pack.h"
#include "rdrr/archive.h"
#include "tools/exit_codes.h"
#include "tools/text_generation.h"

namespace {

using rdrr::Result;
using rdrr::Status;
using rdrr::StatusCode;
namespace rt = rdrr::runtime;

int report_error(const Status& st) {
  std::fprintf(stderr, "rdrr-run: %s\n", st.to_string().c_str());
  return rdrr::tools::exit_code_for(st.code());
}

Result<std::vector<uint32_t>> parse_tokens(const std::string& text) {
  std::vector<uint32_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 10) {
      return rdrr::error(StatusCode::kInvalidArgument, "--tokens: \"" + item + "\" is not a token id");
    }
    const uint64_t v = std::stoull(item);
    if (v > UINT32_MAX) return rdrr::error(StatusCode::kInvalidArgument, "--tokens: " + item + " is too large");
    out.push_back(static_cast<uint32_t>(v));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

Status write_logits(const std::string& path, const std::vector<float>& logits) {
  static_assert(std::endian::native == std::endian::little, "logits are written as little-endian f32");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return rdrr::error(StatusCode::kIo, "--logits " + path + ": cannot open for writing");
  const size_t n = std::fwrite(logits.data(), sizeof(float), logits.size(), f);
  const bool closed = std::fclose(f) == 0;
  if (n != logits.size() || !closed) return rdrr::error(StatusCode::kIo, "--logits " + path + ": write failed");
  return Status::Ok();
}

struct Args {
  std::string pack;
  std::string tokens;
  std::string prompt;
  bool chat = false;
  std::string system;
  bool ignore_eos = false;
  uint32_t n_new = 16;
  float temperature = 0.0f;
  uint32_t top_k = 0;
  uint64_t seed = 0;
  std::string logits;
  uint32_t ctx = 0;
  uint32_t gemv_prefill_rows = rt::kDefaultGemvPrefillRows;
  bool no_coopmat = false;
  bool profile = false;
  bool verify_hashes = false;
  bool text = false;  // --prompt given (else --tokens)
  bool text_mode() const { return text; }
};

// The device, the uploaded pack and its executor, plus the tokenizer in --prompt mode (loaded first, from
// the manifest, so that a pack without one fails before anything is uploaded).
struct Session {
  rdrr::Manifest manifest;
  std::unique_ptr<rdrr::tok::Tokenizer> tokenizer;
  std::unique_ptr<rt::Device> device;
  std::unique_ptr<rt::Pack> pack;
  std::unique_ptr<rt::Executor> exec;
};

Status open_session(const Args& a, Session& s) {
  RDRR_ASSIGN_OR_RETURN(s.manifest, rdrr::read_manifest_file(a.pack));
  if (a.text_mode()) {
    RDRR_ASSIGN_OR_RETURN(s.tokenizer, rdrr::tools::load_pack_tokenizer(a.pack, s.manifest));
  }
  RDRR_ASSIGN_OR_RETURN(s.device, rt::Device::create(rt::device_options_from_env()));
  rt::PackLoadOptions lopts;
  lopts.verify_hashes = a.verify_hashes;
  lopts.manifest = s.manifest;
  RDRR_ASSIGN_OR_RETURN(s.pack, rt::Pack::load(*s.device, a.pack, lopts));
  rt::ExecutorOptions eopts;
  eopts.context_length = a.ctx;
  eopts.profile = a.profile;
  eopts.gemv_prefill_rows = a.gemv_prefill_rows;
  eopts.cooperative_matrix = !a.no_coopmat;
  RDRR_ASSIGN_OR_RETURN(s.exec, rt::Executor::create(*s.device, *s.pack, eopts));
  return Status::Ok();
}

void print_summary(const Args& a, const Session& s, const rdrr::tools::GenerationResult& r) {
  std::fprintf(stderr, "rdrr-run: %s on %s: weights %.1f MiB on device, kv %s ctx %u\n", a.pack.c_str(),
               s.device->caps().desc.name.c_str(), double(s.pack->device_bytes()) / (1 << 20),
               std::string(rdrr::quant::dtype_name(s.exec->kv_dtype())).c_str(), s.exec->context_length());
  std::fprintf(stderr, "rdrr-run: %s\n", rdrr::tools::format_generation_stats(r).c_str());
  if (!a.profile) return;
  double total = 0.0;
  for (const auto& t : s.exec->op_timings()) total += t.gpu_ms;
  std::fprintf(stderr, "%-20s %10s %8s %6s\n", "op", "gpu_ms", "share", "calls");
  for (const auto& t : s.exec->op_timings()) {
    std::fprintf(stderr, "%-20s %10.3f %7.1f%% %6u\n", t.op.c_str(), t.gpu_ms, total > 0 ? 100.0 * t.gpu_ms / total : 0.0,
                 t.dispatches);
  }
  std::fprintf(stderr, "%-20s %10.3f\n", "total", total);
}

// --tokens: ids in, ids out (one line on stdout), optional prompt logits file.
Result<rdrr::tools::GenerationResult> run_tokens(const Args& a, Session& s, const rdrr::tools::GenerationOptions& g) {
  RDRR_ASSIGN_OR_RETURN(std::vector<uint32_t> prompt, parse_tokens(a.tokens));
  rdrr::tools::GenerationOptions opts = g;
  opts.prompt_logits = a.logits.empty() ? rt::LogitsMode::kNone : rt::LogitsMode::kAll;
  RDRR_ASSIGN_OR_RETURN(rdrr::tools::GenerationResult r, rdrr::tools::generate_tokens(*s.exec, prompt, opts));
  if (!a.logits.empty()) RDRR_RETURN_IF_ERROR(write_logits(a.logits, r.prompt_logits));
  std::string line;
  for (uint32_t t : r.tokens) line += (line.empty() ? "" : " ") + std::to_string(t);
  std::printf("%s\n", line.c_str());
  return r;
}

// --prompt: text in, text streamed out.
Result<rdrr::tools::GenerationResult> run_text(const Args& a, Session& s, const rdrr::tools::GenerationOptions& g) {
  const rdrr::tools::PromptSpec spec{a.prompt, a.chat, a.system};
  RDRR_ASSIGN_OR_RETURN(std::vector<uint32_t> prompt, rdrr::tools::encode_prompt(*s.tokenizer, a.pack, spec));
  rdrr::tools::GenerationOptions opts = g;
  if (!a.ignore_eos) opts.stop_ids = rdrr::tools::eos_stop_ids(s.manifest);
  RDRR_ASSIGN_OR_RETURN(rdrr::tools::GenerationResult r,
                        rdrr::tools::generate_text(*s.exec, *s.tokenizer, prompt, opts, stdout));
  if (::isatty(::fileno(stdout)) != 0) std::printf("\n");  // pipes get the generated text exactly
  return r;
}

int run(const Args& a) {
  Session s;
  if (Status st = open_session(a, s); !st.ok()) return report_error(st);
  rdrr::tools::GenerationOptions g;
  g.max_new_tokens = a.n_new;
  g.sample = rt::SampleOptions{a.temperature, a.top_k, a.seed};
  auto r = a.text_mode() ? run_text(a, s, g) : run_tokens(a, s, g);
  std::fflush(stdout);
  if (!r.ok()) return report_error(r.status());
  print_summary(a, s, *r);
  return rdrr::tools::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  rdrr::ignore_sigxfsz();  // a file size limit (disk full) is an error with exit 6, not death by SIGXFSZ
  CLI::App app{"rdrr-run: run an RDRR pack on a Vulkan device (token ids or text in, token ids or text out)"};
  Args a;
  app.add_option("pack", a.pack, "pack folder or .rdrr.tar.zst")->required();
  auto* tokens = app.add_option("--tokens", a.tokens, "prompt token ids, comma-separated");
  auto* prompt = app.add_option("--prompt", a.prompt, "prompt text (encoded with the pack's tokenizer; text out)");
  tokens->excludes(prompt);
  auto* chat = app.add_flag("--chat", a.chat, "wrap --prompt as the user turn of the pack's chat template")->needs(prompt);
  app.add_option("--system", a.system, "--chat: a system message before the user turn")->needs(chat);
  app.add_flag("--ignore-eos", a.ignore_eos, "--prompt: do not stop at the manifest's EOS ids")->needs(prompt);
  app.add_option("-n,--n-new", a.n_new, "tokens to generate (0: prefill only)")->capture_default_str();
  app.add_option("--temperature", a.temperature, "sampling temperature (0: greedy)")->capture_default_str();
  app.add_option("--top-k", a.top_k, "keep the k most likely tokens (0: all)")->capture_default_str();
  app.add_option("--seed", a.seed, "sampling seed")->capture_default_str();
  app.add_option("--logits", a.logits, "write every prompt position's logits (raw LE f32 [n_prompt, vocab])")
      ->needs(tokens);
  app.add_option("--ctx", a.ctx, "context length (KV cache positions; 0: min(maxSeqLen, 4096))")->capture_default_str();
  app.add_option("--gemv-prefill-rows", a.gemv_prefill_rows,
                 "prefill passes of at most this many tokens run their matmuls as one GEMV per token (0: GEMM)")
      ->capture_default_str();
  app.add_flag("--no-coopmat", a.no_coopmat,
               "prefill GEMMs in f32 even where the device has cooperative matrices (the *_cm kernels: f16 products)");
  app.add_flag("--profile", a.profile, "print per-op GPU time");
  app.add_flag("--verify-hashes", a.verify_hashes, "check every file's SHA-256 before loading");
  try {
    app.parse(argc, argv);
    a.text = prompt->count() > 0;
    if (!a.text && tokens->count() == 0) throw CLI::ValidationError("give one of --tokens, --prompt");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? rdrr::tools::kExitOk : rdrr::tools::kExitUsage;
  }
  // A pack shipped as one .rdrr.tar.zst (rdrr-pack) is extracted to a private temp folder first.
  rdrr::Result<rdrr::PackLocation> loc = rdrr::locate_pack(a.pack);
  if (!loc.ok()) {
    std::fprintf(stderr, "rdrr-run: %s\n", loc.status().to_string().c_str());
    return rdrr::tools::exit_code_for(loc.status().code());
  }
  a.pack = loc->dir.string();
  return run(a);
}
