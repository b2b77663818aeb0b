#include "kernels/graph_ops.h"

#include <algorithm>

namespace rdrr::kernels {
namespace {

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
constexpr Op kSoftcapOps[] = {Op::kSoftcap};
constexpr Op kSampleOps[] = {Op::kSample};

using P = GraphPhase;
using W = WeightKind;

// Sorted by name (find_graph_op uses binary search; graph_ops_test checks the order).
constexpr GraphOpInfo kOps[] = {
    {"attention", P::kLayer, W::kNone, kAttnOps, "q, kv cache", "attn",
     "causal GQA attention over cache positions 0..p, scale from queryPreAttnScalar or headDim, attnLogitSoftcapping"},
    {"attention_sliding", P::kLayer, W::kNone, kAttnOps, "q, kv cache", "attn",
     "attention limited to the last slidingWindow positions (sliding_attention layers only)"},
    {"attn_norm", P::kLayer, W::kNormF32, kNormOps, "hidden", "normed",
     "normed = rmsnorm(hidden) * (rmsNormWeightOffset + w)"},
    {"down_proj", P::kLayer, W::kMatmul, kMatmulOps, "act", "proj", "proj = act W^T"},
    {"embed", P::kPreLayer, W::kEmbedding, kEmbedOps, "token ids", "hidden",
     "hidden = table[ids] * embeddingScale"},
    {"ffn_norm", P::kLayer, W::kNormF32, kAddNormOps, "hidden, proj", "hidden, normed",
     "hidden += proj; normed = rmsnorm(hidden) * (offset + w)"},
    {"final_norm", P::kPostLayer, W::kNormF32, kNormOps, "hidden", "normed",
     "normed = rmsnorm(hidden) * (offset + w), for the rows the post-layer phase runs"},
    {"gate_proj", P::kLayer, W::kMatmul, kMatmulOps, "normed", "gate", "gate = normed W^T"},
    {"gate_up_proj", P::kLayer, W::kMatmul, kMatmulOps, "normed", "gate_up",
     "gate_up = normed W^T (fused [2F, D] weight, gate rows first)"},
    {"glu", P::kLayer, W::kNone, kActOps, "gate, up", "act", "act = activation(gate) * up"},
    {"glu_split", P::kLayer, W::kNone, kActOps, "gate_up", "act", "act = activation(gate half) * up half"},
    {"k_bias", P::kLayer, W::kBiasF32, kAddOps, "k", "k", "k += b (per token)"},
    {"k_norm", P::kLayer, W::kNormF32, kNormOps, "k", "k", "per-head rmsnorm of k over headDim"},
    {"k_proj", P::kLayer, W::kMatmul, kMatmulOps, "normed", "k", "k = normed W^T"},
    {"kv_append", P::kLayer, W::kNone, kKvOps, "k, v", "kv cache",
     "k and v of the pass's positions into the layer's cache (precision kvDtype)"},
    {"kv_append_rope", P::kLayer, W::kNone, kKvRopeOps, "k, v", "kv cache",
     "k rotated as rope_k does (ropeTheta, ropeScaling*), then k and v into the layer's cache, in place of rope_k "
     "and kv_append (precision kvDtype)"},
    {"kv_append_rope_local", P::kLayer, W::kNone, kKvRopeOps, "k, v", "kv cache",
     "kv_append_rope with ropeLocalTheta, unscaled (sliding_attention layers), in place of rope_k_local and "
     "kv_append"},
    {"lm_head", P::kPostLayer, W::kMatmul, kMatmulOps, "normed", "logits",
     "logits = normed W^T (lm_head.weight, or the embedding table when tied)"},
    {"logit_softcap", P::kPostLayer, W::kNone, kSoftcapOps, "logits", "logits",
     "logits = c * tanh(logits / c), c = finalLogitSoftcapping"},
    {"o_proj", P::kLayer, W::kMatmul, kMatmulOps, "attn", "proj", "proj = attn W^T"},
    {"post_attn_norm", P::kLayer, W::kNormF32, kNormOps, "proj", "proj", "proj = rmsnorm(proj) * (offset + w)"},
    {"post_ffn_norm", P::kLayer, W::kNormF32, kNormOps, "proj", "proj", "proj = rmsnorm(proj) * (offset + w)"},
    {"q_bias", P::kLayer, W::kBiasF32, kAddOps, "q", "q", "q += b (per token)"},
    {"q_norm", P::kLayer, W::kNormF32, kNormOps, "q", "q", "per-head rmsnorm of q over headDim"},
    {"q_proj", P::kLayer, W::kMatmul, kMatmulOps, "normed", "q", "q = normed W^T"},
    {"residual", P::kLayer, W::kNone, kAddOps, "hidden, proj", "hidden", "hidden += proj"},
    {"residual_attn_norm", P::kLayer, W::kNormF32, kAddNormOps, "hidden, proj", "hidden, normed",
     "hidden += proj (the previous layer's output, in place of its residual step); normed = rmsnorm(hidden) * "
     "(rmsNormWeightOffset + w)"},
    {"rope_k", P::kLayer, W::kNone, kRopeOps, "k", "k", "rotary embedding of k, ropeTheta and ropeScaling*"},
    {"rope_k_local", P::kLayer, W::kNone, kRopeOps, "k", "k",
     "rotary embedding of k with ropeLocalTheta, unscaled (sliding_attention layers)"},
    {"rope_q", P::kLayer, W::kNone, kRopeOps, "q", "q", "rotary embedding of q, ropeTheta and ropeScaling*"},
    {"rope_q_local", P::kLayer, W::kNone, kRopeOps, "q", "q",
     "rotary embedding of q with ropeLocalTheta, unscaled (sliding_attention layers)"},
    {"sample", P::kPostLayer, W::kNone, kSampleOps, "logits (last row)", "token",
     "token = argmax, or a temperature / top-k draw (run options), on the GPU"},
    {"up_proj", P::kLayer, W::kMatmul, kMatmulOps, "normed", "up", "up = normed W^T"},
    {"v_bias", P::kLayer, W::kBiasF32, kAddOps, "v", "v", "v += b (per token)"},
    {"v_proj", P::kLayer, W::kMatmul, kMatmulOps, "normed", "v", "v = normed W^T"},
};

struct Companions {
  std::string_view kernel;
  std::span<const std::string_view> others;
};
// The ticket zeroing and the multi-range merge (runtime/ops_gemv.cpp).
constexpr std::string_view kColSplit[] = {"gemv_reduce"};
// The integer-dot variant the runtime picks where packed 8-bit dot products are native (runtime/ops_gemv.cpp).
constexpr std::string_view kQ4KVec[] = {"gemv_q4_k_dot"};
// Split-K partials and their merge; the decode (one query) kernels the runtime runs where they apply.
constexpr std::string_view kAttnF16[] = {"attention_split_f16", "attn_merge", "attention_decode_f16",
                                         "attention_decode_split_f16"};
constexpr std::string_view kAttnF32[] = {"attention_split_f32", "attn_merge", "attention_decode_f32",
                                         "attention_decode_split_f32"};
constexpr std::string_view kSampleThreshold[] = {"sample_partial", "sample_final"};
constexpr std::string_view kSamplePartial[] = {"sample_threshold", "sample_final"};
constexpr std::string_view kSampleFinal[] = {"sample_threshold", "sample_partial"};
constexpr Companions kCompanions[] = {
    {"attention_f16", kAttnF16},          {"attention_f32", kAttnF32},
    {"gemv_q4_k_col_split", kColSplit},   {"gemv_q4_k_vec", kQ4KVec},           {"sample_final", kSampleFinal},
    {"sample_partial", kSamplePartial},   {"sample_threshold", kSampleThreshold},
};

// Optional variants: run in place of the kernel where the device supports them and the pack pins them.
constexpr std::string_view kGemmF16Cm[] = {"gemm_f16_cm"};
constexpr std::string_view kGemmQ80Cm[] = {"gemm_q8_0_cm"};
constexpr std::string_view kGemmQ6KCm[] = {"gemm_q6_k_cm"};
constexpr std::string_view kGemmQ4KCm[] = {"gemm_q4_k_cm"};
constexpr std::string_view kGemmQ4KColCm[] = {"gemm_q4_k_col_cm"};
constexpr Companions kVariants[] = {
    {"gemm_f16", kGemmF16Cm}, {"gemm_q4_k", kGemmQ4KCm}, {"gemm_q4_k_col", kGemmQ4KColCm},
    {"gemm_q6_k", kGemmQ6KCm}, {"gemm_q8_0", kGemmQ80Cm},
};

}  // namespace

std::span<const GraphOpInfo> all_graph_ops() { return kOps; }

const GraphOpInfo* find_graph_op(std::string_view name) {
  const auto* it = std::lower_bound(std::begin(kOps), std::end(kOps), name,
                                    [](const GraphOpInfo& o, std::string_view n) { return o.name < n; });
  return it != std::end(kOps) && it->name == name ? it : nullptr;
}

std::span<const std::string_view> kernel_companions(std::string_view kernel_name) {
  for (const Companions& c : kCompanions) {
    if (c.kernel == kernel_name) return c.others;
  }
  return {};
}

bool is_optional_variant(std::string_view kernel_name) {
  for (const Companions& c : kVariants) {
    for (std::string_view v : c.others) {
      if (v == kernel_name) return true;
    }
  }
  return false;
}

std::span<const std::string_view> kernel_variants(std::string_view kernel_name) {
  for (const Companions& c : kVariants) {
    if (c.kernel == kernel_name) return c.others;
  }
  return {};
}

}  // namespace rdrr::kernels
