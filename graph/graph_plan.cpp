#include "graph/graph_plan.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph_ops.h"
#include "kernels/digest_table.h"
#include "kernels/kernel_choice.h"
#include "kernels/registry.h"
#include "rdrr/model_tensors.h"

namespace rdrr::graph {
namespace {

using kernels::find_kernel;
using kernels::KernelInfo;
using kernels::MatmulPass;
using kernels::Op;
using quant::DType;
using quant::Layout;
using Pass = MatmulPass;
using M = ModelTensor;

// One step as it runs for one layer (weight ref already templated with {L}); nullopt: not run there.
using LayerStep = std::optional<ExecStep>;

struct Planner {
  const Manifest& m;
  const GraphPlanOptions& opts;
  TensorIndex index{m};  // every layer looks its weights up: a scan each would be quadratic
  std::set<std::string> used_kernels;

  bool has(std::string_view name) const { return index.find(name) != nullptr; }

  Result<const TensorEntry*> tensor(const std::string& name, std::string_view needed_by) const {
    const TensorEntry* t = index.find(name);
    if (t == nullptr) {
      return error(StatusCode::kValidation,
                   "tensor " + name + " is missing (needed by the '" + std::string(needed_by) + "' step)");
    }
    return t;
  }

  // The kernel that multiplies by weight `t` in `pass` (prefill: GEMM over the prompt rows; decode and
  // the post-layer phase: GEMV).
  Result<std::string> matmul_kernel(const TensorEntry& t, Pass pass) const {
    if (t.shape.size() != 2) {
      return error(StatusCode::kValidation, "tensor " + t.name + ": a matmul weight must be 2-D, shape is " +
                                                shape_to_string(t.shape));
    }
    const Layout layout = t.layout.value_or(Layout::kRowWise);
    const KernelInfo* k_info = kernels::pinned_matmul_kernel(pass, t.dtype, layout, t.shape[1]);
    if (k_info == nullptr) {
      const Op op = pass == Pass::kPrefill ? Op::kGemm : Op::kGemv;
      return error(StatusCode::kUnsupported, "tensor " + t.name + ": no " + std::string(kernels::op_name(op)) +
                                                 " kernel reads " + std::string(quant::dtype_name(t.dtype)) + " " +
                                                 std::string(quant::layout_name(layout)));
    }
    return std::string(k_info->name);
  }

  std::string kv_suffix() const { return std::string(kv_dtype_name(opts.kv_dtype)); }

  bool sliding(uint32_t layer) const {
    const auto& types = m.inference.attention.layer_types;
    return layer < types.size() && types[layer] == LayerType::kSlidingAttention;
  }

  // The steps of one layer in `pass`, in execution order; entries that do not apply are nullopt so
  // that index i is the same logical step for every layer.
  Result<std::vector<LayerStep>> layer_steps(uint32_t layer, Pass pass) const;
  Status attention_steps(struct LayerSteps& ls) const;
  Status ffn_steps(struct LayerSteps& ls) const;
  Status dense_ffn(struct LayerSteps& ls) const;
  Result<std::vector<LayerEntry>> layer_phase(Pass pass);
  Result<std::vector<ExecStep>> pre_layer();
  Result<std::vector<ExecStep>> post_layer();
  Result<std::map<std::string, KernelSpec>> kernel_map() const;
};

// Collects one layer's steps. A step whose op row names its kernel (graph_ops.h OpInfo::kernel) pins that one;
// the others pass theirs (it depends on the weight, the KV cache type or the rope scaling).
struct LayerSteps {
  const Planner& p;
  uint32_t layer;
  Pass pass;
  std::vector<LayerStep> out;

  static std::string kernel_of(std::string_view op, std::string_view kernel) {
    if (!kernel.empty()) return std::string(kernel);
    const OpInfo* row = find_op(op);
    return row != nullptr ? std::string(row->kernel) : std::string();
  }
  void step(std::string_view op, std::optional<ModelTensor> weight = std::nullopt, std::string_view kernel = {}) {
    ExecStep s{std::string(op), kernel_of(op, kernel), std::nullopt};
    if (weight) s.weight_ref = model_tensor_template(*weight);
    out.emplace_back(std::move(s));
  }
  // The step when `on`, else a placeholder that keeps step i the same logical step in every layer.
  void optional(bool on, std::string_view op, ModelTensor weight, std::string_view kernel = {}) {
    if (on) {
      step(op, weight, kernel);
    } else {
      out.emplace_back(std::nullopt);
    }
  }
  Status matmul(std::string_view op, ModelTensor weight) {
    RDRR_ASSIGN_OR_RETURN(const TensorEntry* t, p.tensor(model_tensor_name(weight, layer), op));
    RDRR_ASSIGN_OR_RETURN(std::string kernel, p.matmul_kernel(*t, pass));
    out.emplace_back(ExecStep{std::string(op), std::move(kernel), model_tensor_template(weight)});
    return Status::Ok();
  }
  // A stacked-expert step (moe_gate_up / moe_down): the registry's first `kernel_op` kernel for the weight.
  Status experts(std::string_view op, ModelTensor weight, Op kernel_op) {
    RDRR_ASSIGN_OR_RETURN(const TensorEntry* t, p.tensor(model_tensor_name(weight, layer), op));
    const Layout layout = t->layout.value_or(Layout::kRowWise);
    const uint64_t k_inputs = t->shape.size() == 2 ? t->shape[1] : 0;
    const KernelInfo* k = kernels::pinned_moe_kernel(kernel_op, t->dtype, layout, k_inputs);
    if (k == nullptr) {
      return error(StatusCode::kUnsupported, "tensor " + t->name + ": no " + std::string(kernels::op_name(kernel_op)) +
                                                 " kernel reads " + std::string(quant::dtype_name(t->dtype)) + " " +
                                                 std::string(quant::layout_name(layout)));
    }
    out.emplace_back(ExecStep{std::string(op), std::string(k->name), model_tensor_template(weight)});
    return Status::Ok();
  }
  // `n` placeholders (steps this layer does not run).
  void skip(size_t n) { out.insert(out.end(), n, std::nullopt); }
};

// Norm, projections, rope, cache and attention of one layer.
Status Planner::attention_steps(LayerSteps& ls) const {
  const Inference& inf = m.inference;
  const uint32_t layer = ls.layer;
  const bool slide = sliding(layer);
  const bool local_rope = slide && inf.rope.local_theta.has_value();
  // The previous layer's residual add is fused into this layer's first norm (one dispatch fewer per layer);
  // only the last layer keeps its `residual` step.
  ls.step(layer == 0 ? "attn_norm" : "residual_attn_norm", M::kInputNorm);
  if (has(model_tensor_name(M::kQkvProj, layer))) {
    // A fused qkv_proj (Phi-3's, or the converter's --fuse-qkv): one matmul, then the split; the placeholder
    // keeps the step count of a layer with separate projections.
    RDRR_RETURN_IF_ERROR(ls.matmul("qkv_proj", M::kQkvProj));
    ls.step("qkv_split");
    ls.out.emplace_back(std::nullopt);
  } else {
    RDRR_RETURN_IF_ERROR(ls.matmul("q_proj", M::kQProj));
    RDRR_RETURN_IF_ERROR(ls.matmul("k_proj", M::kKProj));
    RDRR_RETURN_IF_ERROR(ls.matmul("v_proj", M::kVProj));
  }
  const bool bias = inf.attention.attention_bias;
  ls.optional(bias, "q_bias", M::kQBias, "add_bias");
  ls.optional(bias, "k_bias", M::kKBias, "add_bias");
  ls.optional(bias, "v_bias", M::kVBias, "add_bias");
  // k is rotated on its way into the cache: one dispatch and one barrier fewer than rope_k + kv_append. The q / k
  // norms (Qwen3, Gemma 3) run in the same dispatches as the rotations: one dependent level fewer again.
  const bool qk_norm = inf.attention.query_key_norm;
  const std::string suffix = local_rope ? "_local" : "";
  ls.skip(2);  // the positions of the separate q_norm / k_norm steps
  ls.step((qk_norm ? "q_norm_rope" : "rope_q") + suffix, qk_norm ? std::optional(M::kQNorm) : std::nullopt,
          kernels::rope_kernel(!local_rope && rope_needs_freq_table(inf.rope), qk_norm));
  ls.step((qk_norm ? "kv_append_norm_rope" : "kv_append_rope") + suffix,
          qk_norm ? std::optional(M::kKNorm) : std::nullopt,
          (qk_norm ? "kv_append_norm_rope_" : "kv_append_rope_") + kv_suffix());
  ls.step(slide ? "attention_sliding" : "attention", std::nullopt, "attention_" + kv_suffix());
  return ls.matmul("o_proj", M::kOProj);
}

// Post-attention norms, the gated feed-forward block and the last layer's residual.
Status Planner::ffn_steps(LayerSteps& ls) const {
  const NormConfig& norm = m.inference.normalization;
  ls.optional(norm.post_attention_norm, "post_attn_norm", M::kPostAttentionNorm);
  ls.step("ffn_norm", norm.post_attention_norm ? M::kPreFeedforwardNorm : M::kPostAttentionNorm);
  // Every layer has the dense block's 4 positions and the mixture's 11; a layer runs one of the two.
  const MoeArchitecture& moe = m.architecture.moe;
  if (is_moe_layer(m.architecture, ls.layer)) {
    ls.skip(4);
    RDRR_RETURN_IF_ERROR(ls.matmul("moe_router", M::kRouter));
    // Decode runs the router's top-k, the gate / up GEMV and the activation in one dispatch where a kernel reads
    // the weight (two dependent dispatches fewer per layer); prefill keeps the three steps.
    RDRR_ASSIGN_OR_RETURN(const TensorEntry* gate_up, tensor(model_tensor_name(M::kExpertsGateUp, ls.layer), "moe_gate_up"));
    const KernelInfo* fused =
        ls.pass == Pass::kDecode && gate_up->shape.size() == 2
            ? kernels::pinned_moe_route_glu_kernel(gate_up->dtype, gate_up->layout.value_or(Layout::kRowWise),
                                                   gate_up->shape[1])
            : nullptr;
    if (fused != nullptr) {
      ls.step("moe_route_gate_up_glu", M::kExpertsGateUp, fused->name);
      ls.skip(2);
    } else {
      ls.step("moe_route");
      RDRR_RETURN_IF_ERROR(ls.experts("moe_gate_up", M::kExpertsGateUp, Op::kMoeGemv));
      ls.step("moe_glu");
    }
    RDRR_RETURN_IF_ERROR(ls.experts("moe_down", M::kExpertsDown, Op::kMoeGemvCombine));
    if (moe.shared_expert_intermediate_size > 0) {
      if (!moe.shared_expert_gated) {
        return error(StatusCode::kUnsupported, "architecture.moe: a shared expert without a gate has no graph op");
      }
      RDRR_RETURN_IF_ERROR(ls.matmul("shared_gate_proj", M::kSharedGateProj));
      RDRR_RETURN_IF_ERROR(ls.matmul("shared_up_proj", M::kSharedUpProj));
      ls.step("shared_glu");
      RDRR_RETURN_IF_ERROR(ls.matmul("shared_down_proj", M::kSharedDownProj));
      RDRR_RETURN_IF_ERROR(ls.matmul("shared_expert_gate", M::kSharedExpertGate));
      ls.step("shared_gated_add");
    } else {
      ls.skip(6);
    }
  } else {
    RDRR_RETURN_IF_ERROR(dense_ffn(ls));
    ls.skip(11);
  }
  ls.optional(norm.post_feedforward_norm, "post_ffn_norm", M::kPostFeedforwardNorm);
  if (ls.layer + 1 == m.architecture.num_layers) {
    ls.step("residual");
  } else {
    ls.out.emplace_back(std::nullopt);
  }
  return Status::Ok();
}

// The dense gated MLP (4 positions).
Status Planner::dense_ffn(LayerSteps& ls) const {
  if (has(model_tensor_name(M::kGateUpProj, ls.layer))) {
    RDRR_RETURN_IF_ERROR(ls.matmul("gate_up_proj", M::kGateUpProj));
    ls.out.emplace_back(std::nullopt);
    ls.step("glu_split");
  } else {
    RDRR_RETURN_IF_ERROR(ls.matmul("gate_proj", M::kGateProj));
    RDRR_RETURN_IF_ERROR(ls.matmul("up_proj", M::kUpProj));
    ls.step("glu");
  }
  return ls.matmul("down_proj", M::kDownProj);
}

Result<std::vector<LayerStep>> Planner::layer_steps(uint32_t layer, Pass pass) const {
  if (!m.inference.ffn.gated) {
    return error(StatusCode::kUnsupported, "inference.ffn.gatedActivation is false: no v1 graph op runs a "
                                           "non-gated feed-forward block");
  }
  LayerSteps ls{*this, layer, pass, {}};
  RDRR_RETURN_IF_ERROR(attention_steps(ls));
  RDRR_RETURN_IF_ERROR(ffn_steps(ls));
  return std::move(ls.out);
}

// Groups layers by the step they run at each logical position: a position where every layer runs the
// same step becomes a plain step; otherwise one group per distinct step (in order of first layer).
// Consecutive positions with the same layer partition share their groups.
Result<std::vector<LayerEntry>> Planner::layer_phase(Pass pass) {
  const uint32_t n_layers = m.architecture.num_layers;
  std::vector<std::vector<LayerStep>> per_layer;
  for (uint32_t l = 0; l < n_layers; ++l) {
    RDRR_ASSIGN_OR_RETURN(std::vector<LayerStep> steps, layer_steps(l, pass));
    if (!per_layer.empty() && steps.size() != per_layer.front().size()) {
      return error(StatusCode::kInternal, "graph planner: layers have different step counts");
    }
    per_layer.push_back(std::move(steps));
  }
  std::vector<LayerEntry> phase;
  // The partition of the previous position that produced groups, and where its groups start in `phase`.
  std::vector<std::pair<ExecStep, std::vector<uint32_t>>> prev_partition;
  size_t prev_first = 0;
  const size_t n_pos = per_layer.empty() ? 0 : per_layer.front().size();
  for (size_t i = 0; i < n_pos; ++i) {
    std::vector<std::pair<ExecStep, std::vector<uint32_t>>> parts;
    for (uint32_t l = 0; l < n_layers; ++l) {
      const LayerStep& s = per_layer[l][i];
      if (!s) continue;
      used_kernels.insert(s->kernel_key);
      auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == *s; });
      if (it == parts.end()) {
        parts.push_back({*s, {l}});
      } else {
        it->second.push_back(l);
      }
    }
    if (parts.empty()) continue;
    if (parts.size() == 1 && parts.front().second.size() == n_layers) {
      phase.emplace_back(parts.front().first);
      prev_partition.clear();
      continue;
    }
    const bool same_layers =
        prev_partition.size() == parts.size() &&
        std::equal(parts.begin(), parts.end(), prev_partition.begin(),
                   [](const auto& a, const auto& b) { return a.second == b.second; });
    if (same_layers) {
      for (size_t g = 0; g < parts.size(); ++g) {
        std::get<LayerGroup>(phase[prev_first + g]).steps.push_back(parts[g].first);
      }
      continue;
    }
    prev_first = phase.size();
    for (const auto& [step, layers] : parts) phase.emplace_back(LayerGroup{layers, {step}});
    prev_partition = std::move(parts);
  }
  return phase;
}

Result<std::vector<ExecStep>> Planner::pre_layer() {
  RDRR_ASSIGN_OR_RETURN(const TensorEntry* e, tensor(model_tensor_name(M::kEmbedTokens), "embed"));
  const KernelInfo* k = find_kernel(Op::kEmbed, e->dtype, e->layout.value_or(Layout::kRowWise));
  if (k == nullptr) {
    return error(StatusCode::kUnsupported, "tensor " + e->name + ": no embed kernel reads " +
                                               std::string(quant::dtype_name(e->dtype)));
  }
  used_kernels.insert(std::string(k->name));
  return std::vector<ExecStep>{{"embed", std::string(k->name), e->name}};
}

Result<std::vector<ExecStep>> Planner::post_layer() {
  std::vector<ExecStep> out;
  RDRR_ASSIGN_OR_RETURN(const TensorEntry* norm, tensor(model_tensor_name(M::kFinalNorm), "final_norm"));
  out.push_back({"final_norm", std::string(find_op("final_norm")->kernel), norm->name});
  const bool tied = m.inference.output.tie_word_embeddings || !has(model_tensor_name(M::kLmHead));
  RDRR_ASSIGN_OR_RETURN(const TensorEntry* head,
                        tensor(model_tensor_name(tied ? M::kEmbedTokens : M::kLmHead), "lm_head"));
  RDRR_ASSIGN_OR_RETURN(std::string head_kernel, matmul_kernel(*head, Pass::kDecode));
  out.push_back({"lm_head", std::move(head_kernel), head->name});
  if (m.inference.output.final_logit_softcapping) {
    out.push_back({"logit_softcap", std::string(find_op("logit_softcap")->kernel), std::nullopt});
  }
  out.push_back({"sample", "sample_partial", std::nullopt});
  for (const ExecStep& s : out) used_kernels.insert(s.kernel_key);
  return out;
}

Result<std::map<std::string, KernelSpec>> Planner::kernel_map() const {
  std::set<std::string> all = used_kernels;
  for (const std::string& k : used_kernels) {
    for (std::string_view c : kernels::kernel_companions(k)) all.insert(std::string(c));
    for (std::string_view v : kernels::kernel_variants(k)) all.insert(std::string(v));
  }
  std::map<std::string, KernelSpec> out;
  for (const std::string& name : all) {
    const KernelInfo* info = find_kernel(name);
    if (info == nullptr) {
      return error(StatusCode::kUnsupported, "graph planner: kernel '" + name + "' is not in this build's registry");
    }
    RDRR_ASSIGN_OR_RETURN(std::string digest, kernels::pinned_kernel_digest(name));
    KernelSpec spec{std::string(info->file), std::string(info->entry), std::move(digest), {}, {}};
    if (info->op == Op::kKvAppend || info->op == Op::kKvAppendRope || info->op == Op::kAttention) {
      spec.precision[std::string(kKvDtypeKey)] = kv_suffix();
    }
    out.emplace(name, std::move(spec));
  }
  return out;
}

}  // namespace

Result<ExecutionGraph> plan_execution_graph(const Manifest& m, const GraphPlanOptions& opts) {
  if (m.architecture.num_layers == 0) {
    return error(StatusCode::kValidation, "graph planner: architecture.numLayers is 0");
  }
  Planner p{m, opts, TensorIndex(m), {}};
  ExecutionGraph g;
  RDRR_ASSIGN_OR_RETURN(g.pre_layer, p.pre_layer());
  RDRR_ASSIGN_OR_RETURN(g.prefill, p.layer_phase(Pass::kPrefill));
  RDRR_ASSIGN_OR_RETURN(g.decode, p.layer_phase(Pass::kDecode));
  RDRR_ASSIGN_OR_RETURN(g.post_layer, p.post_layer());
  RDRR_ASSIGN_OR_RETURN(g.kernels, p.kernel_map());
  return g;
}

}  // namespace rdrr::graph
