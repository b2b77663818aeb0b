// Router top-k of one token on one subgroup, without shared memory or barriers (gemv_q4k.comp ROUTE_GLU). The
// selection is moe_route.comp's:
//   p_i = exp(l_i - max) / sum_i exp(l_i - max)  (the sum in the subgroup's order)
//   the top_k largest p in descending order, ties to the lower expert; a round with no finite candidate
//   selects expert 0 with a NaN weight (the layer's output is then NaN, as the CPU reference's).
// The includer defines `float moe_router_logit(uint i)` (logit i of the token's row) first. Call from uniform
// control flow with every invocation of the subgroup active (the workgroup a multiple of the subgroup size).
// Limit: top_k <= MOE_TOPK_MAX_K (the selected experts beyond the registers are looked up among those chosen).
#ifndef RDRR_MOE_TOPK_GLSL
#define RDRR_MOE_TOPK_GLSL

// Logits per invocation kept in registers (the rounds then read no memory): all of them where E <= 8 * subgroup size
// (256 experts on 32-wide subgroups); the rest are read again in every round.
#define MOE_TOPK_REGS 8u
#define MOE_TOPK_MAX_K 8u

// The expert of rank `rank` (0 <= rank < top_k) and its weight: p, or p / (sum of the top_k selected p, added in
// rank order) when normalize. Subgroup-uniform results.
void moe_topk_rank(uint n_experts, uint top_k, bool normalize, uint rank, out uint expert, out float weight) {
  const uint lane = gl_SubgroupInvocationID;
  const uint width = gl_SubgroupSize;
  const uint n_regs_end = MOE_TOPK_REGS * width;  // experts below this index live in p_reg
  float p_reg[MOE_TOPK_REGS];                      // logits, then exp(l - max), then p
  float m = -1.0 / 0.0;
  [[unroll]] for (uint c = 0u; c < MOE_TOPK_REGS; ++c) {
    const uint i = lane + c * width;
    p_reg[c] = i < n_experts ? moe_router_logit(i) : -1.0 / 0.0;
    m = max(m, p_reg[c]);
  }
  for (uint i = lane + n_regs_end; i < n_experts; i += width) m = max(m, moe_router_logit(i));
  m = subgroupMax(m);
  float s = 0.0;
  [[unroll]] for (uint c = 0u; c < MOE_TOPK_REGS; ++c) {
    if (lane + c * width < n_experts) {
      p_reg[c] = exp(p_reg[c] - m);
      s += p_reg[c];
    }
  }
  for (uint i = lane + n_regs_end; i < n_experts; i += width) s += exp(moe_router_logit(i) - m);
  s = subgroupAdd(s);
  [[unroll]] for (uint c = 0u; c < MOE_TOPK_REGS; ++c) p_reg[c] = lane + c * width < n_experts ? p_reg[c] / s : -1.0;
  uint taken = 0u;  // bit c: this invocation's register expert lane + c * width is selected
  uint chosen[MOE_TOPK_MAX_K];  // the experts of the rounds so far (subgroup-uniform)
  float sel_sum = 0.0;
  expert = 0u;
  float p_rank = 0.0;
  for (uint j = 0u; j < top_k; ++j) {
    float best = -1.0;
    uint best_e = 0xffffffffu;
    [[unroll]] for (uint c = 0u; c < MOE_TOPK_REGS; ++c) {
      if ((taken & (1u << c)) == 0u && p_reg[c] > best) {
        best = p_reg[c];
        best_e = lane + c * width;
      }
    }
    for (uint i = lane + n_regs_end; i < n_experts; i += width) {
      const float p = exp(moe_router_logit(i) - m) / s;
      bool was_chosen = false;
      for (uint q = 0u; q < j; ++q) was_chosen = was_chosen || chosen[q] == i;
      if (!was_chosen && p > best) {
        best = p;
        best_e = i;
      }
    }
    const float sg_best = subgroupMax(best);
    uint be = subgroupMin(best == sg_best ? best_e : 0xffffffffu);
    float bp = sg_best;
    if (be >= n_experts) {
      be = 0u;
      bp = uintBitsToFloat(0x7fc00000u);
    } else if (be % width == lane && be < n_regs_end) {
      taken |= 1u << (be / width);
    }
    chosen[j] = be;
    sel_sum += bp;
    if (j == rank) {
      expert = be;
      p_rank = bp;
    }
  }
  weight = normalize ? p_rank / sel_sum : p_rank;
}

#endif
