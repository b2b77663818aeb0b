#include "graph/graph_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "kernels/digest_table.h"
#include "graph/graph_check.h"
#include "graph/graph_ops.h"
#include "kernels/kernel_choice.h"
#include "kernels/registry.h"
#include "rdrr/manifest_testutil.h"
#include "rdrr/validate.h"

namespace rdrr::graph {
namespace {

using namespace rdrr::kernels;  // registry, digests, kernel choice

Manifest planned_gemma3(const GraphPlanOptions& opts = {}) {
  Manifest m = testing::tiny_gemma3_manifest();
  m.inference.execution.reset();
  Result<ExecutionGraph> g = plan_execution_graph(m, opts);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (g.ok()) m.inference.execution = *g;
  return m;
}

// The group (or plain step) entries of a layer phase that run `op`, as (layers, kernel) pairs; a plain
// step reports every layer.
std::vector<std::pair<std::vector<uint32_t>, std::string>> op_kernels(const Manifest& m,
                                                                     const std::vector<LayerEntry>& phase,
                                                                     std::string_view op) {
  std::vector<std::pair<std::vector<uint32_t>, std::string>> out;
  std::vector<uint32_t> all(m.architecture.num_layers);
  for (uint32_t l = 0; l < all.size(); ++l) all[l] = l;
  for (const LayerEntry& e : phase) {
    if (const auto* s = std::get_if<ExecStep>(&e)) {
      if (s->op == op) out.push_back({all, s->kernel_key});
    } else {
      for (const ExecStep& s2 : std::get<LayerGroup>(e).steps) {
        if (s2.op == op) out.push_back({std::get<LayerGroup>(e).layers, s2.kernel_key});
      }
    }
  }
  return out;
}

TEST(GraphPlan, Gemma3GraphIsValidAndPinned) {
  const Manifest m = planned_gemma3();
  ASSERT_TRUE(m.inference.execution.has_value());
  const Status st = validate_manifest(m);
  ASSERT_TRUE(st.ok()) << st.to_string();
  const ExecutionGraph& g = *m.inference.execution;
  for (const auto& [key, spec] : g.kernels) {
    const KernelInfo* k = find_kernel(key);
    ASSERT_NE(k, nullptr) << key;
    EXPECT_EQ(spec.file, k->file);
    EXPECT_EQ(spec.entry, k->entry);
    Result<std::string> d = pinned_kernel_digest(key);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(spec.digest, *d) << key;
    for (std::string_view c : kernel_companions(key)) EXPECT_TRUE(g.kernels.count(std::string(c))) << key << " " << c;
    // Optional variants (the cooperative-matrix GEMMs) are pinned too, so devices that have them may run them.
    for (std::string_view v : kernel_variants(key)) EXPECT_TRUE(g.kernels.count(std::string(v))) << key << " " << v;
  }
  ASSERT_EQ(g.pre_layer.size(), 1u);
  EXPECT_EQ(g.pre_layer[0].op, "embed");
  ASSERT_FALSE(g.post_layer.empty());
  EXPECT_EQ(g.post_layer.back().op, "sample");
  // Tied embedding: the lm_head step reads the embedding table.
  const auto head = std::find_if(g.post_layer.begin(), g.post_layer.end(), [](const ExecStep& s) { return s.op == "lm_head"; });
  ASSERT_NE(head, g.post_layer.end());
  EXPECT_EQ(head->weight_ref, "model.embed_tokens.weight");
}

TEST(GraphPlan, KernelFollowsEachLayersWeightDtype) {
  const Manifest m = planned_gemma3();
  const ExecutionGraph& g = *m.inference.execution;
  // The last layer's v_proj is Q6_K, the others Q4_K row_wise.
  for (const auto& [phase, gemm] : {std::pair{&g.prefill, true}, std::pair{&g.decode, false}}) {
    const auto v = op_kernels(m, *phase, "v_proj");
    ASSERT_EQ(v.size(), 2u);
    for (const auto& [layers, kernel] : v) {
      for (uint32_t l : layers) {
        const TensorEntry* t = find_tensor(m, "model.layers." + std::to_string(l) + ".self_attn.v_proj.weight");
        ASSERT_NE(t, nullptr);
        const KernelInfo* k = find_kernel(kernel);
        ASSERT_NE(k, nullptr);
        EXPECT_EQ(k->op, gemm ? Op::kGemm : Op::kGemv) << kernel;
        EXPECT_NE(std::find(k->dtypes.begin(), k->dtypes.end(), t->dtype), k->dtypes.end()) << kernel << " layer " << l;
        // Decode Q6_K rows of whole blocks run the word-load kernel (gemv_q6k.comp).
        if (!gemm && t->dtype == quant::DType::kQ6_K) {
          EXPECT_EQ(kernel, "gemv_q6_k_vec") << "layer " << l;
        }
      }
    }
  }
}

TEST(GraphPlan, SlidingAndFullLayersGetTheirOwnAttention) {
  const Manifest m = planned_gemma3();
  const ExecutionGraph& g = *m.inference.execution;
  for (const auto* phase : {&g.prefill, &g.decode}) {
    uint32_t runs = 0;
    for (std::string_view op : {"attention", "attention_sliding"}) {
      for (const auto& [layers, kernel] : op_kernels(m, *phase, op)) {
        EXPECT_EQ(kernel, "attention_f16");
        for (uint32_t l : layers) {
          ++runs;
          EXPECT_EQ(m.inference.attention.layer_types[l] == LayerType::kSlidingAttention, op == "attention_sliding")
              << op << " layer " << l;
        }
      }
    }
    EXPECT_EQ(runs, m.architecture.num_layers);
  }
}

// A layer with a fused qkv_proj runs it and qkv_split in place of q_proj / k_proj / v_proj; the other layers keep
// theirs (one group each), and the graph passes the checker.
TEST(GraphPlan, FusedQkvLayersRunOneMatmulAndTheSplit) {
  Manifest m = testing::tiny_gemma3_manifest();
  m.inference.execution.reset();
  const std::string at = "model.layers.0.self_attn.";
  uint64_t rows = 0;
  for (const TensorEntry& t : m.tensors) {
    if (t.name == at + "q_proj.weight" || t.name == at + "k_proj.weight" || t.name == at + "v_proj.weight") {
      rows += t.shape[0];
    }
  }
  for (TensorEntry& t : m.tensors) {
    if (t.name == at + "q_proj.weight") {
      t.name = at + "qkv_proj.weight";
      t.shape[0] = rows;
    }
  }
  std::erase_if(m.tensors, [&](const TensorEntry& t) { return t.name == at + "k_proj.weight" || t.name == at + "v_proj.weight"; });
  Result<ExecutionGraph> g = plan_execution_graph(m);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  m.inference.execution = *g;
  const Status checked = check_execution_graph(m, {});
  ASSERT_TRUE(checked.ok()) << checked.to_string();
  for (const auto* phase : {&g->prefill, &g->decode}) {
    const auto qkv = op_kernels(m, *phase, "qkv_proj");
    ASSERT_EQ(qkv.size(), 1u);
    EXPECT_EQ(qkv[0].first, (std::vector<uint32_t>{0}));
    const auto split = op_kernels(m, *phase, "qkv_split");
    ASSERT_EQ(split.size(), 1u);
    EXPECT_EQ(split[0].first, (std::vector<uint32_t>{0}));
    EXPECT_EQ(split[0].second, "split_qkv");
    for (std::string_view op : {"q_proj", "k_proj", "v_proj"}) {
      for (const auto& [layers, kernel] : op_kernels(m, *phase, op)) {
        EXPECT_EQ(std::count(layers.begin(), layers.end(), 0u), 0) << op;
      }
    }
  }
  EXPECT_EQ(g->kernels.count("split_qkv"), 1u);
}

TEST(GraphPlan, KvDtypeIsRecordedAsPrecision) {
  const Manifest m = planned_gemma3({.kv_dtype = KvDtype::kF32});
  const ExecutionGraph& g = *m.inference.execution;
  ASSERT_TRUE(g.kernels.count("kv_append_norm_rope_f32"));  // q / k norms: the norm-fusing append
  EXPECT_EQ(g.kernels.at("kv_append_norm_rope_f32").precision.at("kvDtype"), "f32");
  EXPECT_EQ(g.kernels.at("attention_f32").precision.at("kvDtype"), "f32");
  EXPECT_FALSE(g.kernels.count("attention_f16"));
}

TEST(GraphPlan, Deterministic) {
  EXPECT_EQ(planned_gemma3().inference.execution, planned_gemma3().inference.execution);
}

TEST(GraphPlan, Errors) {
  Manifest m = testing::tiny_gemma3_manifest();
  m.inference.execution.reset();
  // kvDtype is an enum (rdrr/manifest.h): no other cache type reaches the planner.
  EXPECT_FALSE(parse_kv_dtype("q8_0").has_value());
  EXPECT_EQ(parse_kv_dtype("f32"), KvDtype::kF32);
  EXPECT_EQ(kv_dtype_name(KvDtype::kF16), "f16");

  Manifest missing = m;
  std::erase_if(missing.tensors, [](const TensorEntry& t) { return t.name == "model.layers.1.self_attn.o_proj.weight"; });
  Result<ExecutionGraph> g = plan_execution_graph(missing);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kValidation);
  EXPECT_NE(g.status().message().find("model.layers.1.self_attn.o_proj.weight"), std::string::npos) << g.status().to_string();

  Manifest non_gated = m;
  non_gated.inference.ffn.gated = false;
  Result<ExecutionGraph> ng = plan_execution_graph(non_gated);
  ASSERT_FALSE(ng.ok());
  EXPECT_EQ(ng.status().code(), StatusCode::kUnsupported);

  Manifest odd = m;
  for (TensorEntry& t : odd.tensors) {
    if (t.name == "model.layers.0.mlp.down_proj.weight") t.dtype = quant::DType::kBF16;
  }
  Result<ExecutionGraph> od = plan_execution_graph(odd);
  ASSERT_FALSE(od.ok());
  EXPECT_EQ(od.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(od.status().message().find("model.layers.0.mlp.down_proj.weight"), std::string::npos) << od.status().to_string();
}

// #26 finding 6: every layer step looks its weight up by name; with a scan per look-up, planning 4,096
// layers (the limit, ~53,000 tensors) was quadratic. Every layer's tensors are copies of layer 0's.
TEST(GraphPlan, PlansTheLayerLimitWithEveryLayerListed) {
  Manifest m = testing::tiny_gemma3_manifest();
  m.inference.execution.reset();
  std::vector<TensorEntry> layer0;
  for (const TensorEntry& t : m.tensors) {
    if (t.name.starts_with("model.layers.0.")) layer0.push_back(t);
  }
  ASSERT_FALSE(layer0.empty());
  std::erase_if(m.tensors, [](const TensorEntry& t) { return t.name.starts_with("model.layers."); });
  m.architecture.num_layers = kMaxLayers;
  std::vector<LayerType>& types = m.inference.attention.layer_types;
  const std::vector<LayerType> pattern = types;
  types.clear();
  for (uint32_t l = 0; l < kMaxLayers; ++l) types.push_back(pattern[l % pattern.size()]);
  for (uint32_t l = 0; l < kMaxLayers; ++l) {
    for (TensorEntry t : layer0) {
      t.name.replace(0, std::string_view("model.layers.0.").size(), "model.layers." + std::to_string(l) + ".");
      t.group = "layer." + std::to_string(l);
      m.tensors.push_back(std::move(t));
    }
  }
  Result<ExecutionGraph> g = plan_execution_graph(m, {});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  std::vector<bool> covered(kMaxLayers, false);  // every layer runs some decode step
  for (const LayerEntry& e : g->decode) {
    if (const auto* grp = std::get_if<LayerGroup>(&e)) {
      for (uint32_t l : grp->layers) covered.at(l) = true;
    } else {
      covered.assign(kMaxLayers, true);
    }
  }
  EXPECT_EQ(std::count(covered.begin(), covered.end(), true), kMaxLayers);
  // A layer whose weight is missing is still named, however many layers there are.
  std::erase_if(m.tensors, [](const TensorEntry& t) { return t.name.starts_with("model.layers.4000."); });
  Result<ExecutionGraph> bad = plan_execution_graph(m, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kValidation);
  EXPECT_NE(bad.status().message().find("tensor model.layers.4000."), std::string::npos) << bad.status().to_string();
}

}  // namespace
}  // namespace rdrr::graph
