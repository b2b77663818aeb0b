#version 450
// Split-K GEMV merge: y[n] = sum_s partials[s][n] for s = 0 .. n_splits - 1, in order (deterministic), for the
// column_wise split path of gemv_q4k.comp (COLUMN_SPLIT).
// Bindings: 0 partials (f32 [n_splits][n_out]), 1 y (f32[n_out]).
// Push: n_out, n_splits, n_groups, pad.
// Spec: 0 local_size_x (256).
// Grid: ceil(n_out / local_size_x) workgroups, folded into x and y.
#include "common.glsl"

layout(local_size_x = 256, local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Partials { float part[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint n_out;
  uint n_splits;
  uint n_groups;
  uint pad0;
} pc;

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;
  const uint n = g * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (n >= pc.n_out) return;
  float total = 0.0;
  for (uint s = 0u; s < pc.n_splits; ++s) total += part[s * pc.n_out + n];
  y[n] = total;
}
