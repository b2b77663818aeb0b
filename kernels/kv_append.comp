#version 450
// KV cache append: writes the new K and V rows of one layer for positions p0 .. p0 + n_tokens - 1.
//   k_src, v_src: f32 [n_tokens, n_kv_heads, head_dim] (K after RoPE / K-norm, V as projected)
//   k_cache, v_cache: one layer's K or V, [n_kv_heads][capacity][head_dim] (runtime/kv_cache.h)
//     F32 (KV_F32): f32 elements.  F16 (KV_F16): uint32 words, each holding dims (2w, 2w + 1) as halves
//     (packHalf2x16: round to nearest even, subnormals kept, on lavapipe and NVIDIA H200; checked bit for
//     bit by KvAppendTest in kernels/attention_vk_test.cpp).
// ROPE (op kv_append_rope): K is rotated on the way into the cache, the same rotary embedding as rope.comp
// (its theta, conventions, partial rotary and mscale; `use_table` = inverse frequencies from binding 5, else
// freq_scale * theta_base^(-2i / n_rot)). Each invocation computes both dims of its word from k_src, so K
// needs no rotated copy and no barrier between rotation and append.
// One invocation per element pair (head_dim is even).
// Defines: one of KV_F32, KV_F16; optional ROPE.
// Bindings: 0 k_src, 1 v_src, 2 k_cache, 3 v_cache; ROPE: 4 pos (int32[n_tokens]), 5 freqs (f32[n_rot / 2],
//   read only with use_table).
// Push: n_tokens, n_kv_heads, head_dim, capacity, p0, n_groups; ROPE: n_rot, mode (0 interleaved, 1 neox),
//   theta_base, freq_scale, mscale, use_table.
// Spec: 0 local_size_x (128).
// Grid: ceil(n_tokens * n_kv_heads * head_dim / 2 / local_size_x) workgroups, folded into x and y.
// NORM (with ROPE; op kv_append_norm_rope): K is RMS-normed per head first, as rms_norm.comp over head_dim, then
// rotated and appended. One workgroup per (token, head) row with local_size_x = head_dim / 2 (the runtime sets it);
// the grid is n_tokens * n_kv_heads workgroups. Binding 6 w (f32[head_dim]); push adds eps, weight_offset.
#include "common.glsl"
#if defined(ROPE)
#include "rope.glsl"
#endif

layout(local_size_x = 128, local_size_x_id = 0) in;
#if defined(NORM)
#include "reduce.glsl"
#endif

// Scalar arrays: ranges need only the descriptor offset alignment, not 8-byte alignment.
layout(binding = 0) readonly buffer KSrc { float k_src[]; };
layout(binding = 1) readonly buffer VSrc { float v_src[]; };
#if defined(KV_F32)
layout(binding = 2) writeonly buffer KCache { float k_cache[]; };
layout(binding = 3) writeonly buffer VCache { float v_cache[]; };
#elif defined(KV_F16)
layout(binding = 2) writeonly buffer KCache { uint k_cache[]; };
layout(binding = 3) writeonly buffer VCache { uint v_cache[]; };
#else
#error "kv_append.comp: define one of KV_F32, KV_F16"
#endif
#if defined(ROPE)
layout(binding = 4) readonly buffer Pos { int pos[]; };
layout(binding = 5) readonly buffer Freqs { float freqs[]; };
#endif
#if defined(NORM)
layout(binding = 6) readonly buffer NormW { float nw[]; };
#endif

layout(push_constant) uniform Push {
  uint n_tokens;
  uint n_kv_heads;
  uint head_dim;
  uint capacity;
  uint p0;
  uint n_groups;
#if defined(ROPE)
  uint n_rot;
  uint mode;
  float theta_base;
  float freq_scale;
  float mscale;
  uint use_table;
#endif
#if defined(NORM)
  float eps;
  float weight_offset;
#endif
} pc;

#if defined(NORM)
float k_scale;  // the head's 1 / rms: set by main
// Dim d of K row `base` after the head's RMSNorm.
float k_in(uint base, uint d) { return (k_src[base + d] * k_scale) * (nw[d] + pc.weight_offset); }
#else
float k_in(uint base, uint d) { return k_src[base + d]; }
#endif

#if defined(ROPE)
// Dim d of K row `base` (token `token`) after the rotary embedding.
float roped_k(uint base, uint token, uint d) {
  if (d >= pc.n_rot) return k_in(base, d);
  const uint half_rot = pc.n_rot >> 1;
  const bool interleaved = pc.mode == 0u;
  const uint p = interleaved ? d >> 1 : (d < half_rot ? d : d - half_rot);  // the rotated pair
  const uint d0 = interleaved ? 2u * p : p;
  const uint d1 = interleaved ? 2u * p + 1u : p + half_rot;
  const float inv_freq = pc.use_table != 0u ? freqs[p] : rope_inv_freq(p, pc.n_rot, pc.theta_base);
  const vec2 cs = rope_cos_sin(pos[token], inv_freq, pc.use_table != 0u ? 1.0 : pc.freq_scale, pc.mscale);
  const vec2 r = rope_rotate(k_in(base, d0), k_in(base, d1), cs);
  return d == d0 ? r.x : r.y;
}
#endif

void main() {
  const uint pairs = pc.head_dim >> 1;
#if defined(NORM)
  if (folded_group_index() >= pc.n_tokens * pc.n_kv_heads) return;  // whole workgroups: the reduction stays uniform
#endif
  const uint id = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (id >= pc.n_tokens * pc.n_kv_heads * pairs) return;
  const uint w = id % pairs;
  const uint row = id / pairs;  // token * n_kv_heads + head
  const uint head = row % pc.n_kv_heads;
  const uint token = row / pc.n_kv_heads;
  const uint dst = (head * pc.capacity + pc.p0 + token) * pairs + w;  // pair index in the cache
#if defined(NORM)
  const float ka = k_src[row * pc.head_dim + 2u * w];
  const float kb = k_src[row * pc.head_dim + 2u * w + 1u];
  k_scale = 1.0 / sqrt(workgroup_sum(ka * ka + kb * kb) / float(pc.head_dim) + pc.eps);
#endif
#if defined(ROPE)
  const uint base = row * pc.head_dim;
  const vec2 k = vec2(roped_k(base, token, 2u * w), roped_k(base, token, 2u * w + 1u));
#else
  const vec2 k = vec2(k_src[2u * id], k_src[2u * id + 1u]);
#endif
  const vec2 v = vec2(v_src[2u * id], v_src[2u * id + 1u]);
#if defined(KV_F32)
  k_cache[2u * dst] = k.x;
  k_cache[2u * dst + 1u] = k.y;
  v_cache[2u * dst] = v.x;
  v_cache[2u * dst + 1u] = v.y;
#else
  k_cache[dst] = packHalf2x16(k);
  v_cache[dst] = packHalf2x16(v);
#endif
}
