// rdrr-convert's engine: Hugging Face folder or GGUF file -> RDRR pack (rdrr/SPEC.md).
//
//   open source (convert/source.h) -> plan types (convert/plan.h) -> place every tensor (ShardPlanner)
//   -> stream: read + convert/quantize + write/hash (convert/pipeline.h) -> tokenizer files
//   -> manifest (built, execution graph planned and checked, validated) -> atomic commit (rdrr/pack_writer.h).
//
// Memory stays bounded whatever the model size: tensors are streamed in 256-row chunks, consumed input
// pages are released, and only a column_wise tensor's quantized bytes (at most one tensor's output) are
// held until the tensor is complete. Output bytes are identical for any thread count; the manifest has no
// timestamp, so the same input and options give the same pack.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert/plan.h"
#include "convert/source.h"
#include "quant/dtype.h"
#include "quant/status.h"
#include "quant/uninitialized.h"
#include "rdrr/manifest.h"
#include "rdrr/placement.h"

namespace rdrr::convert {

inline constexpr std::string_view kConverterName = "rdrr-convert";
std::string_view converter_version();  // the project version, e.g. "0.1.0"

// Rows per streamed chunk. 256 is a multiple of every block size, so every layout can encode any chunk.
inline constexpr int64_t kChunkRows = 256;

struct ConvertProgress {
  size_t tensors_done = 0;
  size_t tensors_total = 0;
  uint64_t bytes_in_done = 0;  // input tensor bytes consumed
  uint64_t bytes_in_total = 0;
  uint64_t bytes_out_done = 0;  // pack bytes written
  double elapsed_seconds = 0;
};

// Golden hook (rdrr/SPEC.md 8.10): called once the shards and tokenizer files are written and the manifest is
// built and validated (goldens still empty), before the manifest is committed. convert/ does not depend on
// verify/: verify provides the writer (verify/golden_gen.h), tools/rdrr_convert.cpp wires it in.
struct GoldenContext {
  std::filesystem::path pack_dir;  // the temporary pack directory (shards and tokenizer files complete)
  const Manifest* manifest = nullptr;  // complete except goldens
  std::filesystem::path src;       // the conversion input (HF folder or .gguf file)
  SourceFormat format = SourceFormat::kSafetensors;
};
struct GoldenBlob {  // one golden file: pack-relative name "golden/<file>", manifest kind, content
  std::string name;
  std::string kind;
  std::vector<std::byte> bytes;
};
struct GoldenOutput {
  std::vector<GoldenBlob> files;
  std::vector<std::string> warnings;          // appended to ConvertReport::warnings
  std::map<std::string, std::string> flags;   // non-empty: replace the golden-* converter flags (goldens skipped)
};
using GoldenWriter = std::function<Result<GoldenOutput>(const GoldenContext&)>;

// Calibration hook (GPTQ, quant/gptq.h): called after planning (before anything is written) when some Q4_K
// matrix of a layer can use it. It prepares a run of the source model on calibration text and returns a
// session that gives, one layer at a time, the second moment H = sum(x x^T) / tokens of each linear input:
// [0] q/k/v, [1] o_proj, [2] gate/up, [3] down (K x K row-major float, lower triangle filled). The converter
// asks for the layers in increasing order as its pipeline reaches them, so one layer's H and factors are
// held at a time. verify/ provides it (verify/calibration.h); tools wire it in.
struct CalibrationContext {
  std::filesystem::path src;  // the conversion input (HF folder or .gguf file)
  SourceFormat format = SourceFormat::kSafetensors;
};
class LayerCalibration {
 public:
  virtual ~LayerCalibration() = default;
  // H of layer `layer`'s inputs i with wanted[i] (the others empty). Layers strictly increasing (layers not
  // asked for are run through without statistics). Values that are not finite are returned as they are. Only
  // the lower triangle of each H is set (quant::gptq_factor reads no more).
  using Hessians = std::array<quant::UninitVector<float>, 4>;
  virtual Result<Hessians> layer_hessians(uint32_t layer, std::array<bool, 4> wanted) = 0;
};
struct CalibrationOutput {
  std::unique_ptr<LayerCalibration> session;  // null: no calibration (the warnings say why)
  uint64_t tokens = 0;                        // calibration tokens run
  std::string description;                    // recorded as converter flag "calibration"
  std::vector<std::string> warnings;
};
using Calibrator = std::function<Result<CalibrationOutput>(const CalibrationContext&)>;

// kAuto (the default) and kOn calibrate every model whose source carries a tokenizer (HF tokenizer files, or a
// GGUF vocabulary), at any size (cost: README, Known limits); without one, Q4_K is rounded plainly with a
// warning. kOff never calibrates.
enum class CalibrationMode { kAuto, kOn, kOff };

struct ConvertOptions {
  std::filesystem::path src;  // HF folder or .gguf file
  std::filesystem::path out;  // pack directory to create
  Preset preset = Preset::kQ4_K_M;
  // Unset: row_wise for a GGUF source (its Q4_K blocks pass through bit-exactly; column_wise would re-encode
  // them), column_wise otherwise.
  std::optional<quant::Layout> q4k_layout;
  KvDtype kv_dtype = KvDtype::kF16;  // KV cache precision of the execution graph
  std::optional<bool> fuse_gate_up;            // default: preset_is_quantized(preset)
  // q/k/v as one qkv_proj per layer (one matmul dispatch). Unset: preset_is_quantized(preset), on the layers
  // where the preset gives the three one type; true: every layer (qkv_proj's rule types the fused tensor) whose
  // three are stored in one type (a GGUF's differing blocks are not re-encoded to fuse them); false: none. A
  // --tensor-type override that selects one of them keeps its layer unfused (a stored qkv_proj is then split).
  std::optional<bool> fuse_qkv;
  std::vector<std::string> tensor_types;       // "REGEX=TYPE" overrides, first match wins
  uint64_t shard_size_bytes = kDefaultShardSizeBytes;
  int threads = 0;                             // 0: all hardware threads
  bool dry_run = false;                        // plan and place, write nothing
  bool force = false;                          // replace an existing pack at `out`
  bool allow_nonfinite = false;                // keep NaN/Inf (plain types) / encode them as 0 (block types)
  bool sync_to_disk = true;                    // fsync the pack before the rename
  std::optional<std::string> model_id;         // default: the folder name / GGUF general.name
  int rmse_every_chunks = 16;                  // RMSE on chunks 0, N, 2N, ... of every tensor (1: exact)
  std::function<void(const ConvertProgress&)> on_progress;  // called from the writer, at most ~10 times/s
  GoldenWriter golden_writer;                  // unset: no goldens
  Calibrator calibrator;                       // unset: Q4_K by plain rounding (no calibration)
  CalibrationMode calibration = CalibrationMode::kAuto;  // whether to call `calibrator`
  std::map<std::string, std::string> extra_flags;  // recorded in metadata.converter.flags (e.g. golden-prompts)
};

struct TensorReport {
  std::string name;
  std::vector<int64_t> shape;
  std::string source_dtype;  // "F16", "Q4_K", "Q4_K+Q6_K" (fused parts of differing types)
  quant::DType dtype = quant::DType::kF32;
  std::optional<quant::Layout> layout;
  std::string reason;        // why the planner chose dtype
  uint64_t size_bytes = 0;
  TensorPlacement placement;
  bool passthrough = false;  // every row copied bit-exactly from the input's blocks
  // Quantization error vs the source values (decoded input), over the sampled rows.
  double rmse = 0;
  double source_rms = 0;     // RMS of the source values over the same rows (scale reference)
  uint64_t sampled_values = 0;
  uint64_t nonfinite_values = 0;  // only with allow_nonfinite
  double seconds = 0;        // conversion time (summed over chunks)
};

struct ConvertReport {
  std::string src;
  std::string out;
  SourceFormat format = SourceFormat::kSafetensors;
  std::string family;
  std::string model_id;
  std::string quantization;  // "Q4_K_M"
  std::string calibration = "none";  // CalibrationOutput::description when Q4_K was calibrated
  bool dry_run = false;
  int threads = 0;
  std::vector<TensorReport> tensors;
  std::vector<ShardInfo> shards;
  std::vector<std::string> warnings;
  uint64_t bytes_in = 0;   // input tensor bytes
  uint64_t bytes_out = 0;  // pack size (shards + tokenizer files + manifest)
  double wall_seconds = 0;
};

// Runs the whole conversion. Errors carry the codes of README "Exit codes" (through tools/exit_codes.h):
// kNotFound (src, config, tensor), kParse/kSchema/kValidation (malformed input), kUnsupported (architecture,
// dtype), kNonFinite (NaN/Inf in a weight, naming tensor and index), kAlreadyExists (out exists, no force),
// kNoSpace, kIo, kInvalidArgument (options). The execution graph (graph/graph_plan.h) is planned and checked
// (graph/graph_check.h) before any byte is written and again on the final manifest; a violation fails the
// conversion with the planner's / checker's code (kUnsupported: no kernel of this build reads a tensor's
// dtype / layout; kValidation: a tensor the graph needs is missing or misshapen), and nothing is committed.
Result<ConvertReport> convert_model(const ConvertOptions& options);

// How the conversion opens its source: gate+up and q/k/v fusion (defaults: preset_is_quantized), and the layers
// that stay unfused (parts the preset would type differently unless --fuse-qkv was given, or a part a
// --tensor-type override selects). Tests open a source with it to compare a pack tensor by tensor. Errors: a bad
// override.
Result<SourceOptions> source_options(const ConvertOptions& options);

}  // namespace rdrr::convert
