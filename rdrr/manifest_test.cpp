// Manifest data model and JSON: round trips, canonical form, and every parse-time rejection.
#include "rdrr/manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "rdrr/manifest_json.h"
#include "rdrr/manifest_testutil.h"
#include "rdrr/validate.h"

namespace rdrr {
namespace {

using nlohmann::json;
using testing::tiny_gemma3_manifest;

void ExpectError(const Status& s, StatusCode code, std::string_view fragment) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "message: " << s.message() << "\nwanted: " << fragment;
}

const Manifest& Tiny() {
  static const Manifest m = tiny_gemma3_manifest();
  return m;
}

// The canonical JSON of Tiny(), mutated by `edit`, then parsed.
Result<Manifest> ParseEdited(const std::function<void(json&)>& edit) {
  json j = json::parse(serialize_manifest(Tiny()));
  edit(j);
  return parse_manifest(j.dump(1), "edited.json");
}

// ---- positive: the data model and round trips ----

TEST(ManifestModel, TinyGemma3IsValidAndRealistic) {
  const Manifest& m = Tiny();
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  EXPECT_EQ(m.tensors.size(), 41u);
  const TensorEntry* embed = find_tensor(m, "model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->size_bytes, 1024u * 210u);    // Q6_K row_wise: 1024 rows x 1 block
  EXPECT_EQ(embed->placement.spans.size(), 4u);  // 215040 bytes over 64 KiB shards
  EXPECT_EQ(m.quantization_info.tensor_counts.at(quant::DType::kQ6_K), 3u);
  EXPECT_EQ(m.quantization_info.tensor_counts.at(quant::DType::kQ4_K), 19u);
  EXPECT_EQ(m.quantization_info.tensor_counts.at(quant::DType::kF32), 19u);
  EXPECT_EQ(m.quantization_info.layout_counts.at(quant::Layout::kRowWise), 22u);
}

TEST(ManifestJson, RoundTripIsExact) {
  const std::string text = serialize_manifest(Tiny());
  Result<Manifest> parsed = parse_manifest(text, "tiny.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == Tiny());
  EXPECT_EQ(serialize_manifest(*parsed), text);
}

TEST(ManifestJson, SerializationIsByteStableAndCanonical) {
  const std::string a = serialize_manifest(Tiny());
  const std::string b = serialize_manifest(tiny_gemma3_manifest());
  EXPECT_EQ(a, b);
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a.substr(0, 18), "{\n  \"architecture\"");  // keys sorted, 2-space indent
  EXPECT_EQ(a.substr(a.size() - 2), "}\n");
  EXPECT_EQ(a.find("convertedAt"), std::string::npos);  // no timestamp unless asked for
  EXPECT_EQ(a.find('\t'), std::string::npos);
}

TEST(ManifestJson, TensorOrderDoesNotChangeTheBytes) {
  Manifest shuffled = Tiny();
  std::reverse(shuffled.tensors.begin(), shuffled.tensors.end());
  EXPECT_EQ(serialize_manifest(shuffled), serialize_manifest(Tiny()));
  canonicalize(shuffled);
  EXPECT_TRUE(shuffled == Tiny());
}

TEST(ManifestJson, OptionalFieldsRoundTrip) {
  Manifest m = Tiny();
  m.metadata.converted_at = "2024-05-01T12:00:00Z";
  m.inference.rope = RopeConfig{};
  m.inference.rope.theta = 500000.0;
  m.inference.rope.local_theta = 10000.0;
  m.inference.rope.scaling_type = RopeScalingType::kLlama3;
  m.inference.rope.scaling_factor = 32.0;
  m.inference.rope.low_freq_factor = 1.0;
  m.inference.rope.high_freq_factor = 4.0;
  m.inference.rope.original_max_positions = 8192;
  m.inference.rope.convention = RopeConvention::kInterleaved;
  m.inference.rope.partial_rotary_factor = 0.5;
  m.inference.attention.attn_logit_softcapping = 50.0;
  m.inference.output.final_logit_softcapping = 30.0;
  m.tokenizer.pad_token_id = 0;
  m.tokenizer.eos_token_ids = {2, 3};
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  Result<Manifest> parsed = parse_manifest(serialize_manifest(m), "opt.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == m);
}

TEST(ManifestJson, MoeRoundTripsAndIsAbsentForDenseModels) {
  Manifest m = Tiny();
  EXPECT_EQ(serialize_manifest(m).find("\"moe\""), std::string::npos);
  m.architecture.moe = MoeArchitecture{.num_experts = 8, .experts_per_token = 2, .expert_intermediate_size = 64,
                                       .normalize_top_k = true, .shared_expert_intermediate_size = 128,
                                       .shared_expert_gated = true, .dense_layers = {0, 2}};
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  const std::string text = serialize_manifest(m);
  Result<Manifest> parsed = parse_manifest(text, "moe.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == m);
  EXPECT_FALSE(is_moe_layer(parsed->architecture, 0));
  EXPECT_TRUE(is_moe_layer(parsed->architecture, 1));
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j.at("architecture").at("moe").at("denseLayers"), nlohmann::json::parse("[0, 2]"));
  // A "moe" object with numExperts 0, a missing or an unknown field: kSchema naming it.
  const auto expect_schema = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& fragment) {
    nlohmann::json bad = j;
    edit(bad.at("architecture").at("moe"));
    const Result<Manifest> r = parse_manifest(bad.dump(), "moe.json");
    EXPECT_EQ(r.status().code(), StatusCode::kSchema) << r.status().to_string();
    EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
  };
  expect_schema([](nlohmann::json& o) { o["numExperts"] = 0; }, "numExperts");
  expect_schema([](nlohmann::json& o) { o.erase("normalizeTopK"); }, "normalizeTopK");
  expect_schema([](nlohmann::json& o) { o["router"] = "sigmoid"; }, "router");
  expect_schema([](nlohmann::json& o) { o["denseLayers"] = {1, -1}; }, "denseLayers");
}

TEST(ManifestJson, KernelRepinsRoundTripInOrderAndAreAbsentWhenEmpty) {
  Manifest m = Tiny();
  EXPECT_EQ(serialize_manifest(m).find("kernelRepins"), std::string::npos);
  const std::string a = "sha256:" + std::string(64, 'a');
  const std::string b = "sha256:" + std::string(64, 'b');
  m.metadata.kernel_repins = {{"rmsnorm", a, b}, {"matmul_q4k", b, a}};
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  const std::string text = serialize_manifest(m);
  EXPECT_NE(text.find("\"kernelRepins\""), std::string::npos);
  Result<Manifest> parsed = parse_manifest(text, "repins.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == m);
  EXPECT_EQ(parsed->metadata.kernel_repins[0].kernel, "rmsnorm");
  EXPECT_EQ(parsed->metadata.kernel_repins[1].kernel, "matmul_q4k");
}

TEST(ManifestParse, RejectsMalformedKernelRepins) {
  ExpectError(ParseEdited([](json& j) { j["metadata"]["kernelRepins"] = json::object(); }).status(),
              StatusCode::kSchema, "/metadata/kernelRepins");
  ExpectError(ParseEdited([](json& j) {
                j["metadata"]["kernelRepins"] = json::array({{{"kernel", "x"}, {"from", "sha256:"}}});
              }).status(),
              StatusCode::kSchema, "/metadata/kernelRepins/0");
  ExpectError(ParseEdited([](json& j) {
                j["metadata"]["kernelRepins"] =
                    json::array({{{"kernel", "x"}, {"from", "a"}, {"to", "b"}, {"when", "now"}}});
              }).status(),
              StatusCode::kSchema, "unknown field \"when\"");
}

TEST(ManifestJson, YarnRoundTrips) {
  Manifest m = Tiny();
  RopeConfig& r = m.inference.rope;
  r.scaling_type = RopeScalingType::kYarn;
  r.scaling_factor = 4.0;
  r.original_max_positions = 32768;
  r.yarn_beta_fast = 32.0;
  r.yarn_beta_slow = 1.0;
  r.yarn_attention_factor = 1.1386294361119891;
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  Result<Manifest> parsed = parse_manifest(serialize_manifest(m), "yarn.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == m);
}

TEST(ManifestJson, LongRopeAndFreqFactorsRoundTrip) {
  Manifest m = Tiny();
  const size_t pairs = static_cast<size_t>(m.architecture.head_dim / 2);
  RopeConfig& r = m.inference.rope;
  r.scaling_type = RopeScalingType::kLongRope;
  r.original_max_positions = 4096;
  r.attention_factor = 1.1902380714238083;
  for (size_t i = 0; i < pairs; ++i) {
    r.short_factors.push_back(1.0 + 0.01 * static_cast<double>(i));
    r.long_factors.push_back(1.0 + 1.7 * static_cast<double>(i));
  }
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  Result<Manifest> parsed = parse_manifest(serialize_manifest(m), "longrope.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == m);

  m = Tiny();
  m.inference.rope.scaling_type = RopeScalingType::kFreqFactors;
  for (size_t i = 0; i < pairs; ++i) m.inference.rope.freq_factors.push_back(i < pairs / 2 ? 1.0 : 8.0);
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  parsed = parse_manifest(serialize_manifest(m), "freq_factors.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == m);
  EXPECT_TRUE(rope_needs_freq_table(m.inference.rope));
}

TEST(ManifestJson, SpecConstantsKeepTheirType) {
  const Result<Manifest> parsed = parse_manifest(serialize_manifest(Tiny()), "t.json");
  ASSERT_TRUE(parsed.ok());
  const KernelSpec& k = parsed->inference.execution->kernels.at("matmul_q4k");
  EXPECT_TRUE(std::holds_alternative<int64_t>(k.constants.at("TILE")));
  EXPECT_TRUE(std::holds_alternative<bool>(k.constants.at("USE_FP16")));
  EXPECT_TRUE(std::holds_alternative<double>(k.constants.at("SCALE")));
  Manifest m = Tiny();
  m.inference.execution->kernels["matmul_q4k"].constants["WHOLE"] = 2.0;  // integral double stays a double
  m.inference.execution->kernels["matmul_q4k"].constants["NEG"] = int64_t{-7};
  const Result<Manifest> again = parse_manifest(serialize_manifest(m), "t.json");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again == m);
}

TEST(ManifestJson, FusedGateUpAndColumnWiseValidate) {
  Manifest m = Tiny();
  for (TensorEntry& t : m.tensors) {
    if (t.name == "model.layers.0.mlp.gate_proj.weight") {
      t.name = "model.layers.0.mlp.gate_up_proj.weight";
      t.shape = {512, 256};
      t.layout = quant::Layout::kColumnWise;  // 256 columns x ceil(512/256) blocks x 144
      t.size_bytes = 256 * 2 * 144;
    }
  }
  std::erase_if(m.tensors, [](const TensorEntry& t) { return t.name == "model.layers.0.mlp.up_proj.weight"; });
  m.inference.execution.reset();
  testing::place_tensors(m, 65536);
  canonicalize(m);
  fill_derived_fields(m);
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  Result<Manifest> parsed = parse_manifest(serialize_manifest(m), "fused.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == m);
}

TEST(ManifestSize, LayoutFormulas) {
  using quant::DType;
  using quant::Layout;
  const std::vector<uint64_t> shape{300, 520};  // N=300 rows, K=520 inputs
  EXPECT_EQ(expected_tensor_size_bytes(DType::kQ4_K, shape, Layout::kFlat).value(), 610u * 144);  // ceil(156000/256)
  EXPECT_EQ(expected_tensor_size_bytes(DType::kQ4_K, shape, Layout::kRowWise).value(), 300u * 3 * 144);
  EXPECT_EQ(expected_tensor_size_bytes(DType::kQ4_K, shape, Layout::kColumnWise).value(), 520u * 2 * 144);
  EXPECT_EQ(expected_tensor_size_bytes(DType::kQ8_0, shape, Layout::kRowWise).value(), 300u * 17 * 34);
  EXPECT_EQ(expected_tensor_size_bytes(DType::kQ6_K, shape, Layout::kColumnWise).value(), 520u * 2 * 210);
  EXPECT_EQ(expected_tensor_size_bytes(DType::kBF16, shape, std::nullopt).value(), 300u * 520 * 2);
  EXPECT_EQ(expected_tensor_size_bytes(DType::kQ5_K, shape, Layout::kRowWise).value(), 300u * 3 * 176);
  EXPECT_EQ(expected_tensor_size_bytes(DType::kQ4_0, shape, Layout::kRowWise).value(), 300u * 17 * 18);
  ExpectError(expected_tensor_size_bytes(DType::kQ5_0, shape, Layout::kColumnWise).status(), StatusCode::kValidation,
              "Q5_0 [300, 520]: layout column_wise, expected row_wise or flat");
  EXPECT_EQ(expected_tensor_size_bytes(DType::kF32, std::vector<uint64_t>{2, 3, 4, 5}, std::nullopt).value(), 480u);
  ExpectError(
      expected_tensor_size_bytes(DType::kF32, std::vector<uint64_t>{1ull << 30, 1ull << 30}, std::nullopt).status(),
      StatusCode::kValidation, "exceeds 2^53");
  ExpectError(expected_tensor_size_bytes(DType::kQ4_K, std::vector<uint64_t>{1ull << 53, 1ull << 53}, Layout::kRowWise)
                  .status(),
              StatusCode::kValidation, "exceeds 2^53");
}

// ---- negative: parse-time rules ----

TEST(ManifestParse, RejectsDuplicateKeyAtTopLevel) {
  std::string text = serialize_manifest(Tiny());
  text.insert(1, "\n  \"modelId\": \"other\",");
  ExpectError(parse_manifest(text, "dup.json").status(), StatusCode::kParse,
              "duplicate JSON key 'modelId' in object (root)");
}

TEST(ManifestParse, RejectsDuplicateKeyInTensor) {
  std::string text = serialize_manifest(Tiny());
  const std::string anchor = "\"model.norm.weight\": {";
  const size_t at = text.find(anchor);
  ASSERT_NE(at, std::string::npos);
  text.insert(at + anchor.size(), "\"size\": 1024,");
  ExpectError(parse_manifest(text, "dup.json").status(), StatusCode::kParse,
              "duplicate JSON key 'size' in object /tensors/model.norm.weight");
}

TEST(ManifestParse, RejectsDuplicateKeyInsideArrayElement) {
  const std::string text = R"({"shards": [{"index": 0}, {"index": 1, "index": 1}]})";
  ExpectError(parse_manifest(text, "dup.json").status(), StatusCode::kParse,
              "duplicate JSON key 'index' in object /shards/1");
}

TEST(ManifestParse, RejectsNumberOverflowingToInfinity) {
  std::string text = serialize_manifest(Tiny());
  const size_t at = text.find("\"ropeTheta\": 1000000.0");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 22, "\"ropeTheta\": 1e999");
  ExpectError(parse_manifest(text, "inf.json").status(), StatusCode::kNonFinite, "not finite");
}

TEST(ManifestParse, RejectsNaNLiteral) {
  ExpectError(parse_manifest(R"({"version": NaN})", "nan.json").status(), StatusCode::kParse, "invalid JSON");
}

TEST(ManifestParse, RejectsInvalidUtf8ByteOrderMarkAndComments) {
  ExpectError(parse_manifest("{\"modelId\": \"\xff\"}", "u.json").status(), StatusCode::kParse, "not valid UTF-8 at byte 13");
  ExpectError(parse_manifest("\xEF\xBB\xBF{}", "bom.json").status(), StatusCode::kParse, "byte-order mark");
  ExpectError(parse_manifest("{} // c", "c.json").status(), StatusCode::kParse, "invalid JSON");
}

TEST(ManifestParse, RejectsOversizedText) {
  const std::string text(kMaxManifestBytes + 1, ' ');
  ExpectError(parse_manifest(text, "big.json").status(), StatusCode::kParse, "exceeds the limit");
}

TEST(ManifestParse, RejectsUnknownVersionBeforeAnythingElse) {
  ExpectError(parse_manifest(R"({"version": 2, "somethingNew": true})", "v2.json").status(), StatusCode::kSchema,
              "unsupported manifest version 2 (this reader supports 1)");
}

TEST(ManifestParse, RejectsMissingRequiredField) {
  ExpectError(ParseEdited([](json& j) { j["architecture"].erase("headDim"); }).status(), StatusCode::kSchema,
              "/architecture: missing required field \"headDim\"");
}

TEST(ManifestParse, RejectsUnknownTopLevelField) {
  ExpectError(ParseEdited([](json& j) { j["extra"] = 1; }).status(), StatusCode::kSchema,
              "(root): unknown field \"extra\"");
}

TEST(ManifestParse, RejectsUnknownNestedField) {
  ExpectError(ParseEdited([](json& j) { j["tensors"]["model.norm.weight"]["scale"] = 1; }).status(),
              StatusCode::kSchema, "/tensors/model.norm.weight: unknown field \"scale\"");
}

TEST(ManifestParse, RejectsWrongType) {
  ExpectError(ParseEdited([](json& j) { j["architecture"]["numLayers"] = "3"; }).status(), StatusCode::kSchema,
              "/architecture/numLayers: must be an integer, got string");
}

TEST(ManifestParse, RejectsNegativeInteger) {
  ExpectError(ParseEdited([](json& j) { j["shards"][0]["size"] = -5; }).status(), StatusCode::kSchema,
              "/shards/0/size: must be a non-negative integer, got -5");
}

TEST(ManifestParse, RejectsFractionalInteger) {
  ExpectError(ParseEdited([](json& j) { j["tensors"]["model.norm.weight"]["size"] = 1024.5; }).status(),
              StatusCode::kSchema, "/tensors/model.norm.weight/size: must be an integer, got 1024.5");
}

TEST(ManifestParse, RejectsIntegerAbove2To53) {
  ExpectError(ParseEdited([](json& j) { j["totalSize"] = (1ull << 53) + 1; }).status(), StatusCode::kSchema,
              "/totalSize: integer 9007199254740993 exceeds the limit 9007199254740992");
}

TEST(ManifestParse, RejectsUnknownEnumValues) {
  ExpectError(ParseEdited([](json& j) { j["tensors"]["model.norm.weight"]["dtype"] = "Q4_1"; }).status(),
              StatusCode::kSchema, "/tensors/model.norm.weight/dtype: unknown value \"Q4_1\"");
  ExpectError(
      ParseEdited([](json& j) { j["tensors"]["model.layers.0.mlp.up_proj.weight"]["layout"] = "row"; }).status(),
      StatusCode::kSchema, "layout: unknown value \"row\"");
  ExpectError(ParseEdited([](json& j) { j["architecture"]["family"] = "gpt2"; }).status(), StatusCode::kSchema,
              "/architecture/family: unknown value \"gpt2\"");
}

TEST(ManifestParse, RejectsSingleSpanInSpansForm) {
  ExpectError(ParseEdited([](json& j) {
                json& t = j["tensors"]["model.norm.weight"];
                t["spans"] = json::array({{{"shardIndex", t["shard"]}, {"offset", t["offset"]}, {"size", t["size"]}}});
                t.erase("shard");
                t.erase("offset");
              }).status(),
              StatusCode::kSchema, "must list at least 2 spans");
}

TEST(ManifestParse, RejectsSpansTogetherWithShard) {
  ExpectError(ParseEdited([](json& j) { j["tensors"]["model.embed_tokens.weight"]["shard"] = 0; }).status(),
              StatusCode::kSchema, "has both \"spans\" and \"shard\"/\"offset\"");
}

TEST(ManifestParse, RejectsMalformedStep) {
  ExpectError(
      ParseEdited([](json& j) { j["inference"]["execution"]["preLayer"][0] = json::array({"embed"}); }).status(),
      StatusCode::kSchema, "/inference/execution/preLayer/0: a step must be an array");
}

TEST(ManifestParse, ParsedManifestStillNeedsValidation) {
  // Schema-valid but inconsistent: parse accepts, validate rejects (read_manifest_file does both).
  Result<Manifest> m = ParseEdited([](json& j) { j["totalSize"] = 1; });
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ExpectError(validate_manifest(*m), StatusCode::kValidation, "totalSize 1 != ");
}

// ---- scale (#26 finding 6): linear work in the number of entries ----

// The tensors object at the kMaxTensors limit: every entry is read (the first one's error is named); past
// it, the count is rejected before any entry is.
TEST(ManifestParse, EmptyTensorObjectsUpToTheLimitAreASchemaErrorAndMoreAreTooMany) {
  const auto with_empty_tensors = [](size_t total) {
    return ParseEdited([total](json& j) {
      json& t = j["tensors"];
      for (size_t i = 0; t.size() < total; ++i) t[std::to_string(i).insert(0, "z.")] = json::object();
    });
  };
  ExpectError(with_empty_tensors(kMaxTensors).status(), StatusCode::kSchema,
              "edited.json: /tensors/z.0: missing required field \"dtype\"");
  ExpectError(with_empty_tensors(100000).status(), StatusCode::kSchema,
              "edited.json: /tensors: 100000 tensors exceed the limit of 65536");
}

TEST(TensorIndex, FindsEveryEntryOfAHundredThousandAndTheFirstOfADuplicate) {
  Manifest m;
  m.tensors.resize(100000);
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    m.tensors[i].name = 't';
    m.tensors[i].name += std::to_string(i);
  }
  TensorEntry dup;
  dup.name = "t7";
  m.tensors.push_back(dup);
  const TensorIndex index(m);
  for (size_t i = 0; i < 100000; ++i) ASSERT_EQ(index.find(m.tensors[i].name), &m.tensors[i]) << i;
  EXPECT_EQ(index.find("t7"), find_tensor(m, "t7"));
  EXPECT_EQ(index.find("t100000"), nullptr);
  EXPECT_EQ(index.find(""), nullptr);
}

}  // namespace
}  // namespace rdrr
