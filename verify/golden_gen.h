// Golden generation (format: verify/golden.h): runs the streaming CPU reference (verify/stream_reference.h) on
// the source weights (HF folder or GGUF file) and on the pack's decoded weights (the not yet committed pack),
// one engine at a time, every prompt of a reference in one job (1 + greedy steps - 1 passes over the weights).
// Memory: a chunk of decoded weight rows per thread plus activations, whatever the model's depth.
#pragma once

#include <filesystem>
#include <map>
#include <string_view>
#include <string>

#include "convert/converter.h"
#include "quant/status.h"
#include "rdrr/manifest.h"
#include "verify/golden.h"

namespace rdrr::verify {

struct GoldenInputs {
  const Manifest* manifest = nullptr;  // the pack's manifest (goldens not needed)
  std::filesystem::path pack_dir;      // where its shards are
  std::filesystem::path src;           // conversion input: HF folder or .gguf file
  SourceFormat format = SourceFormat::kSafetensors;
  GoldenOptions options;
};

// Errors: the reference loaders' (naming the source or pack), kInvalidArgument (options), kValidation
// (a reference whose vocabulary differs from the manifest's).
Result<GoldenSet> generate_golden(const GoldenInputs& in);

// Bytes the pack's streaming reference holds for the golden job of `in` (StreamingReference::working_bytes).
Result<uint64_t> golden_working_bytes(const GoldenInputs& in);

// metadata.converter.flags entry that says why a pack has no goldens although they were asked for.
inline constexpr std::string_view kGoldenSkippedFlag = "golden-skipped";

// The converter hook: generate_golden + encode_golden (no files when options.prompts is 0). When the streaming
// reference would need more than options.max_reference_bytes (in practice only an injected limit: it holds a
// chunk of weights per thread and at most StreamOptions::resident_bytes of mapped weights), it writes no goldens, warns, and records golden-prompts "none" and golden-skipped (the reason);
// rdrr-verify then reports its output gates NOT RUN and exits kExitVerifyStructureOnly.
convert::GoldenWriter make_golden_writer(const GoldenOptions& options);

// Adds goldens to an existing pack without reconverting (rdrr-verify PACK --make-goldens SRC): `src` must be the
// pack's conversion input (HF folder or GGUF; its architecture must match the manifest's). Golden files are
// written under temporary names and renamed into place, then manifest.json is replaced atomically (goldens,
// golden-* flags) and golden files no longer listed are removed. A crash in between leaves a pack that fails
// rdrr-verify (unlisted files or hash mismatch), never one that passes with stale goldens. Errors: the
// manifest reader's, kValidation (source vs pack: "<src>: architecture.hiddenSize 256, the pack's 512"), the
// engine's, kIo.
Status add_goldens_to_pack(const std::filesystem::path& pack_dir, const std::filesystem::path& src,
                           const GoldenOptions& options, bool sync_to_disk = true);

// metadata.converter.flags entries: golden-prompts ("none" or N), golden-tokens, golden-steps.
std::map<std::string, std::string> golden_flags(const GoldenOptions& options);

}  // namespace rdrr::verify
