#version 450
// Rotary position embedding on x [n_tokens, n_heads, head_dim] (f32), positions pos[n_tokens] (int32).
// For rotated pair i (0 <= i < n_rot / 2): theta = pos * inv_freq_i, with
//   inv_freq_i = freq_scale * theta_base^(-2i / n_rot)                        (plain; linear scaling)
//   inv_freq_i = freqs[i]   (FREQ_TABLE: a table computed on the CPU, runtime/rope_freqs.h: llama3,
//                            YaRN, LongRoPE, linear; theta_base and freq_scale unused)
//   mode 0 (interleaved, GGUF llama order): dims (2i, 2i + 1)
//   mode 1 (neox / rotate-half, HF order):  dims (i, i + n_rot / 2)
//   (a, b) -> (a cos - b sin, a sin + b cos) * mscale (YaRN / LongRoPE attention factor; 1 otherwise).
//   Dims n_rot .. head_dim - 1 (partial rotary) are copied unchanged.
// In place (x and y the same range) is allowed: each invocation reads and writes only its own pair.
// Bindings: 0 x (f32), 1 pos (int32[n_tokens]), 2 y (f32, same shape as x); FREQ_TABLE: 3 freqs (f32[n_rot/2]).
// Push: n_tokens, n_heads, head_dim (even), n_rot (even, <= head_dim), theta_base, freq_scale, mode, n_groups,
//   mscale.
// Spec: 0 local_size_x (128).
// Grid: ceil(n_tokens * n_heads * head_dim / 2 / local_size_x) workgroups, folded into x and y.
// NORM (op q_norm_rope): each head is RMS-normed first, as rms_norm.comp over head_dim (x / sqrt(mean(x^2) + eps) *
// (w + weight_offset), the tail dims included), then rotated. One workgroup per (token, head) row with local_size_x
// = head_dim / 2 (the runtime sets it), one pair per invocation; the grid is n_tokens * n_heads workgroups.
// Binding w (f32[head_dim]) at 3 (4 with FREQ_TABLE); push adds eps, weight_offset (then pad).
#include "common.glsl"
#include "rope.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;
#if defined(NORM)
#include "reduce.glsl"
#endif

layout(binding = 0) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer Pos { int pos[]; };
layout(binding = 2) writeonly buffer Y { float y[]; };
#if defined(FREQ_TABLE)
layout(binding = 3) readonly buffer Freqs { float freqs[]; };
#endif
#if defined(NORM) && defined(FREQ_TABLE)
layout(binding = 4) readonly buffer NormW { float nw[]; };
#elif defined(NORM)
layout(binding = 3) readonly buffer NormW { float nw[]; };
#endif

layout(push_constant) uniform Push {
  uint n_tokens;
  uint n_heads;
  uint head_dim;
  uint n_rot;
  float theta_base;
  float freq_scale;
  uint mode;
  uint n_groups;
  float mscale;
#if defined(NORM)
  float eps;
  float weight_offset;
  uint pad0;
#endif
} pc;

void main() {
  const uint half_dim = pc.head_dim >> 1;
#if defined(NORM)
  const uint row = folded_group_index();  // token * n_heads + head
  if (row >= pc.n_tokens * pc.n_heads) return;  // whole workgroups: the reduction stays uniform
  const uint p = gl_LocalInvocationID.x;
#else
  const uint id = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (id >= pc.n_tokens * pc.n_heads * half_dim) return;
  const uint p = id % half_dim;
  const uint row = id / half_dim;  // token * n_heads + head
#endif
  const uint token = row / pc.n_heads;
  const uint base = row * pc.head_dim;
  const uint half_rot = pc.n_rot >> 1;
  const bool tail = p >= half_rot;  // a pass-through pair of the unrotated tail
  const uint d0 = tail ? pc.n_rot + 2u * (p - half_rot) : (pc.mode == 0u ? 2u * p : p);
  const uint d1 = tail ? d0 + 1u : (pc.mode == 0u ? 2u * p + 1u : p + half_rot);
  float a = x[base + d0];
  float b = x[base + d1];
#if defined(NORM)
  const float scale = 1.0 / sqrt(workgroup_sum(a * a + b * b) / float(pc.head_dim) + pc.eps);
  a = (a * scale) * (nw[d0] + pc.weight_offset);
  b = (b * scale) * (nw[d1] + pc.weight_offset);
#endif
  if (tail) {
    y[base + d0] = a;
    y[base + d1] = b;
    return;
  }
#if defined(FREQ_TABLE)
  const vec2 cs = rope_cos_sin(pos[token], freqs[p], 1.0, pc.mscale);
#else
  const vec2 cs = rope_cos_sin(pos[token], rope_inv_freq(p, pc.n_rot, pc.theta_base), pc.freq_scale, pc.mscale);
#endif
  const vec2 r = rope_rotate(a, b, cs);
  y[base + d0] = r.x;
  y[base + d1] = r.y;
}
