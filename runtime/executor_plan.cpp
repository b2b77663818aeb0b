// The execution graph compiled for the executor: check_execution_graph (kernels/graph_check.h: ops,
// kernels, companions, weights, precision, digests), then every step resolved per layer to a kernel, a
// weight range and its activation buffers. Any op this file does not know is rejected (fail closed).
#include <algorithm>
#include <string>
#include <string_view>

#include "kernels/graph_check.h"
#include "kernels/graph_ops.h"
#include "runtime/executor_plan.h"
#include "runtime/ops.h"
#include "rdrr/layer_ref.h"

namespace rdrr::runtime::exec_detail {
namespace {

using quant::DType;
using quant::Layout;

struct OpSpec {
  std::string_view op;
  Kind kind;
  Buf in;
  Buf out;
};

// Every op of kernels/graph_ops.h the executor implements.
constexpr OpSpec kOps[] = {
    {"embed", Kind::kEmbed, Buf::kHidden, Buf::kHidden},
    {"attn_norm", Kind::kNorm, Buf::kHidden, Buf::kNormed},
    {"q_proj", Kind::kMatmul, Buf::kNormed, Buf::kQ},
    {"k_proj", Kind::kMatmul, Buf::kNormed, Buf::kK},
    {"v_proj", Kind::kMatmul, Buf::kNormed, Buf::kV},
    {"q_bias", Kind::kBias, Buf::kQ, Buf::kQ},
    {"k_bias", Kind::kBias, Buf::kK, Buf::kK},
    {"v_bias", Kind::kBias, Buf::kV, Buf::kV},
    {"q_norm", Kind::kHeadNorm, Buf::kQ, Buf::kQ},
    {"k_norm", Kind::kHeadNorm, Buf::kK, Buf::kK},
    {"rope_q", Kind::kRope, Buf::kQ, Buf::kQ},
    {"rope_k", Kind::kRope, Buf::kK, Buf::kK},
    {"rope_q_local", Kind::kRope, Buf::kQ, Buf::kQ},
    {"rope_k_local", Kind::kRope, Buf::kK, Buf::kK},
    {"kv_append", Kind::kKvAppend, Buf::kK, Buf::kV},
    {"kv_append_rope", Kind::kKvAppendRope, Buf::kK, Buf::kV},
    {"kv_append_rope_local", Kind::kKvAppendRope, Buf::kK, Buf::kV},
    {"attention", Kind::kAttention, Buf::kQ, Buf::kAttn},
    {"attention_sliding", Kind::kAttention, Buf::kQ, Buf::kAttn},
    {"o_proj", Kind::kMatmul, Buf::kAttn, Buf::kProj},
    {"post_attn_norm", Kind::kNorm, Buf::kProj, Buf::kProj},
    {"ffn_norm", Kind::kAddNorm, Buf::kHidden, Buf::kNormed},
    {"gate_proj", Kind::kMatmul, Buf::kNormed, Buf::kGate},
    {"up_proj", Kind::kMatmul, Buf::kNormed, Buf::kUp},
    {"gate_up_proj", Kind::kMatmul, Buf::kNormed, Buf::kGateUp},
    {"glu", Kind::kGlu, Buf::kGate, Buf::kAct},
    {"glu_split", Kind::kGluSplit, Buf::kGateUp, Buf::kAct},
    {"down_proj", Kind::kMatmul, Buf::kAct, Buf::kProj},
    {"post_ffn_norm", Kind::kNorm, Buf::kProj, Buf::kProj},
    {"residual", Kind::kResidual, Buf::kProj, Buf::kHidden},
    {"residual_attn_norm", Kind::kAddNorm, Buf::kHidden, Buf::kNormed},
    {"final_norm", Kind::kNorm, Buf::kHidden, Buf::kNormed},
    {"lm_head", Kind::kMatmul, Buf::kNormed, Buf::kLogits},
    {"logit_softcap", Kind::kSoftcap, Buf::kLogits, Buf::kLogits},
    {"sample", Kind::kSample, Buf::kLogits, Buf::kLogits},
};

const OpSpec* find_op(std::string_view op) {
  for (const OpSpec& s : kOps) {
    if (s.op == op) return &s;
  }
  return nullptr;
}

Status fail(StatusCode code, const std::string& where, const ExecStep& s, const std::string& what) {
  return error(code, "step " + where + " '" + s.op + "' kernel " + s.kernel_key + ": " + what);
}

struct Compiler {
  const Pack& pack;
  const ExecutionGraph& g;
  Plan& plan;

  Result<Step> compile(const ExecStep& s, const std::string& where, std::optional<uint32_t> layer, bool decode_like) {
    const OpSpec* spec = find_op(s.op);
    if (spec == nullptr || kernels::find_graph_op(s.op) == nullptr) {
      return fail(StatusCode::kUnsupported, where, s, "op '" + s.op + "' is not implemented by this runtime");
    }
    if (g.kernels.count(s.kernel_key) == 0) {
      return fail(StatusCode::kValidation, where, s, "kernel key is not in inference.execution.kernels");
    }
    const kernels::KernelInfo* kernel = kernels::find_kernel(s.kernel_key);
    if (kernel == nullptr) return fail(StatusCode::kUnsupported, where, s, "not a kernel of this build's registry");
    Step step;
    step.label = s.op;
    step.where = where;
    step.kind = spec->kind;
    step.kernel = kernel;
    step.in = spec->in;
    step.out = spec->out;
    step.local = s.op == "rope_q_local" || s.op == "rope_k_local" || s.op == "kv_append_rope_local" ||
                 s.op == "attention_sliding";
    if (s.weight_ref) {
      const std::string name = layer ? substitute_layer(*s.weight_ref, *layer) : *s.weight_ref;
      step.weight = pack.find(name);
      if (step.weight == nullptr) {
        return fail(StatusCode::kValidation, where, s, "weight " + name + " is not a tensor of the pack");
      }
    }
    RDRR_RETURN_IF_ERROR(check_shapes(step, s, decode_like));
    return step;
  }

  Status check_shapes(Step& step, const ExecStep& s, bool decode_like) {
    const Dims& d = plan.dims;
    const TensorEntry* w = step.weight != nullptr ? step.weight->entry : nullptr;
    auto need_weight = [&]() -> Status {
      return w != nullptr ? Status::Ok() : fail(StatusCode::kValidation, step.where, s, "the op needs a weight ref");
    };
    switch (step.kind) {
      case Kind::kMatmul: {
        RDRR_RETURN_IF_ERROR(need_weight());
        if (w->shape.size() != 2 || w->shape[0] != d.width(step.out) || w->shape[1] != d.width(step.in)) {
          return fail(StatusCode::kValidation, step.where, s,
                      "weight " + w->name + " shape " + shape_to_string(w->shape) + " != [" +
                          std::to_string(d.width(step.out)) + ", " + std::to_string(d.width(step.in)) + "]");
        }
        step.n = d.width(step.out);
        step.k = d.width(step.in);
        const Layout layout = w->layout.value_or(Layout::kRowWise);
        if (step.kernel->op == kernels::Op::kGemv) {
          plan.gemv_scratch_bytes =
              std::max(plan.gemv_scratch_bytes, gemv_scratch_bytes(w->dtype, layout, step.n, step.k));
        } else if (step.kernel->op != kernels::Op::kGemm) {
          return fail(StatusCode::kValidation, step.where, s, "a matmul step needs a gemm or gemv kernel");
        }
        (void)decode_like;
        return Status::Ok();
      }
      case Kind::kEmbed:
        RDRR_RETURN_IF_ERROR(need_weight());
        if (w->shape.size() != 2 || w->shape[1] != d.d || w->shape[0] < d.vocab) {
          return fail(StatusCode::kValidation, step.where, s,
                      "embedding " + w->name + " shape " + shape_to_string(w->shape) + " != [>= vocab, hidden]");
        }
        return Status::Ok();
      case Kind::kBias:
        step.n = d.width(step.out);
        [[fallthrough]];
      case Kind::kNorm:
      case Kind::kAddNorm:
      case Kind::kHeadNorm: {
        RDRR_RETURN_IF_ERROR(need_weight());
        const uint64_t len = step.kind == Kind::kHeadNorm ? d.head_dim
                             : step.kind == Kind::kBias   ? step.n
                                                          : d.d;
        if (w->dtype != DType::kF32 || w->shape.size() != 1 || w->shape[0] != len) {
          return fail(StatusCode::kValidation, step.where, s, "weight " + w->name + " must be F32 [" +
                                                                  std::to_string(len) + "], is " +
                                                                  std::string(quant::dtype_name(w->dtype)) + " " +
                                                                  shape_to_string(w->shape));
        }
        if (step.kind == Kind::kHeadNorm) step.n = step.out == Buf::kQ ? d.heads : d.kv_heads;
        return Status::Ok();
      }
      case Kind::kRope:
        step.n = step.out == Buf::kQ ? d.heads : d.kv_heads;
        if (step.kernel->name == "rope_freqs") plan.needs_rope_table = true;
        return Status::Ok();
      case Kind::kKvAppendRope:
        // The rotation rope_freqs would apply (kernels/graph_plan.cpp: llama3 / YaRN need the CPU table).
        if (!step.local && rope_needs_table(pack.manifest().inference.rope)) plan.needs_rope_table = true;
        [[fallthrough]];
      case Kind::kKvAppend:
      case Kind::kAttention:
        if (step.kernel->dtypes.size() != 1 || step.kernel->dtypes[0] != plan.kv_dtype) {
          return fail(StatusCode::kUnsupported, step.where, s,
                      "kernel KV type differs from the graph's kvDtype " + std::string(quant::dtype_name(plan.kv_dtype)));
        }
        return Status::Ok();
      default:
        return Status::Ok();
    }
  }

  Status flat(const char* phase, const std::vector<ExecStep>& steps, std::vector<Step>& out) {
    for (size_t i = 0; i < steps.size(); ++i) {
      RDRR_ASSIGN_OR_RETURN(Step st, compile(steps[i], std::string(phase) + "[" + std::to_string(i) + "]",
                                             std::nullopt, true));
      out.push_back(std::move(st));
    }
    return Status::Ok();
  }

  Status layered(const char* phase, const std::vector<LayerEntry>& entries, std::vector<std::vector<Step>>& out,
                 bool decode_like) {
    out.assign(plan.dims.layers, {});
    for (uint32_t l = 0; l < plan.dims.layers; ++l) {
      for (size_t i = 0; i < entries.size(); ++i) {
        const std::string base = std::string(phase) + "[" + std::to_string(i) + "]";
        if (const auto* s = std::get_if<ExecStep>(&entries[i])) {
          RDRR_ASSIGN_OR_RETURN(Step st, compile(*s, base + " layer " + std::to_string(l), l, decode_like));
          out[l].push_back(std::move(st));
          continue;
        }
        const LayerGroup& grp = std::get<LayerGroup>(entries[i]);
        if (std::find(grp.layers.begin(), grp.layers.end(), l) == grp.layers.end()) continue;
        for (size_t j = 0; j < grp.steps.size(); ++j) {
          RDRR_ASSIGN_OR_RETURN(Step st, compile(grp.steps[j], base + ".steps[" + std::to_string(j) + "] layer " +
                                                                   std::to_string(l),
                                                 l, decode_like));
          out[l].push_back(std::move(st));
        }
      }
    }
    return Status::Ok();
  }
};

// kvDtype from the precision of the graph's kv_append / attention kernels ("f16" / "f32").
Result<DType> graph_kv_dtype(const ExecutionGraph& g) {
  std::optional<DType> kv;
  for (const auto& [key, spec] : g.kernels) {
    for (const auto& [name, value] : spec.precision) {
      if (name != "kvDtype") {
        return error(StatusCode::kUnsupported, "inference.execution.kernels." + key + ".precision." + name +
                                                   ": unsupported precision (policy unsupportedPrecision: error)");
      }
      if (value != "f16" && value != "f32") {
        return error(StatusCode::kUnsupported, "inference.execution.kernels." + key + ".precision.kvDtype: \"" + value +
                                                   "\" is not f16 or f32 (policy unsupportedPrecision: error)");
      }
      const DType dt = value == "f16" ? DType::kF16 : DType::kF32;
      if (kv && *kv != dt) {
        return error(StatusCode::kValidation, "inference.execution.kernels." + key + ".precision.kvDtype: \"" +
                                                  value + "\" differs from another kernel's");
      }
      kv = dt;
    }
  }
  if (!kv) return error(StatusCode::kValidation, "inference.execution: no kernel states its kvDtype precision");
  return *kv;
}

// Each prefill GEMM matmul gets the GEMV kernel that the decode phase of its layer pins for the same weight
// (pinned and digest-checked there, so running it for prefill rows adds no kernel to the pack's set).
void link_row_kernels(Plan& plan) {
  for (size_t l = 0; l < plan.prefill.size() && l < plan.decode.size(); ++l) {
    for (Step& p : plan.prefill[l]) {
      if (p.kind != Kind::kMatmul || p.kernel->op != kernels::Op::kGemm || p.weight == nullptr) continue;
      for (const Step& d : plan.decode[l]) {
        if (d.kind == Kind::kMatmul && d.weight == p.weight && d.kernel->op == kernels::Op::kGemv) {
          p.row_kernel = d.kernel;
          break;
        }
      }
    }
  }
}

}  // namespace

uint32_t Dims::width(Buf b) const {
  switch (b) {
    case Buf::kHidden:
    case Buf::kNormed:
    case Buf::kProj: return d;
    case Buf::kQ:
    case Buf::kAttn: return heads * head_dim;
    case Buf::kK:
    case Buf::kV: return kv_heads * head_dim;
    case Buf::kGate:
    case Buf::kUp:
    case Buf::kAct: return ff;
    case Buf::kGateUp: return 2 * ff;
    case Buf::kLogits: return vocab;
    case Buf::kCount: break;
  }
  return 0;
}

bool rope_needs_table(const RopeConfig& rope) {
  return rope.scaling_type == rdrr::RopeScalingType::kLlama3 || rope.scaling_type == rdrr::RopeScalingType::kYarn;
}

Result<Plan> compile_plan(const Pack& pack) {
  const Manifest& m = pack.manifest();
  if (!m.inference.execution) {
    return error(StatusCode::kValidation, "inference.execution: the pack has no execution graph (re-convert it)");
  }
  RDRR_RETURN_IF_ERROR(kernels::check_execution_graph(m, {.check_digests = true}));
  const ExecutionGraph& g = *m.inference.execution;
  const Architecture& a = m.architecture;
  Plan plan;
  const uint64_t limit = uint64_t{1} << 31;
  if (a.hidden_size >= limit || a.head_dim >= limit || a.intermediate_size >= limit || a.vocab_size >= limit) {
    return error(StatusCode::kUnsupported, "architecture: dimensions beyond 2^31 are not supported");
  }
  plan.dims = {static_cast<uint32_t>(a.hidden_size), a.num_attention_heads, a.num_key_value_heads,
               static_cast<uint32_t>(a.head_dim),    static_cast<uint32_t>(a.intermediate_size),
               static_cast<uint32_t>(a.vocab_size),  a.num_layers};
  RDRR_ASSIGN_OR_RETURN(plan.kv_dtype, graph_kv_dtype(g));
  auto pinned = std::make_shared<std::set<std::string, std::less<>>>();
  for (const auto& [key, spec] : g.kernels) pinned->insert(key);
  plan.pinned = std::move(pinned);
  Compiler c{pack, g, plan};
  RDRR_RETURN_IF_ERROR(c.flat("preLayer", g.pre_layer, plan.pre));
  RDRR_RETURN_IF_ERROR(c.layered("prefill", g.prefill, plan.prefill, false));
  RDRR_RETURN_IF_ERROR(c.layered("decode", g.decode, plan.decode, true));
  RDRR_RETURN_IF_ERROR(c.flat("postLayer", g.post_layer, plan.post));
  link_row_kernels(plan);
  if (plan.pre.size() != 1 || plan.pre[0].kind != Kind::kEmbed) {
    return error(StatusCode::kValidation, "inference.execution.preLayer: must be exactly one embed step");
  }
  if (plan.post.empty() || plan.post.back().kind != Kind::kSample) {
    return error(StatusCode::kValidation, "inference.execution.postLayer: must end with a sample step");
  }
  return plan;
}

}  // namespace rdrr::runtime::exec_detail
