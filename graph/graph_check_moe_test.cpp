// The graph checker's mixture-of-experts rules (graph_check.h): the expert steps and their stacked weights, the
// vectorized expert kernels' block rules, and the decode step that fuses the router's top-k, the gate / up GEMV and
// the activation.
#include <gtest/gtest.h>

#include "graph/graph_check_test_util.h"
#include "kernels/kernel_choice.h"
#include "rdrr/validate.h"

namespace rdrr::graph {
namespace {

using kernels::pinned_kernel_digest;

// Layer 2 of the tiny manifest as a mixture of 4 experts (top 2, width 64): router, stacked experts, no dense MLP.
Manifest moe_manifest() {
  Manifest m = testing::tiny_gemma3_manifest();
  m.inference.execution.reset();
  m.architecture.moe = MoeArchitecture{.num_experts = 4, .experts_per_token = 2, .expert_intermediate_size = 64,
                                       .normalize_top_k = true, .shared_expert_intermediate_size = 0,
                                       .shared_expert_gated = false, .dense_layers = {0, 1}};
  std::erase_if(m.tensors, [](const TensorEntry& t) { return t.name.starts_with("model.layers.2.mlp."); });
  const auto add = [&](const std::string& name, quant::DType dtype, std::vector<uint64_t> shape) {
    TensorEntry t;
    t.name = name;
    t.dtype = dtype;
    t.shape = std::move(shape);
    if (quant::is_block_quantized(dtype)) t.layout = quant::Layout::kRowWise;
    t.role = TensorRole::kMatmul;
    t.group = "layer.2";
    t.size_bytes = expected_tensor_size_bytes(t.dtype, t.shape, t.layout).value();
    m.tensors.push_back(std::move(t));
  };
  add("model.layers.2.mlp.gate.weight", quant::DType::kF32, {4, 256});
  add("model.layers.2.mlp.experts.gate_up_proj.weight", quant::DType::kQ4_K, {4 * 128, 256});
  add("model.layers.2.mlp.experts.down_proj.weight", quant::DType::kQ8_0, {4 * 256, 64});
  testing::place_tensors(m, 65536);
  Result<ExecutionGraph> g = plan_execution_graph(m);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (g.ok()) m.inference.execution = std::move(g).value();
  return m;
}

// MoE layers run router, route, the expert GEMVs (gather, glu, combine); the stacked weights' shapes follow the
// expert buffers ([E x per-expert outputs, per-expert inputs]); expert steps need architecture.moe.
TEST(GraphCheck, MixtureOfExpertsSteps) {
  Manifest m = moe_manifest();
  EXPECT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  const auto moe_down = steps_with_op(graph(m).decode, "moe_down");
  ASSERT_EQ(moe_down.size(), 1u);
  EXPECT_EQ(moe_down[0]->kernel_key, "moe_gemv_combine_q8_0");
  EXPECT_EQ(steps_with_op(graph(m).decode, "down_proj").size(), 1u);  // dense layers 0 and 1
  tensor(m, "model.layers.2.mlp.experts.gate_up_proj.weight").shape = {4 * 64, 256};
  expect_error(m, StatusCode::kValidation, {"'moe_gate_up'", "!= [512, 256]"});
  m = moe_manifest();
  tensor(m, "model.layers.2.mlp.experts.down_proj.weight").shape = {256, 64};
  expect_error(m, StatusCode::kValidation, {"'moe_down'", "!= [1024, 64]"});
  m = moe_manifest();
  m.architecture.moe = {};
  expect_error(m, StatusCode::kValidation, {"an expert step in a model without architecture.moe"});
}

// Expert steps pin the vectorized expert GEMVs where their block rules hold (kernels::pinned_moe_kernel); the
// check applies the same rules: a flat Q4_K expert weight of K 64 (rows crossing blocks) is refused for the
// vectorized kernel and for the generic one.
TEST(GraphCheck, ExpertKernelBlockRules) {
  Manifest m = moe_manifest();
  TensorEntry& down = tensor(m, "model.layers.2.mlp.experts.down_proj.weight");
  down.dtype = quant::DType::kQ4_K;
  down.size_bytes = expected_tensor_size_bytes(down.dtype, down.shape, down.layout).value();
  testing::place_tensors(m, 65536);
  m.inference.execution = plan_execution_graph(m).value();
  ASSERT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  EXPECT_EQ(steps_with_op(graph(m).decode, "moe_down")[0]->kernel_key, "moe_gemv_combine_q4_k_vec");
  EXPECT_EQ(steps_with_op(graph(m).prefill, "moe_gate_up")[0]->kernel_key, "moe_gemv_q4_k_vec");
  EXPECT_EQ(steps_with_op(graph(m).decode, "moe_route_gate_up_glu")[0]->kernel_key, "moe_gemv_route_glu_q4_k_vec");
  tensor(m, "model.layers.2.mlp.experts.down_proj.weight").layout = quant::Layout::kFlat;
  expect_error(m, StatusCode::kUnsupported,
               {"'moe_down'", "moe_gemv_combine_q4_k_vec", "cannot read this flat weight of K 64",
                "rows not whole blocks"});
  graph(m).kernels["moe_gemv_combine_q4_k"] =
      KernelSpec{"moe_gemv.comp", "main", pinned_kernel_digest("moe_gemv_combine_q4_k").value(), {}, {}};
  for (auto* phase : {&graph(m).prefill, &graph(m).decode}) {
    for (ExecStep* step : steps_with_op(*phase, "moe_down")) step->kernel_key = "moe_gemv_combine_q4_k";
  }
  expect_error(m, StatusCode::kUnsupported,
               {"'moe_down'", "moe_gemv_combine_q4_k'", "flat expert rows must start on a block boundary"});
}

// Decode runs the router's top-k, the gate / up GEMV and the activation as one step where the stacked gate_up weight
// is Q4_K / Q5_K rows of whole blocks (prefill keeps moe_route, moe_gate_up and moe_glu; an F32 weight keeps them in
// decode too); the fused step's weight is [E x 2 Fe, D], its kernel one of moe_gemv_route_glu_*, and the three-step
// form stays valid in decode.
TEST(GraphCheck, FusedRouteGateUpGlu) {
  Manifest m = moe_manifest();
  ASSERT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  const auto fused = steps_with_op(graph(m).decode, "moe_route_gate_up_glu");
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0]->kernel_key, "moe_gemv_route_glu_q4_k_vec");
  EXPECT_TRUE(steps_with_op(graph(m).decode, "moe_route").empty());
  EXPECT_TRUE(steps_with_op(graph(m).decode, "moe_glu").empty());
  EXPECT_EQ(steps_with_op(graph(m).prefill, "moe_route").size(), 1u);
  EXPECT_TRUE(steps_with_op(graph(m).prefill, "moe_route_gate_up_glu").empty());

  // The prefill form in decode too: valid.
  Manifest three = moe_manifest();
  graph(three).decode = graph(three).prefill;
  const auto to_gemv = [](ExecStep& s) {
    if (s.kernel_key.starts_with("gemm_")) s.kernel_key = "gemv_" + s.kernel_key.substr(5);
  };
  for (LayerEntry& e : graph(three).decode) {
    if (auto* s = std::get_if<ExecStep>(&e)) to_gemv(*s);
    if (auto* grp = std::get_if<LayerGroup>(&e)) std::for_each(grp->steps.begin(), grp->steps.end(), to_gemv);
  }
  for (const char* k : {"gemv_f32", "gemv_q4_k", "gemv_q6_k", "gemv_q8_0"}) {
    graph(three).kernels.emplace(k, KernelSpec{"gemv.comp", "main", pinned_kernel_digest(k).value(), {}, {}});
  }
  EXPECT_TRUE(check_execution_graph(three).ok()) << check_execution_graph(three).to_string();

  tensor(m, "model.layers.2.mlp.experts.gate_up_proj.weight").shape = {4 * 64, 256};
  expect_error(m, StatusCode::kValidation, {"!= [512, 256]"});
  m = moe_manifest();
  first_step(m, "moe_route_gate_up_glu").kernel_key = "moe_gemv_q4_k_vec";
  expect_error(m, StatusCode::kValidation, {"'moe_route_gate_up_glu'", "moe_gemv_q4_k_vec", "cannot run this op"});
  m = moe_manifest();
  TensorEntry& gate_up = tensor(m, "model.layers.2.mlp.experts.gate_up_proj.weight");
  gate_up.dtype = quant::DType::kQ8_0;
  gate_up.size_bytes = expected_tensor_size_bytes(gate_up.dtype, gate_up.shape, gate_up.layout).value();
  testing::place_tensors(m, 65536);
  graph(m).kernels.emplace("moe_gemv_q8_0",
                           KernelSpec{"moe_gemv.comp", "main", pinned_kernel_digest("moe_gemv_q8_0").value(), {}, {}});
  first_step(m, "moe_gate_up", false).kernel_key = "moe_gemv_q8_0";  // prefill reads it
  expect_error(m, StatusCode::kUnsupported, {"'moe_route_gate_up_glu'", "kernel reads Q4_K", "tensor is Q8_0"});
  // Planned again, the Q8_0 weight keeps the three steps in decode.
  m.inference.execution = plan_execution_graph(m).value();
  ASSERT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  EXPECT_TRUE(steps_with_op(graph(m).decode, "moe_route_gate_up_glu").empty());
  EXPECT_EQ(steps_with_op(graph(m).decode, "moe_route").size(), 1u);
}

}  // namespace
}  // namespace rdrr::graph
