#version 450
// KV cache append: writes the new K and V rows of one layer for positions p0 .. p0 + n_tokens - 1.
//   k_src, v_src: f32 [n_tokens, n_kv_heads, head_dim] (K after RoPE / K-norm, V as projected)
//   k_cache, v_cache: one layer's K or V, [n_kv_heads][capacity][head_dim] (runtime/kv_cache.h)
//     F32 (KV_F32): f32 elements.  F16 (KV_F16): uint32 words, each holding dims (2w, 2w + 1) as halves
//     (packHalf2x16: round to nearest even, subnormals kept, on lavapipe and NVIDIA H200; checked bit for
//     bit by KvAppendTest in kernels/attention_vk_test.cpp).
// One invocation per element pair (head_dim is even).
// Defines: one of KV_F32, KV_F16.
// Bindings: 0 k_src, 1 v_src, 2 k_cache, 3 v_cache.
// Push: n_tokens, n_kv_heads, head_dim, capacity, p0, n_groups.
// Spec: 0 local_size_x (128).
// Grid: ceil(n_tokens * n_kv_heads * head_dim / 2 / local_size_x) workgroups, folded into x and y.
#include "common.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;

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

layout(push_constant) uniform Push {
  uint n_tokens;
  uint n_kv_heads;
  uint head_dim;
  uint capacity;
  uint p0;
  uint n_groups;
} pc;

void main() {
  const uint pairs = pc.head_dim >> 1;
  const uint id = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (id >= pc.n_tokens * pc.n_kv_heads * pairs) return;
  const uint w = id % pairs;
  const uint row = id / pairs;  // token * n_kv_heads + head
  const uint head = row % pc.n_kv_heads;
  const uint token = row / pc.n_kv_heads;
  const uint dst = (head * pc.capacity + pc.p0 + token) * pairs + w;  // pair index in the cache
  const vec2 k = vec2(k_src[2u * id], k_src[2u * id + 1u]);
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
