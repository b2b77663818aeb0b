#version 450
// RMSNorm over rows: y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * (w[i] + weight_offset).
// weight_offset = 0 for plain RMSNorm, 1 for Gemma's (1 + w) form (HF Gemma weights; GGUF Gemma norms
// already have the 1 folded in and use 0). In place (x and y the same range) is allowed.
// Bindings: 0 x (f32[n_rows * d]), 1 w (f32[d]), 2 y (f32[n_rows * d]).
// Push: d, n_rows, eps, weight_offset, n_groups (= n_rows).
// Spec: 0 local_size_x (128).
// Grid: one workgroup per row, folded into x and y.
#include "common.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;
#include "reduce.glsl"

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer W { float w[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint d;
  uint n_rows;
  float eps;
  float weight_offset;
  uint n_groups;
} pc;

void main() {
  const uint row = folded_group_index();
  if (row >= pc.n_groups) return;
  const uint base = row * pc.d;
  float ss = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < pc.d; i += gl_WorkGroupSize.x) {
    const float v = x[base + i];
    ss += v * v;
  }
  const float total = workgroup_sum(ss);
  const float scale = 1.0 / sqrt(total / float(pc.d) + pc.eps);
  for (uint i = gl_LocalInvocationID.x; i < pc.d; i += gl_WorkGroupSize.x) {
    y[base + i] = (x[base + i] * scale) * (w[i] + pc.weight_offset);
  }
}
