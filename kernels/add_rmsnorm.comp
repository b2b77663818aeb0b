#version 450
// Residual add fused with the following RMSNorm, per row of d:
//   x[r, i] += res[r, i];  y[r, i] = x[r, i] / sqrt(mean_i(x[r, i]^2) + eps) * (w[i] + weight_offset)
// (x is the residual stream, updated in place; weight_offset as rmsnorm.comp). y must not overlap x or res.
// Bindings: 0 x (f32[n_rows * d], read-write), 1 res (f32[n_rows * d]), 2 w (f32[d]), 3 y (f32[n_rows * d]).
// Push: d, n_rows, eps, weight_offset, n_groups (= n_rows).
// Spec: 0 local_size_x (128; runtime/ops_eltwise.cpp norm_spec picks it from d).
// Grid: one workgroup per row, folded into x and y.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;
#include "reduce.glsl"
#define UNROLL 8u

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
  const uint wg = gl_WorkGroupSize.x;
  const uint lid = gl_LocalInvocationID.x;
  // As rmsnorm.comp: the first UNROLL * wg sums stay in registers for the second pass; values past that are
  // read again (each invocation re-reads only elements it wrote itself: no barrier needed between the passes).
  float keep[UNROLL];
  float gain[UNROLL];  // w of the kept values, loaded with them (off the critical path)
  float ss = 0.0;
  [[unroll]] for (uint u = 0u; u < UNROLL; ++u) gain[u] = lid + u * wg < pc.d ? w[lid + u * wg] : 0.0;
  [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
    const uint i = lid + u * wg;
    keep[u] = i < pc.d ? x[base + i] + res[base + i] : 0.0;
  }
  [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
    if (lid + u * wg < pc.d) x[base + lid + u * wg] = keep[u];
    ss += keep[u] * keep[u];
  }
  for (uint i0 = lid + UNROLL * wg; i0 < pc.d; i0 += UNROLL * wg) {
    float v[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const uint i = i0 + u * wg;
      v[u] = i < pc.d ? x[base + i] + res[base + i] : 0.0;
    }
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      if (i0 + u * wg < pc.d) x[base + i0 + u * wg] = v[u];
      ss += v[u] * v[u];
    }
  }
  const float total = workgroup_sum(ss);
  const float scale = 1.0 / sqrt(total / float(pc.d) + pc.eps);
  for (uint i0 = lid; i0 < pc.d; i0 += UNROLL * wg) {
    float v[UNROLL];
    float g[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const bool in_row = i0 + u * wg < pc.d;
      v[u] = i0 == lid ? keep[u] : (in_row ? x[base + i0 + u * wg] : 0.0);
      g[u] = i0 == lid ? gain[u] : (in_row ? w[i0 + u * wg] : 0.0);
    }
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      if (i0 + u * wg < pc.d) y[base + i0 + u * wg] = (v[u] * scale) * (g[u] + pc.weight_offset);
    }
  }
}
