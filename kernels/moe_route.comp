#version 450
// Mixture-of-experts router: per row of router logits, softmax, top-k and optional renormalisation (HF
// Mixtral; Qwen2-MoE / Qwen3-MoE with norm_topk_prob):
//   p = softmax(logits[m, :])   (f32, max-subtracted: p_i = exp(l_i - max) / sum_i exp(l_i - max))
//   ids[m, 0 .. K)     = the K experts of largest p, in descending p order (ties: lower expert index first)
//   weights[m, j]      = p[ids[m, j]], divided by sum_j p[ids[m, j]] (added in j order) when normalize != 0
// Limits (runtime/ops_moe.h): 1 <= E <= 256 (the probabilities are staged in shared memory), 1 <= K <= min(E, 8).
// Bindings: 0 logits (f32 [M, E]), 1 ids (uint32 [M, K]), 2 weights (f32 [M, K]).
// Push: m_rows, n_experts (E), top_k (K), normalize, n_groups (= m_rows), pad x3.
// Spec: 0 local_size_x (64; the runtime passes the device's subgroup size where that is 8 .. 64, so one subgroup
//   runs a row and the top-k rounds need no workgroup barrier).
// Grid: one workgroup per row, folded into x and y.
// The max and the sum go through reduce.glsl (fixed order); each of the K selection rounds takes every
// invocation's best unselected expert, then the best of those (subgroup max, then the lowest index holding
// it, then the subgroups' candidates in order): the result does not depend on the subgroup size. With one
// subgroup per workgroup the same rounds run without shared-memory candidates: each invocation marks its own
// selected experts in a register bit mask (at most 32 experts per invocation: E <= 256, local_size_x >= 8).
#include "common.glsl"

layout(local_size_x = 64, local_size_x_id = 0) in;
#include "reduce.glsl"

#define MAX_EXPERTS 256u
#define MAX_TOP_K 8u

layout(binding = 0) readonly buffer Logits { float logits[]; };
layout(binding = 1) writeonly buffer Ids { uint ids[]; };
layout(binding = 2) writeonly buffer Weights { float weights[]; };

layout(push_constant) uniform Push {
  uint m_rows;
  uint n_experts;
  uint top_k;
  uint normalize;
  uint n_groups;
  uint pad0;
  uint pad1;
  uint pad2;
} pc;

shared float probs[MAX_EXPERTS];  // p of each expert; -1 once selected
shared float cand_p[gl_WorkGroupSize.x];  // per subgroup: its best p and expert of this round
shared uint cand_e[gl_WorkGroupSize.x];
shared float sel_p[MAX_TOP_K];
shared uint sel_e[MAX_TOP_K];

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // whole workgroups: the barriers below stay uniform
  const uint row = g;
  const uint t = gl_LocalInvocationID.x;
  const uint base = row * pc.n_experts;

  float m = -1.0 / 0.0;
  for (uint i = t; i < pc.n_experts; i += gl_WorkGroupSize.x) m = max(m, logits[base + i]);
  m = workgroup_max(m);
  float s = 0.0;
  for (uint i = t; i < pc.n_experts; i += gl_WorkGroupSize.x) {
    const float v = exp(logits[base + i] - m);
    probs[i] = v;
    s += v;
  }
  s = workgroup_sum(s);  // its barriers also order the probs writes before the reads below
  for (uint i = t; i < pc.n_experts; i += gl_WorkGroupSize.x) probs[i] = probs[i] / s;
  barrier();

  if (gl_NumSubgroups == 1u && pc.n_experts <= 32u * gl_WorkGroupSize.x) {
    // One subgroup (the runtime sizes the workgroup to the device's subgroup): the rounds need no workgroup
    // barrier. Invocation t owns experts t + c * local_size_x; bit c of `taken` marks its c-th one selected.
    uint taken = 0u;
    for (uint j = 0u; j < pc.top_k; ++j) {
      float best = -1.0;
      uint best_e = 0xffffffffu;
      uint c = 0u;
      for (uint i = t; i < pc.n_experts; i += gl_WorkGroupSize.x, ++c) {
        const float p = probs[i];
        if ((taken & (1u << c)) == 0u && p > best) {
          best = p;
          best_e = i;
        }
      }
      const float sg_best = subgroupMax(best);
      uint be = subgroupMin(best == sg_best ? best_e : 0xffffffffu);
      float bp = sg_best;
      if (be >= pc.n_experts) {  // no finite candidate: as below
        be = 0u;
        bp = uintBitsToFloat(0x7fc00000u);
      } else if (be % gl_WorkGroupSize.x == t) {
        taken |= 1u << (be / gl_WorkGroupSize.x);
      }
      if (t == 0u) {
        sel_p[j] = bp;
        sel_e[j] = be;
      }
    }
  } else {
    for (uint j = 0u; j < pc.top_k; ++j) {
      // This invocation's best unselected expert (ascending scan, strict >: the lowest index among equals).
      float best = -1.0;
      uint best_e = 0xffffffffu;
      for (uint i = t; i < pc.n_experts; i += gl_WorkGroupSize.x) {
        const float p = probs[i];
        if (p > best) {
          best = p;
          best_e = i;
        }
      }
      const float sg_best = subgroupMax(best);
      const uint sg_e = subgroupMin(best == sg_best ? best_e : 0xffffffffu);
      if (subgroupElect()) {
        cand_p[gl_SubgroupID] = sg_best;
        cand_e[gl_SubgroupID] = sg_e;
      }
      barrier();
      if (t == 0u) {
        float bp = cand_p[0];
        uint be = cand_e[0];
        for (uint i = 1u; i < gl_NumSubgroups; ++i) {
          if (cand_p[i] > bp || (cand_p[i] == bp && cand_e[i] < be)) {
            bp = cand_p[i];
            be = cand_e[i];
          }
        }
        // Non-finite logits leave no candidate (every p NaN): expert 0 with a NaN weight, so the layer's output is
        // NaN (as the CPU reference's) instead of a silently skipped expert, and no shared store out of range.
        if (be >= pc.n_experts) {
          be = 0u;
          bp = uintBitsToFloat(0x7fc00000u);
        } else {
          probs[be] = -1.0;
        }
        sel_p[j] = bp;
        sel_e[j] = be;
      }
      barrier();
    }
  }

  if (t == 0u) {
    float denom = 1.0;
    if (pc.normalize != 0u) {
      denom = 0.0;
      for (uint j = 0u; j < pc.top_k; ++j) denom += sel_p[j];
    }
    for (uint j = 0u; j < pc.top_k; ++j) {
      ids[row * pc.top_k + j] = sel_e[j];
      weights[row * pc.top_k + j] = pc.normalize != 0u ? sel_p[j] / denom : sel_p[j];
    }
  }
}
