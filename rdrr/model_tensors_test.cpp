#include "rdrr/model_tensors.h"

#include <gtest/gtest.h>

#include <set>

#include "rdrr/layer_ref.h"

namespace rdrr {
namespace {

using M = ModelTensor;

// Distinct primes, so that a rule that picks the wrong dim shows.
constexpr ModelDims kDims{.hidden = 11, .intermediate = 13, .vocab = 17, .heads = 5, .kv_heads = 3, .head_dim = 7,
                          .experts = 19, .expert_ff = 23, .shared_ff = 29};

struct Expected {
  ModelTensor tensor;
  std::string name;  // at layer 4, plain root
  std::vector<int64_t> shape;
  TensorRole role;
};

// The HF spellings and shape rules, written out once more as the tests' independent record.
std::vector<Expected> expected_rows() {
  const int64_t H = 11, F = 13, V = 17, hd = 7, q = 5 * 7, kv = 3 * 7, E = 19, Fe = 23, Fs = 29;
  const std::string l = "model.layers.4.";
  return {
      {M::kEmbedTokens, "model.embed_tokens.weight", {V, H}, TensorRole::kEmbedding},
      {M::kFinalNorm, "model.norm.weight", {H}, TensorRole::kNorm},
      {M::kLmHead, "lm_head.weight", {V, H}, TensorRole::kLmHead},
      {M::kInputNorm, l + "input_layernorm.weight", {H}, TensorRole::kNorm},
      {M::kPostAttentionNorm, l + "post_attention_layernorm.weight", {H}, TensorRole::kNorm},
      {M::kPreFeedforwardNorm, l + "pre_feedforward_layernorm.weight", {H}, TensorRole::kNorm},
      {M::kPostFeedforwardNorm, l + "post_feedforward_layernorm.weight", {H}, TensorRole::kNorm},
      {M::kQNorm, l + "self_attn.q_norm.weight", {hd}, TensorRole::kNorm},
      {M::kKNorm, l + "self_attn.k_norm.weight", {hd}, TensorRole::kNorm},
      {M::kQProj, l + "self_attn.q_proj.weight", {q, H}, TensorRole::kMatmul},
      {M::kKProj, l + "self_attn.k_proj.weight", {kv, H}, TensorRole::kMatmul},
      {M::kVProj, l + "self_attn.v_proj.weight", {kv, H}, TensorRole::kMatmul},
      {M::kQkvProj, l + "self_attn.qkv_proj.weight", {q + 2 * kv, H}, TensorRole::kMatmul},
      {M::kOProj, l + "self_attn.o_proj.weight", {H, q}, TensorRole::kMatmul},
      {M::kGateProj, l + "mlp.gate_proj.weight", {F, H}, TensorRole::kMatmul},
      {M::kUpProj, l + "mlp.up_proj.weight", {F, H}, TensorRole::kMatmul},
      {M::kGateUpProj, l + "mlp.gate_up_proj.weight", {2 * F, H}, TensorRole::kMatmul},
      {M::kDownProj, l + "mlp.down_proj.weight", {H, F}, TensorRole::kMatmul},
      {M::kQBias, l + "self_attn.q_proj.bias", {q}, TensorRole::kBias},
      {M::kKBias, l + "self_attn.k_proj.bias", {kv}, TensorRole::kBias},
      {M::kVBias, l + "self_attn.v_proj.bias", {kv}, TensorRole::kBias},
      {M::kQkvBias, l + "self_attn.qkv_proj.bias", {q + 2 * kv}, TensorRole::kBias},
      {M::kRouter, l + "mlp.gate.weight", {E, H}, TensorRole::kMatmul},
      {M::kExpertsGateUp, l + "mlp.experts.gate_up_proj.weight", {E * 2 * Fe, H}, TensorRole::kMatmul},
      {M::kExpertsDown, l + "mlp.experts.down_proj.weight", {E * H, Fe}, TensorRole::kMatmul},
      {M::kSharedGateProj, l + "mlp.shared_expert.gate_proj.weight", {Fs, H}, TensorRole::kMatmul},
      {M::kSharedUpProj, l + "mlp.shared_expert.up_proj.weight", {Fs, H}, TensorRole::kMatmul},
      {M::kSharedGateUpProj, l + "mlp.shared_expert.gate_up_proj.weight", {2 * Fs, H}, TensorRole::kMatmul},
      {M::kSharedDownProj, l + "mlp.shared_expert.down_proj.weight", {H, Fs}, TensorRole::kMatmul},
      {M::kSharedExpertGate, l + "mlp.shared_expert_gate.weight", {1, H}, TensorRole::kMatmul},
  };
}

TEST(ModelTensors, EveryRowHasItsNameShapeAndRole) {
  const std::vector<Expected> rows = expected_rows();
  ASSERT_EQ(rows.size(), kModelTensorCount);
  ASSERT_EQ(model_tensor_table().size(), kModelTensorCount);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Expected& e = rows[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(static_cast<size_t>(e.tensor), i);
    EXPECT_EQ(model_tensor_table()[i].tensor, e.tensor);
    EXPECT_EQ(model_tensor_name(e.tensor, 4), e.name);
    EXPECT_EQ(model_tensor_name(e.tensor, 4),
              model_tensor_stem(e.tensor, 4) + "." + std::string(tensor_leaf_name(model_tensor_info(e.tensor).leaf)));
    EXPECT_EQ(expected_shape(e.tensor, kDims), e.shape);
    EXPECT_EQ(model_tensor_info(e.tensor).role, e.role);
    EXPECT_EQ(model_tensor_info(e.tensor).leaf, e.role == TensorRole::kBias ? TensorLeaf::kBias : TensorLeaf::kWeight);
  }
}

TEST(ModelTensors, NamesAreDistinct) {
  std::set<std::string> names;
  for (const ModelTensorInfo& r : model_tensor_table()) names.insert(model_tensor_name(r.tensor, 0));
  EXPECT_EQ(names.size(), kModelTensorCount);
}

TEST(ModelTensors, EveryRowRoundTripsUnderEveryRootAndLayer) {
  for (const TensorRoot& root : kTensorRoots) {
    for (const ModelTensorInfo& r : model_tensor_table()) {
      for (uint32_t layer : {0u, 1u, 9u, 10u, 4095u, 2147483647u}) {
        const std::string name = model_tensor_name(r.tensor, layer, root);
        SCOPED_TRACE(name);
        const std::optional<ParsedModelTensor> p = parse_model_tensor_name(name, root);
        ASSERT_TRUE(p.has_value());
        EXPECT_EQ(p->tensor, r.tensor);
        EXPECT_EQ(p->layer, r.scope == TensorScope::kLayer ? layer : 0u);
        if (r.scope == TensorScope::kLayer) {
          EXPECT_EQ(substitute_layer(model_tensor_template(r.tensor, root), layer), name);
        } else {
          EXPECT_EQ(model_tensor_template(r.tensor, root), name);
        }
      }
    }
  }
}

TEST(ModelTensors, TemplatesUseTheLayerToken) {
  EXPECT_EQ(model_tensor_template(M::kDownProj), "model.layers.{L}.mlp.down_proj.weight");
  EXPECT_EQ(model_tensor_template(M::kQBias), "model.layers.{L}.self_attn.q_proj.bias");
  EXPECT_EQ(model_tensor_template(M::kEmbedTokens), "model.embed_tokens.weight");
  EXPECT_EQ(model_tensor_template(M::kLmHead), "lm_head.weight");
  EXPECT_NE(model_tensor_template(M::kInputNorm).find(kLayerToken), std::string::npos);
}

TEST(ModelTensors, Roots) {
  EXPECT_EQ(model_tensor_name(M::kEmbedTokens, 0, kLanguageModelRoot), "language_model.model.embed_tokens.weight");
  EXPECT_EQ(model_tensor_name(M::kLmHead, 0, kLanguageModelRoot), "language_model.lm_head.weight");
  EXPECT_EQ(model_tensor_name(M::kQProj, 2, kLanguageModelRoot),
            "language_model.model.layers.2.self_attn.q_proj.weight");
  EXPECT_EQ(model_tensor_name(M::kFinalNorm, 0, kModelLanguageModelRoot), "model.language_model.norm.weight");
  EXPECT_EQ(model_tensor_name(M::kLmHead, 0, kModelLanguageModelRoot), "lm_head.weight");
  EXPECT_EQ(model_tensor_stem(M::kUpProj, 3, kModelLanguageModelRoot), "model.language_model.layers.3.mlp.up_proj");
  // A name under one root is not a name under another (the head of transformers 5 is the plain one).
  EXPECT_FALSE(parse_model_tensor_name("language_model.model.norm.weight").has_value());
  EXPECT_FALSE(parse_model_tensor_name("model.norm.weight", kLanguageModelRoot).has_value());
  EXPECT_FALSE(parse_model_tensor_name("lm_head.weight", kLanguageModelRoot).has_value());
  EXPECT_EQ(parse_model_tensor_name("lm_head.weight", kModelLanguageModelRoot),
            (ParsedModelTensor{M::kLmHead, 0}));
  // "model.language_model.layers.0..." under the plain root: "language_model.layers.0..." is no text stem.
  EXPECT_FALSE(parse_model_tensor_name("model.language_model.layers.0.mlp.up_proj.weight").has_value());
}

TEST(ModelTensors, RebaseMovesWrapperNamesToThePlainRoot) {
  EXPECT_EQ(
      rebase_tensor_name("model.language_model.layers.1.mlp.up_proj.weight", kModelLanguageModelRoot, kPlainRoot),
      "model.layers.1.mlp.up_proj.weight");
  EXPECT_EQ(rebase_tensor_name("language_model.model.norm.weight", kLanguageModelRoot, kPlainRoot),
            "model.norm.weight");
  EXPECT_EQ(rebase_tensor_name("language_model.lm_head.weight", kLanguageModelRoot, kPlainRoot), "lm_head.weight");
  // Any rest under the text prefix moves (the caller rejects unknown names later); the head needs a head stem.
  EXPECT_EQ(rebase_tensor_name("language_model.model.whatever", kLanguageModelRoot, kPlainRoot), "model.whatever");
  EXPECT_FALSE(rebase_tensor_name("language_model.lm_headx.weight", kLanguageModelRoot, kPlainRoot).has_value());
  EXPECT_FALSE(rebase_tensor_name("language_model.other.weight", kLanguageModelRoot, kPlainRoot).has_value());
  EXPECT_FALSE(rebase_tensor_name("lm_head.weight", kModelLanguageModelRoot, kPlainRoot).has_value());
  EXPECT_FALSE(rebase_tensor_name("model.norm.weight", kLanguageModelRoot, kPlainRoot).has_value());
  EXPECT_EQ(rebase_tensor_name("model.norm.weight", kPlainRoot, kLanguageModelRoot),
            "language_model.model.norm.weight");
  EXPECT_FALSE(rebase_tensor_name("lm_head.weight", kLanguageModelRoot, kLanguageModelRoot).has_value());
}

TEST(ModelTensors, BadNamesDoNotParse) {
  for (const char* bad : {"", "model.", "model.layers.", "model.layers.3", "model.layers.3.", "lm_head",
                          "lm_head.bias", "model.embed_tokens.bias", "model.embed_tokens", "embed_tokens.weight",
                          "model.lm_head.weight", "norm.weight", "model.norm.weight.", "model.norm.weightx",
                          "model.layers.3.embed_tokens.weight", "model.layers.3.norm.weight",
                          "model.layers.3.lm_head.weight", "model.layers.x.self_attn.q_proj.weight",
                          "model.layers.-1.self_attn.q_proj.weight", "model.layers.3x.self_attn.q_proj.weight",
                          "model.layers..self_attn.q_proj.weight", "model.layers.99999999999.mlp.up_proj.weight",
                          "model.layers.3.self_attn.q_proj", "model.layers.3.self_attn.q_proj.wieght",
                          "model.layers.3.self_attn.q_norm.bias", "model.layers.3.input_layernorm.bias",
                          "model.layers.3.mlp.up_proj.weight.extra", "model.layers.3.mlp.gate_up.weight",
                          "model.layers.3.self_attn.o_proj.bias", "model.layers.3.mlp.down_proj.bias",
                          "model.layers.3.q_proj.weight", "layers.3.self_attn.q_proj.weight",
                          "x.model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight", "output.weight",
                          "model.layers.3.self_attn.rotary_emb.inv_freq"}) {
    EXPECT_FALSE(parse_model_tensor_name(bad).has_value()) << bad;
  }
}

TEST(ModelTensors, SplitLayerName) {
  const std::optional<LayerTensorName> s = split_layer_name("model.layers.12.mlp.anything");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->layer, 12u);
  EXPECT_EQ(s->rest, "mlp.anything");
  // As std::from_chars reads an int: leading zeros are accepted, a sign or an overflow is not a layer.
  EXPECT_EQ(split_layer_name("model.layers.007.mlp.up_proj.weight")->layer, 7u);
  EXPECT_EQ(parse_model_tensor_name("model.layers.007.mlp.up_proj.weight"), (ParsedModelTensor{M::kUpProj, 7}));
  EXPECT_EQ(split_layer_name("model.layers.3.")->rest, "");
  EXPECT_EQ(split_layer_name("language_model.model.layers.5.x", kLanguageModelRoot)->layer, 5u);
  for (const char* bad : {"model.layers.-1.x", "model.layers.+1.x", "model.layers.3", "model.layers.x.y",
                          "model.layers.2147483648.x", "model.norm.weight", "lm_head.weight", "model.layer.1.x",
                          "language_model.model.layers.5.x"}) {
    EXPECT_FALSE(split_layer_name(bad).has_value()) << bad;
  }
}

TEST(ModelTensors, ShapesFromArchitecture) {
  Architecture a;
  a.hidden_size = 2048;
  a.intermediate_size = 8192;
  a.vocab_size = 128256;
  a.num_attention_heads = 32;
  a.num_key_value_heads = 8;
  a.head_dim = 64;
  const ModelDims d = model_dims(a);
  EXPECT_EQ(d.hidden, 2048);
  EXPECT_EQ(d.intermediate, 8192);
  EXPECT_EQ(d.vocab, 128256);
  EXPECT_EQ(d.heads, 32);
  EXPECT_EQ(d.kv_heads, 8);
  EXPECT_EQ(d.head_dim, 64);
  EXPECT_EQ(expected_shape(M::kQkvProj, d), (std::vector<int64_t>{(32 + 16) * 64, 2048}));
  EXPECT_EQ(expected_shape(M::kGateUpProj, d), (std::vector<int64_t>{16384, 2048}));
  EXPECT_EQ(expected_shape(M::kOProj, d), (std::vector<int64_t>{2048, 2048}));
  EXPECT_EQ(expected_shape(M::kKBias, d), (std::vector<int64_t>{512}));
  EXPECT_EQ(expected_shape(M::kQNorm, d), (std::vector<int64_t>{64}));
}

TEST(ModelTensors, OutsideTextModel) {
  EXPECT_TRUE(outside_text_model("vision_tower.vision_model.embeddings.patch_embedding.weight"));
  EXPECT_TRUE(outside_text_model("model.vision_tower.x"));
  EXPECT_TRUE(outside_text_model("multi_modal_projector.mm_input_projection_weight"));
  EXPECT_TRUE(outside_text_model("model.multi_modal_projector.x"));
  EXPECT_FALSE(outside_text_model("model.embed_tokens.weight"));
  EXPECT_FALSE(outside_text_model("language_model.model.norm.weight"));
  EXPECT_FALSE(outside_text_model("vision_towerx"));
}

}  // namespace
}  // namespace rdrr
