#version 450
// Gated residual add (Qwen2-MoE's shared expert): y[m, :] += sigmoid(g[m]) * s[m, :], sigmoid(v) =
// 1 / (1 + exp(-v)) in f32 (0 and 1 at the extremes, never NaN for finite g).
// Bindings: 0 g (f32 [M]), 1 s (f32 [M, D]), 2 y (f32 [M, D], read and written; overlaps neither g nor s).
// Push: m_rows, d, n_groups, pad.
// Spec: 0 local_size_x (256).
// Grid: ceil(M * D / local_size_x) workgroups, folded into x and y.
#include "common.glsl"

layout(local_size_x = 256, local_size_x_id = 0) in;

layout(binding = 0) readonly buffer G { float g[]; };
layout(binding = 1) readonly buffer S { float s[]; };
layout(binding = 2) buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint m_rows;
  uint d;
  uint n_groups;
  uint pad0;
} pc;

void main() {
  const uint i = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.m_rows * pc.d) return;
  const float gate = 1.0 / (1.0 + exp(-g[i / pc.d]));
  y[i] += gate * s[i];
}
