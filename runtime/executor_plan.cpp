// The execution graph compiled for the executor. check_execution_graph (graph/graph_check.h) proves the
// graph runnable by this build: ops, phases, kernels and their dtypes / layouts, companions, weights and their
// shapes, the KV cache type, the layer rules and the digests. compile_plan trusts it: each step becomes its op
// row (graph/graph_ops.h: dispatch, buffers, flags), its registry kernel and its resolved weight.
#include <algorithm>
#include <string>
#include <string_view>

#include "graph/graph_check.h"
#include "rdrr/layer_ref.h"
#include "runtime/executor_plan.h"
#include "runtime/ops.h"

namespace rdrr::runtime::exec_detail {
namespace {

using quant::DType;
using quant::Layout;

struct Compiler {
  const Pack& pack;
  Plan& plan;

  // Lookups the graph check has proven to succeed; a failure here is a bug (kInternal).
  Result<Step> compile(const ExecStep& s, const std::string& where, std::optional<uint32_t> layer) {
    Step step;
    step.op = graph::find_op(s.op);
    step.kernel = kernels::find_kernel(s.kernel_key);
    if (s.weight_ref) step.weight = pack.find(layer ? substitute_layer(*s.weight_ref, *layer) : *s.weight_ref);
    if (step.op == nullptr || step.kernel == nullptr || (step.weight == nullptr && s.weight_ref)) {
      return error(StatusCode::kInternal, "step " + where + " '" + s.op + "': not resolved after the graph check");
    }
    step.label = s.op;
    step.where = where;
    if (step.op->param != nullptr) {
      Result<float> param = step.op->param(pack.manifest());
      if (!param.ok()) return Status(param.status()).context("step " + where);
      step.param = *param;
    }
    size(step);
    return step;
  }

  // Per-step sizes and what the plan must allocate for them.
  void size(Step& step) {
    const Dims& d = plan.dims;
    switch (step.kind()) {
      case Dispatch::kMatmul: {
        step.n = graph::buffer_width(d, step.out());
        step.k = graph::buffer_width(d, step.in());
        if (step.kernel->op != kernels::Op::kGemv) return;
        const TensorEntry& w = *step.weight->entry;
        plan.gemv_scratch_bytes = std::max(
            plan.gemv_scratch_bytes, gemv_scratch_bytes(w.dtype, w.layout.value_or(Layout::kRowWise), step.n, step.k));
        return;
      }
      case Dispatch::kBias: step.n = graph::buffer_width(d, step.out()); return;
      case Dispatch::kSplitQkv: plan.fused_qkv = true; return;
      case Dispatch::kHeadNorm:
      case Dispatch::kRope: step.n = step.out() == Buf::kQ ? d.heads : d.kv_heads; break;
      default: break;
    }
    const bool rotates = step.op->has(graph::kRotatesQ) || step.op->has(graph::kRotatesK);
    step.freq_table = rotates && !step.local() && rope_needs_freq_table(pack.manifest().inference.rope);
    plan.needs_rope_table = plan.needs_rope_table || step.freq_table;
  }

  Status flat(const char* phase, const std::vector<ExecStep>& steps, std::vector<Step>& out) {
    for (size_t i = 0; i < steps.size(); ++i) {
      RDRR_ASSIGN_OR_RETURN(Step st, compile(steps[i], std::string(phase) + "[" + std::to_string(i) + "]", std::nullopt));
      out.push_back(std::move(st));
    }
    return Status::Ok();
  }

  Status layered(const char* phase, const std::vector<LayerEntry>& entries, std::vector<std::vector<Step>>& out) {
    out.assign(plan.dims.layers, {});
    for (uint32_t l = 0; l < plan.dims.layers; ++l) {
      for (size_t i = 0; i < entries.size(); ++i) {
        const std::string base = std::string(phase) + "[" + std::to_string(i) + "]";
        if (const auto* s = std::get_if<ExecStep>(&entries[i])) {
          RDRR_ASSIGN_OR_RETURN(Step st, compile(*s, base + " layer " + std::to_string(l), l));
          out[l].push_back(std::move(st));
          continue;
        }
        const LayerGroup& grp = std::get<LayerGroup>(entries[i]);
        if (std::find(grp.layers.begin(), grp.layers.end(), l) == grp.layers.end()) continue;
        for (size_t j = 0; j < grp.steps.size(); ++j) {
          RDRR_ASSIGN_OR_RETURN(
              Step st, compile(grp.steps[j], base + ".steps[" + std::to_string(j) + "] layer " + std::to_string(l), l));
          out[l].push_back(std::move(st));
        }
      }
    }
    return Status::Ok();
  }
};

// kvDtype from the precision of the graph's kv_append / attention kernels (all equal: the graph check).
DType graph_kv_dtype(const ExecutionGraph& g) {
  for (const auto& [key, spec] : g.kernels) {
    const auto it = spec.precision.find(std::string(kKvDtypeKey));
    if (it == spec.precision.end()) continue;
    if (const std::optional<KvDtype> kv = parse_kv_dtype(it->second)) return kv_storage_dtype(*kv);
  }
  return DType::kF16;
}

// Each prefill GEMM matmul gets the GEMV kernel that the decode phase of its layer pins for the same weight
// (pinned and digest-checked there, so running it for prefill rows adds no kernel to the pack's set).
void link_row_kernels(Plan& plan) {
  for (size_t l = 0; l < plan.prefill.size() && l < plan.decode.size(); ++l) {
    for (Step& p : plan.prefill[l]) {
      if (p.kind() != Dispatch::kMatmul || p.kernel->op != kernels::Op::kGemm) continue;
      for (const Step& d : plan.decode[l]) {
        if (d.kind() == Dispatch::kMatmul && d.weight == p.weight && d.kernel->op == kernels::Op::kGemv) {
          p.row_kernel = d.kernel;
          break;
        }
      }
    }
  }
}

}  // namespace

Result<Plan> compile_plan(const Pack& pack) {
  const Manifest& m = pack.manifest();
  if (!m.inference.execution) {
    return error(StatusCode::kValidation, "inference.execution: the pack has no execution graph (re-convert it)");
  }
  RDRR_RETURN_IF_ERROR(graph::check_execution_graph(m, {.check_digests = true}));
  const ExecutionGraph& g = *m.inference.execution;
  Plan plan;
  RDRR_ASSIGN_OR_RETURN(plan.dims, graph::model_dims(m.architecture));
  plan.kv_dtype = graph_kv_dtype(g);
  auto pinned = std::make_shared<std::set<std::string, std::less<>>>();
  for (const auto& [key, spec] : g.kernels) pinned->insert(key);
  plan.pinned = std::move(pinned);
  Compiler c{pack, plan};
  RDRR_RETURN_IF_ERROR(c.flat("preLayer", g.pre_layer, plan.pre));
  RDRR_RETURN_IF_ERROR(c.layered("prefill", g.prefill, plan.prefill));
  RDRR_RETURN_IF_ERROR(c.layered("decode", g.decode, plan.decode));
  RDRR_RETURN_IF_ERROR(c.flat("postLayer", g.post_layer, plan.post));
  link_row_kernels(plan);
  if (plan.pre.size() != 1 || plan.pre[0].kind() != Dispatch::kEmbed) {
    return error(StatusCode::kValidation, "inference.execution.preLayer: must be exactly one embed step");
  }
  if (plan.post.empty() || plan.post.back().kind() != Dispatch::kSample) {
    return error(StatusCode::kValidation, "inference.execution.postLayer: must end with a sample step");
  }
  return plan;
}

}  // namespace rdrr::runtime::exec_detail
