// rdrr-verify: the correctness gates of a pack (verify/README.md "Gates"), in order:
//   1 structure  manifest schema (validate_manifest), files present with their sizes (validate_pack),
//                execution graph resolvable and accepted by this build's kernels (check_execution_graph
//                without digests)
//   2 integrity  every shard / tokenizer / golden file against its sha256; a bad shard names the tensors
//                whose per-tensor hash (tensors.<name>.hash) differs
//   3 kernels    every pinned kernel digest == the digest compiled into this build (fix: rdrr-digests repin)
//   4 load       every tensor uploaded to the device, weight memory ~ the tensor bytes (no dequantization)
//   5 fidelity   backend logits vs the pack golden (same weights): NMSE, top-1 except near-ties, greedy
//                tokens up to the first near-tie
//   6 quality    backend logits vs the source golden: mean KLD and top-1 agreement within the preset bounds
//   7 external   (--golden FILE) backend logits vs a tiny-fixture-golden/v1 file, quality bounds
// The backend is the Vulkan executor, or with skip_gpu the CPU reference on the pack's decoded weights (gate
// 4 is then skipped). A failing gate 1 or 2 skips everything after it; a failing gate 3 skips 4-7 on Vulkan.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::runtime {
class Device;
}

namespace rdrr::verify {

// Process exit codes of rdrr-verify (tools/exit_codes.h mirrors them; README "Exit codes"). The first failing
// gate decides; usage errors are 2 and unreadable option files use the shared StatusCode mapping.
inline constexpr int kExitVerifyInvalidPack = 20;  // gate 1 (or an unreadable golden index)
inline constexpr int kExitVerifyIntegrity = 21;    // gate 2
inline constexpr int kExitVerifyKernelPin = 22;    // gate 3
inline constexpr int kExitVerifyFidelity = 23;     // gate 5
inline constexpr int kExitVerifyQuality = 24;      // gates 6 and 7
inline constexpr int kExitVerifyNoDevice = 25;     // no Vulkan device (without --skip-gpu)
inline constexpr int kExitVerifyLoad = 26;         // gate 4
// Every check that ran passed, but the outputs were not checked: the pack has no goldens (gates 5-6 NOT RUN)
// and no --golden file was given. --structure-only asks for exactly that and exits 0 instead.
inline constexpr int kExitVerifyStructureOnly = 27;

struct QualityBound {
  double kld_mean_max = 0;
  double top1_min = 0;
};

// Defaults (verify/README.md "Bounds"); a --thresholds JSON file overrides any of them:
//   {"fidelity": {"nmse_f32": 1e-5, "nmse_f16_kv": 1e-4, "near_tie_margin": 0.01},
//    "quality": {"Q4_K_M": {"kld_mean": 0.1, "top1": 0.85}, ...}}
struct Thresholds {
  double nmse_f32 = 1e-5;        // f32 KV cache and activations
  double nmse_f16_kv = 1e-4;     // F16 KV cache
  double near_tie_margin = 1e-2; // golden logit(top1) - logit(top2) below this: either token is right
  std::map<std::string, QualityBound> quality;  // by manifest quantization ("F32", "Q4_K_M", ...)
};
Thresholds default_thresholds();
// Errors: kNotFound / kIo (file), kParse, kSchema (unknown key, wrong type, a bound outside [0, inf) / [0, 1]).
Result<Thresholds> read_thresholds(const std::filesystem::path& file, Thresholds base = default_thresholds());

// What computes the logits under test.
class LogitsBackend {
 public:
  virtual ~LogitsBackend() = default;
  virtual std::string name() const = 0;                   // "vulkan (<device>)", "cpu-reference"
  virtual bool f16_kv() const = 0;                        // picks the NMSE bound
  // [tokens.size(), vocab]: every position's logits (row t predicts token t + 1).
  virtual Result<std::vector<float>> logits(std::span<const int32_t> tokens) = 0;
  virtual Result<std::vector<int32_t>> greedy(std::span<const int32_t> prompt, size_t n_new) = 0;
  // Every prompt's logits and greedy continuation. The default calls logits() and greedy() per prompt; the CPU
  // reference runs all prompts as one streamed job (1 + greedy_steps - 1 passes over the weights).
  struct PromptRun {
    std::vector<float> logits;  // [tokens, vocab]
    std::vector<int32_t> greedy;
  };
  virtual Result<std::vector<PromptRun>> run_prompts(std::span<const std::vector<int32_t>> prompts,
                                                     size_t greedy_steps);
};

// The streaming CPU reference on the pack's decoded weights (StreamingReference::open_pack).
Result<std::unique_ptr<LogitsBackend>> open_cpu_backend(const Manifest& m, const std::filesystem::path& pack_dir);

// kSkip: not run because of an earlier failure or by request (--skip-gpu's gate 4); kNotRun: an output gate that
// could not run (the pack has no goldens) -- the report then says the outputs were not checked.
enum class GateStatus : uint8_t { kPass, kFail, kSkip, kNotRun };
std::string_view gate_status_name(GateStatus s);  // "PASS", "FAIL", "SKIP", "NOT RUN"

struct GateResult {
  int number = 0;
  std::string name;    // "structure", "integrity", ...
  GateStatus status = GateStatus::kSkip;
  std::string figure;  // "NMSE 3.2e-10, top-1 64/64, greedy 32/32"
  std::string bound;   // "NMSE <= 1e-05, top-1 100% but near-ties (margin < 0.01)"
  std::string detail;  // why it failed or was skipped (error message, bad tensors, the fix)
  int exit_code = 0;   // when failed
  nlohmann::json metrics = nlohmann::json::object();
};

// Another implementation's figures on the same source file against the same external golden (e.g. llama.cpp's
// KLD and top-1 on a GGUF, fixtures/families/*/golden/llamacpp-*.json). With one, gate 7 bounds the pack by what
// that file allows rather than by its quantization label: KLD mean <= kAnchorKldFactor x the anchor's, top-1 >=
// the anchor's - kAnchorTop1Slack. A random-weight or unusual file can exceed a label's bound for every
// converter; the anchor says how close to the best known result this pack is.
struct ExternalAnchor {
  double kld_mean = 0;  // >= 0, finite
  double top1 = 0;      // in [0, 1]
};
inline constexpr double kAnchorKldFactor = 1.10;
inline constexpr double kAnchorTop1Slack = 0.10;
// "KLD[,TOP1]" (TOP1 defaults to 0: no top-1 bound beyond the anchor's KLD). Errors: kInvalidArgument naming
// the field and the expected range.
Result<ExternalAnchor> parse_external_anchor(std::string_view text);

struct VerifyOptions {
  std::filesystem::path pack;
  std::optional<std::filesystem::path> external_golden;  // tiny-fixture-golden/v1 JSON
  std::optional<ExternalAnchor> external_anchor;         // gate 7's bound from another implementation's figures
  bool skip_gpu = false;
  bool structure_only = false;  // a pack without goldens passes (exit 0) when every other check does
  Thresholds thresholds = default_thresholds();
  std::string device_spec;  // RDRR_DEVICE syntax; empty: automatic
  runtime::Device* device = nullptr;  // use this device (its pipeline cache) instead of creating one
  std::function<void(const GateResult&)> on_gate;  // called as each gate finishes (progress output)
};

struct VerifyReport {
  std::string pack;
  std::string backend;
  std::vector<GateResult> gates;
  int exit_code = 0;  // 0 when every gate passed or was skipped by request
  bool outputs_checked = false;  // gate 5, 6 or 7 ran and passed
  std::string not_checked_reason;  // why the outputs were not checked (empty when they were)
};

// The summary line: "PASS", "FAIL", or for a pack whose outputs were not checked "NOT VERIFIED: structure only
// (<reason>)" / "PASS (structure only, --structure-only: <reason>)", then "(exit N, backend B)".
std::string format_summary(const VerifyReport& r);
// Why a pack has no goldens, from metadata.converter.flags (golden-skipped, golden-prompts).
std::string missing_goldens_reason(const Manifest& m);

VerifyReport run_verify(const VerifyOptions& options);

// "[1] structure   PASS  figure  (bound)" and a second indented line with the detail when there is one.
std::string format_gate_line(const GateResult& g);
std::string report_to_json(const VerifyReport& r);

}  // namespace rdrr::verify
