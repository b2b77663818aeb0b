#version 450
// Logit soft-capping (Gemma 2 / 3 final_logit_softcapping): y[i] = cap * tanh(x[i] / cap). y may alias x.
// Bindings: 0 x (f32[n]), 1 y (f32[n]).
// Push: n, cap (> 0), n_groups.
// Spec: 0 local_size_x (256).
// Grid: ceil(n / local_size_x) workgroups, folded into x and y.
#include "common.glsl"

layout(local_size_x = 256, local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint n;
  float cap;
  uint n_groups;
} pc;

void main() {
  const uint i = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  // tanh saturates to +-1 in f32 well before |u| = 10; the clamp avoids inf / inf in some tanh lowerings.
  y[i] = pc.cap * tanh(clamp(x[i] / pc.cap, -10.0, 10.0));
}
