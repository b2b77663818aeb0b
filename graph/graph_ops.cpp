#include "graph/graph_ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernel_choice.h"

namespace rdrr::graph {
namespace {

using kernels::Op;

constexpr Op kEmbedOps[] = {Op::kEmbed};
constexpr Op kNormOps[] = {Op::kRmsNorm};
constexpr Op kAddNormOps[] = {Op::kAddRmsNorm};
constexpr Op kMatmulOps[] = {Op::kGemm, Op::kGemv};
constexpr Op kAddOps[] = {Op::kAdd};
constexpr Op kRopeOps[] = {Op::kRope};
constexpr Op kKvOps[] = {Op::kKvAppend};
constexpr Op kKvRopeOps[] = {Op::kKvAppendRope};
constexpr Op kAttnOps[] = {Op::kAttention};
constexpr Op kActOps[] = {Op::kGatedAct};
constexpr Op kUnaryOps[] = {Op::kUnary};
constexpr Op kSampleOps[] = {Op::kSample};
constexpr Op kSplitOps[] = {Op::kSplit};
constexpr Op kMoeRouteOps[] = {Op::kMoeRoute};
constexpr Op kMoeGemvOps[] = {Op::kMoeGemv};
constexpr Op kMoeCombineOps[] = {Op::kMoeGemvCombine};
constexpr Op kGatedAddOps[] = {Op::kGatedAdd};
constexpr Op kMoeRouteGluOps[] = {Op::kMoeGemvRouteGlu};

// logit_softcap's parameter c: finalLogitSoftcapping, finite and > 0.
Result<float> final_softcap(const Manifest& m) {
  const std::optional<double> c = m.inference.output.final_logit_softcapping;
  if (!c || !(*c > 0.0) || !std::isfinite(static_cast<float>(*c))) {
    return error(StatusCode::kValidation, "inference.output.finalLogitSoftcapping: logit_softcap needs it set, finite "
                                          "and > 0, is " + (c ? std::to_string(*c) : std::string("absent")));
  }
  return static_cast<float>(*c);
}

using P = Phase;
using W = WeightKind;
using L = WeightLength;
using D = Dispatch;
using B = Buf;
constexpr B kNo = B::kNone;

// Sorted by name (find_op uses binary search; graph_ops_test checks the order).
constexpr OpInfo kOps[] = {
    {"attention", P::kLayer, W::kNone, L::kNone, kAttnOps, "", D::kAttention,
     {B::kQ, B::kKvCache}, {B::kAttn, kNo}, kAttends, nullptr,
     "causal GQA attention over cache positions 0..p, scale from queryPreAttnScalar or headDim, "
     "attnLogitSoftcapping"},
    {"attention_sliding", P::kLayer, W::kNone, L::kNone, kAttnOps, "", D::kAttention,
     {B::kQ, B::kKvCache}, {B::kAttn, kNo}, kAttends | kLocal, nullptr,
     "attention limited to the last slidingWindow positions (sliding_attention layers only)"},
    {"attn_norm", P::kLayer, W::kNorm, L::kHidden, kNormOps, "rms_norm", D::kNorm,
     {B::kHidden, kNo}, {B::kNormed, kNo}, 0, nullptr,
     "normed = rmsnorm(hidden) * (rmsNormWeightOffset + w)"},
    {"down_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kAct, kNo}, {B::kProj, kNo}, 0, nullptr,
     "proj = act W^T"},
    {"embed", P::kPreLayer, W::kEmbedding, L::kNone, kEmbedOps, "", D::kEmbed,
     {B::kTokenIds, kNo}, {B::kHidden, kNo}, 0, nullptr,
     "hidden = table[ids] * embeddingScale"},
    {"ffn_norm", P::kLayer, W::kNorm, L::kHidden, kAddNormOps, "add_rms_norm", D::kAddNorm,
     {B::kHidden, B::kProj}, {B::kHidden, B::kNormed}, 0, nullptr,
     "hidden += proj; normed = rmsnorm(hidden) * (offset + w)"},
    {"final_norm", P::kPostLayer, W::kNorm, L::kHidden, kNormOps, "rms_norm", D::kNorm,
     {B::kHidden, kNo}, {B::kNormed, kNo}, 0, nullptr,
     "normed = rmsnorm(hidden) * (offset + w), for the rows the post-layer phase runs"},
    {"gate_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kNormed, kNo}, {B::kGate, kNo}, 0, nullptr,
     "gate = normed W^T"},
    {"gate_up_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kNormed, kNo}, {B::kGateUp, kNo}, 0, nullptr,
     "gate_up = normed W^T (fused [2F, D] weight, gate rows first)"},
    {"glu", P::kLayer, W::kNone, L::kNone, kActOps, "glu", D::kGlu, {B::kGate, B::kUp}, {B::kAct, kNo}, 0, nullptr,
     "act = activation(gate) * up"},
    {"glu_split", P::kLayer, W::kNone, L::kNone, kActOps, "glu_split", D::kGluSplit,
     {B::kGateUp, kNo}, {B::kAct, kNo}, 0, nullptr,
     "act = activation(gate half) * up half"},
    {"k_bias", P::kLayer, W::kBias, L::kOutput, kAddOps, "", D::kBias, {B::kK, kNo}, {B::kK, kNo}, 0, nullptr,
     "k += b (per token)"},
    {"k_norm", P::kLayer, W::kNorm, L::kHeadDim, kNormOps, "rms_norm", D::kHeadNorm,
     {B::kK, kNo}, {B::kK, kNo}, 0, nullptr,
     "per-head rmsnorm of k over headDim"},
    {"k_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul, {B::kNormed, kNo}, {B::kK, kNo}, 0, nullptr,
     "k = normed W^T"},
    {"kv_append", P::kLayer, W::kNone, L::kNone, kKvOps, "", D::kKvAppend,
     {B::kK, B::kV}, {B::kKvCache, kNo}, kAppendsKv, nullptr,
     "k and v of the pass's positions into the layer's cache (precision kvDtype)"},
    {"kv_append_norm_rope", P::kLayer, W::kNorm, L::kHeadDim, kKvRopeOps, "", D::kKvAppendRope,
     {B::kK, B::kV}, {B::kKvCache, kNo}, kRotatesK | kAppendsKv, nullptr,
     "k normed as k_norm does (its weight), rotated as rope_k, then k and v into the layer's cache, in place of k_norm "
     "and kv_append_rope (precision kvDtype)"},
    {"kv_append_norm_rope_local", P::kLayer, W::kNorm, L::kHeadDim, kKvRopeOps, "", D::kKvAppendRope,
     {B::kK, B::kV}, {B::kKvCache, kNo}, kRotatesK | kAppendsKv | kLocal, nullptr,
     "kv_append_norm_rope with ropeLocalTheta, unscaled (sliding_attention layers), in place of k_norm and "
     "kv_append_rope_local"},
    {"kv_append_rope", P::kLayer, W::kNone, L::kNone, kKvRopeOps, "", D::kKvAppendRope,
     {B::kK, B::kV}, {B::kKvCache, kNo}, kRotatesK | kAppendsKv, nullptr,
     "k rotated as rope_k does (ropeTheta, ropeScaling*), then k and v into the layer's cache, in place of rope_k "
     "and kv_append (precision kvDtype)"},
    {"kv_append_rope_local", P::kLayer, W::kNone, L::kNone, kKvRopeOps, "", D::kKvAppendRope,
     {B::kK, B::kV}, {B::kKvCache, kNo}, kRotatesK | kAppendsKv | kLocal, nullptr,
     "kv_append_rope with ropeLocalTheta, unscaled (sliding_attention layers), in place of rope_k_local and "
     "kv_append"},
    {"lm_head", P::kPostLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kNormed, kNo}, {B::kLogits, kNo}, 0, nullptr,
     "logits = normed W^T (lm_head.weight, or the embedding table when tied)"},
    {"logit_softcap", P::kPostLayer, W::kNone, L::kNone, kUnaryOps, "softcap", D::kUnary,
     {B::kLogits, kNo}, {B::kLogits, kNo}, 0, final_softcap,
     "logits = c * tanh(logits / c), c = finalLogitSoftcapping"},
    {"moe_down", P::kLayer, W::kExpertsOut, L::kNone, kMoeCombineOps, "", D::kMoeCombine,
     {B::kExpertAct, B::kExpertIds, B::kExpertWeights}, {B::kProj, kNo}, 0, nullptr,
     "proj = sum over the token's experts e of weight_e * (expert_act_e W_e^T) (stacked [E * D, Fe] weight)"},
    {"moe_gate_up", P::kLayer, W::kExpertsIn, L::kNone, kMoeGemvOps, "", D::kMoeGemv,
     {B::kNormed, B::kExpertIds}, {B::kExpertGateUp, kNo}, 0, nullptr,
     "expert_gate_up_j = normed W_e^T for each selected expert e = ids_j (stacked [E * 2 Fe, D] weight, per "
     "expert gate rows first)"},
    {"moe_glu", P::kLayer, W::kNone, L::kNone, kActOps, "glu_split", D::kGluSplit,
     {B::kExpertGateUp, kNo}, {B::kExpertAct, kNo}, 0, nullptr,
     "expert_act_j = activation(gate half) * up half, per selected expert"},
    {"moe_route", P::kLayer, W::kNone, L::kNone, kMoeRouteOps, "moe_route", D::kMoeRoute,
     {B::kRouter, kNo}, {B::kExpertIds, B::kExpertWeights}, 0, nullptr,
     "ids, weights = the expertsPerToken largest of softmax(router) (ties: lower expert), renormalized when "
     "normalizeTopK"},
    {"moe_route_gate_up_glu", P::kLayer, W::kExpertsGlu, L::kNone, kMoeRouteGluOps, "", D::kMoeRouteGlu,
     {B::kNormed, B::kRouter}, {B::kExpertIds, B::kExpertWeights, B::kExpertAct}, 0, nullptr,
     "moe_route, moe_gate_up and moe_glu in one step: ids and weights as moe_route, then expert_act_j = "
     "activation(gate half) * up half of normed W_e^T for e = ids_j (stacked [E * 2 Fe, D] weight, per expert gate rows "
     "first)"},
    {"moe_router", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kNormed, kNo}, {B::kRouter, kNo}, 0, nullptr,
     "router = normed W^T ([numExperts, D] weight)"},
    {"o_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kAttn, kNo}, {B::kProj, kNo}, 0, nullptr,
     "proj = attn W^T"},
    {"post_attn_norm", P::kLayer, W::kNorm, L::kHidden, kNormOps, "rms_norm", D::kNorm,
     {B::kProj, kNo}, {B::kProj, kNo}, 0, nullptr,
     "proj = rmsnorm(proj) * (offset + w)"},
    {"post_ffn_norm", P::kLayer, W::kNorm, L::kHidden, kNormOps, "rms_norm", D::kNorm,
     {B::kProj, kNo}, {B::kProj, kNo}, 0, nullptr,
     "proj = rmsnorm(proj) * (offset + w)"},
    {"q_bias", P::kLayer, W::kBias, L::kOutput, kAddOps, "", D::kBias, {B::kQ, kNo}, {B::kQ, kNo}, 0, nullptr,
     "q += b (per token)"},
    {"q_norm", P::kLayer, W::kNorm, L::kHeadDim, kNormOps, "rms_norm", D::kHeadNorm,
     {B::kQ, kNo}, {B::kQ, kNo}, 0, nullptr,
     "per-head rmsnorm of q over headDim"},
    {"q_norm_rope", P::kLayer, W::kNorm, L::kHeadDim, kRopeOps, "", D::kRope, {B::kQ, kNo}, {B::kQ, kNo}, kRotatesQ,
     nullptr, "per-head rmsnorm of q as q_norm does (its weight), then the rotary embedding of rope_q, in place of q_norm "
     "and rope_q (kernel rope_freqs_norm exactly where rope_q's is rope_freqs, else rope_norm)"},
    {"q_norm_rope_local", P::kLayer, W::kNorm, L::kHeadDim, kRopeOps, "", D::kRope, {B::kQ, kNo}, {B::kQ, kNo},
     kRotatesQ | kLocal, nullptr, "q_norm_rope with ropeLocalTheta, unscaled (sliding_attention layers; kernel rope_norm)"},
    {"q_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul, {B::kNormed, kNo}, {B::kQ, kNo}, 0, nullptr,
     "q = normed W^T"},
    {"qkv_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kNormed, kNo}, {B::kQkv, kNo}, 0, nullptr,
     "qkv = normed W^T (fused [(H + 2 KV) hd, D] weight: q rows, then k, then v)"},
    {"qkv_split", P::kLayer, W::kNone, L::kNone, kSplitOps, "split_qkv", D::kSplitQkv,
     {B::kQkv, kNo}, {B::kQ, B::kK, B::kV}, 0, nullptr,
     "q, k, v = the q, k and v columns of qkv (no dispatch where the runtime keeps a one-row pass's q, k and v "
     "in qkv itself)"},
    {"residual", P::kLayer, W::kNone, L::kNone, kAddOps, "add", D::kResidual,
     {B::kHidden, B::kProj}, {B::kHidden, kNo}, kAddsOwnOutput, nullptr,
     "hidden += proj"},
    {"residual_attn_norm", P::kLayer, W::kNorm, L::kHidden, kAddNormOps, "add_rms_norm", D::kAddNorm,
     {B::kHidden, B::kProj}, {B::kHidden, B::kNormed}, kAddsPrevOutput, nullptr,
     "hidden += proj (the previous layer's output, in place of its residual step); normed = rmsnorm(hidden) * "
     "(rmsNormWeightOffset + w)"},
    {"rope_k", P::kLayer, W::kNone, L::kNone, kRopeOps, "", D::kRope, {B::kK, kNo}, {B::kK, kNo}, kRotatesK, nullptr,
     "rotary embedding of k, ropeTheta and ropeScaling* (kernel rope_freqs exactly for scaling other than none / linear)"},
    {"rope_k_local", P::kLayer, W::kNone, L::kNone, kRopeOps, "", D::kRope,
     {B::kK, kNo}, {B::kK, kNo}, kRotatesK | kLocal, nullptr,
     "rotary embedding of k with ropeLocalTheta, unscaled (sliding_attention layers; kernel rope)"},
    {"rope_q", P::kLayer, W::kNone, L::kNone, kRopeOps, "", D::kRope, {B::kQ, kNo}, {B::kQ, kNo}, kRotatesQ, nullptr,
     "rotary embedding of q, ropeTheta and ropeScaling* (kernel rope_freqs exactly for scaling other than none / linear)"},
    {"rope_q_local", P::kLayer, W::kNone, L::kNone, kRopeOps, "", D::kRope,
     {B::kQ, kNo}, {B::kQ, kNo}, kRotatesQ | kLocal, nullptr,
     "rotary embedding of q with ropeLocalTheta, unscaled (sliding_attention layers; kernel rope)"},
    {"sample", P::kPostLayer, W::kNone, L::kNone, kSampleOps, "", D::kSample,
     {B::kLogits, kNo}, {B::kToken, kNo}, 0, nullptr,
     "token = argmax of the last logits row, or a temperature / top-k draw (run options), on the GPU"},
    {"shared_down_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kSharedAct, kNo}, {B::kSharedOut, kNo}, 0, nullptr,
     "shared_out = shared_act W^T"},
    {"shared_expert_gate", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kNormed, kNo}, {B::kSharedScale, kNo}, 0, nullptr,
     "shared_scale = normed W^T ([1, D] weight)"},
    {"shared_gate_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kNormed, kNo}, {B::kSharedGate, kNo}, 0, nullptr,
     "shared_gate = normed W^T"},
    {"shared_gated_add", P::kLayer, W::kNone, L::kNone, kGatedAddOps, "gated_add", D::kGatedAdd,
     {B::kSharedScale, B::kSharedOut}, {B::kProj, kNo}, 0, nullptr,
     "proj += sigmoid(shared_scale) * shared_out"},
    {"shared_glu", P::kLayer, W::kNone, L::kNone, kActOps, "glu", D::kGlu,
     {B::kSharedGate, B::kSharedUp}, {B::kSharedAct, kNo}, 0, nullptr,
     "shared_act = activation(shared_gate) * shared_up"},
    {"shared_up_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kNormed, kNo}, {B::kSharedUp, kNo}, 0, nullptr,
     "shared_up = normed W^T"},
    {"up_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul,
     {B::kNormed, kNo}, {B::kUp, kNo}, 0, nullptr,
     "up = normed W^T"},
    {"v_bias", P::kLayer, W::kBias, L::kOutput, kAddOps, "", D::kBias, {B::kV, kNo}, {B::kV, kNo}, 0, nullptr,
     "v += b (per token)"},
    {"v_proj", P::kLayer, W::kMatmul, L::kNone, kMatmulOps, "", D::kMatmul, {B::kNormed, kNo}, {B::kV, kNo}, 0, nullptr,
     "v = normed W^T"},
};

constexpr std::string_view kBufNames[] = {
    "hidden",      "normed",      "q",          "k",           "v",          "attn",        "proj",
    "gate",        "up",          "gate_up",    "qkv",         "act",        "router",      "expert ids",
    "expert weights", "expert gate_up", "expert act", "shared gate", "shared up", "shared act", "shared out",
    "shared scale", "logits",     "token ids",  "kv cache",    "token",      "-"};
static_assert(std::size(kBufNames) == static_cast<size_t>(Buf::kNone) + 1);


std::string weight_text(const OpInfo& o) {
  switch (o.weight) {
    case WeightKind::kNone: return "—";
    case WeightKind::kNorm: return o.weight_length == WeightLength::kHeadDim ? "norm `[hd]`" : "norm `[D]`";
    case WeightKind::kBias: {
      std::string out = "bias `[";
      out.append(buf_name(o.writes[0]));
      out.append(" width]`");
      return out;
    }
    case WeightKind::kMatmul: return "matmul";
    case WeightKind::kEmbedding: return "embedding";
    case WeightKind::kExpertsIn:
    case WeightKind::kExpertsOut: return "stacked experts `[E x out, in]`";
    case WeightKind::kExpertsGlu: return "stacked experts `[E x 2 out, in]`";
  }
  return "?";
}

std::string buffers_text(const BufList& bufs) {
  std::string out;
  for (Buf b : bufs) {
    if (b == Buf::kNone) continue;
    if (!out.empty()) out += ", ";
    out += '`';
    out.append(buf_name(b));
    out += '`';
  }
  return out;
}

// A kernel a step may name: not an optional variant, and not only dispatched as another kernel's companion.
bool step_kernel(const kernels::KernelInfo& k) {
  if (kernels::is_optional_variant(k.name)) return false;
  if (!kernels::kernel_companions(k.name).empty()) return true;
  for (const kernels::KernelInfo& other : kernels::all_kernels()) {
    for (std::string_view c : kernels::kernel_companions(other.name)) {
      if (c == k.name) return false;
    }
  }
  return true;
}

std::string kernels_text(const OpInfo& o) {
  if (o.weight == WeightKind::kMatmul) return o.phase == Phase::kLayer ? "GEMM / GEMV" : "GEMV";
  if (!o.kernel.empty()) {
    std::string one = "`";
    one.append(o.kernel);
    one.append("`");
    return one;
  }
  std::string out;
  bool companions = false;
  for (const kernels::KernelInfo& k : kernels::all_kernels()) {
    if (std::find(o.kernel_ops.begin(), o.kernel_ops.end(), k.op) == o.kernel_ops.end()) continue;
    if (!step_kernel(k)) {
      companions = true;
      continue;
    }
    if (!out.empty()) out += ", ";
    out += '`';
    out.append(k.name);
    out += '`';
  }
  return companions ? out + " (+ companions)" : out;
}

}  // namespace

std::string_view buf_name(Buf b) { return kBufNames[static_cast<size_t>(b)]; }

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::kPreLayer: return "preLayer";
    case Phase::kLayer: return "prefill / decode";
    case Phase::kPostLayer: return "postLayer";
  }
  return "?";
}

Result<Dims> model_dims(const Architecture& a) {
  const uint64_t limit = uint64_t{1} << 31;
  if (a.hidden_size >= limit || a.head_dim >= limit || a.intermediate_size >= limit || a.vocab_size >= limit) {
    return error(StatusCode::kUnsupported, "architecture: dimensions beyond 2^31 are not supported");
  }
  const MoeArchitecture& moe = a.moe;
  if (moe.expert_intermediate_size >= limit || moe.shared_expert_intermediate_size >= limit) {
    return error(StatusCode::kUnsupported, "architecture.moe: dimensions beyond 2^31 are not supported");
  }
  return Dims{static_cast<uint32_t>(a.hidden_size),
              a.num_attention_heads,
              a.num_key_value_heads,
              static_cast<uint32_t>(a.head_dim),
              static_cast<uint32_t>(a.intermediate_size),
              static_cast<uint32_t>(a.vocab_size),
              a.num_layers,
              moe.num_experts,
              moe.experts_per_token,
              static_cast<uint32_t>(moe.expert_intermediate_size),
              static_cast<uint32_t>(moe.shared_expert_intermediate_size)};
}

uint32_t buffer_width(const Dims& d, Buf b) {
  switch (b) {
    case Buf::kHidden:
    case Buf::kNormed:
    case Buf::kProj: return d.d;
    case Buf::kQ:
    case Buf::kAttn: return d.heads * d.head_dim;
    case Buf::kK:
    case Buf::kV: return d.kv_heads * d.head_dim;
    case Buf::kGate:
    case Buf::kUp:
    case Buf::kAct: return d.ff;
    case Buf::kGateUp: return 2 * d.ff;
    case Buf::kQkv: return (d.heads + 2 * d.kv_heads) * d.head_dim;
    case Buf::kRouter: return d.experts;
    case Buf::kExpertIds:
    case Buf::kExpertWeights: return d.top_k;
    case Buf::kExpertGateUp: return d.top_k * 2 * d.expert_ff;
    case Buf::kExpertAct: return d.top_k * d.expert_ff;
    case Buf::kSharedGate:
    case Buf::kSharedUp:
    case Buf::kSharedAct: return d.shared_ff;
    case Buf::kSharedOut: return d.shared_ff != 0 ? d.d : 0;
    case Buf::kSharedScale: return d.shared_ff != 0 ? 1 : 0;
    case Buf::kLogits: return d.vocab;
    default: return 0;
  }
}

std::span<const OpInfo> all_ops() { return kOps; }

const OpInfo* find_op(std::string_view name) {
  const auto* it = std::lower_bound(std::begin(kOps), std::end(kOps), name,
                                    [](const OpInfo& o, std::string_view n) { return o.name < n; });
  return it != std::end(kOps) && it->name == name ? it : nullptr;
}

std::string single_quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  out.append(s);
  out.push_back('\'');
  return out;
}

std::string op_table_markdown() {
  std::string out =
      "| op | phase | weight | kernels | reads | writes | semantics |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const OpInfo& o : kOps) {
    std::string name = "`";
    name.append(o.name);
    name.append("`");
    for (const std::string& cell : {name, std::string(phase_name(o.phase)), weight_text(o),
                                     kernels_text(o), buffers_text(o.reads), buffers_text(o.writes),
                                     std::string(o.semantics)}) {
      out.append("| ");
      out.append(cell);
      out.append(" ");
    }
    out.append("|\n");
  }
  return out;
}

}  // namespace rdrr::graph
