#version 450
// Split-K attention merge: combines the n_splits partials (m, l, o[head_dim]) that attention.comp (SPLIT)
// wrote for each (query, head) row: M = max_s m_s, out = sum_s exp(m_s - M) o_s / sum_s exp(m_s - M) l_s.
// Bindings: 0 partials (f32 [n_rows][n_splits][head_dim + 2]), 1 out (f32 [n_rows, head_dim]).
// Push: n_rows (= n_q * n_heads), head_dim, n_splits, n_groups (= n_rows). n_splits = 0: writes zeros to out
//   (the runtime zeroes attention_decode.comp's tickets this way; partials are not read).
// Spec: 0 local_size_x (64).
// Grid: one workgroup per row, folded into x and y.
#include "common.glsl"

layout(local_size_x = 64, local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Partials { float part[]; };
layout(binding = 1) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Push {
  uint n_rows;
  uint head_dim;
  uint n_splits;
  uint n_groups;
} pc;

void main() {
  const uint row = folded_group_index();
  if (row >= pc.n_groups) return;
  if (pc.n_splits == 0u) {
    for (uint d = gl_LocalInvocationID.x; d < pc.head_dim; d += gl_WorkGroupSize.x) outv[row * pc.head_dim + d] = 0.0;
    return;
  }
  const uint stride = pc.head_dim + 2u;
  const uint base = row * pc.n_splits * stride;
  float m = part[base];
  for (uint s = 1u; s < pc.n_splits; ++s) m = max(m, part[base + s * stride]);
  float l = 0.0;
  for (uint s = 0u; s < pc.n_splits; ++s) l += part[base + s * stride + 1u] * exp(part[base + s * stride] - m);
  const float inv_l = 1.0 / l;
  for (uint d = gl_LocalInvocationID.x; d < pc.head_dim; d += gl_WorkGroupSize.x) {
    float o = 0.0;
    for (uint s = 0u; s < pc.n_splits; ++s) o += part[base + s * stride + 2u + d] * exp(part[base + s * stride] - m);
    outv[row * pc.head_dim + d] = o * inv_l;
  }
}
