#version 450
// Embedding gather: out[t, i] = decode(table[ids[t], i]) * scale, t < n_tokens, i < dim (Gemma passes
// scale = sqrt(hidden), others 1). The table [vocab rows, dim] stays packed (layouts: quant/dtype.h):
//   F32 / F16: plain row-major.
//   Q8_0 / Q6_K / Q4_K / Q4_0 / Q5_0 / Q5_K flat or row_wise: row r covers virtual elements [r * row_stride, r * row_stride + dim)
//     of the block stream (row_stride = dim for flat, ceil(dim / B) * B for row_wise).
//   Q4_K column_wise (COLUMN_WISE): element (r, i) is element r % 256 of block i * blocks_per_col + r / 256.
// A table larger than one binding is split into ranges (runtime/ops_embed.cpp); each dispatch covers rows
// [range_begin, range_end) (row path) or columns [range_begin, range_end) (column path) and leaves other
// outputs to the other dispatches. Ids >= vocab give zero rows (written by the dispatch whose range ends at
// vocab, row path; by every dispatch for its columns, column path). Decode is exact (as dequant.comp).
// Defines: one of E_F32, E_F16, E_Q8_0, E_Q6_K, E_Q4_K, E_Q4_0, E_Q5_0, E_Q5_K; plus COLUMN_WISE (with E_Q4_K
// only).
// Bindings: 0 table (packed; f32 / uint16 / uint32 words), 1 ids (uint32[n_tokens]), 2 out (f32[n_tokens * dim]).
// Push: n_tokens, dim, vocab, row_stride, range_begin, range_end, w_base (binding index of the range's first
//   block, in binding units), block_begin (virtual block index at w_base; row index * dim for F32 / F16),
//   blocks_per_col (column path), scale, n_groups, pad.
// Spec: 0 local_size_x (128).
// Grid: ceil(n_tokens * dim / local_size_x) workgroups, folded into x and y.
#extension GL_EXT_shader_16bit_storage : require
#include "common.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;

#if defined(E_F32)
layout(binding = 0) readonly buffer Wf { float wf[]; };
#elif defined(E_Q4_K) || defined(E_Q5_K)
layout(binding = 0) readonly buffer W32 { uint w32[]; };
#define Q4K_WORD(i) w32[i]
#include "q4_k.glsl"
#include "q5_k.glsl"
#else
layout(binding = 0) readonly buffer W16 { uint16_t w16[]; };
#define Q6K_HALF(i) uint(w16[i])
#define Q80_HALF(i) uint(w16[i])
#define Q40_HALF(i) uint(w16[i])
#include "q6_k.glsl"
#include "q8_0.glsl"
#include "q4_0.glsl"
#endif
layout(binding = 1) readonly buffer Ids { uint ids[]; };
layout(binding = 2) writeonly buffer Out { float outv[]; };

layout(push_constant) uniform Push {
  uint n_tokens;
  uint dim;
  uint vocab;
  uint row_stride;
  uint range_begin;
  uint range_end;
  uint w_base;
  uint block_begin;
  uint blocks_per_col;
  float scale;
  uint n_groups;
  uint pad0;
} pc;

#if defined(E_F32) || defined(E_F16)
#define BLOCK_ELEMS 1u
#elif defined(E_Q8_0) || defined(E_Q4_0) || defined(E_Q5_0)
#define BLOCK_ELEMS 32u
#else
#define BLOCK_ELEMS 256u
#endif

// Exact decode of element e of block b (b relative to w_base).
float decode(uint b, uint e) {
#if defined(E_F32)
  return wf[pc.w_base + b];
#elif defined(E_F16)
  return half_bits_to_float(uint(w16[pc.w_base + b]));
#elif defined(E_Q8_0)
  return q80_decode(pc.w_base + b * Q80_BLOCK_HALFS, e);
#elif defined(E_Q6_K)
  return q6k_decode(pc.w_base + b * Q6K_BLOCK_HALFS, e);
#elif defined(E_Q4_K)
  return q4k_decode(pc.w_base + b * Q4K_BLOCK_WORDS, e);
#elif defined(E_Q4_0)
  return q40_decode(pc.w_base + b * Q40_BLOCK_HALFS, e);
#elif defined(E_Q5_0)
  return q50_decode(pc.w_base + b * Q50_BLOCK_HALFS, e);
#elif defined(E_Q5_K)
  return q5k_decode(pc.w_base + b * Q5K_BLOCK_WORDS, e);
#else
#error "embed.comp: define one of E_F32, E_F16, E_Q8_0, E_Q6_K, E_Q4_K, E_Q4_0, E_Q5_0, E_Q5_K"
#endif
}

void main() {
  const uint idx = folded_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (idx >= pc.n_tokens * pc.dim) return;
  const uint t = idx / pc.dim;
  const uint i = idx - t * pc.dim;
  const uint id = ids[t];
#if defined(COLUMN_WISE)
  if (i < pc.range_begin || i >= pc.range_end) return;
  if (id >= pc.vocab) {
    outv[idx] = 0.0;
    return;
  }
  const uint b = (i - pc.range_begin) * pc.blocks_per_col + (id >> 8);
  outv[idx] = decode(b, id & 255u) * pc.scale;
#else
  if (id >= pc.vocab) {
    if (pc.range_end == pc.vocab) outv[idx] = 0.0;
    return;
  }
  if (id < pc.range_begin || id >= pc.range_end) return;
  const uint v = id * pc.row_stride + i - pc.block_begin * BLOCK_ELEMS;  // element relative to w_base
  outv[idx] = decode(v / BLOCK_ELEMS, v % BLOCK_ELEMS) * pc.scale;
#endif
}
