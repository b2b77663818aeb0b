#version 450
// Gated activation (SwiGLU / GeGLU): out[i] = act(gate[i]) * up[i].
//   ACT 0: SiLU       act(g) = g / (1 + exp(-g))
//   ACT 1: GELU-tanh  act(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
// Separate form: gate and up are two tensors; out may alias gate or up (same range).
//   Bindings: 0 gate (f32[n]), 1 up (f32[n]), 2 out (f32[n]).  Push: n, n_groups.
// SPLIT form: one fused gate_up projection output f32 [n_tokens, 2 * n_ff] (gate first, then up, per token;
//   Phi-3 gate_up_proj); out f32 [n_tokens, n_ff]: out[t, i] = act(gate_up[t, i]) * gate_up[t, n_ff + i].
//   Bindings: 0 gate_up, 1 out (must not overlap gate_up).  Push: n (= n_tokens * n_ff), n_groups, n_ff.
// Spec: 0 local_size_x (256), 1 ACT (0).
// Grid: ceil(n / local_size_x) workgroups, folded into x and y.
#include "common.glsl"
#include "act.glsl"

layout(local_size_x = 256, local_size_x_id = 0) in;
layout(constant_id = 1) const uint ACT = 0;

#if defined(SPLIT)
layout(binding = 0) readonly buffer GateUp { float gate_up[]; };
layout(binding = 1) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform Push {
  uint n;
  uint n_groups;
  uint n_ff;
} pc;
#else
layout(binding = 0) readonly buffer Gate { float gate[]; };
layout(binding = 1) readonly buffer Up { float up[]; };
layout(binding = 2) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform Push {
  uint n;
  uint n_groups;
} pc;
#endif

void main() {
  const uint i = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
#if defined(SPLIT)
  const uint t = i / pc.n_ff;
  const uint gi = i + t * pc.n_ff;  // t * 2 n_ff + (i - t * n_ff)
  const float g = gate_up[gi];
  const float u = gate_up[gi + pc.n_ff];
#else
  const float g = gate[i];
  const float u = up[i];
#endif
  outv[i] = gated_act(ACT, g) * u;
}
