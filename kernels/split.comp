#version 450
// Row split of a fused projection output: qkv f32 [n_tokens, n_q + 2 n_kv] (per token: q, then k, then v;
// the fused qkv_proj's rows) into q f32 [n_tokens, n_q], k and v f32 [n_tokens, n_kv]. A plain copy: exact.
// Bindings: 0 qkv, 1 q, 2 k, 3 v (q, k, v must not overlap qkv).
// Push: n (= n_tokens * (n_q + 2 n_kv)), n_groups, n_q, n_kv.
// Spec: 0 local_size_x (256).
// Grid: ceil(n / local_size_x) workgroups, folded into x and y.
#include "common.glsl"

layout(local_size_x = 256, local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Qkv { float qkv[]; };
layout(binding = 1) writeonly buffer Q { float q[]; };
layout(binding = 2) writeonly buffer K { float k[]; };
layout(binding = 3) writeonly buffer V { float v[]; };

layout(push_constant) uniform Push {
  uint n;
  uint n_groups;
  uint n_q;
  uint n_kv;
} pc;

void main() {
  const uint i = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  const uint width = pc.n_q + 2u * pc.n_kv;
  const uint t = i / width;
  const uint c = i - t * width;
  const float x = qkv[i];
  if (c < pc.n_q) {
    q[t * pc.n_q + c] = x;
  } else if (c < pc.n_q + pc.n_kv) {
    k[t * pc.n_kv + (c - pc.n_q)] = x;
  } else {
    v[t * pc.n_kv + (c - pc.n_q - pc.n_kv)] = x;
  }
}
