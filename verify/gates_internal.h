// Internals of rdrr-verify's gates (verify/gates.h), shared by gates*.cpp.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rdrr/manifest.h"
#include "verify/gates.h"
#include "verify/golden.h"

namespace rdrr::verify::internal {

GateResult make_gate(int number, std::string name);
GateResult skipped(int number, std::string name, std::string why);
void fail(GateResult& g, int exit_code, std::string detail);

// Gate 1: reads and validates the manifest (into `manifest` when it parses) and the folder; graph check.
GateResult gate_structure(const std::filesystem::path& pack, std::optional<Manifest>& manifest);
// Gate 2: sha256 of every listed file (in parallel); bad shards name the tensors whose hash differs.
GateResult gate_integrity(const Manifest& m, const std::filesystem::path& pack);
// Gate 3: pinned digests vs this build's.
GateResult gate_kernels(const Manifest& m, const std::filesystem::path& pack);

// Backend outputs for the golden prompts: every position's logits and the greedy continuation.
struct BackendRuns {
  std::vector<std::vector<float>> logits;  // per prompt, [n_tokens, vocab]
  std::vector<std::vector<int32_t>> greedy;
};
Result<BackendRuns> run_backend(LogitsBackend& backend, const GoldenSet& golden);

// Gate 5: backend vs the pack golden.
GateResult gate_fidelity(const BackendRuns& runs, const GoldenSet& golden, const Thresholds& t, bool f16_kv);
// Gate 6: backend vs the source golden; bounds by m.quantization.
GateResult gate_quality(const BackendRuns& runs, const GoldenSet& golden, const Manifest& m, const Thresholds& t);
// Gate 7: backend vs a tiny-fixture-golden/v1 file.
GateResult gate_external(LogitsBackend& backend, const std::filesystem::path& file, const Manifest& m,
                         const Thresholds& t, const std::optional<ExternalAnchor>& anchor);

// Gate 4 and the Vulkan backend (gates_gpu.cpp): loads the pack on the device. `backend` is set when the
// gate passes; a missing device fails with kExitVerifyNoDevice.
GateResult gate_load(const std::filesystem::path& pack, const VerifyOptions& options,
                     std::unique_ptr<LogitsBackend>& backend);

}  // namespace rdrr::verify::internal
