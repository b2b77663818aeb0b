// model_config_from_gguf on GGUF files assembled in the test: required keys, family rules (Gemma 3 layer
// pattern and local theta, Phi-3 partial rotary), RoPE scaling keys, tensors that decide flags, tokenizer JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "convert/model_config.h"
#include "convert/reader_test_util.h"
#include "rdrr/validate.h"

namespace rdrr::convert {
namespace {

namespace fs = std::filesystem;
using namespace rdrr::convert::testing;

std::string gv_u32_array(const std::vector<uint32_t>& v) {
  std::string s;
  put<uint32_t>(s, 9);
  put<uint32_t>(s, 4);
  put<uint64_t>(s, v.size());
  for (uint32_t x : v) put<uint32_t>(s, x);
  return s;
}

std::string gv_bool_array(const std::vector<uint8_t>& v) {
  std::string s;
  put<uint32_t>(s, 9);
  put<uint32_t>(s, 7);
  put<uint64_t>(s, v.size());
  for (uint8_t x : v) put<uint8_t>(s, x);
  return s;
}

class GgufConfig : public ::testing::Test {
 protected:
  // A llama-architecture file with 2 layers, 16 tokens and no tensors.
  void SetUp() override { use_arch("llama"); }

  void use_arch(const std::string& arch) {
    arch_ = arch;
    spec_ = GgufSpec{};
    std::vector<std::string> tokens;
    for (int i = 0; i < 16; ++i) {
      std::string token = "t";  // (not "t" + to_string: GCC 12 -O3 raises a false -Wrestrict on that)
      token += std::to_string(i);
      tokens.push_back(token);
    }
    set("general.architecture", gv_str(arch));
    set(k("block_count"), gv_u32(2));
    set(k("context_length"), gv_u32(512));
    set(k("embedding_length"), gv_u32(256));
    set(k("feed_forward_length"), gv_u32(512));
    set(k("attention.head_count"), gv_u32(8));
    set(k("attention.head_count_kv"), gv_u32(2));
    set(k("rope.freq_base"), gv_f32(10000.0f));
    set(k("attention.layer_norm_rms_epsilon"), gv_f32(1e-5f));
    set("tokenizer.ggml.model", gv_str("llama"));
    set("tokenizer.ggml.tokens", gv_str_array(tokens));
    set("tokenizer.ggml.bos_token_id", gv_u32(1));
    set("tokenizer.ggml.eos_token_id", gv_u32(2));
  }
  std::string k(const std::string& key) const { return arch_ + "." + key; }
  void set(const std::string& key, const std::string& value) {
    for (auto& kv : spec_.kvs) {
      if (kv.first == key) {
        kv.second = value;
        return;
      }
    }
    spec_.kvs.emplace_back(key, value);
  }
  void erase(const std::string& key) {
    std::erase_if(spec_.kvs, [&](const auto& kv) { return kv.first == key; });
  }
  void add_tensor(const std::string& name) { spec_.tensors.push_back({name, {16}, 0, 64, std::nullopt}); }
  void add_f32_tensor(const std::string& name, const std::vector<float>& values) {
    std::string bytes(values.size() * 4, '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());
    spec_.tensors.push_back({name, {values.size()}, 0, bytes.size(), std::nullopt});
    spec_.tensor_data[name] = bytes;
  }

  Result<ModelConfig> read() {
    std::string name = "m";
    name += std::to_string(n_++);
    name += ".gguf";
    const fs::path path = test_dir() / name;
    write_file(path, spec_.build());
    Result<GgufFile> f = GgufFile::open(path);
    if (!f.ok()) return f.status();
    return model_config_from_gguf(*f);
  }

  std::string arch_;
  GgufSpec spec_;
  int n_ = 0;
};

bool has_warning(const ModelConfig& c, const std::string& fragment) {
  for (const std::string& w : c.warnings) {
    if (w.find(fragment) != std::string::npos) return true;
  }
  return false;
}

TEST_F(GgufConfig, MinimalLlama) {
  const Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->family, "llama");
  EXPECT_TRUE(c->qk_rows_permuted);
  EXPECT_FALSE(c->norm_weights_include_offset);
  EXPECT_EQ(c->architecture.head_dim, 32u);
  EXPECT_EQ(c->architecture.vocab_size, 16u);  // no embedding tensor, no vocab_size key: the token count
  EXPECT_EQ(c->inference.normalization.rms_norm_eps, 1e-5);  // the f32 taken as its shortest decimal
  EXPECT_TRUE(c->tied_embeddings);                           // no output.weight
  EXPECT_FALSE(c->inference.attention.attention_bias);
  EXPECT_TRUE(c->tokenizer.add_bos_token);  // SentencePiece default
  EXPECT_EQ(c->inference.rope.convention, RopeConvention::kRotateHalf);
  EXPECT_TRUE(c->warnings.empty());
}

TEST_F(GgufConfig, MissingRequiredKeys) {
  for (const char* key : {"block_count", "embedding_length", "feed_forward_length", "attention.head_count",
                          "context_length", "attention.layer_norm_rms_epsilon"}) {
    use_arch("llama");
    erase(k(key));
    EXPECT_ERROR(read(), StatusCode::kSchema, "metadata key 'llama." + std::string(key) + "': missing");
  }
  use_arch("llama");
  set(k("block_count"), gv_str("two"));
  EXPECT_ERROR(read(), StatusCode::kSchema, "'llama.block_count': expected a non-negative integer");
  use_arch("llama");
  erase("general.architecture");
  EXPECT_ERROR(read(), StatusCode::kSchema, "general.architecture");
  use_arch("llama");
  erase("tokenizer.ggml.tokens");
  EXPECT_ERROR(read(), StatusCode::kSchema, "'llama.vocab_size': missing");  // nothing gives the vocabulary
  set(k("vocab_size"), gv_u32(16));
  EXPECT_ERROR(read(), StatusCode::kSchema, "tokenizer.ggml.tokens");
  use_arch("llama");
  erase("tokenizer.ggml.eos_token_id");
  EXPECT_ERROR(read(), StatusCode::kSchema, "tokenizer.ggml.eos_token_id");
}

TEST_F(GgufConfig, InconsistentShapes) {
  set(k("attention.head_count"), gv_u32(0));
  EXPECT_ERROR(read(), StatusCode::kValidation, "attention.head_count: must be > 0");
  set(k("attention.head_count"), gv_u32(3));
  set(k("attention.head_count_kv"), gv_u32(1));
  EXPECT_ERROR(read(), StatusCode::kValidation, "does not divide embedding_length 256");
  set(k("attention.key_length"), gv_u32(64));
  EXPECT_TRUE(read().ok());
  set(k("block_count"), gv_u32(5000));
  EXPECT_ERROR(read(), StatusCode::kValidation, "exceeds the limit of 4096");
  use_arch("llama");
  set(k("attention.layer_norm_rms_epsilon"), gv_f32(std::numeric_limits<float>::infinity()));
  EXPECT_ERROR(read(), StatusCode::kNonFinite, "layer_norm_rms_epsilon");
  use_arch("llama");
  set(k("attention.layer_norm_rms_epsilon"), gv_u32(1));
  EXPECT_ERROR(read(), StatusCode::kSchema, "expected f32 or f64");
  use_arch("llama");
  erase("tokenizer.ggml.bos_token_id");
  EXPECT_ERROR(read(), StatusCode::kSchema, "tokenizer.ggml.bos_token_id");  // SentencePiece adds BOS
  set("tokenizer.ggml.add_bos_token", gv_bool(0));
  EXPECT_TRUE(read().ok());
}

// Mixtures of experts: llama with expert_count is Mixtral (renormalized top-k, expert width feed_forward_length);
// qwen2moe / qwen3moe read expert_feed_forward_length (+ the shared expert's); expert_weights_norm overrides
// llama.cpp's per-architecture renormalization.
TEST_F(GgufConfig, MixtureOfExperts) {
  set(k("expert_count"), gv_u32(8));
  set(k("expert_used_count"), gv_u32(2));
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture.family, ArchFamily::kMixtral);
  EXPECT_TRUE(c->qk_rows_permuted);
  EXPECT_EQ(c->architecture.moe.num_experts, 8u);
  EXPECT_EQ(c->architecture.moe.experts_per_token, 2u);
  EXPECT_EQ(c->architecture.moe.expert_intermediate_size, 512u);
  EXPECT_TRUE(c->architecture.moe.normalize_top_k);
  set(k("expert_used_count"), gv_u32(9));
  EXPECT_ERROR(read(), StatusCode::kValidation, "expert_used_count: 9 exceeds expert_count 8");
  erase(k("expert_used_count"));
  EXPECT_ERROR(read(), StatusCode::kSchema, "expert_used_count");

  use_arch("qwen2moe");
  EXPECT_ERROR(read(), StatusCode::kSchema, "qwen2moe.expert_count': missing");
  set(k("expert_count"), gv_u32(4));
  set(k("expert_used_count"), gv_u32(2));
  set(k("expert_feed_forward_length"), gv_u32(32));
  set(k("expert_shared_feed_forward_length"), gv_u32(64));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture.family, ArchFamily::kQwen2Moe);
  EXPECT_FALSE(c->qk_rows_permuted);
  EXPECT_EQ(c->architecture.moe.expert_intermediate_size, 32u);
  EXPECT_EQ(c->architecture.moe.shared_expert_intermediate_size, 64u);
  EXPECT_TRUE(c->architecture.moe.shared_expert_gated);
  EXPECT_FALSE(c->architecture.moe.normalize_top_k);  // llama.cpp's qwen2moe graph does not renormalize
  set(k("expert_weights_norm"), gv_bool(1));
  c = read();
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->architecture.moe.normalize_top_k);

  use_arch("qwen3moe");
  set(k("expert_count"), gv_u32(4));
  set(k("expert_used_count"), gv_u32(2));
  set(k("expert_feed_forward_length"), gv_u32(64));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture.family, ArchFamily::kQwen3Moe);
  EXPECT_TRUE(c->architecture.moe.normalize_top_k);
  EXPECT_EQ(c->architecture.moe.shared_expert_intermediate_size, 0u);
}

TEST_F(GgufConfig, UnsupportedArchitecture) {
  use_arch("gpt2");
  EXPECT_ERROR(read(), StatusCode::kUnsupported, "'gpt2' is not supported (supported: llama");
}

TEST_F(GgufConfig, DefaultsAreWarned) {
  erase(k("rope.freq_base"));
  const Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.theta, 10000.0);
  EXPECT_TRUE(has_warning(*c, "llama.rope.freq_base"));
}

TEST_F(GgufConfig, VocabularyFromEmbeddingRows) {
  set(k("vocab_size"), gv_u32(8));
  EXPECT_ERROR(read(), StatusCode::kValidation, "16 tokens, but the vocabulary has 8 rows");
  set(k("vocab_size"), gv_u32(32));
  const Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture.vocab_size, 32u);
}

TEST_F(GgufConfig, PerLayerHeadCounts) {
  set(k("attention.head_count_kv"), gv_u32_array({2, 2}));
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture.num_key_value_heads, 2u);
  set(k("attention.head_count_kv"), gv_u32_array({2, 4}));
  EXPECT_ERROR(read(), StatusCode::kUnsupported, "per-layer values differ");
  use_arch("llama");
  set(k("attention.key_length"), gv_u32(32));
  set(k("attention.value_length"), gv_u32(64));
  EXPECT_ERROR(read(), StatusCode::kUnsupported, "value_length");
}

// Gemma 2 GGUF: llama.cpp slides the even layers, scales attention by head_dim, reads both soft-caps.
TEST_F(GgufConfig, Gemma2EvenLayersSlide) {
  use_arch("gemma2");
  set(k("block_count"), gv_u32(4));
  set(k("attention.head_count"), gv_u32(4));
  set(k("attention.head_count_kv"), gv_u32(2));
  set(k("attention.key_length"), gv_u32(64));
  set(k("attention.sliding_window"), gv_u32(4096));
  set(k("attn_logit_softcapping"), gv_f32(50.0f));
  set(k("final_logit_softcapping"), gv_f32(30.0f));
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->family, "gemma2");
  const std::vector<LayerType> alternate = {LayerType::kSlidingAttention, LayerType::kFullAttention,
                                            LayerType::kSlidingAttention, LayerType::kFullAttention};
  EXPECT_EQ(c->inference.attention.layer_types, alternate);
  EXPECT_EQ(c->inference.attention.query_pre_attn_scalar, std::optional<double>(64.0));
  EXPECT_EQ(c->inference.attention.attn_logit_softcapping, std::optional<double>(50.0));
  EXPECT_EQ(c->inference.output.final_logit_softcapping, std::optional<double>(30.0));
  EXPECT_EQ(c->inference.rope.local_theta, std::nullopt);
  EXPECT_FALSE(c->inference.attention.query_key_norm);
  EXPECT_TRUE(c->norm_weights_include_offset);
  erase(k("attn_logit_softcapping"));  // llama.cpp's Gemma 2 defaults, warned
  erase(k("final_logit_softcapping"));
  erase(k("attention.sliding_window"));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.attention.attn_logit_softcapping, std::optional<double>(50.0));
  EXPECT_EQ(c->inference.output.final_logit_softcapping, std::optional<double>(30.0));
  EXPECT_EQ(c->inference.attention.sliding_window, std::optional<uint64_t>(4096));
  EXPECT_TRUE(has_warning(*c, "attn_logit_softcapping: absent, using llama.cpp's Gemma 2 default 50"));
}

TEST_F(GgufConfig, Gemma3DefaultPatternAndLocalTheta) {
  use_arch("gemma3");
  set(k("block_count"), gv_u32(8));
  set(k("attention.head_count"), gv_u32(4));
  set(k("attention.head_count_kv"), gv_u32(1));
  set(k("attention.key_length"), gv_u32(64));
  set(k("attention.sliding_window"), gv_u32(512));
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  std::vector<LayerType> expected(8, LayerType::kSlidingAttention);
  expected[5] = LayerType::kFullAttention;  // llama.cpp's period 6
  EXPECT_EQ(c->inference.attention.layer_types, expected);
  EXPECT_EQ(c->inference.attention.sliding_window, std::optional<uint64_t>(512));
  EXPECT_EQ(c->inference.rope.local_theta, std::optional<double>(10000.0));
  EXPECT_TRUE(has_warning(*c, "sliding_window_pattern"));
  EXPECT_TRUE(has_warning(*c, "freq_base_swa"));
  EXPECT_TRUE(c->norm_weights_include_offset);
  EXPECT_FALSE(c->qk_rows_permuted);
  EXPECT_EQ(c->inference.normalization.weight_offset, 0.0);
  EXPECT_EQ(c->inference.attention.query_pre_attn_scalar, std::optional<double>(64.0));
  EXPECT_EQ(c->inference.output.embedding_scale, 16.0);
  EXPECT_EQ(c->inference.ffn.activation, Activation::kGeluTanh);

  set(k("attention.sliding_window_pattern"), gv_bool_array({1, 0, 1, 0, 1, 0, 1, 0}));
  set(k("rope.freq_base_swa"), gv_f32(20000.0f));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.attention.layer_types[0], LayerType::kSlidingAttention);
  EXPECT_EQ(c->inference.attention.layer_types[1], LayerType::kFullAttention);
  EXPECT_EQ(c->inference.rope.local_theta, std::optional<double>(20000.0));
  EXPECT_TRUE(c->warnings.empty());

  set(k("attention.sliding_window_pattern"), gv_bool_array({1, 0, 1}));
  EXPECT_ERROR(read(), StatusCode::kValidation, "3 entries, block_count is 8");

  erase(k("attention.sliding_window_pattern"));
  erase(k("attention.sliding_window"));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.attention.layer_types, std::vector<LayerType>(8, LayerType::kFullAttention));
  EXPECT_EQ(c->inference.attention.sliding_window, std::nullopt);
  EXPECT_EQ(c->inference.rope.local_theta, std::nullopt);
}

TEST_F(GgufConfig, Phi3PartialRotaryAndSlidingWindow) {
  use_arch("phi3");
  set(k("embedding_length"), gv_u32(512));
  set(k("attention.head_count_kv"), gv_u32(8));
  set(k("rope.dimension_count"), gv_u32(48));
  set(k("attention.sliding_window"), gv_u32(2047));
  const Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.partial_rotary_factor, 0.75);
  EXPECT_EQ(c->inference.attention.layer_types, std::vector<LayerType>(2, LayerType::kSlidingAttention));
  EXPECT_FALSE(c->qk_rows_permuted);
}

TEST_F(GgufConfig, RopeScalingKeys) {
  set(k("rope.scaling.type"), gv_str("linear"));
  set(k("rope.scaling.factor"), gv_f32(2.0f));
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.scaling_type, RopeScalingType::kLinear);
  EXPECT_EQ(c->inference.rope.scaling_factor, std::optional<double>(2.0));

  set(k("rope.scaling.type"), gv_str("yarn"));
  set(k("rope.scaling.factor"), gv_f32(4.0f));
  EXPECT_ERROR(read(), StatusCode::kSchema, "rope.scaling.original_context_length");
  set(k("rope.scaling.original_context_length"), gv_u32(32768));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const RopeConfig& r = c->inference.rope;
  EXPECT_EQ(r.scaling_type, RopeScalingType::kYarn);
  EXPECT_EQ(r.original_max_positions, std::optional<uint64_t>(32768));
  EXPECT_EQ(r.yarn_beta_fast, std::optional<double>(32.0));
  EXPECT_EQ(r.yarn_beta_slow, std::optional<double>(1.0));
  EXPECT_DOUBLE_EQ(*r.yarn_attention_factor, 0.1 * std::log(4.0) + 1.0);
  set(k("rope.scaling.attn_factor"), gv_f32(0.5f));
  EXPECT_ERROR(read(), StatusCode::kUnsupported, "rope.scaling.attn_factor");

  use_arch("llama");
  set(k("rope.scaling.type"), gv_str("longrope"));
  set(k("rope.scaling.factor"), gv_f32(4.0f));
  EXPECT_ERROR(read(), StatusCode::kSchema, "'longrope' but tensors rope_factors_long/short.weight are missing");
}

// Per-pair RoPE factor tensors: rope_freqs (a Llama 3.1/3.2 GGUF) and Phi-3's rope_factors_long/short.
TEST_F(GgufConfig, RopeFactorTensors) {
  // head_dim 256 / 8 = 32: 16 pairs.
  std::vector<float> freqs(16);
  for (size_t i = 0; i < freqs.size(); ++i) freqs[i] = 1.0f + 0.5f * static_cast<float>(i);
  add_f32_tensor("rope_freqs.weight", freqs);
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.scaling_type, RopeScalingType::kFreqFactors);
  ASSERT_EQ(c->inference.rope.freq_factors.size(), 16u);
  EXPECT_EQ(c->inference.rope.freq_factors[3], 2.5);
  EXPECT_TRUE(validate_model_parameters(c->architecture, c->inference, c->tokenizer).ok());

  set(k("rope.scaling.type"), gv_str("linear"));
  set(k("rope.scaling.factor"), gv_f32(2.0f));
  EXPECT_ERROR(read(), StatusCode::kUnsupported, "together with per-dimension RoPE factor tensors");

  use_arch("llama");
  add_f32_tensor("rope_freqs.weight", std::vector<float>(8, 1.0f));
  EXPECT_ERROR(read(), StatusCode::kValidation, "tensor rope_freqs.weight: shape [8], expected [16]");
  use_arch("llama");
  freqs[5] = 0.0f;
  add_f32_tensor("rope_freqs.weight", freqs);
  EXPECT_ERROR(read(), StatusCode::kValidation, "rope_freqs.weight: value 5");

  use_arch("phi3");
  std::vector<float> longs(16), shorts(16);
  for (size_t i = 0; i < 16; ++i) {
    longs[i] = 1.0f + static_cast<float>(i);
    shorts[i] = 1.0f + 0.25f * static_cast<float>(i);
  }
  add_f32_tensor("rope_factors_long.weight", longs);
  EXPECT_ERROR(read(), StatusCode::kSchema, "rope_factors_short.weight: missing");
  add_f32_tensor("rope_factors_short.weight", shorts);
  EXPECT_ERROR(read(), StatusCode::kSchema, "rope.scaling.original_context_length");
  set(k("rope.scaling.original_context_length"), gv_u32(64));
  c = read();  // context_length 512 / 64 = 8: attention factor from transformers' formula
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const RopeConfig& r = c->inference.rope;
  EXPECT_EQ(r.scaling_type, RopeScalingType::kLongRope);
  EXPECT_EQ(r.original_max_positions, std::optional<uint64_t>(64));
  EXPECT_DOUBLE_EQ(*r.attention_factor, std::sqrt(1.0 + std::log(8.0) / std::log(64.0)));
  EXPECT_EQ(r.long_factors[2], 3.0);
  EXPECT_EQ(r.short_factors[2], 1.5);
  set(k("rope.scaling.attn_factor"), gv_f32(1.25f));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.attention_factor, std::optional<double>(1.25));
  EXPECT_TRUE(validate_model_parameters(c->architecture, c->inference, c->tokenizer).ok());
}

// Factor tensors: F16 accepted, other types and mixed kinds refused, the declared longrope type needs its
// tensors, an original context of 0 is invalid.
TEST_F(GgufConfig, RopeFactorTensorRules) {
  std::string half(16 * 2, '\0');
  for (size_t i = 0; i < 16; ++i) {
    const uint16_t h = 0x4000;  // 2.0
    std::memcpy(half.data() + i * 2, &h, 2);
  }
  spec_.tensors.push_back({"rope_freqs.weight", {16}, 1, half.size(), std::nullopt});
  spec_.tensor_data["rope_freqs.weight"] = half;
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.freq_factors, std::vector<double>(16, 2.0));

  use_arch("llama");
  spec_.tensors.push_back({"rope_freqs.weight", {32}, 8, 34, std::nullopt});  // one Q8_0 block
  EXPECT_ERROR(read(), StatusCode::kUnsupported, "tensor rope_freqs.weight: type Q8_0, expected F32 or F16");

  use_arch("phi3");
  add_f32_tensor("rope_freqs.weight", std::vector<float>(16, 1.0f));
  add_f32_tensor("rope_factors_long.weight", std::vector<float>(16, 1.0f));
  add_f32_tensor("rope_factors_short.weight", std::vector<float>(16, 1.0f));
  EXPECT_ERROR(read(), StatusCode::kUnsupported, "rope_freqs.weight together with rope_factors_long/short");

  use_arch("phi3");
  add_f32_tensor("rope_factors_short.weight", std::vector<float>(16, 1.0f));
  EXPECT_ERROR(read(), StatusCode::kSchema, "rope_factors_long.weight: missing");
  add_f32_tensor("rope_factors_long.weight", std::vector<float>(16, 2.0f));
  set(k("rope.scaling.original_context_length"), gv_u32(0));
  EXPECT_ERROR(read(), StatusCode::kValidation, "rope.scaling.original_context_length': 0");
  set(k("rope.scaling.original_context_length"), gv_u32(64));
  set(k("rope.scaling.type"), gv_str("longrope"));  // newer convert_hf_to_gguf declares the type too
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->inference.rope.scaling_type, RopeScalingType::kLongRope);

  use_arch("phi3");
  set(k("rope.scaling.type"), gv_str("longrope"));
  EXPECT_ERROR(read(), StatusCode::kSchema, "'longrope' but tensors rope_factors_long/short.weight are missing");
}

// convert_hf_to_gguf writes Mistral as architecture llama; the model's name tells it apart.
TEST_F(GgufConfig, MistralByItsName) {
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->family, "llama");
  set("general.name", gv_str("Llama 3.2 1B Instruct"));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->family, "llama");
  set("general.basename", gv_str("Mistral-7B-Instruct-v0.3"));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->family, "mistral");
  EXPECT_EQ(c->architecture.family, ArchFamily::kMistral);
  EXPECT_TRUE(c->qk_rows_permuted);  // still written by the llama converter
  EXPECT_TRUE(has_warning(*c, "recorded as family mistral (general.basename 'Mistral-7B-Instruct-v0.3')"));
  use_arch("qwen2");  // only llama files are renamed
  set("general.name", gv_str("mistral-like qwen"));
  c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->family, "qwen2");
}

TEST_F(GgufConfig, TensorsDecideBiasAndTying) {
  add_tensor("blk.0.attn_q.bias");
  add_tensor("output.weight");
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->inference.attention.attention_bias);
  EXPECT_FALSE(c->tied_embeddings);
  add_tensor("blk.0.attn_output.bias");
  EXPECT_ERROR(read(), StatusCode::kUnsupported, "attn_output.bias");
}

TEST_F(GgufConfig, TokenizerIdsAndFlags) {
  set("tokenizer.ggml.eot_token_id", gv_u32(3));
  set("tokenizer.ggml.padding_token_id", gv_u32(0));
  set("tokenizer.ggml.add_bos_token", gv_bool(0));
  set("tokenizer.ggml.add_eos_token", gv_bool(1));
  Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->tokenizer.eos_token_ids, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(c->tokenizer.pad_token_id, std::optional<uint64_t>(0));
  EXPECT_FALSE(c->tokenizer.add_bos_token);
  EXPECT_TRUE(c->tokenizer.add_eos_token);
  set("tokenizer.ggml.eos_token_id", gv_u32(99));
  EXPECT_ERROR(read(), StatusCode::kValidation, "token id 99 >= vocabSize 16");
}

TEST_F(GgufConfig, TokenizerJsonValues) {
  set("tokenizer.ggml.scores", gv_f32_array({1e-5f, -2.5f, 0.1f}));
  set("tokenizer.chat_template", gv_str("{{ messages }}"));
  const Result<ModelConfig> c = read();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const std::string& text = *c->gguf_tokenizer_json;
  EXPECT_NE(text.find("\"tokenizer.ggml.scores\":[1e-05,-2.5,0.1]"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["metadata"]["tokenizer.chat_template"], "{{ messages }}");
  EXPECT_FALSE(j["metadata"].contains("llama.block_count"));
  EXPECT_EQ(j["metadata"]["tokenizer.ggml.tokens"][15], "t15");

  std::vector<std::string> tokens(16, "ok");
  tokens[4] = std::string("\xff\xfe", 2);
  set("tokenizer.ggml.tokens", gv_str_array(tokens));
  EXPECT_ERROR(read(), StatusCode::kValidation, "tokenizer.ggml.tokens[4]: invalid UTF-8");
}

}  // namespace
}  // namespace rdrr::convert
