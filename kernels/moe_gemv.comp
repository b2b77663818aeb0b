#version 450
// Mixture-of-experts GEMV: gemv.comp's row path with expert indirection, over a stacked expert weight
// W [E * N, K] (expert e's rows are rows e*N .. e*N + N - 1 of one ordinary 2-D packed matrix). Only the rows
// of the experts named in `ids` are read (decode: T experts of E).
//
// Defines: exactly one of W_F32, W_F16, W_Q8_0, W_Q6_K, W_Q4_K, W_Q4_0, W_Q5_0, W_Q5_K; plus COMBINE.
//   gather (no COMBINE; gate / up / gate_up of the selected experts), for slot s = m*T + j:
//     y[s, n] = sum_i W[ids[s]*N + n, i] * x[m, i]
//     Bindings: 0 W (packed), 1 x (f32 [M, K]), 2 ids (uint32 [M*T]), 3 y (f32 [M*T, N]).
//   COMBINE (down_proj of the selected experts, weighted sum over them), per token m:
//     y[m, n] = sum_j weights[m*T + j] * (sum_i W[ids[m*T + j]*N + n, i] * x[m*T + j, i])
//     Bindings: 0 W, 1 x (f32 [M*T, K]), 2 ids (uint32 [M*T]), 3 weights (f32 [M*T]), 4 y (f32 [M, N]).
//     y is written, not accumulated; each invocation adds its weighted partials in j order, then one
//     workgroup reduction (fixed order: deterministic on a given device).
//   An id >= n_experts reads nothing: its gather row is 0, its combine term is left out.
// Weight layouts: flat / row_wise (F32, F16 plain row-major) as gemv.comp's row path; row r covers the
// virtual elements [r * row_stride, r * row_stride + K) of the block stream. Flat needs rows that start on a
// block boundary (K % block == 0, where flat and row_wise are the same bytes): see row_partial.
// Push: n_rows (N per expert), k, row_stride, w_base (binding index, f32 / uint16 / uint32 units, of the
//   weight's first block), n_experts, top_k (T), n_row_groups (ceil(N / NUM_ROWS)), n_groups (workgroups with
//   work: n_row_groups * M*T gather, n_row_groups * M COMBINE).
// Spec: 0 local_size_x (64), 1 NUM_ROWS (rows per workgroup, 1).
// Grid: n_row_groups * (M*T gather, M COMBINE) workgroups, row groups fastest, folded into x and y.
// The whole stacked weight is one binding (runtime/ops_moe.h: no binding split for MoE weights).
#extension GL_EXT_shader_16bit_storage : require
#include "common.glsl"

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(constant_id = 1) const uint NUM_ROWS = 1;

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
layout(binding = 2) readonly buffer Ids { uint ids[]; };
#if defined(COMBINE)
layout(binding = 3) readonly buffer Weights { float weights[]; };
layout(binding = 4) writeonly buffer Y { float y[]; };
#else
layout(binding = 3) writeonly buffer Y { float y[]; };
#endif

layout(push_constant) uniform Push {
  uint n_rows;        // N, outputs per expert
  uint k;             // K, inputs per row
  uint row_stride;    // virtual elements between row starts
  uint w_base;        // binding index of the weight's first block (element for F32 / F16)
  uint n_experts;     // E
  uint top_k;         // T
  uint n_row_groups;  // ceil(N / NUM_ROWS)
  uint n_groups;      // workgroups with work
} pm;

// What gemv_row_items.glsl reads as `pc` (its k and w_base), set per row by row_partial.
struct RowItemsView {
  uint k;
  uint w_base;
};
RowItemsView pc;

#include "gemv_row_items.glsl"

#if defined(ITEM_IS_ELEMENT)
#elif defined(W_Q4_K)
#define BLOCK_UNITS Q4K_BLOCK_WORDS
#elif defined(W_Q5_K)
#define BLOCK_UNITS Q5K_BLOCK_WORDS
#elif defined(W_Q6_K)
#define BLOCK_UNITS Q6K_BLOCK_HALFS
#elif defined(W_Q8_0)
#define BLOCK_UNITS Q80_BLOCK_HALFS
#elif defined(W_Q4_0)
#define BLOCK_UNITS Q40_BLOCK_HALFS
#elif defined(W_Q5_0)
#define BLOCK_UNITS Q50_BLOCK_HALFS
#endif

// Multi-row reduction scratch: one slot per (row, subgroup).
shared float row_scratch[NUM_ROWS * gl_WorkGroupSize.x];

// This invocation's partial dot product of weight row `row` (global row of the stacked matrix) with the x row
// that starts at x index xb.
//
// gemv_row_items.glsl's item_dot reads x at (virtual element - v0), i.e. x rows always start at x index 0.
// Here a row is seen as the tail of a longer virtual row: its K values preceded by xb virtual elements, so
// with v0' = v0 - xb the x index of element e is xb + (e - v0) and the mask bound pc.k is xb + K. Only the
// blocks of the real row are visited, so the xb leading elements are never read; to keep v0' from going below
// 0 the virtual element numbering is shifted by S = ceil(xb / block) whole blocks (block index b + S, w_base
// lowered by S blocks: the same weight words, 32-bit wrap-around included). The masks stay exact where the row
// starts on a block boundary (row_wise, F32 / F16, flat with K % block == 0): elements past the row (padding)
// are masked by the upper bound; a block starting before the row (flat, K % block != 0) would read the
// previous x row, which is why the runtime refuses that case.
float row_partial(uint row, uint xb) {
  float acc = 0.0;
  const uint v0 = row * pm.row_stride;
#if defined(ITEM_IS_ELEMENT)
  pc.k = pm.k;
  pc.w_base = pm.w_base;
  for (uint i = gl_LocalInvocationID.x; i < pm.k; i += gl_WorkGroupSize.x) acc += w_elem(v0 + i) * x[xb + i];
#else
  const uint shift = (xb + BLOCK_ELEMS - 1u) / BLOCK_ELEMS;
  pc.k = xb + pm.k;
  pc.w_base = pm.w_base - shift * BLOCK_UNITS;
  const uint v_end = v0 + pm.k;
  const uint first_block = v0 / BLOCK_ELEMS;
  const uint n_items = ((v_end - 1u) / BLOCK_ELEMS - first_block + 1u) * ITEMS_PER_BLOCK;
  const uint v0_view = v0 + shift * BLOCK_ELEMS - xb;
  for (uint it = gl_LocalInvocationID.x; it < n_items; it += gl_WorkGroupSize.x) {
    const uint b = first_block + it / ITEMS_PER_BLOCK;
    const uint b0 = b * BLOCK_ELEMS;
    const bool full = b0 >= v0 && b0 + BLOCK_ELEMS <= v_end;
    acc += item_dot(b + shift, it % ITEMS_PER_BLOCK, v0_view, full);
  }
#endif
  return acc;
}

void main() {
  const uint g = folded_group_index();
  if (g >= pm.n_groups) return;
  const uint rg = g % pm.n_row_groups;  // row group within the expert
  const uint slot = g / pm.n_row_groups;  // gather: m*T + j; COMBINE: m
  float acc[NUM_ROWS];
  for (uint r = 0u; r < NUM_ROWS; ++r) acc[r] = 0.0;
#if defined(COMBINE)
  for (uint j = 0u; j < pm.top_k; ++j) {
    const uint s = slot * pm.top_k + j;
    const uint e = ids[s];
    if (e >= pm.n_experts) continue;
    const float wt = weights[s];
    for (uint r = 0u; r < NUM_ROWS; ++r) {
      const uint n = rg * NUM_ROWS + r;
      if (n < pm.n_rows) acc[r] += wt * row_partial(e * pm.n_rows + n, s * pm.k);
    }
  }
#else
  const uint e = ids[slot];
  if (e < pm.n_experts) {
    const uint xb = (slot / pm.top_k) * pm.k;
    for (uint r = 0u; r < NUM_ROWS; ++r) {
      const uint n = rg * NUM_ROWS + r;
      if (n < pm.n_rows) acc[r] = row_partial(e * pm.n_rows + n, xb);
    }
  }
#endif
  // One reduction for all rows: subgroup sums, then invocation r adds row r's subgroup sums in order.
  for (uint r = 0u; r < NUM_ROWS; ++r) {
    const float s = subgroupAdd(acc[r]);
    if (subgroupElect()) row_scratch[r * gl_NumSubgroups + gl_SubgroupID] = s;
  }
  barrier();
  const uint r = gl_LocalInvocationID.x;
  const uint n = rg * NUM_ROWS + r;
  if (r < NUM_ROWS && n < pm.n_rows) {
    float total = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) total += row_scratch[r * gl_NumSubgroups + i];
    y[slot * pm.n_rows + n] = total;
  }
}
