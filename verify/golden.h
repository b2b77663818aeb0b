// Goldens in the pack (rdrr/SPEC.md 8.10, verify/README.md "Golden format"): a few prompts as token ids and,
// for each, the reference logits of the source weights ("source") and of the pack's own decoded weights
// ("pack"), plus greedy continuations. This header is the format (encode / decode / budget); the generator
// that runs the CPU reference is verify/golden_gen.h.
//
//   golden/golden.json                 kind "reference": the index (schema below)
//   golden/<ref>.p<i>.logits.<f32|f16>.zst  kind "logits": zstd frame of [positions][vocab] little-endian values
//
// golden.json: {"format": "rdrr-golden", "version": 1, "vocabSize", "greedySteps",
//   "logits": {"dtype": "f32"|"f16", "compression": "zstd", "layout": "row-major [positions][vocabSize]"},
//   "references": {"source": {"producer", "weights"}, "pack": {...}},
//   "prompts": [{"tokenIds": [...], "positions": [...],
//                "source": {"logitsFile", "greedyTokenIds", "greedyTop1Margins"}, "pack": {...}}]}
// Row r of a logits file holds the logits at prompt position positions[r] (predicting token positions[r]+1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::verify {

inline constexpr std::string_view kGoldenFormat = "rdrr-golden";
inline constexpr uint32_t kGoldenVersion = 1;
inline constexpr std::string_view kGoldenIndexName = "golden/golden.json";
inline constexpr std::string_view kGoldenKindReference = "reference";
inline constexpr std::string_view kGoldenKindLogits = "logits";
// Default budget for the uncompressed logits of both references together (an 8B, 128k-vocab model stores
// f16 values and the last 8 positions of 4 prompts: 2 x 4 x 8 x 128256 x 2 B = 16.4 MB before zstd).
inline constexpr uint64_t kDefaultGoldenBudgetBytes = 16ull << 20;

struct GoldenOptions {
  size_t prompts = 4;             // 0: no goldens
  size_t tokens_per_prompt = 16;  // prompt length (the first token is BOS when the tokenizer adds one)
  size_t greedy_steps = 8;        // greedy continuation length per prompt and reference
  uint64_t budget_bytes = kDefaultGoldenBudgetBytes;
  // Memory the streaming CPU reference may hold (decoded weight chunks, activations, KV caches); above it the
  // goldens are skipped with a warning. 0: 75% of the physical memory. Tests inject a tiny limit.
  uint64_t max_reference_bytes = 0;
};

enum class GoldenValueType : uint8_t { kF32, kF16 };
std::string_view golden_value_type_name(GoldenValueType t);  // "f32", "f16"

// One producer's results for one prompt.
struct GoldenRun {
  std::vector<float> logits;  // [positions.size(), vocab] (f16 files are widened to f32 on read)
  std::vector<int32_t> greedy_token_ids;
  std::vector<double> greedy_top1_margins;  // logit(top1) - logit(top2) at each greedy step
};

struct GoldenPrompt {
  std::string text;  // the prompt text when it came from the pack's tokenizer ("" for token-id prompts)
  std::vector<int32_t> token_ids;
  std::vector<uint32_t> positions;  // stored prompt positions, ascending
  GoldenRun source, pack;
};

struct GoldenProducer {
  std::string producer;  // e.g. "rdrr streaming CPU reference (f32 BLAS matmuls, double activations)"
  std::string weights;   // "safetensors", "gguf", "pack"
};

struct GoldenSet {
  uint64_t vocab_size = 0;
  size_t greedy_steps = 0;
  GoldenValueType value_type = GoldenValueType::kF32;
  GoldenProducer source, pack;
  std::vector<GoldenPrompt> prompts;
};

// The deterministic prompts: options.prompts sequences of options.tokens_per_prompt ids in [0, vocab),
// from a fixed-seed SplitMix64 stream per prompt, skipping the BOS/EOS/pad ids; the first token is the
// BOS id when the tokenizer adds one. Errors: kInvalidArgument (vocab too small, tokens_per_prompt 0).
Result<std::vector<std::vector<int32_t>>> golden_prompts(const Manifest& m, const GoldenOptions& options);

// The built-in golden prompt texts (English prose, a question, code, French, numbers), used in order when
// the pack's tokenizer loads: each is encoded with the tokenizer's special tokens (BOS) and cut to
// max(options.tokens_per_prompt, 32) tokens (a cut prompt keeps no text).
std::span<const std::string_view> golden_prompt_texts();

// The stored positions and value type: f32 while the logits of both references fit the budget, else f16;
// then only the last k positions of each prompt, k as large as fits (>= 1).
struct GoldenStorage {
  GoldenValueType value_type = GoldenValueType::kF32;
  std::vector<std::vector<uint32_t>> positions;  // per prompt
};
GoldenStorage choose_golden_storage(uint64_t vocab, const std::vector<size_t>& prompt_lengths, uint64_t budget_bytes);

// A file for the pack: name "golden/<file>", manifest kind, content.
struct GoldenBlob {
  std::string name;
  std::string kind;
  std::vector<std::byte> bytes;
};

// golden.json + one zstd logits file per prompt and reference. Deterministic bytes. Errors: kInvalidArgument
// (a logits array whose size is not positions x vocab, greedy arrays of different lengths).
Result<std::vector<GoldenBlob>> encode_golden(const GoldenSet& golden);

// Reads golden/golden.json and its logits files from pack_dir; every file must be listed in m.goldens.
// Errors: kNotFound (no golden.json / a file missing), kParse / kSchema (malformed index), kValidation
// (a file not in the manifest, a decompressed size that is not positions x vocab, vocab != the manifest's,
// token id or position out of range), kIo.
Result<GoldenSet> read_golden(const Manifest& m, const std::filesystem::path& pack_dir);

// zstd helpers (deterministic, level 9). Errors: kIntegrity (corrupt frame), kValidation (size differs).
std::vector<std::byte> zstd_compress(std::span<const std::byte> bytes);
Result<std::vector<std::byte>> zstd_decompress(std::span<const std::byte> frame, uint64_t expected_bytes);

}  // namespace rdrr::verify
