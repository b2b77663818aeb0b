#include "convert/plan.h"

#include <gtest/gtest.h>

#include <map>

namespace rdrr::convert {
namespace {

using quant::DType;
using quant::Layout;

std::vector<PlanInput> llama_like(int n_layers, bool tied, bool fused) {
  std::vector<PlanInput> in = {{"model.embed_tokens.weight", {1024, 256}}, {"model.norm.weight", {256}}};
  if (!tied) in.push_back({"lm_head.weight", {1024, 256}});
  for (int l = 0; l < n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    in.push_back({p + "input_layernorm.weight", {256}});
    in.push_back({p + "self_attn.q_proj.weight", {256, 256}});
    in.push_back({p + "self_attn.k_proj.weight", {64, 256}});
    in.push_back({p + "self_attn.v_proj.weight", {64, 256}});
    in.push_back({p + "self_attn.o_proj.weight", {256, 256}});
    in.push_back({p + "post_attention_layernorm.weight", {256}});
    if (fused) {
      in.push_back({p + "mlp.gate_up_proj.weight", {1024, 256}});
    } else {
      in.push_back({p + "mlp.gate_proj.weight", {512, 256}});
      in.push_back({p + "mlp.up_proj.weight", {512, 256}});
    }
    in.push_back({p + "mlp.down_proj.weight", {256, 512}});
  }
  return in;
}

std::map<std::string, PlanEntry> by_name(const std::vector<PlanEntry>& plan) {
  std::map<std::string, PlanEntry> m;
  for (const PlanEntry& e : plan) m[e.name] = e;
  return m;
}

TEST(Plan, UseMoreBitsMatchesLlamaCppRule) {
  // 2-3 layers: only the last layer gets more bits.
  EXPECT_FALSE(use_more_bits(0, 2));
  EXPECT_TRUE(use_more_bits(1, 2));
  EXPECT_FALSE(use_more_bits(1, 3));
  EXPECT_TRUE(use_more_bits(2, 3));
  // 32 layers: the first 4, the last 4, and every third from layer 6.
  std::vector<int> picked;
  for (int i = 0; i < 32; ++i) {
    if (use_more_bits(i, 32)) picked.push_back(i);
  }
  EXPECT_EQ(picked, (std::vector<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
}

TEST(Plan, Q4KMUntiedFollowsLlamaCpp) {
  PlanOptions o;
  o.n_layers = 2;
  auto plan = plan_tensors(llama_like(2, false, false), o);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  auto m = by_name(*plan);
  EXPECT_EQ(m["lm_head.weight"].dtype, DType::kQ6_K);
  EXPECT_EQ(m["lm_head.weight"].layout, Layout::kRowWise);
  EXPECT_EQ(m["model.embed_tokens.weight"].dtype, DType::kQ4_K);
  EXPECT_EQ(m["model.embed_tokens.weight"].layout, Layout::kColumnWise);
  EXPECT_EQ(m["model.norm.weight"].dtype, DType::kF32);
  EXPECT_FALSE(m["model.norm.weight"].layout.has_value());
  EXPECT_EQ(m["model.layers.0.self_attn.v_proj.weight"].dtype, DType::kQ4_K);
  EXPECT_EQ(m["model.layers.1.self_attn.v_proj.weight"].dtype, DType::kQ6_K);
  EXPECT_EQ(m["model.layers.0.mlp.down_proj.weight"].dtype, DType::kQ4_K);
  EXPECT_EQ(m["model.layers.1.mlp.down_proj.weight"].dtype, DType::kQ6_K);
  EXPECT_EQ(m["model.layers.1.self_attn.q_proj.weight"].dtype, DType::kQ4_K);
  // Q4_K [256, 256] column_wise: 256 input columns x 1 block of 144 bytes.
  EXPECT_EQ(m["model.layers.1.self_attn.q_proj.weight"].size_bytes, 256u * 144u);
  EXPECT_EQ(m["model.norm.weight"].size_bytes, 256u * 4u);
}

TEST(Plan, Q4KMTiedEmbeddingIsTheHead) {
  PlanOptions o;
  o.n_layers = 3;
  o.tied_embeddings = true;
  o.q4k_layout = Layout::kRowWise;
  auto plan = plan_tensors(llama_like(3, true, true), o);
  ASSERT_TRUE(plan.ok());
  auto m = by_name(*plan);
  EXPECT_EQ(m["model.embed_tokens.weight"].dtype, DType::kQ6_K);
  EXPECT_EQ(m["model.layers.2.mlp.gate_up_proj.weight"].dtype, DType::kQ4_K);
  EXPECT_EQ(m["model.layers.2.mlp.gate_up_proj.weight"].role, TensorRole::kFfnGateUp);
  EXPECT_EQ(m["model.layers.2.mlp.gate_up_proj.weight"].layout, Layout::kRowWise);
  EXPECT_EQ(m["model.layers.2.mlp.down_proj.weight"].dtype, DType::kQ6_K);
  EXPECT_EQ(m["model.layers.1.mlp.down_proj.weight"].dtype, DType::kQ4_K);
}

// llama.cpp's Q4_K_M gives a model of exactly 8 experts (Mixtral) Q8_0 attn_k / attn_v on every layer, whatever
// use_more_bits says; other expert counts keep the dense rules.
TEST(Plan, Q4KMEightExpertsGiveQ8_0KeysAndValues) {
  for (uint32_t experts : {8u, 60u, 0u}) {
    PlanOptions o;
    o.n_layers = 2;
    o.n_experts = experts;
    auto plan = plan_tensors(llama_like(2, false, false), o);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    auto m = by_name(*plan);
    for (int layer : {0, 1}) {
      const std::string pre = "model.layers." + std::to_string(layer) + ".self_attn.";
      const DType v_dense = layer == 1 ? DType::kQ6_K : DType::kQ4_K;
      EXPECT_EQ(m[pre + "k_proj.weight"].dtype, experts == 8 ? DType::kQ8_0 : DType::kQ4_K) << experts << pre;
      EXPECT_EQ(m[pre + "v_proj.weight"].dtype, experts == 8 ? DType::kQ8_0 : v_dense) << experts << pre;
      EXPECT_EQ(m[pre + "o_proj.weight"].dtype, DType::kQ4_K) << experts << pre;
      EXPECT_EQ(m[pre + "q_proj.weight"].dtype, DType::kQ4_K) << experts << pre;
    }
    if (experts == 8) {
      EXPECT_NE(m["model.layers.0.self_attn.k_proj.weight"].reason.find("8-expert"), std::string::npos);
    }
  }
}

TEST(Plan, PlainPresets) {
  for (auto [preset, dtype] : {std::pair{Preset::kF16, DType::kF16}, std::pair{Preset::kBF16, DType::kBF16},
                               std::pair{Preset::kQ8_0, DType::kQ8_0}, std::pair{Preset::kF32, DType::kF32}}) {
    PlanOptions o;
    o.preset = preset;
    o.n_layers = 1;
    auto plan = plan_tensors(llama_like(1, false, false), o);
    ASSERT_TRUE(plan.ok());
    for (const PlanEntry& e : *plan) {
      EXPECT_EQ(e.dtype, e.shape.size() == 1 ? DType::kF32 : dtype) << e.name;
    }
  }
  PlanOptions o;
  o.preset = Preset::kQ4_K;
  o.n_layers = 1;
  auto m = by_name(*plan_tensors(llama_like(1, false, false), o));
  EXPECT_EQ(m["model.embed_tokens.weight"].dtype, DType::kF16);
  EXPECT_EQ(m["lm_head.weight"].dtype, DType::kQ4_K);
  EXPECT_EQ(m["model.layers.0.mlp.down_proj.weight"].dtype, DType::kQ4_K);
}

TEST(Plan, OverridesWinAndAreChecked) {
  auto o1 = parse_tensor_type_override(R"(.*\.mlp\.down_proj\.weight=q8_0)");
  ASSERT_TRUE(o1.ok());
  PlanOptions o;
  o.n_layers = 2;
  o.overrides.push_back(*o1);
  auto m = by_name(*plan_tensors(llama_like(2, false, false), o));
  EXPECT_EQ(m["model.layers.1.mlp.down_proj.weight"].dtype, DType::kQ8_0);
  EXPECT_NE(m["model.layers.1.mlp.down_proj.weight"].reason.find("override"), std::string::npos);

  auto bad_type = parse_tensor_type_override("x=q5_k");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_EQ(bad_type.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_type.status().message().find("unknown type 'q5_k'"), std::string::npos);
  auto no_eq = parse_tensor_type_override("q4_k");
  ASSERT_FALSE(no_eq.ok());
  EXPECT_NE(no_eq.status().message().find("REGEX=TYPE"), std::string::npos);
  auto bad_regex = parse_tensor_type_override("(unclosed=f16");
  ASSERT_FALSE(bad_regex.ok());
  EXPECT_NE(bad_regex.status().message().find("bad regex"), std::string::npos);

  PlanOptions o2;
  o2.overrides.push_back(*parse_tensor_type_override(R"(model\.norm\.weight=q4_k)"));
  auto plan = plan_tensors(llama_like(1, false, false), o2);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("model.norm.weight is 1-D"), std::string::npos);
}

TEST(Plan, RejectsEmptyShapes) {
  auto plan = plan_tensors({{"model.layers.0.self_attn.q_proj.weight", {0, 256}}}, PlanOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kValidation);
  EXPECT_NE(plan.status().message().find("q_proj.weight: shape has no elements"), std::string::npos);
}

TEST(Plan, ClassifiesNamesAndLayers) {
  EXPECT_EQ(classify_tensor("model.layers.3.self_attn.qkv_proj.weight"), TensorRole::kAttnQkv);
  EXPECT_EQ(classify_tensor("model.layers.3.self_attn.q_proj.bias"), TensorRole::kBias);
  EXPECT_EQ(classify_tensor("model.layers.3.pre_feedforward_layernorm.weight"), TensorRole::kNorm);
  EXPECT_EQ(classify_tensor("model.layers.3.self_attn.q_norm.weight"), TensorRole::kNorm);
  EXPECT_EQ(layer_index("model.layers.17.mlp.up_proj.weight"), 17);
  EXPECT_EQ(layer_index("model.layers.x.mlp"), -1);
  EXPECT_EQ(layer_index("lm_head.weight"), -1);
  EXPECT_EQ(parse_preset("Q4_K_M"), Preset::kQ4_K_M);
  EXPECT_FALSE(parse_preset("q5_k_m").has_value());
}

}  // namespace
// A block-quantized GGUF source: Q4_K / Q6_K / Q8_0 keep their type under any block preset; kernel-less types
// take the preset's type when it holds more bits per weight, else Q8_0; float presets widen; overrides win.
// llama.cpp's fallback where K is not a multiple of 256 (it picks Q5_0 / Q8_0): rdrr picks Q8_0 for float sources
// where the K-quant's blocks run along K (row_wise / flat Q4_K, Q6_K, stacked experts), not for column_wise Q4_K
// (its blocks run along N); other presets and K % 256 == 0 are unchanged; MoE routers stay F32.
TEST(Plan, KQuantsFallBackToQ8_0WhereKIsNotAMultipleOf256) {
  const std::vector<PlanInput> in = {
      {"model.layers.0.self_attn.q_proj.weight", {256, 128}, {}},
      {"model.layers.0.mlp.down_proj.weight", {256, 192}, {}},
      {"model.layers.0.mlp.up_proj.weight", {192, 256}, {}},
      {"model.layers.0.mlp.gate.weight", {8, 256}, {}},
      {"model.layers.0.mlp.experts.gate_up_proj.weight", {8 * 128, 256}, {}},
  };
  PlanOptions o;
  o.preset = Preset::kQ4_K_M;
  o.n_layers = 8;
  o.q4k_layout = Layout::kColumnWise;
  auto m = by_name(*plan_tensors(in, o));
  EXPECT_EQ(m["model.layers.0.self_attn.q_proj.weight"].dtype, DType::kQ4_K);  // blocks along N
  EXPECT_EQ(m["model.layers.0.mlp.down_proj.weight"].dtype, DType::kQ8_0);     // use_more_bits' Q6_K
  EXPECT_EQ(m["model.layers.0.mlp.experts.gate_up_proj.weight"].layout, std::optional<Layout>(Layout::kRowWise));
  o.q4k_layout = Layout::kRowWise;
  m = by_name(*plan_tensors(in, o));
  EXPECT_EQ(m["model.layers.0.self_attn.q_proj.weight"].dtype, DType::kQ8_0);
  EXPECT_EQ(m["model.layers.0.self_attn.q_proj.weight"].reason,
            "Q4_K -> Q8_0: K 128 is not a multiple of 256, as llama.cpp's fallback (preset q4_k_m)");
  EXPECT_EQ(m["model.layers.0.mlp.down_proj.weight"].dtype, DType::kQ8_0);  // use_more_bits' Q6_K too
  EXPECT_EQ(m["model.layers.0.mlp.up_proj.weight"].dtype, DType::kQ4_K);    // K 256 (N 192 is no matter)
  EXPECT_EQ(m["model.layers.0.mlp.gate.weight"].dtype, DType::kF32);
  EXPECT_EQ(m["model.layers.0.mlp.experts.gate_up_proj.weight"].dtype, DType::kQ4_K);
  EXPECT_EQ(m["model.layers.0.mlp.experts.gate_up_proj.weight"].layout, std::optional<Layout>(Layout::kRowWise));
  o.preset = Preset::kF16;
  m = by_name(*plan_tensors(in, o));
  EXPECT_EQ(m["model.layers.0.self_attn.q_proj.weight"].dtype, DType::kF16);
  EXPECT_EQ(m["model.layers.0.mlp.gate.weight"].dtype, DType::kF32);
}

TEST(Plan, GgufSourcesKeepTheirTypeOrWiden) {
  using G = quant::GgmlBlockType;
  const std::vector<PlanInput> in = {
      {"model.layers.0.self_attn.q_proj.weight", {256, 256}, {G::kQ4_K}},
      {"model.layers.0.self_attn.k_proj.weight", {64, 256}, {G::kQ6_K}},
      {"model.layers.0.self_attn.o_proj.weight", {256, 256}, {G::kQ8_0}},
      {"model.layers.0.mlp.down_proj.weight", {256, 192}, {G::kQ5_1}},
      {"model.layers.0.mlp.up_proj.weight", {256, 192}, {G::kQ5_0}},
      {"model.layers.0.mlp.gate_up_proj.weight", {1024, 256}, {G::kQ4_K, G::kQ6_K}},
      {"model.layers.0.self_attn.v_proj.weight", {64, 256}, {G::kF16}},
  };
  PlanOptions o;
  o.preset = Preset::kQ4_K;
  o.n_layers = 1;
  auto m = by_name(*plan_tensors(in, o));
  EXPECT_EQ(m["model.layers.0.self_attn.q_proj.weight"].dtype, DType::kQ4_K);
  EXPECT_EQ(m["model.layers.0.self_attn.k_proj.weight"].dtype, DType::kQ6_K);
  EXPECT_EQ(m["model.layers.0.self_attn.k_proj.weight"].reason,
            "source Q6_K kept (--quantize applies to float tensors)");
  EXPECT_EQ(m["model.layers.0.self_attn.o_proj.weight"].dtype, DType::kQ8_0);
  EXPECT_FALSE(m["model.layers.0.self_attn.o_proj.weight"].widened);
  EXPECT_EQ(m["model.layers.0.mlp.down_proj.weight"].dtype, DType::kQ8_0);
  EXPECT_TRUE(m["model.layers.0.mlp.down_proj.weight"].widened);
  EXPECT_EQ(m["model.layers.0.mlp.down_proj.weight"].reason,
            "source Q5_1 has no rdrr kernel: widened to Q8_0 (never narrowed)");
  EXPECT_EQ(m["model.layers.0.mlp.up_proj.weight"].dtype, DType::kQ5_0);  // a pass-through type with kernels
  EXPECT_FALSE(m["model.layers.0.mlp.up_proj.weight"].widened);
  EXPECT_EQ(m["model.layers.0.mlp.up_proj.weight"].layout, std::optional<Layout>(Layout::kRowWise));
  EXPECT_EQ(m["model.layers.0.mlp.down_proj.weight"].layout, std::optional<Layout>(Layout::kRowWise));
  EXPECT_EQ(m["model.layers.0.mlp.gate_up_proj.weight"].dtype, DType::kQ6_K);
  EXPECT_EQ(m["model.layers.0.self_attn.v_proj.weight"].dtype, DType::kQ4_K);  // a float source is quantized
  o.preset = Preset::kQ8_0;  // a Q4_K source stays Q4_K: re-encoding adds error, not information
  m = by_name(*plan_tensors(in, o));
  EXPECT_EQ(m["model.layers.0.self_attn.q_proj.weight"].dtype, DType::kQ4_K);
  EXPECT_EQ(m["model.layers.0.self_attn.v_proj.weight"].dtype, DType::kQ8_0);
  o.preset = Preset::kF16;  // float presets still widen every tensor
  m = by_name(*plan_tensors(in, o));
  for (const auto& [name, e] : m) EXPECT_EQ(e.dtype, DType::kF16) << name;
  o.preset = Preset::kQ4_K;
  o.overrides.push_back(*parse_tensor_type_override(".*k_proj.*=q4_k"));  // an override wins
  m = by_name(*plan_tensors(in, o));
  EXPECT_EQ(m["model.layers.0.self_attn.k_proj.weight"].dtype, DType::kQ4_K);
}

// A kernel-less type with fewer bits per weight than the preset's type is re-encoded into the preset's type; the
// q4_k_m rule's Q6_K for a Q4_K source (a Q4_K_S file's attn_v) keeps the source's Q4_K.
TEST(Plan, GgufKernelLessSourcesTakeAWiderPresetType) {
  using G = quant::GgmlBlockType;
  EXPECT_EQ(gguf_source_choice({G::kQ2_K}, DType::kQ4_K), std::nullopt);   // 2.625 < 4.5 bits per weight
  EXPECT_EQ(gguf_source_choice({G::kQ3_K}, DType::kQ6_K), std::nullopt);
  EXPECT_EQ(gguf_source_choice({G::kQ5_1}, DType::kQ6_K), std::nullopt);   // 6 < 6.5625
  EXPECT_EQ(gguf_source_choice({G::kQ5_1}, DType::kQ4_K)->dtype, DType::kQ8_0);
  EXPECT_EQ(gguf_source_choice({G::kQ4_1}, DType::kQ4_K)->dtype, DType::kQ8_0);  // 5 > 4.5 bits per weight
  // Q4_0, Q5_0 and Q5_K have kernels: kept under every block preset, never re-encoded.
  EXPECT_EQ(gguf_source_choice({G::kQ5_K}, DType::kQ6_K)->dtype, DType::kQ5_K);
  EXPECT_EQ(gguf_source_choice({G::kQ4_0}, DType::kQ8_0)->dtype, DType::kQ4_0);
  EXPECT_EQ(gguf_source_choice({G::kQ5_0, G::kQ5_0}, DType::kQ4_K)->dtype, DType::kQ5_0);
  // Parts of differing types where the wider one is pass-through (no encoder): Q8_0 holds both.
  EXPECT_EQ(gguf_source_choice({G::kQ4_K, G::kQ5_K}, DType::kQ4_K)->dtype, DType::kQ8_0);
  EXPECT_EQ(gguf_source_choice({G::kQ4_K}, DType::kQ6_K)->dtype, DType::kQ4_K);
  EXPECT_EQ(gguf_source_choice({G::kF16}, DType::kQ4_K), std::nullopt);
  EXPECT_EQ(gguf_source_choice({G::kQ4_K}, DType::kF32), std::nullopt);
}


}  // namespace rdrr::convert
