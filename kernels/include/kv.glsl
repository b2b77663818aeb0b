// KV cache element access for one layer's K or V range, [n_kv_heads][capacity][head_dim] (runtime/kv_cache.h).
// KV_F32: f32 elements; KV_F16: uint32 words holding dims (2w, 2w + 1) as two halves (packHalf2x16).
// The including shader declares the K / V bindings as kc[] / vc[] (float for KV_F32, uint for KV_F16);
// `row` below is kv_head * capacity + position and `w` the pair index (0 .. head_dim / 2 - 1).
#ifndef RDRR_KV_GLSL
#define RDRR_KV_GLSL

#if defined(KV_F32)
vec2 k_pair(uint row, uint pairs, uint w) {
  const uint i = 2u * (row * pairs + w);
  return vec2(kc[i], kc[i + 1u]);
}
vec2 v_pair(uint row, uint pairs, uint w) {
  const uint i = 2u * (row * pairs + w);
  return vec2(vc[i], vc[i + 1u]);
}
#elif defined(KV_F16)
vec2 k_pair(uint row, uint pairs, uint w) { return unpackHalf2x16(kc[row * pairs + w]); }
vec2 v_pair(uint row, uint pairs, uint w) { return unpackHalf2x16(vc[row * pairs + w]); }
#else
#error "kv.glsl: define one of KV_F32, KV_F16"
#endif

#endif
