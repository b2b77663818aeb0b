// Quantizer quality on the three fixture models against llama.cpp's Q4_K_M GGUFs (acceptance): for every
// 2-D weight llama.cpp stored as Q4_K (or Q6_K), our Q4_K's (Q6_K's) relative RMSE against the F32 weights is
// at most llama.cpp's, and our replica of llama.cpp's reference quantizer reproduces its blocks byte for byte.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "quant/cpu.h"
#include "verify/quant_quality.h"

namespace rdrr::tools {
namespace {

const std::string kFixtures = RDRR_FIXTURES_DIR;

QualityReport measure(const std::string& model) {
  auto inputs = find_quality_inputs(kFixtures + "/" + model);
  EXPECT_TRUE(inputs.ok()) << inputs.status().to_string();
  if (!inputs.ok()) return {};
  auto report = measure_quant_quality(*inputs);
  EXPECT_TRUE(report.ok()) << report.status().to_string();
  if (!report.ok()) return {};
  std::printf("%s", format_quality_table(*report).c_str());
  return *report;
}

class QuantQuality : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantQuality, OursQ4KNeverWorseThanLlamaCpp) {
  const QualityReport r = measure(GetParam());
  int q4k = 0, permuted = 0;
  for (const TensorQuality& t : r.tensors) {
    if (t.dtype != quant::DType::kQ4_K) continue;
    ++q4k;
    permuted += t.rows_permuted;
    EXPECT_LE(t.ratio(), 1.0) << t.gguf_name << ": ours " << t.ours_rel_rmse << " llama.cpp " << t.llama_rel_rmse;
    EXPECT_GT(t.llama_rel_rmse, 0.05) << t.gguf_name;  // a real Q4_K error, not a degenerate comparison
    EXPECT_EQ(t.reference_identical_blocks, t.blocks) << t.gguf_name;
  }
  EXPECT_GE(q4k, 10) << "too few Q4_K tensors compared";
  if (r.arch == "llama") {
    EXPECT_EQ(permuted, 4) << "attn_q and attn_k of both layers";
  }
}

// Every tensor llama.cpp stored as Q6_K (output / token_embd and some ffn_down): our Q6_K is at most as bad as
// llama.cpp's reference quantizer, whose blocks our replica reproduces.
TEST_P(QuantQuality, OursQ6KNeverWorseThanLlamaCpp) {
  const QualityReport r = measure(GetParam());
  int q6k = 0;
  for (const TensorQuality& t : r.tensors) {
    if (t.dtype != quant::DType::kQ6_K) continue;
    ++q6k;
    EXPECT_LE(t.ratio(), 1.0) << t.gguf_name << ": ours " << t.ours_rel_rmse << " llama.cpp " << t.llama_rel_rmse;
    EXPECT_GT(t.llama_rel_rmse, 0.005) << t.gguf_name;  // a real Q6_K error, not a degenerate comparison
    EXPECT_EQ(t.reference_identical_blocks, t.blocks) << t.gguf_name;
  }
  EXPECT_GE(q6k, 2) << "too few Q6_K tensors compared";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, QuantQuality, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-gemma3"));

TEST(QuantQualityScalar, ScalarPathGivesTheSameRatios) {
  // The scalar path must give the same bytes, hence the same errors, as the AVX2 path.
  const QualityReport simd = measure("tiny-qwen2");
  quant::set_simd_enabled(false);
  const QualityReport scalar = measure("tiny-qwen2");
  quant::set_simd_enabled(true);
  ASSERT_EQ(simd.tensors.size(), scalar.tensors.size());
  for (size_t i = 0; i < simd.tensors.size(); ++i) {
    EXPECT_EQ(simd.tensors[i].ours_rel_rmse, scalar.tensors[i].ours_rel_rmse) << simd.tensors[i].gguf_name;
  }
}

TEST(QuantQualityErrors, MissingInputsAndMismatchedModels) {
  auto none = find_quality_inputs(kFixtures + "/no-such-model");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no hf/"), std::string::npos) << none.status().message();

  // llama's untied output.weight has no counterpart in qwen2's tied checkpoint.
  auto untied = measure_quant_quality({kFixtures + "/tiny-qwen2/hf", kFixtures + "/tiny-llama/gguf/tiny-llama-q4_k_m.gguf"});
  ASSERT_FALSE(untied.ok());
  EXPECT_EQ(untied.status().code(), StatusCode::kNotFound);
  EXPECT_NE(untied.status().message().find("lm_head.weight"), std::string::npos) << untied.status().message();

  // qwen2's attn_k has 128 rows, llama's 64.
  auto shapes = measure_quant_quality({kFixtures + "/tiny-llama/hf", kFixtures + "/tiny-qwen2/gguf/tiny-qwen2-q4_k_m.gguf"});
  ASSERT_FALSE(shapes.ok());
  EXPECT_EQ(shapes.status().code(), StatusCode::kValidation);
  EXPECT_NE(shapes.status().message().find("does not match GGUF ne"), std::string::npos) << shapes.status().message();
}

}  // namespace
}  // namespace rdrr::tools
