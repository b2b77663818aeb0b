#version 450
// Block dequantization to f32: dst[e] = decode(src block e / B, element e % B), exact (same rounding as the
// CPU reference), so the GLSL block layout can be compared bit-for-bit with quant/blocks.h.
// Defines (one): D_Q4_K, D_Q6_K, D_Q8_0, D_F16.
// Bindings: 0 src (packed blocks; uint32 words for Q4_K, uint16 otherwise), 1 dst (f32[n_elems]).
// Push: n_elems, src_base (word index for Q4_K, uint16 index otherwise, of the first block).
// Spec: 0 = local_size_x (128).
// Grid: ceil(n_elems / local_size_x) workgroups folded into x and y (x <= 65535).
#extension GL_EXT_shader_16bit_storage : require
#include "common.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;

#if defined(D_Q4_K)
layout(binding = 0) readonly buffer Src32 { uint src32[]; };
#define Q4K_WORD(i) src32[i]
#include "q4_k.glsl"
#else
layout(binding = 0) readonly buffer Src16 { uint16_t src16[]; };
#define Q6K_HALF(i) uint(src16[i])
#define Q80_HALF(i) uint(src16[i])
#include "q6_k.glsl"
#include "q8_0.glsl"
#endif
layout(binding = 1) writeonly buffer Dst { float dst[]; };

layout(push_constant) uniform Push {
  uint n_elems;
  uint src_base;
} pc;

void main() {
  const uint e = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (e >= pc.n_elems) return;
#if defined(D_Q4_K)
  dst[e] = q4k_decode(pc.src_base + (e / Q4K_BLOCK_ELEMS) * Q4K_BLOCK_WORDS, e % Q4K_BLOCK_ELEMS);
#elif defined(D_Q6_K)
  dst[e] = q6k_decode(pc.src_base + (e / Q6K_BLOCK_ELEMS) * Q6K_BLOCK_HALFS, e % Q6K_BLOCK_ELEMS);
#elif defined(D_Q8_0)
  dst[e] = q80_decode(pc.src_base + (e / Q80_BLOCK_ELEMS) * Q80_BLOCK_HALFS, e % Q80_BLOCK_ELEMS);
#elif defined(D_F16)
  dst[e] = half_bits_to_float(uint(src16[pc.src_base + e]));
#else
#error "dequant.comp: define one of D_Q4_K, D_Q6_K, D_Q8_0, D_F16"
#endif
}
