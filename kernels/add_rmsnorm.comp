#version 450
// Residual add fused with the following RMSNorm, per row of d:
//   x[r, i] += res[r, i];  y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * (w[i] + weight_offset)
// (x is the residual stream, updated in place; weight_offset as rmsnorm.comp). y must not overlap x or res.
// Bindings: 0 x (f32[n_rows * d], read-write), 1 res (f32[n_rows * d]), 2 w (f32[d]), 3 y (f32[n_rows * d]).
// Push: d, n_rows, eps, weight_offset, n_groups (= n_rows).
// Spec: 0 local_size_x (128).
// Grid: one workgroup per row, folded into x and y.
#include "common.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;
#include "reduce.glsl"

layout(binding = 0) buffer X { float x[]; };
layout(binding = 1) readonly buffer Res { float res[]; };
layout(binding = 2) readonly buffer W { float w[]; };
layout(binding = 3) writeonly buffer Y { float y[]; };

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
  // Each invocation re-reads only the elements it wrote itself: no barrier needed between the passes.
  for (uint i = gl_LocalInvocationID.x; i < pc.d; i += gl_WorkGroupSize.x) {
    const float v = x[base + i] + res[base + i];
    x[base + i] = v;
    ss += v * v;
  }
  const float total = workgroup_sum(ss);
  const float scale = 1.0 / sqrt(total / float(pc.d) + pc.eps);
  for (uint i = gl_LocalInvocationID.x; i < pc.d; i += gl_WorkGroupSize.x) {
    y[base + i] = (x[base + i] * scale) * (w[i] + pc.weight_offset);
  }
}
