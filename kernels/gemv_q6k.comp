#version 450
// Q6_K GEMV (decode) on 32-bit words: y[n] = sum_k W[n, k] * x[k], W [N outputs, K inputs] packed Q6_K with
// every row starting on a block boundary (row_wise, and flat when K % 256 == 0), x and y f32. The vectorized
// sibling of gemv.comp's W_Q6_K path (16-bit loads, 16 per 8 values); graph steps pin it as gemv_q6_k_vec.
//
// A 210-byte block (q6_k.glsl) starts word aligned or 2 bytes past a word: segments are read as aligned
// words and funnel-shifted (word_loads.glsl). The d half, a block's last 2 bytes, is read through a 16-bit
// alias so that the binding's last word is never touched past its end.
//
// Item (block b, half h, l-half lh): the 64 values l = 16lh .. 16lh + 15 of quarters 0..3 of half h, from 3
// segments (ql[64h + 16lh ..], ql[64h + 32 + 16lh ..], qh[32h + 16lh ..]) and 4 scale bytes (one per quarter:
// a quarter's 16 values are exactly one scale group). Per 4 values: one word of 6-bit codes
// (ql nibbles | qh pairs << 4), each code to float with a bit trick (no int-to-float conversion). An
// invocation loads an item's words for NUM_ROWS rows and each x vector once for all of them.
//   Bindings: 0 W (uint words; 16-bit alias for d), 1 x (f32[K]), 2 y (f32; writes y[row_begin ..)).
//   Push: n_rows, k, row_stride (elements between row starts, a multiple of 256), row_begin, w_base (2-byte
//     index of the range's first block), block_begin (block index at w_base), n_groups, pad.
//   Spec: 0 local_size_x (64), 1 NUM_ROWS (2).
//   Grid: ceil(n_rows / NUM_ROWS) workgroups, folded into x and y.
// MOE (moe_gemv.comp's contract over a stacked expert weight [E * N, K], rows of whole blocks, K % 4 == 0): as
// gemv_q4k.comp ROWS MOE (gather, or COMBINE with the router weights: the items of the T experts one sequence
// over the workgroup), w_base a 2-byte index.
//   Bindings: 0 W, 1 x, 2 ids, 3 y (gather) or 3 weights, 4 y (COMBINE).
//   Push: n_rows (N per expert), k, row_stride, w_base, n_experts, top_k, n_row_groups, n_groups.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x = 64, local_size_x_id = 0) in;
layout(constant_id = 1) const uint NUM_ROWS = 2;

layout(binding = 0) readonly buffer W { uint w[]; };
layout(binding = 0) readonly buffer W16 { uint16_t w16[]; };  // same binding: the d halves
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };
#if defined(MOE)
layout(binding = 2) readonly buffer Ids { uint ids[]; };
#if defined(COMBINE)
layout(binding = 3) readonly buffer Weights { float weights[]; };
layout(binding = 4) writeonly buffer Y { float y[]; };
#else
layout(binding = 3) writeonly buffer Y { float y[]; };
#endif
layout(push_constant) uniform Push {
  uint n_rows;
  uint k;
  uint row_stride;
  uint w_base;
  uint n_experts;
  uint top_k;
  uint n_row_groups;
  uint n_groups;
} pc;
#else
layout(binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push {
  uint n_rows;
  uint k;
  uint row_stride;
  uint row_begin;
  uint w_base;
  uint block_begin;
  uint n_groups;
  uint pad0;
} pc;
#endif
#include "word_loads.glsl"

#define Q6V_BLOCK_HALFS 105u

shared float row_scratch[NUM_ROWS * gl_WorkGroupSize.x];

// 6-bit code at bit p (p <= 17, other bits of v free) minus 32 as a float: the float with mantissa bits
// = code and exponent 150 - p is 2^(23 - p) + code exactly.
float code_at(uint v, uint p) { return uintBitsToFloat((v & (63u << p)) | ((150u - p) << 23)) - float((1u << (23u - p)) + 32u); }

#if defined(COMBINE)
uint combine_token;  // m, and the first output row within the expert: set by main
uint combine_n0;
// Expert j of the token: false for an id >= E; else its rows' first block (2-byte index), x row start and router
// weight.
bool combine_slot(uint j, uint row_halfs, out uint hb, out uint xb, out float wt) {
  const uint s = combine_token * pc.top_k + j;
  const uint e = ids[s];
  hb = pc.w_base + (e * pc.n_rows + combine_n0) * row_halfs;
  xb = s * pc.k;
  wt = weights[s];
  return e < pc.n_experts;
}
#endif

// acc[r] += row r . x for the n_valid <= NUM_ROWS rows whose first blocks start at 2-byte index hb_first (row r
// blocks_per_row blocks further each), x from element xb_first (a multiple of 4). COMBINE: over the n_slots = T
// experts of the token (combine_slot; hb_first and xb_first unused), each item times its expert's router
// weight; the items of all T experts form one sequence spread over the workgroup.
void accumulate_rows(uint n_slots, uint blocks_per_row, uint n_valid, uint hb_first, uint xb_first,
                     inout float acc[NUM_ROWS]) {
  const uint n_items = ((pc.k + 255u) / 256u) * 4u;
  const uint n_flat = n_slots * n_items;
  const uint row_halfs = blocks_per_row * Q6V_BLOCK_HALFS;
  float sum[NUM_ROWS];
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) sum[r] = 0.0;
  for (uint f = gl_LocalInvocationID.x; f < n_flat; f += gl_WorkGroupSize.x) {
#if defined(COMBINE)
    const uint slot_j = f / n_items;
    const uint it = f - slot_j * n_items;
    uint hb_row = 0u;
    uint xb = 0u;
    float wt = 0.0;
    if (!combine_slot(slot_j, row_halfs, hb_row, xb, wt)) continue;
#else
    const uint it = f;
    const uint hb_row = hb_first;
    const uint xb = xb_first;
#endif
    const uint b = it >> 2;
    const uint h = (it >> 1) & 1u;
    const uint lh = it & 1u;
    uvec4 qla[NUM_ROWS];
    uvec4 qlb[NUM_ROWS];
    uvec4 qhv[NUM_ROWS];
    uvec2 scw[NUM_ROWS];
    float dv[NUM_ROWS];
    [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
      if (r < n_valid) {
        const uint hb = hb_row + r * row_halfs + b * Q6V_BLOCK_HALFS;
        qla[r] = segment16(hb + 32u * h + 8u * lh);
        qlb[r] = segment16(hb + 32u * h + 16u + 8u * lh);
        qhv[r] = segment16(hb + 64u + 16u * h + 8u * lh);
        scw[r] = segment8(hb + 96u + 4u * h);
        dv[r] = half_bits_to_float(uint(w16[hb + 104u]));
      }
    }
    // x index of value (quarter qtr, l) of this item: 256b + 128h + 32qtr + l (past k: zero).
    const uint e0 = 256u * b + 128u * h + 16u * lh;
    const bool full = 256u * b + 256u <= pc.k;
    float part[NUM_ROWS];
    [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) part[r] = 0.0;
    [[unroll]] for (uint qtr = 0u; qtr < 4u; ++qtr) {
      vec4 xv[4];
      [[unroll]] for (uint m = 0u; m < 4u; ++m) {
        const uint e = e0 + 32u * qtr + 4u * m;
        xv[m] = full || e < pc.k ? x4[(xb + e) >> 2] : vec4(0.0);  // k % 4 == 0 (runtime): 4 values in or out together
      }
      [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
        if (r < n_valid) {
          float s = 0.0;
          [[unroll]] for (uint m = 0u; m < 4u; ++m) {
            const uint lw = (qtr & 1u) == 0u ? qla[r][m] : qlb[r][m];
            const uint lo = (qtr >= 2u ? lw >> 4 : lw) & 0x0f0f0f0fu;
            const uint code = lo | (((qhv[r][m] >> (2u * qtr)) & 0x03030303u) << 4);  // 4 codes, one per byte
            const vec4 q = vec4(code_at(code, 0u), code_at(code, 8u), code_at(code, 16u), code_at(code >> 8, 16u));
            s += dot(q, xv[m]);
          }
          // Scale byte of group 8h + 2qtr + lh: byte 2qtr + lh of the 8 bytes at 192 + 8h.
          const uint sb = (qtr < 2u ? scw[r].x : scw[r].y) >> (8u * (2u * (qtr & 1u) + lh));
          part[r] += float(bitfieldExtract(int(sb), 0, 8)) * s;
        }
      }
    }
    [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
      if (r < n_valid) {
#if defined(COMBINE)
        sum[r] += wt * (dv[r] * part[r]);
#else
        sum[r] += dv[r] * part[r];
#endif
      }
    }
  }
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) acc[r] += sum[r];
}

// One reduction for all rows (subgroup sums, then the subgroups' sums in order); writes y[y_first + r].
void store_rows(float acc[NUM_ROWS], uint n_valid, uint y_first) {
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
    const float s = subgroupAdd(acc[r]);
    if (subgroupElect()) row_scratch[r * gl_NumSubgroups + gl_SubgroupID] = s;
  }
  barrier();
  const uint r = gl_LocalInvocationID.x;
  if (r < n_valid) {
    float total = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) total += row_scratch[r * gl_NumSubgroups + i];
    y[y_first + r] = total;
  }
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;
  const uint blocks_per_row = pc.row_stride / 256u;
  float acc[NUM_ROWS];
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) acc[r] = 0.0;
#if defined(MOE)
  // Decode (M = 1) runs row groups fastest; a pass of several tokens runs slots fastest, so the workgroups in
  // flight share one row group of every expert and each expert's rows come from memory once for all its tokens.
  const uint n_slots = pc.n_groups / pc.n_row_groups;  // gather: M*T; COMBINE: M
#if defined(COMBINE)
  const bool slots_fastest = n_slots > 1u;
#else
  const bool slots_fastest = n_slots > pc.top_k;
#endif
  const uint n0 = (slots_fastest ? g / n_slots : g % pc.n_row_groups) * NUM_ROWS;  // first output row of the expert
  const uint slot = slots_fastest ? g % n_slots : g / pc.n_row_groups;            // gather: m*T + j; COMBINE: m
  const uint n_valid = min(NUM_ROWS, pc.n_rows - n0);
#if defined(COMBINE)
  combine_token = slot;
  combine_n0 = n0;
  accumulate_rows(pc.top_k, blocks_per_row, n_valid, 0u, 0u, acc);
#else
  const uint e = ids[slot];
  if (e < pc.n_experts) {
    accumulate_rows(1u, blocks_per_row, n_valid, pc.w_base + (e * pc.n_rows + n0) * blocks_per_row * Q6V_BLOCK_HALFS,
                    (slot / pc.top_k) * pc.k, acc);
  }
#endif
  store_rows(acc, n_valid, slot * pc.n_rows + n0);
#else
  const uint row0 = g * NUM_ROWS;
  const uint n_valid = min(NUM_ROWS, pc.n_rows - row0);
  accumulate_rows(1u, blocks_per_row, n_valid,
                  pc.w_base + ((pc.row_begin + row0) * blocks_per_row - pc.block_begin) * Q6V_BLOCK_HALFS, 0u, acc);
  store_rows(acc, n_valid, pc.row_begin + row0);
#endif
}
