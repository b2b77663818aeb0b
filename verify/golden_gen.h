// Golden generation (format: verify/golden.h): runs the CPU reference (verify/reference_model.h) on the
// source weights (load_hf for an HF folder, load_gguf for a GGUF file) and on the pack's decoded weights
// (load_pack on the not yet committed pack), one model at a time (memory: one f32 copy of the model).
// The reference is TBB-parallel inside; the work is limited by GoldenOptions (prompts, tokens, greedy steps).
#pragma once

#include <filesystem>
#include <map>
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

// Bytes of the f32 weights the CPU reference holds for this manifest (its memory need, within ~10%).
uint64_t reference_f32_bytes(const Manifest& m);

// The converter hook: generate_golden + encode_golden (no files when options.prompts is 0). When the reference
// would need more than options.max_reference_bytes, it writes no goldens, warns, and records golden-prompts
// "none" (rdrr-verify then skips its golden gates).
convert::GoldenWriter make_golden_writer(const GoldenOptions& options);

// metadata.converter.flags entries: golden-prompts ("none" or N), golden-tokens, golden-steps.
std::map<std::string, std::string> golden_flags(const GoldenOptions& options);

}  // namespace rdrr::verify
