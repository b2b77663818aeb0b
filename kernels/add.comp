#version 450
// Elementwise add (residual connections): out[i] = a[i] + b[i]. out may alias a or b (same range).
// BROADCAST (add_bias): out[i] = a[i] + b[i % n_b], a bias f32[n_b] added to every row of a [n / n_b, n_b].
// Bindings: 0 a (f32[n]), 1 b (f32[n]; BROADCAST: f32[n_b]), 2 out (f32[n]).
// Push: n, n_groups (BROADCAST: then n_b, pad).
// Spec: 0 local_size_x (256).
// Grid: ceil(n / local_size_x) workgroups, folded into x and y.
#include "common.glsl"

layout(local_size_x = 256, local_size_x_id = 0) in;

layout(binding = 0) readonly buffer A { float a[]; };
layout(binding = 1) readonly buffer B { float b[]; };
layout(binding = 2) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Push {
  uint n;
  uint n_groups;
#ifdef BROADCAST
  uint n_b;
  uint pad0;
#endif
} pc;

void main() {
  const uint i = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
#ifdef BROADCAST
  outv[i] = a[i] + b[i % pc.n_b];
#else
  outv[i] = a[i] + b[i];
#endif
}
