// The RDRR manifest (manifest.json) as a C++ value. rdrr/SPEC.md is the normative definition; field
// comments here name the JSON key ("json: ...") they map to. JSON reading/writing: rdrr/manifest_json.h;
// checks: rdrr/validate.h. The structs carry data only: a Manifest built in code or parsed from JSON is
// trusted only after validate_manifest() accepted it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "quant/dtype.h"
#include "quant/status.h"
#include "rdrr/placement.h"

namespace rdrr {

inline constexpr uint32_t kManifestVersion = 1;
inline constexpr std::string_view kManifestFilename = "manifest.json";
inline constexpr std::string_view kGoldenDirName = "golden";
inline constexpr std::string_view kHashAlgorithmSha256 = "sha256";
inline constexpr std::string_view kModelTypeTransformer = "transformer";
inline constexpr std::string_view kTokenizerTypeBundled = "bundled";
// The file names a pack may bundle for its tokenizer (SPEC.md "Pack directory"). tokenizer.gguf.json holds a
// GGUF file's tokenizer metadata as JSON (written by the converter, convert/model_config.h).
inline constexpr std::string_view kTokenizerFileNames[] = {"tokenizer.json",          "tokenizer.model",
                                                           "tokenizer_config.json",   "special_tokens_map.json",
                                                           "tokenizer.gguf.json",     "chat_template.jinja"};

// Limits (SPEC.md "Limits"). Readers reject anything past them.
inline constexpr uint64_t kMaxJsonInteger = 1ull << 53;  // every integer in the manifest is <= 2^53
inline constexpr uint64_t kMaxManifestBytes = 64ull << 20;
inline constexpr size_t kMaxTensors = 65536;
inline constexpr size_t kMaxShards = 100000;  // shard_00000.bin .. shard_99999.bin
inline constexpr size_t kMaxTensorDims = 4;
inline constexpr size_t kMaxNameBytes = 256;     // tensor names, file names, map keys, identifiers
inline constexpr size_t kMaxStringBytes = 4096;  // any other string
inline constexpr size_t kMaxListEntries = 4096;  // source files, goldens, kernels, steps per phase, flags...
inline constexpr uint32_t kMaxLayers = 4096;

// ---- enumerations (JSON spelling in comments; *_name / parse_* below) ----
enum class ArchFamily : uint8_t { kLlama, kMistral, kQwen2, kQwen3, kGemma3, kPhi3, kGemma2, kMixtral, kQwen2Moe, kQwen3Moe };  // "llama", ...
enum class SourceFormat : uint8_t { kSafetensors, kGguf };                             // "safetensors", "gguf"
enum class LayerType : uint8_t { kFullAttention, kSlidingAttention };     // "full_attention", "sliding_attention"
enum class NormType : uint8_t { kRmsNorm };                               // "rmsnorm"
enum class Activation : uint8_t { kSilu, kGeluTanh };                     // "silu", "gelu_tanh"
// "none", "linear", "llama3", "yarn", "longrope", "freq_factors"
enum class RopeScalingType : uint8_t { kNone, kLinear, kLlama3, kYarn, kLongRope, kFreqFactors };
enum class RopeConvention : uint8_t { kRotateHalf, kInterleaved };        // "rotate_half", "interleaved"
enum class TensorRole : uint8_t { kEmbedding, kLmHead, kNorm, kMatmul, kBias };  // "embedding", "lm_head", ...

std::string_view arch_family_name(ArchFamily v);
std::optional<ArchFamily> parse_arch_family(std::string_view s);
std::string_view source_format_name(SourceFormat v);
std::optional<SourceFormat> parse_source_format(std::string_view s);
std::string_view layer_type_name(LayerType v);
std::optional<LayerType> parse_layer_type(std::string_view s);
std::string_view norm_type_name(NormType v);
std::optional<NormType> parse_norm_type(std::string_view s);
std::string_view activation_name(Activation v);
std::optional<Activation> parse_activation(std::string_view s);
std::string_view rope_scaling_type_name(RopeScalingType v);
std::optional<RopeScalingType> parse_rope_scaling_type(std::string_view s);
std::string_view rope_convention_name(RopeConvention v);
std::optional<RopeConvention> parse_rope_convention(std::string_view s);
std::string_view tensor_role_name(TensorRole v);
std::optional<TensorRole> parse_tensor_role(std::string_view s);

// ---- files ----
// A file of the pack (tokenizer) or of the conversion input (source). json: {name, size, hash}
struct FileRecord {
  std::string name;
  uint64_t size_bytes = 0;
  std::string sha256_hex;  // 64 lowercase hex digits
  bool operator==(const FileRecord&) const = default;
};

// A golden reference file in the pack. json: {name: "golden/<file>", size, hash, kind}
struct GoldenFile {
  std::string name;  // "golden/<plain file name>"
  uint64_t size_bytes = 0;
  std::string sha256_hex;
  std::string kind;  // [a-z0-9_]+, e.g. "logits", "reference"
  bool operator==(const GoldenFile&) const = default;
};

// ---- provenance (json: metadata) ----
struct ConverterInfo {  // json: metadata.converter {name, version, flags}
  std::string name;
  std::string version;
  std::map<std::string, std::string> flags;  // canonical option name -> value; no host paths
  bool operator==(const ConverterInfo&) const = default;
};

struct SourceInfo {  // json: metadata.source {format, files}
  SourceFormat format = SourceFormat::kSafetensors;
  std::vector<FileRecord> files;  // names relative to the input folder
  bool operator==(const SourceInfo&) const = default;
};

// A kernel digest re-pinned after a kernel edit (`rdrr-digests repin`, kernels/repin.h).
// json: metadata.kernelRepins[] {kernel, from, to}
struct KernelRepin {
  std::string kernel;  // key of inference.execution.kernels
  std::string from;    // digest pinned before, "sha256:<64 hex>"
  std::string to;      // digest pinned after
  bool operator==(const KernelRepin&) const = default;
};

struct Provenance {  // json: metadata
  SourceInfo source;
  ConverterInfo converter;
  // json: kernelRepins (optional; absent when empty, so packs never re-pinned keep their bytes). Every
  // re-pin, appended in the order it happened.
  std::vector<KernelRepin> kernel_repins;
  // json: convertedAt, "YYYY-MM-DDTHH:MM:SSZ". Absent by default so packs are byte-reproducible; a
  // converter sets it only on request (e.g. from SOURCE_DATE_EPOCH).
  std::optional<std::string> converted_at;
  bool operator==(const Provenance&) const = default;
};

// ---- architecture (json: architecture) ----
// Mixture of experts (json: architecture.moe; absent, numExperts 0 here: every layer has the dense gated MLP). An MoE layer's
// router is a linear map [numExperts, hiddenSize]; per token p = softmax(router logits), the expertsPerToken
// largest p are chosen (ties: the lower expert index), their weights are those p, divided by their sum when
// normalizeTopK; the layer's output is the weighted sum of the chosen experts' gated MLPs (intermediate size
// expertIntermediateSize), plus, with a shared expert, that MLP (sharedExpertIntermediateSize) on every
// token, scaled by sigmoid(x . g) where sharedExpertGated. Layers in denseLayers keep the dense MLP
// (intermediateSize) instead.
struct MoeArchitecture {
  uint32_t num_experts = 0;                      // json: numExperts (0: no mixture of experts, no json object)
  uint32_t experts_per_token = 0;                // json: expertsPerToken
  uint64_t expert_intermediate_size = 0;         // json: expertIntermediateSize
  bool normalize_top_k = false;                  // json: normalizeTopK
  uint64_t shared_expert_intermediate_size = 0;  // json: sharedExpertIntermediateSize (0: no shared expert)
  bool shared_expert_gated = false;              // json: sharedExpertGated
  std::vector<uint32_t> dense_layers;            // json: denseLayers (ascending)
  bool present() const { return num_experts != 0; }
  bool operator==(const MoeArchitecture&) const = default;
};

struct Architecture {
  ArchFamily family = ArchFamily::kLlama;  // json: family
  uint32_t num_layers = 0;                 // json: numLayers
  uint64_t hidden_size = 0;                // json: hiddenSize
  uint64_t intermediate_size = 0;          // json: intermediateSize
  uint32_t num_attention_heads = 0;        // json: numAttentionHeads
  uint32_t num_key_value_heads = 0;        // json: numKeyValueHeads
  uint64_t head_dim = 0;                   // json: headDim
  uint64_t vocab_size = 0;                 // json: vocabSize (rows of the embedding)
  uint64_t max_seq_len = 0;                // json: maxSeqLen
  MoeArchitecture moe;                     // json: moe (only when moe.present())
  bool operator==(const Architecture&) const = default;
};
// Whether layer `layer`'s MLP is the mixture of experts (false for dense models and denseLayers).
bool is_moe_layer(const Architecture& a, uint32_t layer);

// ---- inference parameters (json: inference.*) ----
struct AttentionConfig {                         // json: inference.attention
  bool causal = true;                            // json: causal
  bool attention_bias = false;                   // json: attentionBias (q/k/v projections have biases)
  bool query_key_norm = false;                   // json: queryKeyNorm (per-head RMSNorm of q and k)
  std::optional<double> query_pre_attn_scalar;   // json: queryPreAttnScalar; scale = s^-0.5, absent: headDim
  std::optional<double> attn_logit_softcapping;  // json: attnLogitSoftcapping
  std::optional<uint64_t> sliding_window;        // json: slidingWindow (tokens); iff a layer slides
  std::vector<LayerType> layer_types;            // json: layerTypes, one per layer
  bool operator==(const AttentionConfig&) const = default;
};

struct NormConfig {                    // json: inference.normalization
  NormType type = NormType::kRmsNorm;  // json: type
  double rms_norm_eps = 1e-6;          // json: rmsNormEps
  double weight_offset = 0.0;          // json: rmsNormWeightOffset; y = x/rms * (offset + w); Gemma: 1
  bool post_attention_norm = false;    // json: postAttentionNorm (norm of the attention output, Gemma)
  bool pre_feedforward_norm = true;    // json: preFeedforwardNorm (norm before the MLP)
  bool post_feedforward_norm = false;  // json: postFeedforwardNorm (norm of the MLP output, Gemma)
  bool operator==(const NormConfig&) const = default;
};

struct FfnConfig {                            // json: inference.ffn
  Activation activation = Activation::kSilu;  // json: activation
  bool gated = true;                          // json: gatedActivation: act(gate(x)) * up(x)
  bool operator==(const FfnConfig&) const = default;
};

struct RopeConfig {                   // json: inference.rope. Resolved values: the runtime applies no defaults.
  double theta = 10000.0;             // json: ropeTheta (full-attention layers)
  std::optional<double> local_theta;  // json: ropeLocalTheta (sliding layers; unscaled)
  RopeScalingType scaling_type = RopeScalingType::kNone;    // json: ropeScalingType
  std::optional<double> scaling_factor;                     // json: ropeScalingFactor (linear, llama3, yarn)
  std::optional<double> low_freq_factor;                    // json: ropeLowFreqFactor (llama3)
  std::optional<double> high_freq_factor;                   // json: ropeHighFreqFactor (llama3)
  std::optional<uint64_t> original_max_positions;           // json: ropeOriginalMaxPositions (llama3, yarn, longrope)
  std::optional<double> yarn_beta_fast;                     // json: ropeYarnBetaFast (yarn)
  std::optional<double> yarn_beta_slow;                     // json: ropeYarnBetaSlow (yarn)
  std::optional<double> yarn_attention_factor;              // json: ropeYarnAttentionFactor (yarn)
  // longrope (Phi-3): per-pair divisors of the frequencies, n_rot / 2 each; the long set rotates a forward
  // pass whose last position + 1 exceeds ropeOriginalMaxPositions (transformers' dynamic rule), the short
  // set every other; cos and sin are multiplied by ropeAttentionFactor.
  std::vector<double> short_factors;                        // json: ropeShortFactors (longrope)
  std::vector<double> long_factors;                         // json: ropeLongFactors (longrope)
  std::optional<double> attention_factor;                   // json: ropeAttentionFactor (longrope)
  // freq_factors (llama.cpp's rope_freqs tensor, e.g. a Llama 3.1 GGUF): inv_freq_i = theta^(-2i/n_rot) / f_i.
  std::vector<double> freq_factors;                         // json: ropeFreqFactors (freq_factors)
  double partial_rotary_factor = 1.0;                       // json: partialRotaryFactor, (0, 1]
  RopeConvention convention = RopeConvention::kRotateHalf;  // json: ropeConvention
  bool operator==(const RopeConfig&) const = default;
};

// Whether the global rotary embedding needs the CPU frequency table (llama3 / YaRN / longrope / freq_factors
// scaling): the graph planner
// then pins rope_freqs (kv_append_rope binds the table at run time), the runtime builds the table.
bool rope_needs_freq_table(const RopeConfig& rope);

struct OutputConfig {                             // json: inference.output
  std::optional<double> final_logit_softcapping;  // json: finalLogitSoftcapping
  bool tie_word_embeddings = false;               // json: tieWordEmbeddings
  double embedding_scale = 1.0;                   // json: embeddingScale (Gemma: sqrt(hidden) as HF rounds it)
  bool operator==(const OutputConfig&) const = default;
};

// ---- execution graph (json: inference.execution); filled by the graph planner ----
using SpecConstant = std::variant<bool, int64_t, double>;  // JSON true/false, integer, non-integer number

// The KV cache precision of an execution graph: kernels map `precision: {"kvDtype": "f16" | "f32"}` on the
// kv_append_* / attention_* kernels (SPEC 9.1).
enum class KvDtype : uint8_t { kF16, kF32 };
inline constexpr std::string_view kKvDtypeKey = "kvDtype";      // the precision key
std::string_view kv_dtype_name(KvDtype kv);                     // "f16" / "f32", as in the manifest
std::optional<KvDtype> parse_kv_dtype(std::string_view name);   // nullopt for any other string
quant::DType kv_storage_dtype(KvDtype kv);                      // DType::kF16 / kF32
std::optional<KvDtype> kv_dtype_of(quant::DType storage);       // nullopt unless F16 / F32

struct KernelSpec {                               // json: inference.execution.kernels.<key>
  std::string file;                               // json: kernel (shader file name, e.g. "matmul_q4k.comp")
  std::string entry;                              // json: entry
  std::string digest;                             // json: digest, "sha256:<64 hex>"
  std::map<std::string, SpecConstant> constants;  // json: constants (optional)
  std::map<std::string, std::string> precision;   // json: precision (optional), e.g. kvDtype -> "f16"
  bool operator==(const KernelSpec&) const = default;
};

struct ExecStep {  // json: [op, kernelKey] or [op, kernelKey, weightRef]
  std::string op;
  std::string kernel_key;
  std::optional<std::string> weight_ref;  // tensor name; "{L}" stands for the layer index in layer phases
  bool operator==(const ExecStep&) const = default;
};

struct LayerGroup {  // json: {layers: [...], steps: [...]}: steps run only for the listed layers
  std::vector<uint32_t> layers;
  std::vector<ExecStep> steps;
  bool operator==(const LayerGroup&) const = default;
};

using LayerEntry = std::variant<ExecStep, LayerGroup>;

struct ExecutionPolicies {                             // json: policies; v1 allows only these fail-closed values
  std::string unsupported_precision = "error";         // json: unsupportedPrecision
  std::string dtype_transition = "require_cast_step";  // json: dtypeTransition
  std::string unresolved_kernel = "error";             // json: unresolvedKernel
  bool operator==(const ExecutionPolicies&) const = default;
};

struct ExecutionGraph {
  std::map<std::string, KernelSpec> kernels;  // json: kernels
  std::vector<ExecStep> pre_layer;            // json: preLayer
  std::vector<LayerEntry> prefill;            // json: prefill (run per layer)
  std::vector<LayerEntry> decode;             // json: decode (run per layer)
  std::vector<ExecStep> post_layer;           // json: postLayer
  ExecutionPolicies policies;                 // json: policies
  bool operator==(const ExecutionGraph&) const = default;
};

struct Inference {  // json: inference
  AttentionConfig attention;
  NormConfig normalization;
  FfnConfig ffn;
  RopeConfig rope;
  OutputConfig output;
  std::optional<ExecutionGraph> execution;  // absent until the graph planner fills it
  bool operator==(const Inference&) const = default;
};

// ---- tokenizer (json: tokenizer) ----
struct TokenizerInfo {
  std::string type = std::string(kTokenizerTypeBundled);  // json: type
  std::vector<FileRecord> files;                          // json: files (names from kTokenizerFileNames)
  bool add_bos_token = true;                              // json: addBosToken
  bool add_eos_token = false;                             // json: addEosToken
  std::optional<uint64_t> bos_token_id;                   // json: bosTokenId
  std::vector<uint64_t> eos_token_ids;                    // json: eosTokenIds (>= 1)
  std::optional<uint64_t> pad_token_id;                   // json: padTokenId
  bool operator==(const TokenizerInfo&) const = default;
};

// ---- weights ----
struct QuantizationInfo {  // json: quantizationInfo; both maps are derived (fill_derived_fields)
  std::map<quant::DType, uint64_t> tensor_counts;   // json: tensorCounts {"Q4_K": 20, ...}
  std::map<quant::Layout, uint64_t> layout_counts;  // json: layoutCounts {"row_wise": 22, ...}
  bool operator==(const QuantizationInfo&) const = default;
};

struct TensorEntry {  // json: tensors.<name>
  std::string name;   // HF name, e.g. "model.layers.0.mlp.gate_up_proj.weight"
  quant::DType dtype = quant::DType::kF32;
  std::vector<uint64_t> shape;          // logical HF shape; [N, K] = [out_features, in_features]
  std::optional<quant::Layout> layout;  // present iff dtype is block-quantized (then shape is 2-D)
  TensorRole role = TensorRole::kMatmul;
  std::string group;                      // "embed", "head" or "layer.<N>"
  uint64_t size_bytes = 0;                // json: size
  TensorPlacement placement;              // json: shard/offset (one span) or spans (>= 2)
  std::optional<std::string> sha256_hex;  // json: hash (optional)
  bool operator==(const TensorEntry&) const = default;
};

struct Manifest {
  uint32_t version = kManifestVersion;                             // json: version
  std::string model_id;                                            // json: modelId
  std::string model_type = std::string(kModelTypeTransformer);     // json: modelType
  std::string quantization;                                        // json: quantization (preset, "Q4_K_M")
  QuantizationInfo quantization_info;                              // json: quantizationInfo
  Architecture architecture;                                       // json: architecture
  Inference inference;                                             // json: inference
  TokenizerInfo tokenizer;                                         // json: tokenizer
  Provenance metadata;                                             // json: metadata
  std::vector<ShardInfo> shards;                                   // json: shards
  std::vector<TensorEntry> tensors;                                // json: tensors (object keyed by name)
  uint64_t total_size_bytes = 0;                                   // json: totalSize (sum of shard sizes)
  std::string hash_algorithm = std::string(kHashAlgorithmSha256);  // json: hashAlgorithm
  std::vector<GoldenFile> goldens;                                 // json: goldens
  bool operator==(const Manifest&) const = default;
};

// Byte size of a tensor of `dtype` and logical `shape` (SPEC.md "Data types" / "Q4_K layouts"):
//   plain types: prod(shape) * element bytes;  block types (2-D [N, K], block of B values, S bytes):
//   flat = ceil(N*K/B)*S, row_wise = N*ceil(K/B)*S, column_wise = K*ceil(N/B)*S.
// Errors (kValidation): a layout on a plain type, a block type without layout or not 2-D, 0 or > 4 dims,
// a zero dimension, a result above 2^53.
Result<uint64_t> expected_tensor_size_bytes(quant::DType dtype, std::span<const uint64_t> shape,
                                            std::optional<quant::Layout> layout);

// "[256, 512]"
std::string shape_to_string(std::span<const uint64_t> shape);

// Sets the derived fields from the rest: shard stream offsets, totalSize, quantizationInfo counts.
void fill_derived_fields(Manifest& m);

// Puts the order-free lists in their canonical order (tensors, tokenizer files, source files and goldens
// by name). serialize_manifest() writes tensors sorted by name whatever the order, so only a canonical
// Manifest compares equal to its round trip.
void canonicalize(Manifest& m);

// The first entry named `name`, by a scan of m.tensors: for one look-up. A loop over names uses TensorIndex.
const TensorEntry* find_tensor(const Manifest& m, std::string_view name);

// Name -> the first entry of that name in m.tensors, built in one pass: look-ups in O(1), so a loop over
// all tensors stays linear (#26 finding 6). Holds pointers into `m`: valid while m.tensors is unchanged.
class TensorIndex {
 public:
  explicit TensorIndex(const Manifest& m);
  const TensorEntry* find(std::string_view name) const;

 private:
  std::unordered_map<std::string_view, const TensorEntry*> by_name_;
};

}  // namespace rdrr
