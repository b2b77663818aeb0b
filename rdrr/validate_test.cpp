// validate_manifest(): one negative test per rule (StatusCode + message fragment), on a valid
// tiny-gemma3 manifest changed in one place.
#include "rdrr/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "rdrr/manifest_testutil.h"

namespace rdrr {
namespace {

using quant::DType;
using quant::Layout;

const Manifest& Tiny() {
  static const Manifest m = testing::tiny_gemma3_manifest();
  return m;
}

TensorEntry& Tensor(Manifest& m, std::string_view name) {
  for (TensorEntry& t : m.tensors) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return m.tensors.front();
}

constexpr std::string_view kDown0 = "model.layers.0.mlp.down_proj.weight";
constexpr std::string_view kEmbed = "model.embed_tokens.weight";
constexpr std::string_view kNorm = "model.norm.weight";

void ExpectRule(const std::function<void(Manifest&)>& mutate, StatusCode code, std::string_view fragment) {
  Manifest m = Tiny();
  mutate(m);
  const Status s = validate_manifest(m);
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "message: " << s.message() << "\nwanted: " << fragment;
}

ExecutionGraph& Graph(Manifest& m) { return *m.inference.execution; }

TEST(Validate, TinyManifestPasses) {
  EXPECT_TRUE(validate_manifest(Tiny()).ok()) << validate_manifest(Tiny()).to_string();
}

// ---- header ----
TEST(Validate, UnsupportedVersion) {
  ExpectRule([](Manifest& m) { m.version = 2; }, StatusCode::kSchema, "unsupported manifest version 2");
}
TEST(Validate, ModelTypeNotTransformer) {
  ExpectRule([](Manifest& m) { m.model_type = "diffusion"; }, StatusCode::kSchema, "modelType: \"diffusion\"");
}
TEST(Validate, HashAlgorithmNotSha256) {
  ExpectRule([](Manifest& m) { m.hash_algorithm = "md5"; }, StatusCode::kSchema, "hashAlgorithm: \"md5\"");
}
TEST(Validate, EmptyModelId) {
  ExpectRule([](Manifest& m) { m.model_id.clear(); }, StatusCode::kSchema, "modelId: must not be empty");
}
TEST(Validate, BadQuantizationLabel) {
  ExpectRule([](Manifest& m) { m.quantization = "q4 k"; }, StatusCode::kValidation, "quantization \"q4 k\"");
}

// ---- architecture and inference parameters ----
TEST(Validate, ZeroArchitectureField) {
  ExpectRule([](Manifest& m) { m.architecture.head_dim = 0; }, StatusCode::kValidation,
             "architecture.headDim: must be > 0");
}
TEST(Validate, TooManyLayers) {
  ExpectRule([](Manifest& m) { m.architecture.num_layers = kMaxLayers + 1; }, StatusCode::kValidation,
             "exceeds the limit of 4096");
}
TEST(Validate, HeadsNotMultipleOfKvHeads) {
  ExpectRule([](Manifest& m) { m.architecture.num_key_value_heads = 3; }, StatusCode::kValidation,
             "numAttentionHeads 4 is not a multiple of numKeyValueHeads 3");
}
TEST(Validate, MoeRules) {
  const auto moe = [](Manifest& m) -> MoeArchitecture& {
    m.architecture.moe = MoeArchitecture{.num_experts = 4, .experts_per_token = 2, .expert_intermediate_size = 64,
                                         .normalize_top_k = false, .shared_expert_intermediate_size = 0,
                                         .shared_expert_gated = false, .dense_layers = {}};
    return m.architecture.moe;
  };
  ExpectRule([&](Manifest& m) { moe(m).num_experts = 1; }, StatusCode::kValidation,
             "architecture.moe.numExperts: 1, expected 2..256");
  ExpectRule([&](Manifest& m) { moe(m).num_experts = 257; }, StatusCode::kValidation, "numExperts: 257");
  ExpectRule([&](Manifest& m) { moe(m).experts_per_token = 5; }, StatusCode::kValidation,
             "architecture.moe.expertsPerToken: 5, expected 1..4");
  ExpectRule([&](Manifest& m) { moe(m).experts_per_token = 0; }, StatusCode::kValidation, "expertsPerToken: 0");
  ExpectRule([&](Manifest& m) { moe(m).expert_intermediate_size = 0; }, StatusCode::kValidation,
             "architecture.moe.expertIntermediateSize: must be > 0");
  ExpectRule([&](Manifest& m) { moe(m).shared_expert_gated = true; }, StatusCode::kValidation,
             "sharedExpertGated: true with sharedExpertIntermediateSize 0");
  ExpectRule([&](Manifest& m) { moe(m).shared_expert_intermediate_size = 128; }, StatusCode::kValidation,
             "sharedExpertGated: false with sharedExpertIntermediateSize 128 (a shared expert is gated");
  ExpectRule([&](Manifest& m) { moe(m).dense_layers = {1, 0}; }, StatusCode::kValidation,
             "architecture.moe.denseLayers[1]: 0, expected ascending layer indices below numLayers 3");
  ExpectRule([&](Manifest& m) { moe(m).dense_layers = {3}; }, StatusCode::kValidation, "denseLayers[0]: 3");
  ExpectRule([&](Manifest& m) { moe(m).dense_layers = {0, 1, 2}; }, StatusCode::kValidation,
             "architecture.moe.denseLayers: every layer is dense");
}
TEST(Validate, OddHeadDim) {
  ExpectRule([](Manifest& m) { m.architecture.head_dim = 63; }, StatusCode::kValidation, "headDim: 63 is odd");
}
TEST(Validate, LayerTypesCountMismatch) {
  ExpectRule([](Manifest& m) { m.inference.attention.layer_types.pop_back(); }, StatusCode::kValidation,
             "layerTypes: 2 entries != numLayers 3");
}
TEST(Validate, SlidingLayerWithoutWindow) {
  ExpectRule([](Manifest& m) { m.inference.attention.sliding_window.reset(); }, StatusCode::kValidation,
             "slidingWindow: required because layerTypes has sliding_attention");
}
TEST(Validate, WindowWithoutSlidingLayer) {
  ExpectRule(
      [](Manifest& m) {
        m.inference.attention.layer_types.assign(3, LayerType::kFullAttention);
        m.inference.rope.local_theta.reset();
      },
      StatusCode::kValidation, "slidingWindow: given but no layer is sliding_attention");
}
TEST(Validate, NonPositiveSoftcapping) {
  ExpectRule([](Manifest& m) { m.inference.attention.attn_logit_softcapping = 0.0; }, StatusCode::kValidation,
             "attnLogitSoftcapping: must be > 0, got 0");
}
TEST(Validate, NonFiniteNumber) {
  ExpectRule([](Manifest& m) { m.inference.rope.theta = std::numeric_limits<double>::infinity(); },
             StatusCode::kNonFinite, "inference.rope.ropeTheta: not finite");
}
TEST(Validate, NonPositiveEps) {
  ExpectRule([](Manifest& m) { m.inference.normalization.rms_norm_eps = -1e-6; }, StatusCode::kValidation,
             "rmsNormEps: must be > 0, got -1e-06");
}
TEST(Validate, LocalThetaWithoutSlidingLayers) {
  ExpectRule(
      [](Manifest& m) {
        m.inference.attention.layer_types.assign(3, LayerType::kFullAttention);
        m.inference.attention.sliding_window.reset();
      },
      StatusCode::kValidation, "ropeLocalTheta: given but no layer is sliding_attention");
}
TEST(Validate, RopeScalingFieldMissing) {
  ExpectRule(
      [](Manifest& m) {
        m.inference.rope.scaling_type = RopeScalingType::kLlama3;
        m.inference.rope.scaling_factor = 8.0;
      },
      StatusCode::kSchema, "inference.rope.ropeLowFreqFactor: required when ropeScalingType is \"llama3\"");
}
TEST(Validate, RopeScalingFieldForbidden) {
  ExpectRule([](Manifest& m) { m.inference.rope.scaling_factor = 2.0; }, StatusCode::kSchema,
             "inference.rope.ropeScalingFactor: not allowed when ropeScalingType is \"none\"");
}
TEST(Validate, Llama3HighFreqNotAboveLow) {
  ExpectRule(
      [](Manifest& m) {
        RopeConfig& r = m.inference.rope;
        r.scaling_type = RopeScalingType::kLlama3;
        r.scaling_factor = 8.0;
        r.low_freq_factor = 4.0;
        r.high_freq_factor = 1.0;
        r.original_max_positions = 8192;
      },
      StatusCode::kValidation, "ropeHighFreqFactor 1 must be > ropeLowFreqFactor 4");
}
// LongRoPE / freq_factors lists: required by their type only, rotary dims / 2 finite positive entries.
void set_longrope(Manifest& m) {
  RopeConfig& r = m.inference.rope;
  r.scaling_type = RopeScalingType::kLongRope;
  r.original_max_positions = 64;
  r.attention_factor = 1.2;
  r.short_factors.assign(m.architecture.head_dim / 2, 1.0);
  r.long_factors.assign(m.architecture.head_dim / 2, 4.0);
}
TEST(Validate, LongRopeFactorsMissing) {
  ExpectRule(
      [](Manifest& m) {
        set_longrope(m);
        m.inference.rope.long_factors.clear();
      },
      StatusCode::kSchema, "inference.rope.ropeLongFactors: required when ropeScalingType is \"longrope\"");
}
TEST(Validate, LongRopeAttentionFactorMissing) {
  ExpectRule(
      [](Manifest& m) {
        set_longrope(m);
        m.inference.rope.attention_factor.reset();
      },
      StatusCode::kSchema, "inference.rope.ropeAttentionFactor: required when ropeScalingType is \"longrope\"");
}
TEST(Validate, LongRopeFactorCountWrong) {
  ExpectRule(
      [](Manifest& m) {
        set_longrope(m);
        m.inference.rope.short_factors.push_back(1.0);
      },
      StatusCode::kValidation, "inference.rope.ropeShortFactors: ");
}
TEST(Validate, RopeFactorNotPositive) {
  ExpectRule(
      [](Manifest& m) {
        set_longrope(m);
        m.inference.rope.long_factors[1] = 0.0;
      },
      StatusCode::kValidation, "inference.rope.ropeLongFactors/1: must be > 0, got 0");
}
TEST(Validate, FreqFactorsForbiddenWithoutTheirType) {
  ExpectRule([](Manifest& m) { m.inference.rope.freq_factors.assign(m.architecture.head_dim / 2, 1.0); },
             StatusCode::kSchema, "inference.rope.ropeFreqFactors: not allowed when ropeScalingType is \"none\"");
}
TEST(Validate, PartialRotaryFactorGivesOddDims) {
  ExpectRule([](Manifest& m) { m.inference.rope.partial_rotary_factor = 0.3; }, StatusCode::kValidation,
             "partialRotaryFactor: 0.3 must be in (0, 1] and give an even number of rotary dims");
}
TEST(Validate, NonPositiveEmbeddingScale) {
  ExpectRule([](Manifest& m) { m.inference.output.embedding_scale = 0; }, StatusCode::kValidation,
             "embeddingScale: must be > 0");
}

// ---- tokenizer ----
TEST(Validate, TokenizerTypeNotBundled) {
  ExpectRule([](Manifest& m) { m.tokenizer.type = "remote"; }, StatusCode::kSchema, "tokenizer.type: \"remote\"");
}
TEST(Validate, TokenizerFileNameNotAllowed) {
  ExpectRule([](Manifest& m) { m.tokenizer.files[0].name = "vocab.txt"; }, StatusCode::kValidation,
             "tokenizer.files[0].name \"vocab.txt\": not a tokenizer file name a pack may bundle");
}
TEST(Validate, TokenizerFileListedTwice) {
  ExpectRule([](Manifest& m) { m.tokenizer.files.push_back(m.tokenizer.files[0]); }, StatusCode::kValidation,
             "tokenizer.files[3].name \"tokenizer.json\": listed twice");
}
TEST(Validate, TokenizerWithoutVocabFile) {
  ExpectRule([](Manifest& m) { m.tokenizer.files.resize(0); }, StatusCode::kValidation,
             "must include tokenizer.json or tokenizer.model");
}
TEST(Validate, MalformedHash) {
  ExpectRule([](Manifest& m) { m.tokenizer.files[1].sha256_hex = std::string(64, 'A'); }, StatusCode::kSchema,
             "tokenizer.files[1].hash: \"AAAA");
}
TEST(Validate, NoEosToken) {
  ExpectRule([](Manifest& m) { m.tokenizer.eos_token_ids.clear(); }, StatusCode::kValidation,
             "eosTokenIds: must list at least one id");
}
TEST(Validate, TokenIdOutsideVocab) {
  ExpectRule([](Manifest& m) { m.tokenizer.bos_token_id = 1024; }, StatusCode::kValidation,
             "tokenizer.bosTokenId: token id 1024 >= vocabSize 1024");
}
TEST(Validate, DuplicateEosId) {
  ExpectRule(
      [](Manifest& m) {
        m.tokenizer.eos_token_ids = {2, 2};
      },
      StatusCode::kValidation, "eosTokenIds[1]: duplicate id");
}
TEST(Validate, AddBosWithoutBosId) {
  ExpectRule([](Manifest& m) { m.tokenizer.bos_token_id.reset(); }, StatusCode::kValidation,
             "addBosToken: true but no bosTokenId");
}

// ---- file names (path traversal) ----
TEST(Validate, UnsafeFileNames) {
  const std::pair<std::string, const char*> cases[] = {{"../tokenizer.json", "unsafe file name (contains '/')"},
                                                       {"..", "unsafe file name (starts with '.'"},
                                                       {"/tokenizer.json", "unsafe file name (contains '/')"},
                                                       {"a\\tokenizer.json", "unsafe file name (contains a backslash)"},
                                                       {std::string("tok\0.json", 9), "NUL or control character"},
                                                       {"", "unsafe file name (empty)"}};
  for (const auto& [name, why] : cases) {
    ExpectRule([n = name](Manifest& m) { m.tokenizer.files[0].name = n; }, StatusCode::kValidation, why);
  }
}
TEST(Validate, UnsafeSourcePaths) {
  const std::pair<const char*, const char*> cases[] = {{"/etc/passwd", "unsafe path (absolute)"},
                                                       {"a/../b", "unsafe path (\"..\" component)"},
                                                       {"a//b", "bad component \"\""},
                                                       {"a\\b", "bad component"}};
  for (const auto& [name, why] : cases) {
    ExpectRule([n = std::string(name)](Manifest& m) { m.metadata.source.files[0].name = n; }, StatusCode::kValidation,
               why);
  }
}
TEST(Validate, SourceFileListedTwice) {
  ExpectRule([](Manifest& m) { m.metadata.source.files.push_back(m.metadata.source.files[0]); },
             StatusCode::kValidation, "metadata.source.files[2].name \"config.json\": listed twice");
}
TEST(Validate, EmptyConverterName) {
  ExpectRule([](Manifest& m) { m.metadata.converter.name.clear(); }, StatusCode::kSchema,
             "metadata.converter.name: must not be empty");
}
TEST(Validate, BadFlagKey) {
  ExpectRule([](Manifest& m) { m.metadata.converter.flags["bad key"] = "x"; }, StatusCode::kValidation,
             "metadata.converter.flags key \"bad key\"");
}
TEST(Validate, BadConvertedAt) {
  ExpectRule([](Manifest& m) { m.metadata.converted_at = "2024-13-01T00:00:00Z"; }, StatusCode::kValidation,
             "metadata.convertedAt: \"2024-13-01T00:00:00Z\" is not YYYY-MM-DDTHH:MM:SSZ");
}
TEST(Validate, BadKernelRepins) {
  const std::string a = "sha256:" + std::string(64, 'a');
  const std::string b = "sha256:" + std::string(64, 'b');
  ExpectRule([&](Manifest& m) { m.metadata.kernel_repins = {{"rms norm", a, b}}; }, StatusCode::kValidation,
             "metadata.kernelRepins[0].kernel");
  ExpectRule([&](Manifest& m) { m.metadata.kernel_repins = {{"rmsnorm", "sha256:ABC", b}}; }, StatusCode::kSchema,
             "metadata.kernelRepins[0].from: \"sha256:ABC\" is not \"sha256:<64 lowercase hex>\"");
  ExpectRule([&](Manifest& m) { m.metadata.kernel_repins = {{"rmsnorm", a, b}, {"rmsnorm", b, a.substr(7)}}; },
             StatusCode::kSchema, "metadata.kernelRepins[1].to");
  ExpectRule([&](Manifest& m) { m.metadata.kernel_repins = {{"rmsnorm", a, a}}; }, StatusCode::kValidation,
             "metadata.kernelRepins[0]: from and to are the same digest");
}

// ---- goldens ----
TEST(Validate, GoldenOutsideGoldenDir) {
  for (const char* name : {"hf-f32.json", "golden/../manifest.json", "golden/sub/x.json", "/golden/x"}) {
    ExpectRule([n = std::string(name)](Manifest& m) { m.goldens[0].name = n; }, StatusCode::kValidation,
               "unsafe file name");
  }
}
TEST(Validate, GoldenListedTwice) {
  ExpectRule([](Manifest& m) { m.goldens[1].name = m.goldens[0].name; }, StatusCode::kValidation,
             "goldens[1].name \"golden/hf-f32.json\": listed twice");
}
TEST(Validate, GoldenBadKind) {
  ExpectRule([](Manifest& m) { m.goldens[0].kind = "Logits"; }, StatusCode::kValidation, "goldens[0].kind \"Logits\"");
}

// ---- shards ----
TEST(Validate, NoShards) {
  ExpectRule([](Manifest& m) { m.shards.clear(); }, StatusCode::kValidation, "shards: a pack has at least one shard");
}
TEST(Validate, ShardIndexMismatch) {
  ExpectRule([](Manifest& m) { m.shards[1].index = 7; }, StatusCode::kValidation, "shard 1: index 7 != position 1");
}
TEST(Validate, ShardFilenameMismatch) {
  ExpectRule([](Manifest& m) { m.shards[2].filename = "../shard_00002.bin"; }, StatusCode::kValidation,
             "shard 2: filename \"../shard_00002.bin\" != \"shard_00002.bin\"");
}
TEST(Validate, ShardZeroSize) {
  ExpectRule([](Manifest& m) { m.shards.back().size_bytes = 0; }, StatusCode::kValidation, "size must be > 0");
}
TEST(Validate, ShardStreamOffsetMismatch) {
  ExpectRule([](Manifest& m) { m.shards[1].stream_offset_bytes = 1; }, StatusCode::kValidation,
             "shard 1: offset 1 != 65536 (sum of the sizes of the shards before it)");
}
TEST(Validate, TotalSizeMismatch) {
  ExpectRule([](Manifest& m) { m.total_size_bytes += 1; }, StatusCode::kValidation, "(sum of the shard sizes)");
}

// ---- tensors ----
TEST(Validate, NoTensors) {
  ExpectRule([](Manifest& m) { m.tensors.clear(); }, StatusCode::kValidation,
             "tensors: a pack has at least one tensor");
}
TEST(Validate, BadTensorName) {
  ExpectRule([](Manifest& m) { Tensor(m, kNorm).name = "model.{L}.norm"; }, StatusCode::kValidation,
             "tensor name \"model.{L}.norm\": must not contain '{'");
}
TEST(Validate, DuplicateTensorName) {
  ExpectRule([](Manifest& m) { m.tensors.push_back(Tensor(m, kNorm)); }, StatusCode::kValidation,
             "tensor model.norm.weight: duplicate tensor name");
}
TEST(Validate, SizeDisagreesWithShape) {
  ExpectRule(
      [](Manifest& m) {
        Tensor(m, kDown0).shape = {256, 512};
      },
      StatusCode::kValidation,
      "tensor model.layers.0.mlp.down_proj.weight: size 36864 != 73728 expected for Q4_K [256, 512] row_wise");
}
TEST(Validate, SizeDisagreesWithLayout) {
  ExpectRule([](Manifest& m) { Tensor(m, "model.layers.0.self_attn.k_proj.weight").layout = Layout::kColumnWise; },
             StatusCode::kValidation, "size 9216 != 36864 expected for Q4_K [64, 256] column_wise");
}
TEST(Validate, LayoutOnNonBlockDtype) {
  ExpectRule([](Manifest& m) { Tensor(m, kNorm).layout = Layout::kRowWise; }, StatusCode::kValidation,
             "tensor model.norm.weight: F32 [256]: layout row_wise given for a non-block dtype");
}
TEST(Validate, BlockDtypeWithoutLayout) {
  ExpectRule([](Manifest& m) { Tensor(m, kDown0).layout.reset(); }, StatusCode::kValidation,
             "Q4_K [256, 256]: block-quantized tensor without layout");
}
TEST(Validate, OneDimQuantized) {
  ExpectRule(
      [](Manifest& m) {
        TensorEntry& t = Tensor(m, kNorm);
        t.dtype = DType::kQ8_0;
        t.layout = Layout::kFlat;
      },
      StatusCode::kValidation, "Q8_0 [256]: block-quantized tensor must be 2-D [N, K]");
}
TEST(Validate, TooManyDims) {
  ExpectRule(
      [](Manifest& m) {
        Tensor(m, kNorm).shape = {1, 1, 1, 1, 256};
      },
      StatusCode::kValidation, "shape must have 1 to 4 dimensions, has 5");
}
TEST(Validate, ZeroDim) {
  ExpectRule([](Manifest& m) { Tensor(m, kNorm).shape = {0}; }, StatusCode::kValidation, "F32 [0]: zero dimension");
}
TEST(Validate, BadGroup) {
  ExpectRule([](Manifest& m) { Tensor(m, kDown0).group = "layer.03"; }, StatusCode::kValidation,
             "group \"layer.03\" is not \"embed\", \"head\" or \"layer.<N>\"");
  ExpectRule([](Manifest& m) { Tensor(m, kDown0).group = "layer.3"; }, StatusCode::kValidation,
             "group \"layer.3\": layer 3 >= numLayers 3");
}
TEST(Validate, TensorBadHash) {
  ExpectRule([](Manifest& m) { Tensor(m, kEmbed).sha256_hex = "abc"; }, StatusCode::kSchema,
             "tensor model.embed_tokens.weight.hash: \"abc\" is not a sha256");
}

// ---- placement ----
TEST(Validate, NoPlacement) {
  ExpectRule([](Manifest& m) { Tensor(m, kNorm).placement.spans.clear(); }, StatusCode::kValidation,
             "tensor model.norm.weight: has no placement");
}
TEST(Validate, ShardDoesNotExist) {
  ExpectRule([](Manifest& m) { Tensor(m, kNorm).placement.spans[0].shard_index = 99; }, StatusCode::kValidation,
             "shard 99 does not exist (the pack has ");
}
TEST(Validate, OffsetOutOfShardBounds) {
  ExpectRule(
      [](Manifest& m) {
        Span& s = Tensor(m, kNorm).placement.spans[0];
        s.offset_bytes = m.shards[s.shard_index].size_bytes - 512;
      },
      StatusCode::kValidation, " + 1024 > shard size ");
}
TEST(Validate, MisalignedTensorStart) {
  ExpectRule(
      [](Manifest& m) { Tensor(m, "model.layers.0.input_layernorm.weight").placement.spans[0].offset_bytes += 4; },
      StatusCode::kValidation,
      "tensor model.layers.0.input_layernorm.weight: shard 3: offset 18436 is not a multiple of 256");
}
TEST(Validate, SpansNotInConsecutiveShards) {
  ExpectRule([](Manifest& m) { Tensor(m, kEmbed).placement.spans[2].shard_index = 3; }, StatusCode::kValidation,
             "tensor model.embed_tokens.weight: span 2: spans are not in consecutive shards (shard 3 follows shard 1)");
}
TEST(Validate, ContinuationSpanNotAtOffsetZero) {
  ExpectRule(
      [](Manifest& m) {
        Span& s = Tensor(m, kEmbed).placement.spans[3];
        s.offset_bytes = 256;
      },
      StatusCode::kValidation, "span 3: shard 3: a continuation span must start at offset 0, starts at 256");
}
TEST(Validate, SpanNotRunningToShardEnd) {
  ExpectRule(
      [](Manifest& m) {
        std::vector<Span>& spans = Tensor(m, kEmbed).placement.spans;
        spans[0].size_bytes -= 256;
        spans[3].size_bytes += 256;
      },
      StatusCode::kValidation, "span 0: shard 0: a span followed by another must end at the shard end 65536");
}
TEST(Validate, SpansDoNotCoverSize) {
  ExpectRule([](Manifest& m) { Tensor(m, kEmbed).placement.spans[3].size_bytes -= 2; }, StatusCode::kValidation,
             "tensor model.embed_tokens.weight: spans cover 215038 bytes != size 215040");
}
TEST(Validate, EmptySpan) {
  ExpectRule([](Manifest& m) { Tensor(m, kNorm).placement.spans[0].size_bytes = 0; }, StatusCode::kValidation,
             "tensor model.norm.weight: empty span");
}
TEST(Validate, OverlappingTensors) {
  ExpectRule(
      [](Manifest& m) {
        const Span& a = Tensor(m, "model.layers.0.input_layernorm.weight").placement.spans[0];
        Tensor(m, "model.layers.0.post_attention_layernorm.weight").placement.spans[0] = a;
      },
      StatusCode::kValidation, "overlap in shard");
}
TEST(Validate, ShardWithoutTensorBytes) {
  ExpectRule(
      [](Manifest& m) {
        m.shards.push_back(ShardInfo{static_cast<uint32_t>(m.shards.size()),
                                     shard_filename(static_cast<uint32_t>(m.shards.size())), 256, std::string(64, '0'),
                                     m.total_size_bytes});
        m.total_size_bytes += 256;
      },
      StatusCode::kValidation, "holds no tensor bytes");
}
TEST(Validate, TensorCountsMismatch) {
  ExpectRule(
      [](Manifest& m) { m.quantization_info.tensor_counts[DType::kQ8_0] = 1; }, StatusCode::kValidation,
      "quantizationInfo.tensorCounts: recorded {F32: 19, Q8_0: 1, Q4_K: 19, Q6_K: 3} != {F32: 19, Q4_K: 19, Q6_K: 3}");
}
TEST(Validate, LayoutCountsMismatch) {
  ExpectRule([](Manifest& m) { m.quantization_info.layout_counts.clear(); }, StatusCode::kValidation,
             "quantizationInfo.layoutCounts: recorded {} != {row_wise: 22}");
}

// ---- execution graph ----
TEST(Validate, UnknownKernelKey) {
  ExpectRule(
      [](Manifest& m) {
        Graph(m).decode.push_back(ExecStep{"down_proj", "matmul_q5k", std::nullopt});
      },
      StatusCode::kValidation, "inference.execution.decode[5]: kernel key \"matmul_q5k\" is not in");
}
TEST(Validate, KernelKeyInGroupUnknown) {
  ExpectRule([](Manifest& m) { std::get<LayerGroup>(Graph(m).prefill[2]).steps[0].kernel_key = "nope"; },
             StatusCode::kValidation, "inference.execution.prefill[2].steps[0]: kernel key \"nope\"");
}
TEST(Validate, BadKernelDigest) {
  ExpectRule([](Manifest& m) { Graph(m).kernels["rmsnorm"].digest = "md5:00"; }, StatusCode::kSchema,
             "kernels.rmsnorm.digest: \"md5:00\" is not \"sha256:<64 lowercase hex>\"");
}
TEST(Validate, UnsafeKernelFile) {
  ExpectRule([](Manifest& m) { Graph(m).kernels["rmsnorm"].file = "../../etc/x.comp"; }, StatusCode::kValidation,
             "kernels.rmsnorm.kernel \"../../etc/x.comp\": unsafe path");
}
TEST(Validate, WeightRefNamesNoTensor) {
  ExpectRule([](Manifest& m) { Graph(m).post_layer[0].weight_ref = "model.final_norm.weight"; },
             StatusCode::kValidation, "postLayer[0]: weight ref \"model.final_norm.weight\" names no tensor");
}
TEST(Validate, TemplatedWeightRefMissingForALayer) {
  ExpectRule(
      [](Manifest& m) {
        std::erase_if(m.tensors,
                      [](const TensorEntry& t) { return t.name == "model.layers.2.self_attn.q_proj.weight"; });
        testing::place_tensors(m, 65536);
        fill_derived_fields(m);
      },
      StatusCode::kValidation, "for layer 2 names no tensor (\"model.layers.2.self_attn.q_proj.weight\")");
}
TEST(Validate, LayerTemplateOutsideLayerPhase) {
  ExpectRule([](Manifest& m) { Graph(m).pre_layer[0].weight_ref = "model.layers.{L}.input_layernorm.weight"; },
             StatusCode::kValidation, "uses {L} outside a per-layer phase");
}
TEST(Validate, MalformedWeightRef) {
  ExpectRule([](Manifest& m) { Graph(m).post_layer[0].weight_ref = "model.layers.{N}.x"; }, StatusCode::kValidation,
             "is malformed (only \"{L}\" may appear in braces)");
}
TEST(Validate, GroupLayerOutOfRange) {
  ExpectRule([](Manifest& m) { std::get<LayerGroup>(Graph(m).decode[3]).layers = {3}; }, StatusCode::kValidation,
             "decode[3].layers: layer 3 >= numLayers 3");
}
TEST(Validate, GroupLayerListedTwice) {
  ExpectRule(
      [](Manifest& m) {
        std::get<LayerGroup>(Graph(m).decode[2]).layers = {0, 0};
      },
      StatusCode::kValidation, "decode[2].layers: layer 0 listed twice");
}
TEST(Validate, EmptyGroup) {
  ExpectRule([](Manifest& m) { std::get<LayerGroup>(Graph(m).decode[2]).steps.clear(); }, StatusCode::kValidation,
             "decode[2].steps: must not be empty");
}
TEST(Validate, BadOpName) {
  ExpectRule([](Manifest& m) { Graph(m).pre_layer[0].op = "Embed Tokens"; }, StatusCode::kValidation,
             "preLayer[0] op \"Embed Tokens\"");
}
TEST(Validate, PolicyNotFailClosed) {
  ExpectRule([](Manifest& m) { Graph(m).policies.unresolved_kernel = "fallback"; }, StatusCode::kSchema,
             "policies.unresolvedKernel: \"fallback\" is not \"error\"");
}
TEST(Validate, NonFiniteSpecConstant) {
  ExpectRule([](Manifest& m) { Graph(m).kernels["rmsnorm"].constants["EPS"] = std::nan(""); }, StatusCode::kNonFinite,
             "kernels.rmsnorm.constants.EPS: not finite");
}

}  // namespace
}  // namespace rdrr
