#include "graph/graph_check.h"
#include "graph/graph_ops.h"
#include "kernels/kernel_choice.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/digest_table.h"
#include "graph/graph_plan.h"
#include "rdrr/layer_ref.h"
#include "rdrr/manifest_testutil.h"
#include "rdrr/validate.h"
#include "graph/graph_check_test_util.h"

namespace rdrr::graph {
namespace {

using namespace rdrr::kernels;  // registry, digests, kernel choice

TEST(GraphCheck, PlannedGraphPasses) {
  Manifest m = planned_manifest();
  ASSERT_TRUE(validate_manifest(m).ok()) << validate_manifest(m).to_string();
  EXPECT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  m.inference.execution.reset();
  GraphPlanOptions f32;
  f32.kv_dtype = KvDtype::kF32;
  m.inference.execution = plan_execution_graph(m, f32).value();
  EXPECT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
}

TEST(GraphCheck, MissingGraph) {
  Manifest m = planned_manifest();
  m.inference.execution.reset();
  expect_error(m, StatusCode::kValidation, {"inference.execution: missing"});
}

TEST(GraphCheck, UnknownOp) {
  Manifest m = planned_manifest();
  first_step(m, "glu").op = "swiglu_fused";
  expect_error(m, StatusCode::kUnsupported, {"'swiglu_fused'", "unknown op"});
}

TEST(GraphCheck, OpInWrongPhase) {
  Manifest m = planned_manifest();
  graph(m).post_layer.insert(graph(m).post_layer.begin(), ExecStep{"residual", "add", std::nullopt});
  expect_error(m, StatusCode::kValidation, {"postLayer[0] 'residual'", "belongs in prefill / decode"});
}

TEST(GraphCheck, KernelKeyNotInMap) {
  Manifest m = planned_manifest();
  first_step(m, "glu").kernel_key = "glu_split";
  expect_error(m, StatusCode::kValidation, {"'glu'", "kernel key 'glu_split' is not in inference.execution.kernels"});
}

TEST(GraphCheck, KernelNotInRegistry) {
  Manifest m = planned_manifest();
  KernelSpec spec = graph(m).kernels.at("glu");
  graph(m).kernels.emplace("glu_fast", spec);
  first_step(m, "glu").kernel_key = "glu_fast";
  expect_error(m, StatusCode::kUnsupported, {"kernels.glu_fast", "not a kernel of this build"});
}

TEST(GraphCheck, KernelFileOrEntryDiffers) {
  Manifest m = planned_manifest();
  graph(m).kernels.at("glu").file = "glu_old.comp";
  expect_error(m, StatusCode::kUnsupported, {"kernels.glu", "'glu_old.comp'", "'glu.comp'"});
  m = planned_manifest();
  graph(m).kernels.at("glu").entry = "main2";
  expect_error(m, StatusCode::kUnsupported, {"kernels.glu", "entry 'main2'", "entry 'main'"});
}

TEST(GraphCheck, KernelOpCannotRunStep) {
  Manifest m = planned_manifest();
  first_step(m, "q_proj").kernel_key = "rms_norm";
  expect_error(m, StatusCode::kValidation, {"decode[2] 'q_proj'", "kernel 'rms_norm' implements rms_norm"});
}

TEST(GraphCheck, MatmulKernelMatchesPhase) {
  Manifest m = planned_manifest();
  first_step(m, "o_proj", /*decode=*/false).kernel_key = "gemv_q4_k_vec";
  expect_error(m, StatusCode::kValidation, {"prefill[", "'o_proj'", "is a gemv kernel", "prefill use gemm kernels"});
  m = planned_manifest();
  ASSERT_EQ(graph(m).kernels.count("gemm_q4_k"), 1u);
  first_step(m, "o_proj").kernel_key = "gemm_q4_k";
  expect_error(m, StatusCode::kValidation, {"decode[", "'o_proj'", "is a gemm kernel", "decode use gemv kernels"});
}

TEST(GraphCheck, WeightRefRequiredOrForbidden) {
  Manifest m = planned_manifest();
  first_step(m, "q_proj").weight_ref.reset();
  expect_error(m, StatusCode::kValidation, {"'q_proj'", "needs a weight ref"});
  m = planned_manifest();
  first_step(m, "glu").weight_ref = "model.layers.{L}.mlp.up_proj.weight";
  expect_error(m, StatusCode::kValidation, {"'glu'", "takes no weight", "mlp.up_proj"});
}

TEST(GraphCheck, WeightMissingForOneLayer) {
  Manifest m = planned_manifest();
  std::erase_if(m.tensors, [](const TensorEntry& t) { return t.name == "model.layers.1.self_attn.q_proj.weight"; });
  expect_error(m, StatusCode::kValidation,
               {"prefill[2] (layer 1) 'q_proj'", "'model.layers.1.self_attn.q_proj.weight'", "names no tensor"});
}

// The planner fuses each layer's residual add into the next layer's first norm; the check proves every layer's
// output reaches hidden exactly once.
LayerGroup* group_with_op(std::vector<LayerEntry>& phase, std::string_view op) {
  for (LayerEntry& e : phase) {
    if (auto* g = std::get_if<LayerGroup>(&e); g != nullptr && g->steps.front().op == op) return g;
  }
  ADD_FAILURE() << "no group running " << op;
  return nullptr;
}

TEST(GraphCheck, ResidualChainAddsEveryLayerOutputOnce) {
  Manifest m = planned_manifest();
  const uint32_t last = m.architecture.num_layers - 1;
  ASSERT_GE(last, 2u);
  EXPECT_TRUE(check_execution_graph(m).ok());
  LayerGroup* fused = group_with_op(graph(m).decode, "residual_attn_norm");
  LayerGroup* residual = group_with_op(graph(m).decode, "residual");
  ASSERT_TRUE(fused != nullptr && residual != nullptr);
  EXPECT_EQ(fused->layers.front(), 1u);
  EXPECT_EQ(fused->layers.size(), last);
  EXPECT_EQ(residual->layers, std::vector<uint32_t>{last});

  // The last layer's output dropped.
  std::erase_if(graph(m).decode, [](const LayerEntry& e) {
    const auto* g = std::get_if<LayerGroup>(&e);
    return g != nullptr && g->steps.front().op == "residual";
  });
  expect_error(m, StatusCode::kValidation,
               {"decode: the output of layer " + std::to_string(last) + " is added to hidden 0 times, expected exactly 1",
                "(the last layer: only its own residual step can add it)"});
  // Layer 1's output added twice (its residual step and layer 2's residual_attn_norm).
  m = planned_manifest();
  group_with_op(graph(m).prefill, "residual")->layers = {1, last};
  expect_error(m, StatusCode::kValidation,
               {"prefill: the output of layer 1 is added to hidden 2 times",
                "1 residual step(s) in layer 1 and 1 residual_attn_norm in layer 2"});
  // Layer 0 has no layer before it.
  m = planned_manifest();
  ExecStep& first = group_with_op(graph(m).decode, "attn_norm")->steps.front();
  first.op = "residual_attn_norm";
  first.kernel_key = "add_rms_norm";
  expect_error(m, StatusCode::kValidation, {"decode: layer 0 runs residual_attn_norm", "no layer before it"});
}

TEST(GraphCheck, KernelRejectsTensorDtype) {
  Manifest m = planned_manifest();
  // Layer 2's v_proj is Q6_K: a step running gemv_q4_k_vec for every layer does not read it.
  auto& decode = graph(m).decode;
  for (LayerEntry& e : decode) {
    if (auto* g = std::get_if<LayerGroup>(&e); g && g->steps.front().op == "v_proj") {
      e = ExecStep{"v_proj", "gemv_q4_k_vec", "model.layers.{L}.self_attn.v_proj.weight"};
    }
  }
  expect_error(m, StatusCode::kUnsupported,
               {"(layer 2) 'v_proj'", "kernel 'gemv_q4_k_vec'", "v_proj.weight'", "reads Q4_K", "tensor is Q6_K"});
}

TEST(GraphCheck, KernelRejectsTensorLayout) {
  Manifest m = planned_manifest();
  tensor(m, "model.layers.1.self_attn.o_proj.weight").layout = quant::Layout::kColumnWise;
  expect_error(m, StatusCode::kUnsupported,
               {"(layer 1) 'o_proj'", "o_proj.weight'", "layout flat|row_wise", "tensor is column_wise"});
}

TEST(GraphCheck, NormWeightShapeAndDtype) {
  Manifest m = planned_unfused_manifest();
  first_step(m, "q_norm").weight_ref = "model.layers.{L}.input_layernorm.weight";
  expect_error(m, StatusCode::kValidation, {"(layer 0) 'q_norm'", "expected F32 [64]", "F32 [256]"});
  m = planned_manifest();
  TensorEntry& norm = tensor(m, "model.layers.0.input_layernorm.weight");
  norm.dtype = quant::DType::kF16;
  expect_error(m, StatusCode::kUnsupported, {"(layer 0) 'attn_norm'", "reads F32", "tensor is F16"});
  m = planned_manifest();
  tensor(m, "model.norm.weight").shape = {16, 16};
  expect_error(m, StatusCode::kValidation, {"postLayer[0] 'final_norm'", "expected F32 [256]", "[16, 16]"});
}

TEST(GraphCheck, MatmulWeightMustBe2D) {
  Manifest m = planned_manifest();
  TensorEntry& w = tensor(m, "model.layers.0.mlp.up_proj.weight");
  w.shape = {256, 16, 16};
  expect_error(m, StatusCode::kValidation, {"(layer 0) 'up_proj'", "is not 2-D"});
}

TEST(GraphCheck, CompanionMissing) {
  Manifest m = planned_manifest();
  ASSERT_EQ(graph(m).kernels.erase("attn_merge"), 1u);
  expect_error(m, StatusCode::kValidation, {"kernel 'attention_f16'", "companion 'attn_merge'", "not in the kernels map"});
}

// Optional variants (the cooperative-matrix GEMMs) are pinned by the planner but not required: a graph
// written before them, or without them, stays valid (the runtime then runs the pinned GEMM itself).
TEST(GraphCheck, OptionalVariantsMayBeAbsent) {
  Manifest m = planned_manifest();
  size_t erased = 0;
  for (auto it = graph(m).kernels.begin(); it != graph(m).kernels.end();) {
    if (it->first.ends_with("_cm")) {
      it = graph(m).kernels.erase(it);
      ++erased;
    } else {
      ++it;
    }
  }
  EXPECT_GT(erased, 0u);
  EXPECT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
}

// A step names the base kernel, never a variant (a runtime picks the variant per device and options).
TEST(GraphCheck, StepNamingAVariantIsRejected) {
  Manifest m = planned_manifest();
  ExecStep& step = first_step(m, "o_proj", /*decode=*/false);
  ASSERT_FALSE(kernel_variants(step.kernel_key).empty()) << step.kernel_key;
  const std::string variant(kernel_variants(step.kernel_key)[0]);
  step.kernel_key = variant;
  expect_error(m, StatusCode::kValidation, {"'o_proj'", "kernel '" + variant + "'", "is an optional variant"});
}

TEST(GraphCheck, PrecisionRules) {
  Manifest m = planned_manifest();
  graph(m).kernels.at("rms_norm").precision["kvDtype"] = "f16";
  expect_error(m, StatusCode::kUnsupported, {"kernels.rms_norm.precision", "'kvDtype'", "unsupportedPrecision"});
  m = planned_manifest();
  graph(m).kernels.at("attention_f16").precision["accDtype"] = "f32";
  expect_error(m, StatusCode::kUnsupported, {"kernels.attention_f16.precision", "'accDtype'"});
  m = planned_manifest();
  graph(m).kernels.at("attention_f16").precision["kvDtype"] = "bf16";
  expect_error(m, StatusCode::kUnsupported, {"kernels.attention_f16.precision.kvDtype", "'bf16'", "f16 or f32"});
  m = planned_manifest();
  graph(m).kernels.at("kv_append_norm_rope_f16").precision["kvDtype"] = "f32";
  expect_error(m, StatusCode::kUnsupported, {"kernels.kv_append_norm_rope_f16.precision.kvDtype", "'f32'", "in f16"});
}

TEST(GraphCheck, ExactlyOneAttentionPerLayer) {
  Manifest m = planned_manifest();
  graph(m).decode.push_back(LayerGroup{{2}, {ExecStep{"attention", "attention_f16", std::nullopt}}});
  expect_error(m, StatusCode::kValidation, {"decode: layer 2 runs 2 attention ops, expected exactly 1"});
  m = planned_manifest();
  for (LayerEntry& e : graph(m).prefill) {
    if (auto* g = std::get_if<LayerGroup>(&e)) {
      std::erase_if(g->steps, [](const ExecStep& s) { return s.op == "attention"; });
    }
  }
  std::erase_if(graph(m).prefill, [](const LayerEntry& e) {
    return std::holds_alternative<LayerGroup>(e) && std::get<LayerGroup>(e).steps.empty();
  });
  expect_error(m, StatusCode::kValidation, {"prefill: layer 2 runs 0 attention ops"});
}

// The vectorized GEMVs read rows of whole blocks (kernels::matmul_kernel_fits): a flat weight whose rows cross
// blocks is refused, naming the rule.
TEST(GraphCheck, VectorizedGemvNeedsWholeBlockRows) {
  Manifest m = testing::tiny_gemma3_manifest();
  m.architecture.intermediate_size = 300;  // down_proj rows of 300 values: whole blocks only when padded
  for (TensorEntry& t : m.tensors) {
    if (t.name.ends_with("mlp.gate_proj.weight") || t.name.ends_with("mlp.up_proj.weight")) t.shape[0] = 300;
    if (t.name.ends_with("mlp.down_proj.weight")) t.shape[1] = 300;
  }
  m.inference.execution = plan_execution_graph(m).value();
  ASSERT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  ASSERT_EQ(first_step(m, "down_proj").kernel_key, "gemv_q4_k_vec");
  tensor(m, "model.layers.0.mlp.down_proj.weight").layout = quant::Layout::kFlat;
  expect_error(m, StatusCode::kUnsupported,
               {"(layer 0) 'down_proj'", "gemv_q4_k_vec", "cannot read this flat weight of K 300",
                "rows not whole blocks"});
}

// Matmul and embedding shapes follow the op's buffers (the runtime sizes its dispatches from them).
TEST(GraphCheck, MatmulAndEmbeddingShapes) {
  Manifest m = planned_manifest();
  const std::string k = substitute_layer(*first_step(m, "k_proj").weight_ref, 1);
  std::swap(tensor(m, k).shape[0], tensor(m, k).shape[1]);
  expect_error(m, StatusCode::kValidation, {"(layer 1) 'k_proj'", k, "!= [64, 256] ([k width, normed width])"});
  m = planned_manifest();
  tensor(m, "model.embed_tokens.weight").shape[0] = m.architecture.vocab_size - 1;
  expect_error(m, StatusCode::kValidation, {"preLayer[0] 'embed'", "embedding shape", ">= vocabSize"});
}

// An op whose row names its kernel runs only on it; a unary op's manifest parameter must be valid.
TEST(GraphCheck, FixedKernelAndUnaryParameter) {
  Manifest m = planned_manifest();
  graph(m).kernels["add_bias"] = KernelSpec{"add.comp", "main", pinned_kernel_digest("add_bias").value(), {}, {}};
  ASSERT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  first_step(m, "residual").kernel_key = "add_bias";
  expect_error(m, StatusCode::kValidation, {"'residual': kernel 'add_bias' does not run this op", "kernel 'add'"});

  m = planned_manifest();
  m.inference.output.final_logit_softcapping = 30.0;
  graph(m).kernels["softcap"] = KernelSpec{"softcap.comp", "main", pinned_kernel_digest("softcap").value(), {}, {}};
  graph(m).post_layer.insert(graph(m).post_layer.end() - 1, ExecStep{"logit_softcap", "softcap", std::nullopt});
  ASSERT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  m.inference.output.final_logit_softcapping = 0.0;
  expect_error(m, StatusCode::kValidation,
               {"postLayer[", "'logit_softcap'", "inference.output.finalLogitSoftcapping", "> 0"});
  m.inference.output.final_logit_softcapping.reset();
  expect_error(m, StatusCode::kValidation, {"finalLogitSoftcapping", "absent"});
}

TEST(GraphCheck, DigestMismatchNamesStepBothDigestsAndFix) {
  Manifest m = planned_manifest();
  const std::string compiled = pinned_kernel_digest("attention_f16").value();
  const std::string stale = "sha256:" + std::string(64, 'a');
  graph(m).kernels.at("attention_f16").digest = stale;
  expect_error(m, StatusCode::kIntegrity,
               {"(layer 0) 'attention_sliding'", "kernel 'attention_f16'", stale, compiled, "rdrr-digests repin"});
  GraphCheckOptions no_digests;
  no_digests.check_digests = false;
  EXPECT_TRUE(check_execution_graph(m, no_digests).ok());
}

TEST(GraphCheck, CompanionDigestMismatch) {
  Manifest m = planned_manifest();
  graph(m).kernels.at("attn_merge").digest = "sha256:" + std::string(64, 'b');
  expect_error(m, StatusCode::kIntegrity, {"inference.execution.kernels.attn_merge", "rdrr-digests repin"});
}

}  // namespace
}  // namespace rdrr::graph
