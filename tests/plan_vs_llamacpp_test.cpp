// The q4_k_m plan must pick the same tensor types as llama.cpp's llama-quantize Q4_K_M did for the
// fixture models (the GGUF records its choices), with gate/up kept separate as llama.cpp does.
#include <gtest/gtest.h>

#include <string>

#include "convert/gguf.h"
#include "convert/gguf_names.h"
#include "convert/plan.h"
#include "convert/safetensors.h"

namespace rdrr::convert {
namespace {

std::string expected_rdrr_type(GgmlType t) { return std::string(ggml_type_name(t)); }

void check_model(const std::string& model) {
  const std::string dir = std::string(RDRR_FIXTURES_DIR) + "/" + model;
  auto st = SafeTensorsModel::open(dir + "/hf");
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  auto gguf = GgufFile::open(dir + "/gguf/" + model + "-q4_k_m.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto arch = gguf->get_string("general.architecture");
  ASSERT_TRUE(arch.ok());
  auto n_layers = gguf->get_uint(std::string(*arch) + ".block_count");
  ASSERT_TRUE(n_layers.ok());

  std::vector<PlanInput> inputs;
  bool has_lm_head = false;
  for (const TensorView& t : st->tensors()) {
    inputs.push_back({t.name, t.shape});
    has_lm_head = has_lm_head || t.name == "lm_head.weight";
  }
  PlanOptions options;
  options.preset = Preset::kQ4_K_M;
  options.n_layers = static_cast<int>(*n_layers);
  options.tied_embeddings = !has_lm_head;
  auto plan = plan_tensors(inputs, options);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->size(), gguf->tensors().size());
  for (const PlanEntry& e : *plan) {
    auto gguf_name = hf_to_gguf_name(e.name, *arch);
    ASSERT_TRUE(gguf_name.has_value()) << e.name;
    const GgufTensor* g = gguf->find_tensor(*gguf_name);
    ASSERT_NE(g, nullptr) << *gguf_name;
    EXPECT_EQ(std::string(quant::dtype_name(e.dtype)), expected_rdrr_type(g->type))
        << model << ": " << e.name << " (" << *gguf_name << "), plan reason: " << e.reason;
  }
}

TEST(PlanVsLlamaCpp, TinyLlama) { check_model("tiny-llama"); }
TEST(PlanVsLlamaCpp, TinyQwen2) { check_model("tiny-qwen2"); }
TEST(PlanVsLlamaCpp, TinyGemma3) { check_model("tiny-gemma3"); }

}  // namespace
}  // namespace rdrr::convert
