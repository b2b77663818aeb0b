#include "convert/gguf_names.h"

#include <gtest/gtest.h>

namespace rdrr::convert {
namespace {

TEST(GgufNames, LlamaFamilyBothWays) {
  const std::pair<const char*, const char*> cases[] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output.weight", "lm_head.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
      {"blk.12.attn_q.weight", "model.layers.12.self_attn.q_proj.weight"},
      {"blk.1.attn_q.bias", "model.layers.1.self_attn.q_proj.bias"},
      {"blk.1.attn_output.weight", "model.layers.1.self_attn.o_proj.weight"},
      {"blk.1.ffn_norm.weight", "model.layers.1.post_attention_layernorm.weight"},
      {"blk.1.ffn_up.weight", "model.layers.1.mlp.up_proj.weight"},
      {"blk.1.attn_k_norm.weight", "model.layers.1.self_attn.k_norm.weight"},
  };
  for (const auto& [gguf, hf] : cases) {
    EXPECT_EQ(gguf_to_hf_name(gguf, "llama"), std::optional<std::string>(hf)) << gguf;
    EXPECT_EQ(hf_to_gguf_name(hf, "qwen2"), std::optional<std::string>(gguf)) << hf;
  }
}

TEST(GgufNames, Gemma3NormsAndPhi3FusedFfn) {
  EXPECT_EQ(gguf_to_hf_name("blk.2.ffn_norm.weight", "gemma3"),
            std::optional<std::string>("model.layers.2.pre_feedforward_layernorm.weight"));
  EXPECT_EQ(gguf_to_hf_name("blk.2.post_attention_norm.weight", "gemma3"),
            std::optional<std::string>("model.layers.2.post_attention_layernorm.weight"));
  EXPECT_EQ(hf_to_gguf_name("model.layers.2.post_feedforward_layernorm.weight", "gemma3"),
            std::optional<std::string>("blk.2.post_ffw_norm.weight"));
  EXPECT_EQ(hf_to_gguf_name("model.layers.0.post_attention_layernorm.weight", "gemma3"),
            std::optional<std::string>("blk.0.post_attention_norm.weight"));
  EXPECT_EQ(gguf_to_hf_name("blk.0.ffn_up.weight", "phi3"),
            std::optional<std::string>("model.layers.0.mlp.gate_up_proj.weight"));
  EXPECT_EQ(gguf_to_hf_name("blk.0.attn_qkv.weight", "phi3"),
            std::optional<std::string>("model.layers.0.self_attn.qkv_proj.weight"));
}

TEST(GgufNames, UnknownNamesAreNotGuessed) {
  EXPECT_FALSE(gguf_to_hf_name("rope_freqs.weight", "llama").has_value());
  EXPECT_FALSE(gguf_to_hf_name("blk.x.attn_q.weight", "llama").has_value());
  EXPECT_FALSE(gguf_to_hf_name("blk.1.attn_q", "llama").has_value());
  EXPECT_FALSE(gguf_to_hf_name("blk.-1.attn_q.weight", "llama").has_value());
  EXPECT_FALSE(hf_to_gguf_name("model.layers.-1.self_attn.q_proj.weight", "llama").has_value());
  EXPECT_FALSE(hf_to_gguf_name("model.layers.1.mlp.experts.0.w1.weight", "llama").has_value());
}

}  // namespace
}  // namespace rdrr::convert
