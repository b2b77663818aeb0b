#version 450
// GEMV (decode matmul): y[n] = sum_k W[n, k] * x[k] for W [N rows = outputs, K = inputs], x and y f32.
// Weights stay packed: the kernel reads the blocks directly (layouts: see quant/dtype.h).
//
// Defines: exactly one of W_F32, W_F16, W_Q8_0, W_Q6_K, W_Q4_K, W_Q4_0, W_Q5_0, W_Q5_K; plus COLUMN_WISE (with
// W_Q4_K only).
//
// Row path (flat / row_wise; F32 and F16 are plain row-major): row n covers the virtual elements
// [n * row_stride, n * row_stride + K) of the block stream (row_stride = K for flat, ceil(K/B)*B for
// row_wise); elements outside a row (padding, neighbouring rows in flat blocks) are masked out. A workgroup
// computes NUM_ROWS rows; its invocations take consecutive work items of a row (gemv_row_items.glsl) so
// weight and x reads are contiguous across a subgroup, then all rows are reduced at once.
//   Bindings: 0 W (packed), 1 x (f32[K]), 2 y (f32; writes y[row_begin .. row_begin + n_rows)).
//   Spec: 0 local_size_x (64), 1 NUM_ROWS (rows per workgroup, 1).
//   Grid: ceil(n_rows / NUM_ROWS) workgroups, folded into x and y.
// Column path (Q4_K column_wise): block (k, b) at k * blocks_per_k + b holds outputs b*256 .. b*256+255 of
// input k. Thread (tx, ty) computes output g*local_size_x + tx over inputs ty, ty + local_size_y, ...
//   Bindings: 0 W, 1 x (f32; reads x[k_begin .. k_begin + k)), 2 y (f32[N]; read too when accumulate=1).
//   Spec: 0 local_size_x (32), 1 local_size_y (8; runtime/ops raises it to the device's invocation limit).
//   Grid: ceil(N / local_size_x) workgroups, folded into x and y.
// Reductions are subgroup-size agnostic (subgroupAdd, then one shared slot per subgroup).
#extension GL_EXT_shader_16bit_storage : require
#include "common.glsl"

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#if defined(COLUMN_WISE)
layout(local_size_x = 32, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
#include "reduce.glsl"
#else
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(constant_id = 1) const uint NUM_ROWS = 1;
#endif

#if defined(W_F32)
layout(binding = 0) readonly buffer Wf { float wf[]; };
#elif defined(W_Q4_K) || defined(W_Q5_K)
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
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };  // same binding, for aligned 4-value loads
layout(binding = 2) buffer Y { float y[]; };

#if defined(COLUMN_WISE)
layout(push_constant) uniform Push {
  uint n_out;         // N
  uint k;             // inputs in this dispatch
  uint k_begin;       // x index of the first input
  uint blocks_per_k;  // ceil(N / 256)
  uint w_base;        // word index of block (k_begin, 0)
  uint accumulate;    // 1: y += result (later ranges of a split binding)
  uint n_groups;      // workgroups with work
  uint pad0;
} pc;
#else
layout(push_constant) uniform Push {
  uint n_rows;       // rows in this dispatch
  uint k;            // inputs per row
  uint row_stride;   // virtual elements between row starts
  uint row_begin;    // global index of this dispatch's first row (y index)
  uint w_base;       // binding index (f32 / uint16 / uint32 units) of the range's first block
  uint block_begin;  // virtual block index at w_base (element index for F32 / F16)
  uint n_groups;     // workgroups with work
  uint pad0;
} pc;
#endif

#if defined(COLUMN_WISE)

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint n = g * gl_WorkGroupSize.x + tx;
  float acc = 0.0;
  if (n < pc.n_out) {
    const uint b = n >> 8;
    const uint e = n & 255u;
    const uint j = e >> 5;                        // sub-block
    const uint byte_index = 32u * (e >> 6) + (e & 31u);
    const uint q_word = 4u + (byte_index >> 2);
    const uint q_shift = 8u * (byte_index & 3u) + 4u * ((e >> 5) & 1u);
    for (uint kk = ty; kk < pc.k; kk += gl_WorkGroupSize.y) {
      const uint wb = pc.w_base + (kk * pc.blocks_per_k + b) * Q4K_BLOCK_WORDS;
      const vec2 dm = q4k_d_dmin(wb);
      const uvec2 sm = q4k_scale_min(wb, j);
      const float q = float((Q4K_WORD(wb + q_word) >> q_shift) & 15u);
      acc += x[pc.k_begin + kk] * (dm.x * float(sm.x) * q - dm.y * float(sm.y));
    }
  }
  rdrr_reduce_scratch[ty * gl_WorkGroupSize.x + tx] = acc;
  barrier();
  if (ty == 0u && n < pc.n_out) {
    float total = 0.0;
    for (uint i = 0u; i < gl_WorkGroupSize.y; ++i) total += rdrr_reduce_scratch[i * gl_WorkGroupSize.x + tx];
    y[n] = (pc.accumulate != 0u ? y[n] : 0.0) + total;
  }
}

#else  // row path

#include "gemv_row_items.glsl"

// Multi-row reduction scratch: one slot per (row, subgroup).
shared float row_scratch[NUM_ROWS * gl_WorkGroupSize.x];

// Partial dot product of this invocation for the row whose first element is at virtual index v0: the
// row's blocks are cut into ITEMS_PER_BLOCK work items; consecutive invocations take consecutive items,
// so the weight and x reads of a subgroup are contiguous.
float row_partial(uint v0) {
  float acc = 0.0;
#if defined(ITEM_IS_ELEMENT)
  for (uint i = gl_LocalInvocationID.x; i < pc.k; i += gl_WorkGroupSize.x) acc += w_elem(v0 + i) * x[i];
#else
  const uint v_end = v0 + pc.k;
  const uint first_block = v0 / BLOCK_ELEMS;
  const uint n_items = ((v_end - 1u) / BLOCK_ELEMS - first_block + 1u) * ITEMS_PER_BLOCK;
  for (uint it = gl_LocalInvocationID.x; it < n_items; it += gl_WorkGroupSize.x) {
    const uint b = first_block + it / ITEMS_PER_BLOCK;
    const uint b0 = b * BLOCK_ELEMS;
    const bool full = b0 >= v0 && b0 + BLOCK_ELEMS <= v_end;
    acc += item_dot(b, it % ITEMS_PER_BLOCK, v0, full);
  }
#endif
  return acc;
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;
  float acc[NUM_ROWS];
  for (uint r = 0u; r < NUM_ROWS; ++r) {
    const uint row = g * NUM_ROWS + r;  // local row within this dispatch
    acc[r] = row < pc.n_rows ? row_partial((pc.row_begin + row) * pc.row_stride - pc.block_begin * BLOCK_ELEMS) : 0.0;
  }
  // One reduction for all rows: subgroup sums, then invocation r adds row r's subgroup sums in order.
  for (uint r = 0u; r < NUM_ROWS; ++r) {
    const float s = subgroupAdd(acc[r]);
    if (subgroupElect()) row_scratch[r * gl_NumSubgroups + gl_SubgroupID] = s;
  }
  barrier();
  const uint r = gl_LocalInvocationID.x;
  if (r < NUM_ROWS && g * NUM_ROWS + r < pc.n_rows) {
    float total = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) total += row_scratch[r * gl_NumSubgroups + i];
    y[pc.row_begin + g * NUM_ROWS + r] = total;
  }
}

#endif
