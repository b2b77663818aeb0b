// read_hf_model_config / model_config_from_gguf on the three fixture models (values from fixtures/*/README.md),
// and HF vs GGUF agreement field by field (apart from the documented GGUF quirks).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "convert/model_config.h"
#include "convert/reader_test_util.h"

namespace rdrr::convert {
namespace {

namespace fs = std::filesystem;
using testing::fixtures_dir;

struct Expected {
  std::string name;
  std::string family;
  uint32_t layers, heads, kv_heads;
  uint64_t hidden, head_dim, ffn;
  double eps, theta;
  std::optional<double> local_theta;
  bool tied, bias, qk_norm;
  Activation activation;
};

const Expected kModels[] = {
    {"tiny-llama", "llama", 2, 8, 2, 256, 32, 512, 1e-5, 10000.0, std::nullopt, false, false, false, Activation::kSilu},
    {"tiny-qwen2", "qwen2", 2, 4, 2, 256, 64, 512, 1e-6, 1e6, std::nullopt, true, true, false, Activation::kSilu},
    {"tiny-gemma3", "gemma3", 3, 4, 1, 256, 64, 256, 1e-6, 1e6, 1e4, true, false, true, Activation::kGeluTanh},
};

Result<ModelConfig> hf(const Expected& e) { return read_hf_model_config(fixtures_dir() / e.name / "hf"); }

Result<ModelConfig> gguf(const Expected& e) {
  RDRR_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(fixtures_dir() / e.name / "gguf" / (e.name + "-q4_k_m.gguf")));
  return model_config_from_gguf(f);
}

void expect_common(const Expected& e, const ModelConfig& c) {
  SCOPED_TRACE(e.name);
  const Architecture& a = c.architecture;
  EXPECT_EQ(c.family, e.family);
  EXPECT_EQ(arch_family_name(a.family), e.family);
  EXPECT_EQ(a.num_layers, e.layers);
  EXPECT_EQ(a.num_attention_heads, e.heads);
  EXPECT_EQ(a.num_key_value_heads, e.kv_heads);
  EXPECT_EQ(a.hidden_size, e.hidden);
  EXPECT_EQ(a.head_dim, e.head_dim);
  EXPECT_EQ(a.intermediate_size, e.ffn);
  EXPECT_EQ(a.vocab_size, 1024u);
  EXPECT_EQ(a.max_seq_len, 512u);
  const Inference& inf = c.inference;
  EXPECT_EQ(inf.normalization.rms_norm_eps, e.eps);
  EXPECT_EQ(inf.rope.theta, e.theta);
  EXPECT_EQ(inf.rope.local_theta, e.local_theta);
  EXPECT_EQ(inf.rope.scaling_type, RopeScalingType::kNone);
  EXPECT_EQ(inf.rope.partial_rotary_factor, 1.0);
  EXPECT_EQ(inf.rope.convention, RopeConvention::kRotateHalf);
  EXPECT_EQ(c.tied_embeddings, e.tied);
  EXPECT_EQ(inf.output.tie_word_embeddings, e.tied);
  EXPECT_EQ(inf.attention.attention_bias, e.bias);
  EXPECT_EQ(inf.attention.query_key_norm, e.qk_norm);
  EXPECT_TRUE(inf.attention.causal);
  EXPECT_EQ(inf.ffn.activation, e.activation);
  EXPECT_TRUE(inf.ffn.gated);
  EXPECT_FALSE(inf.execution.has_value());
  EXPECT_EQ(c.tokenizer.bos_token_id, std::optional<uint64_t>(1));
  EXPECT_EQ(c.tokenizer.eos_token_ids, std::vector<uint64_t>{2});
  EXPECT_EQ(c.tokenizer.pad_token_id, std::nullopt);
  EXPECT_TRUE(c.tokenizer.add_bos_token);
  EXPECT_FALSE(c.tokenizer.add_eos_token);
  EXPECT_TRUE(c.tokenizer.files.empty());
  if (e.family == "gemma3") {
    EXPECT_EQ(inf.attention.sliding_window, std::optional<uint64_t>(32));
    EXPECT_EQ(inf.attention.layer_types, (std::vector<LayerType>{LayerType::kSlidingAttention,
                                                                 LayerType::kSlidingAttention,
                                                                 LayerType::kFullAttention}));
    EXPECT_EQ(inf.output.embedding_scale, 16.0);
    EXPECT_EQ(inf.attention.query_pre_attn_scalar, std::optional<double>(64.0));
    EXPECT_TRUE(inf.normalization.post_attention_norm);
    EXPECT_TRUE(inf.normalization.post_feedforward_norm);
  } else {
    EXPECT_EQ(inf.attention.sliding_window, std::nullopt);
    EXPECT_EQ(inf.attention.layer_types, std::vector<LayerType>(e.layers, LayerType::kFullAttention));
    EXPECT_EQ(inf.output.embedding_scale, 1.0);
    EXPECT_EQ(inf.attention.query_pre_attn_scalar, std::nullopt);
    EXPECT_FALSE(inf.normalization.post_attention_norm);
    EXPECT_FALSE(inf.normalization.post_feedforward_norm);
  }
  EXPECT_TRUE(inf.normalization.pre_feedforward_norm);
  EXPECT_EQ(inf.attention.attn_logit_softcapping, std::nullopt);
  EXPECT_EQ(inf.output.final_logit_softcapping, std::nullopt);
  EXPECT_TRUE(check_model_config(c).ok()) << check_model_config(c).to_string();
}

TEST(ModelConfigFixture, HfValues) {
  for (const Expected& e : kModels) {
    const Result<ModelConfig> c = hf(e);
    ASSERT_TRUE(c.ok()) << e.name << ": " << c.status().to_string();
    expect_common(e, *c);
    EXPECT_EQ(c->inference.normalization.weight_offset, e.family == "gemma3" ? 1.0 : 0.0);
    EXPECT_FALSE(c->qk_rows_permuted);
    EXPECT_FALSE(c->norm_weights_include_offset);
    EXPECT_FALSE(c->gguf_tokenizer_json.has_value());
    const fs::path dir = fixtures_dir() / e.name / "hf";
    EXPECT_EQ(c->tokenizer_files, (std::vector<fs::path>{dir / "tokenizer.json", dir / "tokenizer.model",
                                                         dir / "tokenizer_config.json"}));
  }
}

TEST(ModelConfigFixture, GemmaLeftoverPatternIsWarnedNotApplied) {
  const Result<ModelConfig> c = hf(kModels[2]);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  bool warned = false;
  for (const std::string& w : c->warnings) warned |= w.find("_sliding_window_pattern") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(ModelConfigFixture, GgufValues) {
  for (const Expected& e : kModels) {
    const Result<ModelConfig> c = gguf(e);
    ASSERT_TRUE(c.ok()) << e.name << ": " << c.status().to_string();
    expect_common(e, *c);
    EXPECT_EQ(c->inference.normalization.weight_offset, 0.0);
    EXPECT_EQ(c->qk_rows_permuted, e.family == "llama");
    EXPECT_EQ(c->norm_weights_include_offset, e.family == "gemma3");
    EXPECT_TRUE(c->tokenizer_files.empty());
    EXPECT_TRUE(c->warnings.empty()) << c->warnings.front();
    ASSERT_TRUE(c->gguf_tokenizer_json.has_value());
  }
}

TEST(ModelConfigFixture, HfAndGgufAgree) {
  for (const Expected& e : kModels) {
    SCOPED_TRACE(e.name);
    const Result<ModelConfig> h = hf(e);
    const Result<ModelConfig> g = gguf(e);
    ASSERT_TRUE(h.ok() && g.ok());
    EXPECT_EQ(h->family, g->family);
    EXPECT_EQ(h->architecture, g->architecture);
    EXPECT_EQ(h->inference.attention, g->inference.attention);
    EXPECT_EQ(h->inference.ffn, g->inference.ffn);
    EXPECT_EQ(h->inference.rope, g->inference.rope);
    EXPECT_EQ(h->inference.output, g->inference.output);
    EXPECT_EQ(h->tokenizer, g->tokenizer);
    EXPECT_EQ(h->tied_embeddings, g->tied_embeddings);
    // Documented GGUF quirk: Gemma norms hold 1 + w, so the offset moves from the weights to the record.
    NormConfig hn = h->inference.normalization;
    const NormConfig& gn = g->inference.normalization;
    EXPECT_EQ(hn.weight_offset - (g->norm_weights_include_offset ? 1.0 : 0.0), gn.weight_offset);
    hn.weight_offset = gn.weight_offset;
    EXPECT_EQ(hn, gn);
  }
}

TEST(ModelConfigFixture, GgufTokenizerJson) {
  const Result<ModelConfig> c = gguf(kModels[0]);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const std::string& text = *c->gguf_tokenizer_json;
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["format"], "rdrr-gguf-tokenizer");
  EXPECT_EQ(j["version"], 1);
  const nlohmann::json& m = j["metadata"];
  EXPECT_EQ(m["tokenizer.ggml.model"], "llama");
  EXPECT_EQ(m["tokenizer.ggml.pre"], "default");
  ASSERT_EQ(m["tokenizer.ggml.tokens"].size(), 1024u);
  EXPECT_EQ(m["tokenizer.ggml.tokens"][1], "<s>");
  EXPECT_EQ(m["tokenizer.ggml.tokens"][3], "<0x00>");
  EXPECT_EQ(m["tokenizer.ggml.scores"].size(), 1024u);
  EXPECT_EQ(m["tokenizer.ggml.token_type"][0], 2);
  EXPECT_EQ(m["tokenizer.ggml.token_type"][3], 6);
  EXPECT_EQ(m["tokenizer.ggml.bos_token_id"], 1);
  EXPECT_EQ(m["tokenizer.ggml.eos_token_id"], 2);
  EXPECT_EQ(m["tokenizer.ggml.unknown_token_id"], 0);
  EXPECT_EQ(m["tokenizer.ggml.add_bos_token"], true);
  for (const auto& [key, value] : m.items()) EXPECT_EQ(key.rfind("tokenizer.", 0), 0u) << key;
  // Deterministic: serialising the same file again gives the same bytes; keys are sorted.
  const Result<GgufFile> f = GgufFile::open(fixtures_dir() / "tiny-llama" / "gguf" / "tiny-llama-q4_k_m.gguf");
  ASSERT_TRUE(f.ok());
  const Result<std::string> again = gguf_tokenizer_json(*f);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, text);
  EXPECT_EQ(j.dump() + "\n", text);
}

TEST(ModelConfigFixture, TokenizerFileNameIsAllowedByTheFormat) {
  bool listed = false;
  for (std::string_view n : kTokenizerFileNames) listed |= n == kGgufTokenizerFileName;
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace rdrr::convert
