// The graph checker's rope and KV cache rules (graph_check.h): sliding / full layers, k rotated and appended exactly
// once, the rope kernel that the scaling needs, one KV cache type, and the q / k head norms inside the rotations
// (q_norm_rope, kv_append_norm_rope) beside the older separate steps.
#include <gtest/gtest.h>

#include "graph/graph_check_test_util.h"
#include "kernels/kernel_choice.h"

namespace rdrr::graph {
namespace {

using kernels::pinned_kernel_digest;

TEST(GraphCheck, KvCacheTypeTransition) {
  Manifest m = planned_unfused_manifest();
  KernelSpec kv32{"kv_append.comp", "main", pinned_kernel_digest("kv_append_rope_f32").value(), {}, {{"kvDtype", "f32"}}};
  graph(m).kernels.emplace("kv_append_rope_f32", kv32);
  first_step(m, "kv_append_rope").kernel_key = "kv_append_rope_f32";
  expect_error(m, StatusCode::kValidation, {"decode[", "'kv_append_rope': kernel 'kv_append_rope_f32'", "in F32",
                                            "prefill[", "kernel 'kv_append_rope_f16') uses F16", "require_cast_step"});
}

TEST(GraphCheck, SlidingOpsOnlyOnSlidingLayers) {
  Manifest m = planned_unfused_manifest();
  first_step(m, "attention").op = "attention_sliding";  // the layer-2 (full) group
  expect_error(m, StatusCode::kValidation,
               {"(layer 2) 'attention_sliding'", "layer 2 is full_attention", "layerTypes", "must run attention"});
  m = planned_unfused_manifest();
  first_step(m, "attention_sliding").op = "attention";
  expect_error(m, StatusCode::kValidation, {"(layer 0) 'attention'", "sliding_attention", "must run attention_sliding"});
  m = planned_unfused_manifest();
  first_step(m, "rope_q").op = "rope_q_local";
  expect_error(m, StatusCode::kValidation, {"(layer 2) 'rope_q_local'", "full_attention", "local rope"});
  m = planned_unfused_manifest();
  first_step(m, "kv_append_rope_local").op = "kv_append_rope";
  expect_error(m, StatusCode::kValidation,
               {"(layer 0) 'kv_append_rope'", "ropeLocalTheta is set", "kv_append_rope_local"});
  m = planned_unfused_manifest();
  first_step(m, "kv_append_rope").op = "kv_append_rope_local";
  expect_error(m, StatusCode::kValidation, {"(layer 2) 'kv_append_rope_local'", "full_attention", "local rope"});
}

// Replaces every kv_append_rope[_local] step of a layer phase with rope_k[_local] + kv_append (kernel kv_append_f16,
// added to the kernels map): the graph of packs converted before the fused op. append_first: kv_append goes
// before the rotation instead (a wrong graph).
void unfuse_kv_rope(Manifest& m, std::vector<LayerEntry>& phase, bool append_first = false) {
  const KernelSpec kv{"kv_append.comp", "main", pinned_kernel_digest("kv_append_f16").value(), {}, {{"kvDtype", "f16"}}};
  graph(m).kernels.emplace("kv_append_f16", kv);
  rewrite_steps(phase, [append_first](const ExecStep& s) -> std::vector<ExecStep> {
    if (s.op != "kv_append_rope" && s.op != "kv_append_rope_local") return {};
    ExecStep rope{s.op == "kv_append_rope" ? "rope_k" : "rope_k_local", "rope", std::nullopt};
    ExecStep append{"kv_append", "kv_append_f16", std::nullopt};
    if (append_first) return {append, rope};
    return {rope, append};
  });
}

// k reaches the cache rotated exactly once and written exactly once: kv_append_rope, or rope_k then kv_append.
TEST(GraphCheck, KeyRotatedAndAppendedExactlyOnce) {
  // The unfused form (packs converted before kv_append_rope) stays valid.
  Manifest m = planned_unfused_manifest();
  unfuse_kv_rope(m, graph(m).decode);
  unfuse_kv_rope(m, graph(m).prefill);
  ASSERT_TRUE(steps_with_op(graph(m).decode, "kv_append_rope").empty());
  const Status ok = check_execution_graph(m);
  EXPECT_TRUE(ok.ok()) << ok.to_string();
  // A second rotation of k next to the fused append.
  m = planned_unfused_manifest();
  graph(m).decode.push_back(LayerGroup{{2}, {ExecStep{"rope_k", "rope", std::nullopt}}});
  expect_error(m, StatusCode::kValidation, {"decode: layer 2 rotates k 2 times", "expected exactly 1"});
  // A second cache write.
  m = planned_unfused_manifest();
  unfuse_kv_rope(m, graph(m).prefill);  // (puts kv_append_f16 in the kernels map)
  graph(m).decode.push_back(LayerGroup{{2}, {ExecStep{"kv_append", "kv_append_f16", std::nullopt}}});
  expect_error(m, StatusCode::kValidation, {"decode: layer 2 writes k and v into the cache 2 times"});
  // The rotation dropped: k would reach the cache unrotated.
  m = planned_unfused_manifest();
  unfuse_kv_rope(m, graph(m).prefill);
  for (ExecStep* s : steps_with_op(graph(m).prefill, "rope_k")) s->op = "rope_q";
  for (ExecStep* s : steps_with_op(graph(m).prefill, "rope_k_local")) s->op = "rope_q_local";
  expect_error(m, StatusCode::kValidation, {"prefill: layer 0 rotates k 0 times"});
  // The rotation after the append.
  m = planned_unfused_manifest();
  unfuse_kv_rope(m, graph(m).prefill, /*append_first=*/true);
  expect_error(m, StatusCode::kValidation, {"prefill: layer 0 runs kv_append before rope_k", "unrotated"});
  // The fused op pinned to the plain append kernel (which does not rotate).
  m = planned_unfused_manifest();
  unfuse_kv_rope(m, graph(m).prefill);
  first_step(m, "kv_append_rope").kernel_key = "kv_append_f16";
  expect_error(m, StatusCode::kValidation, {"'kv_append_rope'", "kv_append_f16"});
}

// A rope step pins rope_freqs exactly when it rotates with the CPU frequency table (kernels::rope_kernel).
TEST(GraphCheck, RopeKernelFollowsTheScaling) {
  Manifest m = planned_unfused_manifest();
  graph(m).kernels["rope_freqs"] = KernelSpec{"rope.comp", "main", pinned_kernel_digest("rope_freqs").value(), {}, {}};
  ASSERT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  first_step(m, "rope_q").kernel_key = "rope_freqs";  // layer 2 (full attention), unscaled rope
  expect_error(m, StatusCode::kValidation,
               {"'rope_q': kernel 'rope_freqs' cannot rotate this step", "ropeScalingType none", "needs kernel 'rope'"});
  m = planned_unfused_manifest();
  graph(m).kernels["rope_freqs"] = KernelSpec{"rope.comp", "main", pinned_kernel_digest("rope_freqs").value(), {}, {}};
  first_step(m, "rope_q_local").kernel_key = "rope_freqs";
  expect_error(m, StatusCode::kValidation, {"'rope_q_local'", "local rope", "needs kernel 'rope'"});
  // llama3 scaling: `rope` cannot apply it.
  m = planned_unfused_manifest();
  m.inference.rope.scaling_type = RopeScalingType::kLlama3;
  expect_error(m, StatusCode::kValidation, {"'rope_q': kernel 'rope'", "ropeScalingType llama3", "needs kernel 'rope_freqs'"});
}


// A model with q / k norms (Gemma 3's, Qwen3's) runs them inside the rotations: q_norm_rope[_local] with q_norm's
// weight, kv_append_norm_rope[_local] with k_norm's; the separate q_norm / k_norm steps of older packs stay valid. The
// norm-fusing kernels run exactly the ops that take a norm weight.
TEST(GraphCheck, HeadNormsInsideTheRotations) {
  Manifest m = planned_manifest();
  ASSERT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  for (auto* phase : {&graph(m).prefill, &graph(m).decode}) {
    EXPECT_TRUE(steps_with_op(*phase, "q_norm").empty());
    EXPECT_TRUE(steps_with_op(*phase, "k_norm").empty());
    EXPECT_TRUE(steps_with_op(*phase, "rope_q").empty());
    EXPECT_TRUE(steps_with_op(*phase, "kv_append_rope_local").empty());
    ASSERT_EQ(steps_with_op(*phase, "q_norm_rope_local").size(), 1u);  // layers 0-1 (sliding)
    ASSERT_EQ(steps_with_op(*phase, "kv_append_norm_rope").size(), 1u);  // layer 2
    EXPECT_EQ(steps_with_op(*phase, "q_norm_rope_local")[0]->kernel_key, "rope_norm");
    EXPECT_EQ(*steps_with_op(*phase, "kv_append_norm_rope")[0]->weight_ref, "model.layers.{L}.self_attn.k_norm.weight");
    EXPECT_EQ(steps_with_op(*phase, "kv_append_norm_rope")[0]->kernel_key, "kv_append_norm_rope_f16");
  }
  Manifest older = planned_unfused_manifest();
  EXPECT_TRUE(check_execution_graph(older).ok()) << check_execution_graph(older).to_string();

  // The weight: q_norm's length (head_dim), F32.
  m = planned_manifest();
  first_step(m, "q_norm_rope").weight_ref = "model.layers.{L}.input_layernorm.weight";
  expect_error(m, StatusCode::kValidation, {"(layer 2) 'q_norm_rope'", "expected F32 [64]", "F32 [256]"});
  m = planned_manifest();
  first_step(m, "kv_append_norm_rope").weight_ref.reset();
  expect_error(m, StatusCode::kValidation, {"'kv_append_norm_rope'", "needs a weight ref"});
  // Kernels: the norm-fusing rope kernel for the norm op, the plain one for rope_q, and likewise for the cache.
  m = planned_unfused_manifest();
  first_step(m, "rope_q").kernel_key = "rope_norm";
  graph(m).kernels.emplace("rope_norm", KernelSpec{"rope.comp", "main", pinned_kernel_digest("rope_norm").value(), {}, {}});
  expect_error(m, StatusCode::kValidation, {"'rope_q': kernel 'rope_norm' cannot rotate this step", "needs kernel 'rope'"});
  m = planned_manifest();
  graph(m).kernels.emplace("rope", KernelSpec{"rope.comp", "main", pinned_kernel_digest("rope").value(), {}, {}});
  first_step(m, "q_norm_rope_local").kernel_key = "rope";
  expect_error(m, StatusCode::kValidation, {"'q_norm_rope_local': kernel 'rope'", "needs kernel 'rope_norm'"});
  m = planned_manifest();
  graph(m).kernels.emplace("kv_append_rope_f16", KernelSpec{"kv_append.comp", "main",
                                                            pinned_kernel_digest("kv_append_rope_f16").value(),
                                                            {},
                                                            {{"kvDtype", "f16"}}});
  first_step(m, "kv_append_norm_rope").kernel_key = "kv_append_rope_f16";
  expect_error(m, StatusCode::kValidation, {"'kv_append_norm_rope'", "does not norm k", "kv_append_norm_rope_*"});
  m = planned_unfused_manifest();
  graph(m).kernels.emplace("kv_append_norm_rope_f16", KernelSpec{"kv_append.comp", "main",
                                                                 pinned_kernel_digest("kv_append_norm_rope_f16").value(),
                                                                 {},
                                                                 {{"kvDtype", "f16"}}});
  first_step(m, "kv_append_rope").kernel_key = "kv_append_norm_rope_f16";
  expect_error(m, StatusCode::kValidation, {"'kv_append_rope'", "norms k; the op takes no norm weight"});
  // Local rope only on sliding layers, as for rope_q_local.
  m = planned_manifest();
  first_step(m, "kv_append_norm_rope").op = "kv_append_norm_rope_local";
  expect_error(m, StatusCode::kValidation, {"(layer 2) 'kv_append_norm_rope_local'", "full_attention", "local rope"});
  // Without q / k norms the plain rotations are planned.
  m = testing::tiny_gemma3_manifest();
  m.inference.attention.query_key_norm = false;
  std::erase_if(m.tensors, [](const TensorEntry& t) { return t.name.find("_norm.weight") != std::string::npos &&
                                                              t.name.find("self_attn") != std::string::npos; });
  m.inference.execution = plan_execution_graph(m).value();
  ASSERT_TRUE(check_execution_graph(m).ok()) << check_execution_graph(m).to_string();
  EXPECT_EQ(steps_with_op(graph(m).decode, "rope_q").size(), 1u);
  EXPECT_TRUE(steps_with_op(graph(m).decode, "q_norm_rope").empty());
}

}  // namespace
}  // namespace rdrr::graph
