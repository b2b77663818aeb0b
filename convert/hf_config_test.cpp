// read_hf_model_config on configs written into temp folders: every rejection rule, transformers-4 and -5
// RoPE forms, sliding-window rules per family, tokenizer ids and flags.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "convert/model_config.h"
#include "convert/reader_test_util.h"

namespace rdrr::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::test_dir;
using testing::write_file;

json llama() {
  return json::parse(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
    "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
    "vocab_size": 1024, "max_position_embeddings": 512, "rms_norm_eps": 1e-05, "hidden_act": "silu",
    "rope_theta": 10000.0, "bos_token_id": 1, "eos_token_id": 2, "tie_word_embeddings": false})");
}

json gemma3() {
  return json::parse(R"({"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 256,
    "intermediate_size": 256, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 1,
    "head_dim": 64, "vocab_size": 1024, "max_position_embeddings": 512, "rms_norm_eps": 1e-06,
    "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 64, "sliding_window": 32,
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
    "rope_parameters": {"full_attention": {"rope_theta": 1000000.0, "rope_type": "default"},
                        "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}},
    "bos_token_id": 1, "eos_token_id": 2, "dtype": "float32"})");
}

// A checkpoint folder with config.json (raw text), tokenizer.model and optional extra files.
fs::path write_folder(const std::string& config_text,
                      const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  const fs::path dir = test_dir();
  for (const auto& entry : fs::directory_iterator(dir)) fs::remove_all(entry.path());  // fresh per call
  write_file(dir / "config.json", config_text);
  write_file(dir / "tokenizer.model", "spm");
  for (const auto& [name, text] : extra) write_file(dir / name, text);
  return dir;
}

Result<ModelConfig> read(const json& config, const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  return read_hf_model_config(write_folder(config.dump(), extra));
}

bool has_warning(const ModelConfig& c, const std::string& fragment) {
  for (const std::string& w : c.warnings) {
    if (w.find(fragment) != std::string::npos) return true;
  }
  return false;
}

TEST(HfConfig, MinimalLlama) {
  const Result<ModelConfig> c = read(llama());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture.head_dim, 32u);  // hidden / heads
  EXPECT_TRUE(c->tokenizer.add_bos_token);   // no tokenizer.json, no tokenizer_config: Llama adds BOS
  EXPECT_EQ(c->tokenizer_files, std::vector<fs::path>{test_dir() / "tokenizer.model"});
  EXPECT_TRUE(c->warnings.empty());
}

TEST(HfConfig, MissingFolderAndConfig) {
  EXPECT_ERROR(read_hf_model_config(test_dir() / "nope"), StatusCode::kNotFound, "nope");
  EXPECT_ERROR(read_hf_model_config(test_dir()), StatusCode::kNotFound, "config.json");
}

TEST(HfConfig, InvalidJson) {
  EXPECT_ERROR(read_hf_model_config(write_folder("{\"hidden_size\": 256,")), StatusCode::kParse, "config.json");
  EXPECT_ERROR(read_hf_model_config(write_folder("[1, 2]")), StatusCode::kParse, "expected a JSON object");
}

TEST(HfConfig, DuplicateKey) {
  std::string text = llama().dump();
  text.insert(1, "\"hidden_size\": 128, ");
  EXPECT_ERROR(read_hf_model_config(write_folder(text)), StatusCode::kParse, "duplicate JSON key 'hidden_size'");
}

TEST(HfConfig, UnknownArchitectureListsSupported) {
  json j = llama();
  j["architectures"] = {"GPT2LMHeadModel"};
  const Result<ModelConfig> c = read(j);
  EXPECT_ERROR(c, StatusCode::kUnsupported, "'GPT2LMHeadModel' is not supported");
  for (const std::string& s : supported_architectures()) {
    EXPECT_NE(c.status().message().find(s), std::string::npos) << s;
  }
  j.erase("architectures");
  j["model_type"] = "gpt2";
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "model_type");
  j.erase("model_type");
  EXPECT_ERROR(read(j), StatusCode::kSchema, "neither 'architectures' nor 'model_type'");
}

TEST(HfConfig, MissingAndMistypedFields) {
  for (const char* field : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                            "vocab_size", "max_position_embeddings"}) {
    json j = llama();
    j.erase(field);
    EXPECT_ERROR(read(j), StatusCode::kSchema, std::string("config.json: field '") + field + "': missing");
  }
  json j = llama();
  j["hidden_size"] = "256";
  EXPECT_ERROR(read(j), StatusCode::kSchema, "field 'hidden_size': expected a non-negative integer");
  j = llama();
  j["num_hidden_layers"] = 2.5;
  EXPECT_ERROR(read(j), StatusCode::kSchema, "num_hidden_layers");
  j = llama();
  j["rms_norm_eps"] = "x";
  EXPECT_ERROR(read(j), StatusCode::kSchema, "rms_norm_eps");
}

TEST(HfConfig, HeadsMustDivideHiddenWithoutHeadDim) {
  json j = llama();
  j["num_attention_heads"] = 3;
  j["num_key_value_heads"] = 1;
  EXPECT_ERROR(read(j), StatusCode::kValidation, "does not divide hidden_size 256");
  j["head_dim"] = 64;  // explicit head_dim: fine
  EXPECT_TRUE(read(j).ok());
  j = llama();
  j["num_key_value_heads"] = 3;
  EXPECT_ERROR(read(j), StatusCode::kValidation, "not a multiple of numKeyValueHeads");
}

TEST(HfConfig, BadRopeScalingType) {
  json j = llama();
  j["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "'dynamic' is not supported");
  j["rope_scaling"] = {{"type", "longrope"}};
  EXPECT_ERROR(read(j), StatusCode::kSchema, "field 'short_factor': missing");
  j["rope_scaling"] = {{"type", "linear"}, {"rope_type", "yarn"}, {"factor", 2.0}};
  EXPECT_ERROR(read(j), StatusCode::kSchema, "disagree");
  j["rope_scaling"] = {{"rope_type", "linear"}};
  EXPECT_ERROR(read(j), StatusCode::kSchema, "rope_scaling: field 'factor': missing");
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}};
  j["rope_parameters"] = {{"rope_type", "default"}};
  EXPECT_ERROR(read(j), StatusCode::kSchema, "both 'rope_parameters'");
}

TEST(HfConfig, Transformers4Llama3Scaling) {
  json j = llama();
  j["rope_theta"] = 500000.0;
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  const Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const RopeConfig& r = c->inference.rope;
  EXPECT_EQ(r.theta, 500000.0);
  EXPECT_EQ(r.scaling_type, RopeScalingType::kLlama3);
  EXPECT_EQ(r.scaling_factor, std::optional<double>(8.0));
  EXPECT_EQ(r.low_freq_factor, std::optional<double>(1.0));
  EXPECT_EQ(r.high_freq_factor, std::optional<double>(4.0));
  EXPECT_EQ(r.original_max_positions, std::optional<uint64_t>(8192));
  EXPECT_EQ(r.yarn_beta_fast, std::nullopt);
  j["rope_scaling"].erase("low_freq_factor");
  EXPECT_ERROR(read(j), StatusCode::kSchema, "field 'low_freq_factor': missing");
  j["rope_scaling"]["low_freq_factor"] = 4.0;  // high must exceed low
  EXPECT_ERROR(read(j), StatusCode::kValidation, "ropeHighFreqFactor");
}

TEST(HfConfig, Transformers5RopeParametersAndLegacyTypeKey) {
  json j = llama();
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 20000.0}};
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.theta, 20000.0);
  EXPECT_EQ(c->inference.rope.scaling_type, RopeScalingType::kLinear);
  EXPECT_EQ(c->inference.rope.scaling_factor, std::optional<double>(2.0));
  j = llama();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};  // transformers 4 legacy spelling
  c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.scaling_factor, std::optional<double>(4.0));
  j = llama();
  j.erase("rope_theta");  // family default
  c = read(j);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->inference.rope.theta, 10000.0);
}

TEST(HfConfig, YarnResolved) {
  json j = llama();
  j["architectures"] = {"Qwen3ForCausalLM"};
  j["model_type"] = "qwen3";
  j["head_dim"] = 64;
  j["max_position_embeddings"] = 40960;
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const RopeConfig& r = c->inference.rope;
  EXPECT_EQ(r.scaling_type, RopeScalingType::kYarn);
  EXPECT_EQ(r.scaling_factor, std::optional<double>(4.0));  // transformers 5: the explicit factor
  EXPECT_EQ(r.original_max_positions, std::optional<uint64_t>(32768));
  EXPECT_EQ(r.yarn_beta_fast, std::optional<double>(32.0));
  EXPECT_EQ(r.yarn_beta_slow, std::optional<double>(1.0));
  EXPECT_DOUBLE_EQ(*r.yarn_attention_factor, 0.1 * std::log(4.0) + 1.0);
  EXPECT_TRUE(c->inference.attention.query_key_norm);
  EXPECT_FALSE(c->tokenizer.add_bos_token);  // Qwen adds no BOS by default
  j["rope_scaling"]["attention_factor"] = 1.5;
  j["rope_scaling"]["beta_fast"] = 16;
  c = read(j);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->inference.rope.yarn_attention_factor, std::optional<double>(1.5));
  EXPECT_EQ(c->inference.rope.yarn_beta_fast, std::optional<double>(16.0));
  j["rope_scaling"]["truncate"] = false;
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "truncate");
}

// Mixture of experts: each family's fields, transformers' defaults and the dense-layer rule, and the refusals.
TEST(HfConfig, MixtureOfExperts) {
  json j = llama();
  j["architectures"] = {"MixtralForCausalLM"};
  j["model_type"] = "mixtral";
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture.family, ArchFamily::kMixtral);
  const MoeArchitecture& m = c->architecture.moe;
  EXPECT_EQ(m.num_experts, 4u);
  EXPECT_EQ(m.experts_per_token, 2u);
  EXPECT_EQ(m.expert_intermediate_size, 512u);  // Mixtral: intermediate_size is the expert's
  EXPECT_TRUE(m.normalize_top_k);
  EXPECT_EQ(m.shared_expert_intermediate_size, 0u);
  EXPECT_TRUE(m.dense_layers.empty());
  EXPECT_TRUE(is_moe_layer(c->architecture, 0));
  j.erase("num_experts_per_tok");  // MixtralConfig's default, warned
  c = read(j);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->architecture.moe.experts_per_token, 2u);
  EXPECT_TRUE(has_warning(*c, "num_experts_per_tok"));
  j["num_experts_per_tok"] = 5;
  EXPECT_ERROR(read(j), StatusCode::kValidation, "num_experts_per_tok");

  j = llama();
  j["architectures"] = {"Qwen3MoeForCausalLM"};
  j["model_type"] = "qwen3_moe";
  j["num_hidden_layers"] = 4;
  j["num_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 128;
  j["norm_topk_prob"] = true;
  j["decoder_sparse_step"] = 2;  // layers 1 and 3 sparse
  j["mlp_only_layers"] = {3};    // ... but 3 dense
  c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture.family, ArchFamily::kQwen3Moe);
  EXPECT_TRUE(c->inference.attention.query_key_norm);
  EXPECT_EQ(c->architecture.moe.expert_intermediate_size, 128u);
  EXPECT_TRUE(c->architecture.moe.normalize_top_k);
  EXPECT_EQ(c->architecture.moe.dense_layers, (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_TRUE(is_moe_layer(c->architecture, 1));
  EXPECT_FALSE(is_moe_layer(c->architecture, 2));
  j.erase("num_experts");
  j["num_local_experts"] = 6;  // what transformers 5 writes for Qwen3-MoE
  c = read(j);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->architecture.moe.num_experts, 6u);
  j["mlp_only_layers"] = {0, 1, 2, 3};
  EXPECT_ERROR(read(j), StatusCode::kValidation, "every layer is dense");
  j["mlp_only_layers"] = {7};
  EXPECT_ERROR(read(j), StatusCode::kValidation, "mlp_only_layers");
  j["mlp_only_layers"] = json::array();
  j["decoder_sparse_step"] = 0;
  EXPECT_ERROR(read(j), StatusCode::kValidation, "decoder_sparse_step");

  j = llama();
  j["architectures"] = {"Qwen2MoeForCausalLM"};
  j["model_type"] = "qwen2_moe";
  j["num_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 32;
  j["shared_expert_intermediate_size"] = 64;
  c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture.family, ArchFamily::kQwen2Moe);
  EXPECT_TRUE(c->inference.attention.attention_bias);
  EXPECT_FALSE(c->architecture.moe.normalize_top_k);  // norm_topk_prob absent: Qwen2MoeConfig's false
  EXPECT_EQ(c->architecture.moe.shared_expert_intermediate_size, 64u);
  EXPECT_TRUE(c->architecture.moe.shared_expert_gated);
  j["num_experts"] = 300;
  EXPECT_ERROR(read(j), StatusCode::kValidation, "numExperts");
}

TEST(HfConfig, LayerTypesLengthAndValues) {
  json j = gemma3();
  j["layer_types"] = {"sliding_attention", "full_attention"};
  EXPECT_ERROR(read(j), StatusCode::kValidation, "field 'layer_types': 2 entries, but num_hidden_layers is 3");
  j["layer_types"] = {"sliding_attention", "chunked_attention", "full_attention"};
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "layer_types'[1]");
}

TEST(HfConfig, LeftoverPatternDoesNotOverrideLayerTypes) {
  json j = gemma3();
  j["layer_types"] = {"full_attention", "sliding_attention", "full_attention"};
  j["_sliding_window_pattern"] = 6;
  const Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.attention.layer_types,
            (std::vector<LayerType>{LayerType::kFullAttention, LayerType::kSlidingAttention,
                                    LayerType::kFullAttention}));
  EXPECT_TRUE(has_warning(*c, "'_sliding_window_pattern' (6) ignored"));
}

TEST(HfConfig, GemmaTransformers4Style) {
  json j = gemma3();
  j.erase("layer_types");
  j.erase("rope_parameters");
  j["num_hidden_layers"] = 8;
  j["sliding_window_pattern"] = 6;
  j["rope_theta"] = 1000000.0;
  j["rope_local_base_freq"] = 10000.0;
  j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  j["final_logit_softcapping"] = 30.0;
  j["attn_logit_softcapping"] = 50.0;
  const Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  std::vector<LayerType> expected(8, LayerType::kSlidingAttention);
  expected[5] = LayerType::kFullAttention;  // (i + 1) % 6 == 0
  EXPECT_EQ(c->inference.attention.layer_types, expected);
  EXPECT_EQ(c->inference.rope.theta, 1e6);
  EXPECT_EQ(c->inference.rope.local_theta, std::optional<double>(1e4));
  EXPECT_EQ(c->inference.rope.scaling_type, RopeScalingType::kLinear);
  EXPECT_EQ(c->inference.output.final_logit_softcapping, std::optional<double>(30.0));
  EXPECT_EQ(c->inference.attention.attn_logit_softcapping, std::optional<double>(50.0));
  EXPECT_EQ(c->inference.normalization.weight_offset, 1.0);
  EXPECT_TRUE(c->tied_embeddings);  // Gemma's default
}

// Gemma 2: Gemma norms and embeddings, no q/k norm, one RoPE for every layer, Gemma2Config's defaults for the
// soft-caps and the alternating layers; the fields Gemma 3 defaults stay required.
TEST(HfConfig, Gemma2) {
  json j = gemma3();
  j["architectures"] = {"Gemma2ForCausalLM"};
  j["model_type"] = "gemma2";
  j.erase("layer_types");
  j.erase("rope_parameters");
  j["rope_theta"] = 10000.0;
  j["num_hidden_layers"] = 4;
  j["sliding_window"] = 4096;
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->family, "gemma2");
  const std::vector<LayerType> alternate = {LayerType::kSlidingAttention, LayerType::kFullAttention,
                                            LayerType::kSlidingAttention, LayerType::kFullAttention};
  EXPECT_EQ(c->inference.attention.layer_types, alternate);
  EXPECT_EQ(c->inference.attention.attn_logit_softcapping, std::optional<double>(50.0));
  EXPECT_EQ(c->inference.output.final_logit_softcapping, std::optional<double>(30.0));
  EXPECT_FALSE(c->inference.attention.query_key_norm);
  EXPECT_EQ(c->inference.rope.local_theta, std::nullopt);
  EXPECT_EQ(c->inference.normalization.weight_offset, 1.0);
  EXPECT_TRUE(c->inference.normalization.post_feedforward_norm);
  EXPECT_EQ(c->inference.output.embedding_scale, 16.0);
  j["attn_logit_softcapping"] = nullptr;  // given as null: no soft-capping
  c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.attention.attn_logit_softcapping, std::nullopt);
  j.erase("vocab_size");
  EXPECT_ERROR(read(j), StatusCode::kSchema, "field 'vocab_size': missing");
}

TEST(HfConfig, GemmaSlidingWindowDefaultAndNull) {
  json j = gemma3();
  j.erase("sliding_window");
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.attention.sliding_window, std::optional<uint64_t>(4096));
  EXPECT_TRUE(has_warning(*c, "sliding_window"));
  j["sliding_window"] = nullptr;  // explicitly none: every layer is full attention, no local theta
  c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.attention.sliding_window, std::nullopt);
  EXPECT_EQ(c->inference.attention.layer_types, std::vector<LayerType>(3, LayerType::kFullAttention));
  EXPECT_EQ(c->inference.rope.local_theta, std::nullopt);
}

TEST(HfConfig, GemmaScaledSlidingRopeUnsupported) {
  json j = gemma3();
  j["rope_parameters"]["sliding_attention"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 10000.0}};
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "scaled RoPE on sliding layers");
}

TEST(HfConfig, GemmaConditionalGenerationTextConfig) {
  const json j = json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "intermediate_size": 10240,
                    "num_hidden_layers": 34, "sliding_window": 1024,
                    "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
    "vision_config": {"model_type": "siglip_vision_model"}, "eos_token_id": [1, 106], "torch_dtype": "bfloat16"})");
  const Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->family, "gemma3");
  EXPECT_EQ(c->architecture.num_attention_heads, 8u);  // Gemma3TextConfig defaults, warned
  EXPECT_EQ(c->architecture.num_key_value_heads, 4u);
  EXPECT_EQ(c->architecture.head_dim, 256u);
  EXPECT_EQ(c->architecture.vocab_size, 262208u);
  EXPECT_EQ(c->inference.attention.query_pre_attn_scalar, std::optional<double>(256.0));
  EXPECT_EQ(c->inference.attention.sliding_window, std::optional<uint64_t>(1024));
  EXPECT_EQ(c->inference.attention.layer_types[5], LayerType::kFullAttention);  // default period 6
  EXPECT_EQ(c->inference.attention.layer_types[4], LayerType::kSlidingAttention);
  EXPECT_EQ(c->tokenizer.eos_token_ids, (std::vector<uint64_t>{1, 106}));
  EXPECT_EQ(c->tokenizer.bos_token_id, std::optional<uint64_t>(2));
  EXPECT_EQ(c->inference.output.embedding_scale, hf_embedding_scale(2560, quant::DType::kBF16));
  EXPECT_TRUE(has_warning(*c, "text model only"));
  EXPECT_TRUE(has_warning(*c, "num_attention_heads"));
  EXPECT_TRUE(has_warning(*c, "head_dim"));
}

TEST(HfConfig, GemmaConditionalGenerationRejections) {
  json j = json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3"})");
  EXPECT_ERROR(read(j), StatusCode::kSchema, "field 'text_config': missing");
  j["text_config"] = {{"model_type", "siglip_vision_model"}};
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "is not gemma3_text");
  j["text_config"] = 5;
  EXPECT_ERROR(read(j), StatusCode::kSchema, "field 'text_config': expected an object");
}

TEST(HfConfig, PerLayerTypeRopeRules) {
  json j = gemma3();
  j["rope_parameters"]["chunked_attention"] = {{"rope_type", "default"}};
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "layer type 'chunked_attention'");
  j = gemma3();
  j["rope_parameters"].erase("full_attention");
  EXPECT_ERROR(read(j), StatusCode::kSchema, "field 'full_attention': missing");
  j = gemma3();
  j["rope_parameters"].erase("sliding_attention");
  j["rope_local_base_freq"] = 5000.0;
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.local_theta, std::optional<double>(5000.0));
  // Other families: one RoPE for every layer type.
  j = llama();
  j["architectures"] = {"MistralForCausalLM"};
  j["model_type"] = "mistral";
  j["sliding_window"] = 64;
  j["layer_types"] = {"sliding_attention", "full_attention"};
  j["rope_parameters"] = {{"full_attention", {{"rope_theta", 10000.0}}}, {"sliding_attention", {{"rope_theta", 10000.0}}}};
  c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.local_theta, std::nullopt);
  j["rope_parameters"]["sliding_attention"]["rope_theta"] = 20000.0;
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "only supported for Gemma 3");
}

TEST(HfConfig, ShapeLimits) {
  json j = llama();
  j["architectures"] = "LlamaForCausalLM";
  EXPECT_ERROR(read(j), StatusCode::kSchema, "field 'architectures': expected a list of class names");
  j = llama();
  j["num_hidden_layers"] = 5000;
  EXPECT_ERROR(read(j), StatusCode::kValidation, "exceeds the limit of 4096");
  j = llama();
  j["num_attention_heads"] = 0;
  EXPECT_ERROR(read(j), StatusCode::kValidation, "num_attention_heads': must be > 0");
  j = llama();
  j["head_dim"] = 33;
  EXPECT_ERROR(read(j), StatusCode::kValidation, "headDim: 33 is odd");
  j = llama();
  j["bos_token_id"] = {1, 2};
  EXPECT_ERROR(read(j), StatusCode::kSchema, "field 'bos_token_id': expected one token id");
}

TEST(HfConfig, GemmaEmbeddingScaleFollowsDtype) {
  EXPECT_EQ(hf_embedding_scale(256, quant::DType::kF32), 16.0);
  EXPECT_EQ(hf_embedding_scale(1152, quant::DType::kBF16), 34.0);  // sqrt(1152) = 33.94 -> bf16 34
  EXPECT_EQ(hf_embedding_scale(1152, quant::DType::kF32), static_cast<double>(std::sqrt(1152.0f)));
  json j = gemma3();
  j["hidden_size"] = 1152;
  j["dtype"] = "bfloat16";
  const Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.output.embedding_scale, 34.0);
}

TEST(HfConfig, MistralSlidingWindowAllLayers) {
  json j = llama();
  j["architectures"] = {"MistralForCausalLM"};
  j["model_type"] = "mistral";
  j["sliding_window"] = 4096;
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->family, "mistral");
  EXPECT_EQ(c->inference.attention.sliding_window, std::optional<uint64_t>(4096));
  EXPECT_EQ(c->inference.attention.layer_types, std::vector<LayerType>(2, LayerType::kSlidingAttention));
  j["sliding_window"] = nullptr;
  c = read(j);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->inference.attention.sliding_window, std::nullopt);
  EXPECT_EQ(c->inference.attention.layer_types, std::vector<LayerType>(2, LayerType::kFullAttention));
  j["sliding_window"] = 0;
  EXPECT_ERROR(read(j), StatusCode::kValidation, "sliding_window");
}

TEST(HfConfig, QwenSlidingWindowRules) {
  json j = llama();
  j["architectures"] = {"Qwen2ForCausalLM"};
  j["model_type"] = "qwen2";
  j["sliding_window"] = 128;
  j["use_sliding_window"] = false;
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.attention.sliding_window, std::nullopt);  // not enabled
  EXPECT_TRUE(c->inference.attention.attention_bias);               // Qwen2 always has q/k/v biases
  j["use_sliding_window"] = true;
  j["max_window_layers"] = 1;
  c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.attention.sliding_window, std::optional<uint64_t>(128));
  EXPECT_EQ(c->inference.attention.layer_types,
            (std::vector<LayerType>{LayerType::kFullAttention, LayerType::kSlidingAttention}));
  j["layer_types"] = {"sliding_attention", "sliding_attention"};
  j["use_sliding_window"] = false;
  c = read(j);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->inference.attention.layer_types, std::vector<LayerType>(2, LayerType::kFullAttention));
  EXPECT_TRUE(has_warning(*c, "no sliding window is in effect"));
}

TEST(HfConfig, Phi3PartialRotaryAndWindow) {
  json j = llama();
  j["architectures"] = {"Phi3ForCausalLM"};
  j["model_type"] = "phi3";
  j["hidden_size"] = 512;
  j["num_key_value_heads"] = 8;  // head_dim 64
  j["partial_rotary_factor"] = 0.75;
  j["sliding_window"] = 2047;
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.partial_rotary_factor, 0.75);
  EXPECT_EQ(c->inference.attention.sliding_window, std::optional<uint64_t>(2047));
  EXPECT_EQ(c->inference.attention.layer_types, std::vector<LayerType>(2, LayerType::kSlidingAttention));
  j["partial_rotary_factor"] = 0.7;  // 64 * 0.7 is not an even integer
  EXPECT_ERROR(read(j), StatusCode::kValidation, "partialRotaryFactor");
}

// Phi-3 LongRoPE (transformers 4 form: rope_scaling + config-level original_max_position_embeddings; "su" is
// the old name): factor max / original, attention factor sqrt(1 + ln factor / ln original).
TEST(HfConfig, Phi3LongRope) {
  json j = llama();
  j["architectures"] = {"Phi3ForCausalLM"};
  j["model_type"] = "phi3";
  j["max_position_embeddings"] = 131072;
  j["original_max_position_embeddings"] = 4096;
  std::vector<double> longs(16), shorts(16);
  for (size_t i = 0; i < 16; ++i) {
    longs[i] = 1.0 + static_cast<double>(i);
    shorts[i] = 1.0 + 0.125 * static_cast<double>(i);
  }
  j["rope_scaling"] = {{"type", "su"}, {"long_factor", longs}, {"short_factor", shorts}};
  Result<ModelConfig> c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const RopeConfig& r = c->inference.rope;
  EXPECT_EQ(r.scaling_type, RopeScalingType::kLongRope);
  EXPECT_EQ(r.original_max_positions, std::optional<uint64_t>(4096));
  EXPECT_EQ(r.long_factors, longs);
  EXPECT_EQ(r.short_factors, shorts);
  EXPECT_DOUBLE_EQ(*r.attention_factor, std::sqrt(1.0 + std::log(32.0) / std::log(4096.0)));
  EXPECT_EQ(r.scaling_factor, std::nullopt);
  j["rope_scaling"]["attention_factor"] = 1.5;  // explicit attention factor wins
  c = read(j);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.attention_factor, std::optional<double>(1.5));
  j["rope_scaling"]["long_factor"] = std::vector<double>(15, 1.0);  // head_dim 32: 16 pairs
  EXPECT_ERROR(read(j), StatusCode::kValidation, "ropeLongFactors: 15 entries, expected rotary dims / 2 = 16");
  j["rope_scaling"]["long_factor"] = "x";
  EXPECT_ERROR(read(j), StatusCode::kSchema, "long_factor");
}

TEST(HfConfig, UnsupportedFeatures) {
  json j = llama();
  j["attention_bias"] = true;
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "o_proj");
  j = llama();
  j["mlp_bias"] = true;
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "mlp_bias");
  j = llama();
  j["hidden_act"] = "gelu";
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "field 'hidden_act': 'gelu' is not supported");
  j = gemma3();
  j["use_bidirectional_attention"] = true;
  EXPECT_ERROR(read(j), StatusCode::kUnsupported, "use_bidirectional_attention");
}

TEST(HfConfig, TokenIdsFromConfigAndGenerationConfig) {
  json j = llama();
  j["eos_token_id"] = 2;
  j["pad_token_id"] = 0;
  const std::string gen = R"({"bos_token_id": 1, "eos_token_id": [5, 2, 7], "pad_token_id": 3})";
  const Result<ModelConfig> c = read(j, {{"generation_config.json", gen}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->tokenizer.eos_token_ids, (std::vector<uint64_t>{2, 5, 7}));  // union, config first, deduplicated
  EXPECT_EQ(c->tokenizer.pad_token_id, std::optional<uint64_t>(3));
  EXPECT_EQ(c->tokenizer.bos_token_id, std::optional<uint64_t>(1));
  EXPECT_ERROR(read(j, {{"generation_config.json", "{\"eos_token_id\": \"x\"}"}}), StatusCode::kSchema,
               "generation_config.json: field 'eos_token_id'");
  EXPECT_ERROR(read(j, {{"generation_config.json", "{"}}), StatusCode::kParse, "generation_config.json");
  j["eos_token_id"] = 5000;  // >= vocab_size
  EXPECT_ERROR(read(j), StatusCode::kValidation, "tokenizer.eosTokenIds[0]");
  j.erase("eos_token_id");
  EXPECT_ERROR(read(j), StatusCode::kSchema, "eos_token_id");
}

TEST(HfConfig, AddBosAndEosFlags) {
  json j = llama();
  Result<ModelConfig> c = read(j, {{"tokenizer_config.json", R"({"add_bos_token": false, "add_eos_token": true})"}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FALSE(c->tokenizer.add_bos_token);
  EXPECT_TRUE(c->tokenizer.add_eos_token);
  // tokenizer.json post-processor: <s> $A </s>
  const std::string tok = R"({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0}},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "</s>", "type_id": 0}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                         "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}})";
  j.erase("bos_token_id");
  c = read(j, {{"tokenizer.json", tok}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->tokenizer.add_bos_token);
  EXPECT_TRUE(c->tokenizer.add_eos_token);
  EXPECT_EQ(c->tokenizer.bos_token_id, std::optional<uint64_t>(1));  // taken from the post-processor
  EXPECT_TRUE(has_warning(*c, "post_processor"));
  // A ByteLevel post-processor adds nothing.
  c = read(llama(), {{"tokenizer.json", R"({"post_processor": {"type": "ByteLevel"}})"}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FALSE(c->tokenizer.add_bos_token);
  EXPECT_ERROR(read(llama(), {{"tokenizer.json", "{\"post_processor\": "}}), StatusCode::kParse, "tokenizer.json");
  EXPECT_ERROR(read(llama(), {{"tokenizer_config.json", R"({"add_bos_token": "yes"})"}}), StatusCode::kSchema,
               "tokenizer_config.json: field 'add_bos_token'");
}

TEST(HfConfig, NoTokenizerFile) {
  const fs::path dir = write_folder(llama().dump());
  fs::remove(dir / "tokenizer.model");
  EXPECT_ERROR(read_hf_model_config(dir), StatusCode::kNotFound, "neither tokenizer.json nor tokenizer.model");
}

TEST(HfConfig, CheckModelConfigRejectsInconsistencies) {
  Result<ModelConfig> c = read(llama());
  ASSERT_TRUE(c.ok());
  ModelConfig bad = *c;
  bad.inference.attention.layer_types.pop_back();
  EXPECT_ERROR(check_model_config(bad), StatusCode::kValidation, "layerTypes");
  bad = *c;
  bad.tokenizer.bos_token_id.reset();
  EXPECT_ERROR(check_model_config(bad), StatusCode::kValidation, "addBosToken");
  bad = *c;
  bad.inference.rope.theta = 0;
  EXPECT_ERROR(check_model_config(bad), StatusCode::kValidation, "ropeTheta");
  bad = *c;
  bad.family = "qwen2";
  EXPECT_ERROR(check_model_config(bad), StatusCode::kValidation, "family");
}

}  // namespace
}  // namespace rdrr::convert
