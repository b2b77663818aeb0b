#version 450
// Q4_K GEMV (decode) on 16-byte vectors: y[n] = sum_k W[n, k] * x[k], W [N outputs, K inputs] packed Q4_K,
// x and y f32. Blocks are read as uvec4 (q4_k_vec.glsl), so every block of the binding must start 16-byte
// aligned (runtime/ops_gemv.cpp falls back to gemv.comp otherwise). Exactly one of:
//
// ROWS (row_wise, and flat when K % 256 == 0): every row starts on a block boundary, so item j of block b
// (16 qs bytes = 32 values) needs the same 32 x values in every row. An invocation loads those x values once
// per item and applies them to NUM_ROWS rows (NUM_ROWS header + qs vectors in flight); values past K (row
// padding) meet x = 0. Then one subgroup-agnostic reduction for all rows (subgroupAdd, one shared slot per
// subgroup, summed in order).
//   Bindings: 0 W (uvec4), 1 x (f32[K]), 2 y (f32; writes y[row_begin .. row_begin + n_rows)).
//   Push: n_rows, k, row_stride (elements between row starts, a multiple of 256), row_begin, w_base (uvec4
//     index of the range's first block), block_begin (block index at w_base), n_groups, pad.
//   Spec: 0 local_size_x (64), 1 NUM_ROWS (4), 2 DIAG (0), 3 UNROLL (1).
//   Grid: ceil(n_rows / NUM_ROWS) workgroups, folded into x and y.
// ROWS MOE (moe_gemv.comp's contract over a stacked expert weight [E * N, K], row_wise or flat with K % 256
// == 0, K % 4 == 0): rows e*N + n of the experts named in ids, x row of slot s at element s * K (or (s / T) * K).
//   gather (no COMBINE): y[s, n] = W[ids[s]*N + n, :] . x[s / T, :]; an id >= E gives 0.
//     Bindings: 0 W (uvec4), 1 x (f32 [M, K]), 2 ids (uint32 [M*T]), 3 y (f32 [M*T, N]).
//   COMBINE: y[m, n] = sum_j weights[m*T + j] * (W[ids[m*T + j]*N + n, :] . x[m*T + j, :]), ids >= E left out;
//     the items of the T experts are one sequence spread over the workgroup, each term weighted as it is added
//     (a fixed order: deterministic on a given device). Bindings: 0 W, 1 x (f32 [M*T, K]), 2 ids, 3 weights
//     (f32 [M*T]), 4 y (f32 [M, N]).
//   Push: n_rows (N per expert), k, row_stride, w_base (uvec4 index of the stacked weight's first block),
//     n_experts, top_k, n_row_groups (ceil(N / NUM_ROWS)), n_groups (n_row_groups * (M*T gather, M COMBINE)).
//   Spec as ROWS; grid: n_groups workgroups folded into x and y, row groups fastest when M = 1, else slots
//   fastest (the workgroups in flight then share each expert's rows).
// ROWS MOE ROUTE_GLU (gather with the router's top-k and the gated activation, in place of moe_route, the gather
// and glu_split): every subgroup picks its token's experts from the router logits (moe_topk.glsl, moe_route.comp's
// selection), each workgroup computes NUM_ROWS / 2 gate rows and the matching up rows of the expert of its slot
// (per expert N = 2 Fe rows: gate rows, then up rows) and writes act[s, n] = act(gate) * up for n in Fe; the
// workgroups of row group 0 also write ids[s] and weights[s] (for the COMBINE that follows).
//     Bindings: 0 W (uvec4), 1 x (f32 [M, K]), 2 router (f32 [M, E]), 3 ids (uint32 [M*T], written), 4 weights
//     (f32 [M*T], written), 5 act (f32 [M*T, Fe]).
//   Push: as MOE (n_rows = 2 Fe, n_row_groups = ceil(Fe / (NUM_ROWS / 2)), n_groups = n_row_groups * M * T), then
//     normalize (renormalize the top-k weights), pad x3.
//   Spec as ROWS (NUM_ROWS even), then 4 ACT (0 SiLU, 1 GELU-tanh); local_size_x a multiple of the subgroup size
//   and E <= 32 * subgroup size (the runtime's checks). Grid as MOE gather.
//
// Q5K (with ROWS, ROWS MOE, ROWS MOE COMBINE): the same paths over Q5_K blocks (q5_k_vec.glsl: 11 vectors per
// block, an item's fifth bits from one qh vector), exact 5-bit values (no decode offsets).
//
// COLUMN_SPLIT (column_wise): block (k, b) at k * blocks_per_k + b holds outputs b*256 .. b*256+255 of input
// k, so the blocks of a range of inputs are contiguous memory. The inputs are cut into splits of k_chunk;
// workgroup (item group ig, split s) streams the blocks of its split: invocation (tx, ty) owns item
// ig * local_size_x + tx (32 outputs) and accumulates inputs k = ty, ty + local_size_y, ... of the split
// (UNROLL inputs' vectors decoded while the next UNROLL inputs' vectors are in flight). The local_size_y
// partial sums of each output are then added: slices that share a subgroup with shuffles (a butterfly: every
// lane ends with the same sum), then the subgroups' sums in subgroup order through shared memory.
// Modes: 1 (one split) writes y; 0 writes partials[split_begin + s][n] for gemv_reduce.comp (several binding
// ranges, or more item groups than tickets); 2 writes the partials, then the last workgroup of each item group
// to finish adds the n_splits partials of its outputs in split order and writes y: one dispatch, deterministic. "Last" is counted on a ticket per item group (one
// atomicAdd per workgroup). Tickets are zero at rest: the last arrival stores zero again, and the runtime
// zeroes them (gemv_reduce with no splits) before a scratch's first use in a command buffer. A workgroup that
// finds the ticket at n_splits or more (not at rest: something else wrote the scratch) writes NaN to its
// outputs instead of a wrong sum; a stray value below n_splits cannot be told from a real count.
//   Bindings: 0 W (uvec4), 1 x (f32; reads x[k_begin .. k_begin + k)), 2 scratch (coherent; uint tickets at
//     counter_base, f32 partials [splits][n_out] from part_base), 3 y (f32[n_out]).
//   Push: n_out, k (inputs in this dispatch), k_begin, blocks_per_k (ceil(N / 256)), w_base (uvec4 index of
//     block (k_begin, 0)), k_chunk (inputs per split), split_begin, n_item_groups, n_groups, mode, n_splits,
//     counter_base, part_base, pad x3.
//   Spec: 0 local_size_x (8 items), 1 local_size_y (32 input slices), 2 DIAG (0), 3 UNROLL (4).
//   Grid: n_item_groups * ceil(k / k_chunk) workgroups, folded into x and y.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#if defined(COLUMN_SPLIT)
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "common.glsl"
#include "q4_k_vec.glsl"
#if defined(ROUTE_GLU)
#include "act.glsl"
#endif
#if defined(Q5K)
#include "q5_k_vec.glsl"
#define BLOCK_VECS Q5V_BLOCK_VECS
#define QS_VEC Q5V_QS_VEC
#else
#define BLOCK_VECS Q4V_BLOCK_VECS
#define QS_VEC 1u
#endif

#if defined(COLUMN_SPLIT)
layout(local_size_x = 8, local_size_y = 32, local_size_x_id = 0, local_size_y_id = 1) in;
#elif defined(ROWS)
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(constant_id = 1) const uint NUM_ROWS = 4;
#else
#error "gemv_q4k.comp: define ROWS or COLUMN_SPLIT"
#endif
// Diagnostics for bench_kernels only (wrong results), bit flags: 1 = x never read from memory (rows path),
// 2 = weights read but not decoded (rows 3 = both: the weight stream alone), 16 = column split: no epilogue
// (no slice sums, partials or merge; column 18 = the stream alone). 0 in every real use.
layout(constant_id = 2) const uint DIAG = 0;
#if defined(ROWS)
layout(constant_id = 3) const uint UNROLL = 1;  // items per iteration, all their weights loaded first
#if defined(ROUTE_GLU)
layout(constant_id = 4) const uint ACT = 0;
#endif
#else
layout(constant_id = 3) const uint UNROLL = 4;  // inputs per slice and iteration (and as many more in flight)
#endif

layout(binding = 0) readonly buffer W { uvec4 wv[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };  // same binding, for aligned 4-value loads
#if defined(ROWS) && defined(MOE)
#if !defined(ROUTE_GLU)
layout(binding = 2) readonly buffer Ids { uint ids[]; };
#endif
#if defined(COMBINE)
layout(binding = 3) readonly buffer Weights { float weights[]; };
layout(binding = 4) writeonly buffer Y { float y[]; };
#elif defined(ROUTE_GLU)
layout(binding = 2) readonly buffer Router { float router[]; };
layout(binding = 3) writeonly buffer Ids { uint ids[]; };
layout(binding = 4) writeonly buffer Weights { float weights[]; };
layout(binding = 5) writeonly buffer Y { float y[]; };
#else
layout(binding = 3) writeonly buffer Y { float y[]; };
#endif
#elif defined(ROWS)
layout(binding = 2) writeonly buffer Y { float y[]; };
#else
layout(binding = 2) coherent buffer Part { float part[]; };  // partials [splits][n_out], then tickets
layout(binding = 2) coherent buffer Cnt { uint cnt[]; };     // same binding
layout(binding = 3) writeonly buffer Y { float y[]; };
#endif

#if defined(ROWS)

#if defined(MOE)
layout(push_constant) uniform Push {
  uint n_rows;
  uint k;
  uint row_stride;
  uint w_base;
  uint n_experts;
  uint top_k;
  uint n_row_groups;
  uint n_groups;
#if defined(ROUTE_GLU)
  uint normalize;
  uint pad0;
  uint pad1;
  uint pad2;
#endif
} pc;
#else
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

shared float row_scratch[NUM_ROWS * gl_WorkGroupSize.x];

#if defined(ROUTE_GLU)
uint glu_token;  // the token whose router row moe_topk reads: set by main
float moe_router_logit(uint i) { return router[glu_token * pc.n_experts + i]; }
#include "moe_topk.glsl"
uint glu_up_rows;  // rows from a gate row to its up row (Fe): set by main
#endif

// Accumulator r's row, relative to the first row: r; with ROUTE_GLU, gate rows 0 .. NUM_ROWS / 2 and then their up
// rows.
uint row_offset(uint r) {
#if defined(ROUTE_GLU)
  return r < NUM_ROWS / 2u ? r : glu_up_rows + r - NUM_ROWS / 2u;
#else
  return r;
#endif
}
// Whether accumulator r holds one of the n_valid rows (with ROUTE_GLU, n_valid gate / up row pairs).
bool row_live(uint r, uint n_valid) {
#if defined(ROUTE_GLU)
  return r % (NUM_ROWS / 2u) < n_valid;
#else
  return r < n_valid;
#endif
}

// x values of item j of block b of the x row at element xb (a multiple of 4): xl = values 64c + 16h + (0..15),
// xh = those + 32; zero past k.
void load_x(uint b, uint j, uint xb, out vec4 xl[4], out vec4 xh[4]) {
  const uint e0 = b * 256u + 64u * (j >> 1) + 16u * (j & 1u);
  if (b * 256u + 256u <= pc.k) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      xl[i] = x4[((xb + e0) >> 2) + i];
      xh[i] = x4[((xb + e0 + 32u) >> 2) + i];
    }
  } else {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      [[unroll]] for (uint t = 0u; t < 4u; ++t) {
        const uint e = e0 + 4u * i + t;
        xl[i][t] = e < pc.k ? x[xb + e] : 0.0;
        xh[i][t] = e + 32u < pc.k ? x[xb + e + 32u] : 0.0;
      }
    }
  }
}

#if defined(COMBINE)
uint combine_token;  // m, and the first output row within the expert: set by main
uint combine_n0;
// Expert j of the token: false for an id >= E; else its rows' first block (uvec4 index), x row start and router
// weight.
bool combine_slot(uint j, uint row_vecs, out uint blk, out uint xb, out float wt) {
  const uint s = combine_token * pc.top_k + j;
  const uint e = ids[s];
  blk = pc.w_base + (e * pc.n_rows + combine_n0) * row_vecs;
  xb = s * pc.k;
  wt = weights[s];
  return e < pc.n_experts;
}
#endif

// acc[r] += row r . x for the n_valid <= NUM_ROWS rows whose first blocks start at uvec4 index blk_first (row r
// blocks_per_row blocks further each), x from element xb_first. COMBINE: over the n_slots = T experts of the token
// (combine_slot; blk_first and xb_first unused), each item times its expert's router weight; the items of all T
// experts form one sequence spread over the workgroup, so rows of few items still keep every invocation busy.
void accumulate_rows(uint n_slots, uint blocks_per_row, uint n_valid, uint blk_first, uint xb_first,
                     inout float acc[NUM_ROWS]) {
  const uint n_items = ((pc.k + 255u) / 256u) * 8u;
  const uint n_flat = n_slots * n_items;
  const uint row_vecs = blocks_per_row * BLOCK_VECS;
  float part[NUM_ROWS];
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) part[r] = 0.0;
  const vec4 ones = vec4(1.0);
  // UNROLL items per iteration: every weight vector of all of them is loaded before any is decoded.
  for (uint it0 = gl_LocalInvocationID.x; it0 < n_flat; it0 += UNROLL * gl_WorkGroupSize.x) {
    uvec4 hdr[UNROLL * NUM_ROWS];
    uvec4 qv[UNROLL * NUM_ROWS];
#if defined(Q5K)
    uvec4 qhv[UNROLL * NUM_ROWS];  // the item's qh vector (fifth bits)
#endif
    uint items[UNROLL];
    uint xbs[UNROLL];
    float wts[UNROLL];
    bool oks[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const uint f = it0 + u * gl_WorkGroupSize.x;
#if defined(COMBINE)
      const uint slot_j = f / n_items;
      items[u] = f - slot_j * n_items;
      uint blk = 0u;
      oks[u] = f < n_flat && combine_slot(slot_j, row_vecs, blk, xbs[u], wts[u]);
#else
      items[u] = f;
      const uint blk = blk_first;
      xbs[u] = xb_first;
      wts[u] = 1.0;
      oks[u] = f < n_flat;
#endif
      [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
        if (oks[u] && row_live(r, n_valid)) {
          const uint bi = blk + row_offset(r) * row_vecs + (items[u] >> 3) * BLOCK_VECS;
          hdr[u * NUM_ROWS + r] = wv[bi];
          qv[u * NUM_ROWS + r] = wv[bi + QS_VEC + (items[u] & 7u)];
#if defined(Q5K)
          qhv[u * NUM_ROWS + r] = wv[bi + Q5V_QH_VEC + (items[u] & 1u)];
#endif
        }
      }
    }
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      if (!oks[u]) continue;
      const uint it = items[u];
      const uint b = it >> 3;
      const uint j = it & 7u;
      vec4 xl[4];
      vec4 xh[4];
      if ((DIAG & 1u) != 0u) {
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
          xl[i] = vec4(float(it + i));
          xh[i] = vec4(float(it - i));
        }
      } else {
        load_x(b, j, xbs[u], xl, xh);
      }
      const vec4 xsum_lo = xl[0] + xl[1] + xl[2] + xl[3];
      const vec4 xsum_hi = xh[0] + xh[1] + xh[2] + xh[3];
      const float sum_lo = dot(xsum_lo, ones);
      const float sum_hi = dot(xsum_hi, ones);
#if !defined(Q5K)
      const float off_lo = dot(xsum_lo, Q4V_OFF_LO);  // the decode's offsets (q4v_word_mixed) times x
      const float off_hi = dot(xsum_hi, Q4V_OFF_HI);
#endif
      [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
        if (row_live(r, n_valid)) {
          const uvec4 h = hdr[u * NUM_ROWS + r];
          const uvec4 q = qv[u * NUM_ROWS + r];
          float dot_lo = 0.0;
          float dot_hi = 0.0;
          if ((DIAG & 2u) != 0u) {
            dot_lo = uintBitsToFloat(((q.x ^ q.y ^ q.z ^ q.w) & 0x007fffffu) | 0x3f800000u) * xl[0].x;
          } else {
#if defined(Q5K)
            const uvec4 qh = qhv[u * NUM_ROWS + r];
            [[unroll]] for (uint m = 0u; m < 4u; ++m) {
              vec4 lo;
              vec4 hi;
              q5v_word(q[m], qh[m], 2u * (j >> 1), lo, hi);
              [[unroll]] for (uint t = 0u; t < 4u; ++t) {
                dot_lo = fma(lo[t], xl[m][t], dot_lo);
                dot_hi = fma(hi[t], xh[m][t], dot_hi);
              }
            }
#else
            [[unroll]] for (uint m = 0u; m < 4u; ++m) {
              vec4 lo;
              vec4 hi;
              q4v_word_mixed(q[m], lo, hi);
              [[unroll]] for (uint t = 0u; t < 4u; ++t) {
                dot_lo = fma(lo[t], xl[m][t], dot_lo);
                dot_hi = fma(hi[t], xh[m][t], dot_hi);
              }
            }
            dot_lo -= off_lo;
            dot_hi -= off_hi;
#endif
          }
          const vec2 dm = unpackHalf2x16(h.x);
          const vec4 s = q4v_scales(h, j >> 1);
          const float v = dm.x * (s.x * dot_lo + s.y * dot_hi) - dm.y * (s.z * sum_lo + s.w * sum_hi);
#if defined(COMBINE)
          part[r] += wts[u] * v;
#else
          part[r] += v;
#endif
        }
      }
    }
  }
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) acc[r] += part[r];
}

// One reduction for all rows: subgroup sums, then invocation r adds row r's subgroup sums in order and writes
// y[y_first + r].
// ROUTE_GLU: y[y_first + r] = act(row r) * row (r + NUM_ROWS / 2) for the n_valid pairs.
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
#if defined(ROUTE_GLU)
    float up = 0.0;
    const uint ru = r + NUM_ROWS / 2u;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) up += row_scratch[ru * gl_NumSubgroups + i];
    y[y_first + r] = gated_act(ACT, total) * up;
#else
    y[y_first + r] = total;
#endif
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
  const uint slot = slots_fastest ? g % n_slots : g / pc.n_row_groups;  // gather: m*T + j; COMBINE: m
#if defined(ROUTE_GLU)
  // Rows come in gate / up pairs: a row group covers NUM_ROWS / 2 gate rows of the expert and their up rows.
  const uint group_rows = NUM_ROWS / 2u;
  const uint out_rows = pc.n_rows / 2u;
#else
  const uint group_rows = NUM_ROWS;
  const uint out_rows = pc.n_rows;
#endif
  const uint n0 = (slots_fastest ? g / n_slots : g % pc.n_row_groups) * group_rows;  // first output row of the expert
  const uint n_valid = min(group_rows, out_rows - n0);
#if defined(COMBINE)
  combine_token = slot;
  combine_n0 = n0;
  accumulate_rows(pc.top_k, blocks_per_row, n_valid, 0u, 0u, acc);
  store_rows(acc, n_valid, slot * pc.n_rows + n0);
#elif defined(ROUTE_GLU)
  glu_token = slot / pc.top_k;
  glu_up_rows = out_rows;
  uint e;
  float wt;
  moe_topk_rank(pc.n_experts, pc.top_k, pc.normalize != 0u, slot % pc.top_k, e, wt);
  if (n0 == 0u && gl_LocalInvocationID.x == 0u) {
    ids[slot] = e;
    weights[slot] = wt;
  }
  accumulate_rows(1u, blocks_per_row, n_valid, pc.w_base + (e * pc.n_rows + n0) * blocks_per_row * BLOCK_VECS,
                  glu_token * pc.k, acc);
  store_rows(acc, n_valid, slot * out_rows + n0);
#else
  const uint e = ids[slot];
  if (e < pc.n_experts) {
    accumulate_rows(1u, blocks_per_row, n_valid, pc.w_base + (e * pc.n_rows + n0) * blocks_per_row * BLOCK_VECS,
                    (slot / pc.top_k) * pc.k, acc);
  }
  store_rows(acc, n_valid, slot * out_rows + n0);
#endif
#else
  const uint row0 = g * NUM_ROWS;
  const uint n_valid = min(NUM_ROWS, pc.n_rows - row0);
  accumulate_rows(1u, blocks_per_row, n_valid,
                  pc.w_base + ((pc.row_begin + row0) * blocks_per_row - pc.block_begin) * BLOCK_VECS, 0u, acc);
  store_rows(acc, n_valid, pc.row_begin + row0);
#endif
}

#else  // COLUMN_SPLIT

layout(push_constant) uniform Push {
  uint n_out;
  uint k;
  uint k_begin;
  uint blocks_per_k;
  uint w_base;
  uint k_chunk;
  uint split_begin;
  uint n_item_groups;
  uint n_groups;
  uint mode;          // 0 partials only, 1 y directly (one split), 2 partials + last-workgroup merge
  uint n_splits;      // mode 2: splits of every item group (all in this dispatch)
  uint counter_base;  // mode 2: uint index of the item-group tickets in the scratch binding
  uint part_base;     // float index of partials[0][0] in the scratch binding
  uint pad0;
  uint pad1;
  uint pad2;
} pc;

shared uint col_ticket;

#define MERGE_INFLIGHT 32u  // runtime/ops_gemv.cpp kMaxMergeSplits
// Shared floats for the sum over slice groups: (slice groups x items) rows of VP + 1 values (padded against
// bank conflicts), VP values per invocation per pass (all 32 in one pass with 32-wide subgroups).
#define RED_FLOATS 2176u
shared float col_red[RED_FLOATS];

// Output index of value v (0..31) of item it: values 64c + 16h + i (v = i < 16) and + 32 (v >= 16).
uint col_output(uint it, uint v) {
  const uint j = it & 7u;
  return (it >> 3) * 256u + 64u * (j >> 1) + 16u * (j & 1u) + (v < 16u ? v : v + 16u);
}

// Input kk's header and item-j vector of block column b, and x[kk]. Past the split (kk >= k_hi, the prefetch
// after the last iteration) the loads read the split's last input again and xs is 0, so its terms are 0:
// unconditional loads need fewer instructions than predicated ones with zero fills (H100, bench_kernels,
// 4096x14336 independent calls: 14.7 -> 14.3 us together with q4v_word_mant; alone no change).
void col_load(uint kk, uint k_hi, uint b, uint j, out uvec4 hdr, out uvec4 qv, out float xs) {
  const uint kc = min(kk, k_hi - 1u);
  const uint bi = pc.w_base + (kc * pc.blocks_per_k + b) * Q4V_BLOCK_VECS;
  hdr = wv[bi];
  qv = wv[bi + 1u + j];
  const float xv = x[pc.k_begin + kc];
  xs = kk < k_hi ? xv : 0.0;
}

// Adds one input's contribution (header hdr, item-j vector qv, x value xs) to the 32 sums of item j, the nibbles
// decoded with q4v_word_mant (their offsets come out after the loop through sums.zw).
void col_accum(uvec4 hdr, uvec4 qv, float xs, uint j, inout float acc[32], inout vec4 sums) {
  const vec2 dm = unpackHalf2x16(hdr.x) * xs;
  const vec4 sc = q4v_scales(hdr, j >> 1);
  const float a_lo = dm.x * sc.x;
  const float a_hi = dm.x * sc.y;
  sums += vec4(dm.y * sc.z, dm.y * sc.w, a_lo, a_hi);
  if ((DIAG & 2u) != 0u) {
    [[unroll]] for (uint m = 0u; m < 4u; ++m) acc[m] += a_lo * uintBitsToFloat((qv[m] & 0x007fffffu) | 0x3f800000u);
    return;
  }
  [[unroll]] for (uint m = 0u; m < 4u; ++m) {
    vec4 lo;
    vec4 hi;
    q4v_word_mant(qv[m], lo, hi);
    [[unroll]] for (uint t = 0u; t < 4u; ++t) {
      acc[4u * m + t] += a_lo * lo[t];
      acc[16u + 4u * m + t] += a_hi * hi[t];
    }
  }
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // uniform per workgroup
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint items = gl_WorkGroupSize.x;
  const uint slices = gl_WorkGroupSize.y;
  const uint ig = g % pc.n_item_groups;
  const uint s = g / pc.n_item_groups;
  const uint item = ig * items + tx;
  const uint n_items = pc.blocks_per_k * 8u;
  const bool valid = item < n_items;
  const uint b = item >> 3;
  const uint j = item & 7u;
  const uint k_lo = s * pc.k_chunk;
  const uint k_hi = min(pc.k, k_lo + pc.k_chunk);

  float acc[32];  // outputs 64c + 16h + i (i < 16) and 64c + 32 + 16h + (i - 16) of block b
  [[unroll]] for (uint i = 0u; i < 32u; ++i) acc[i] = 0.0;
  vec4 sums = vec4(0.0);  // (sums of the min terms lo / hi, sums of a_lo / a_hi for the decode offsets)
  if (valid) {
    // Software-pipelined: the next UNROLL inputs' vectors are requested before the current ones are decoded,
    // so a slice's decode overlaps its next memory round trip (H100, bench_kernels, serialized calls:
    // 4096x14336 27.5 -> 25.1 us, 14336x4096 27.1 -> 24.9 us, together with the mixed decode).
    const uint step = UNROLL * slices;
    uvec4 hdr[UNROLL];
    uvec4 qv[UNROLL];
    float xs[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) col_load(k_lo + ty + u * slices, k_hi, b, j, hdr[u], qv[u], xs[u]);
    for (uint k0 = k_lo + ty; k0 < k_hi; k0 += step) {
      uvec4 nhdr[UNROLL];
      uvec4 nqv[UNROLL];
      float nxs[UNROLL];
      [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        col_load(k0 + step + u * slices, k_hi, b, j, nhdr[u], nqv[u], nxs[u]);
      }
      [[unroll]] for (uint u = 0u; u < UNROLL; ++u) col_accum(hdr[u], qv[u], xs[u], j, acc, sums);
      [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        hdr[u] = nhdr[u];
        qv[u] = nqv[u];
        xs[u] = nxs[u];
      }
    }
  }
  // The decode's offsets (q4v_word_mant), once per output: Q4V_MANT_OFF_* times the sum of the inputs' coefficients.
  [[unroll]] for (uint i = 0u; i < 16u; ++i) {
    acc[i] -= Q4V_MANT_OFF_LO[i & 3u] * sums.z;
    acc[16u + i] -= Q4V_MANT_OFF_HI[i & 3u] * sums.w;
  }
  const float min_lo = sums.x;
  const float min_hi = sums.y;
  if ((DIAG & 16u) != 0u) {  // diagnostic: no epilogue (the sums only kept alive)
    float t = min_lo + min_hi;
    [[unroll]] for (uint i = 0u; i < 32u; ++i) t += acc[i];
    if (t == 12345.678) y[0] = t;
    return;
  }
  [[unroll]] for (uint i = 0u; i < 16u; ++i) {
    acc[i] -= min_lo;
    acc[16u + i] -= min_hi;
  }

  // Slices sharing a subgroup: lanes items apart hold the same item when invocations fill subgroups in order
  // (checked per subgroup; otherwise every slice goes through shared memory). The pass count below assumes
  // every subgroup of the workgroup comes out the same, as with every driver's layout we know (linear); a
  // workgroup-wide vote (two more barriers) cost 2 us per independent call on the H100 (4096x14336: 16.0 ->
  // 18.0 us).
  const uint lid = gl_LocalInvocationIndex;
  const uint sg = gl_SubgroupSize;
  const bool linear = subgroupAnd(lid == gl_SubgroupID * sg + gl_SubgroupInvocationID ? 1u : 0u) != 0u;
  uint spg = 1u;  // slices per subgroup, summed with shuffles
  if (sg > items && sg % items == 0u && (items * slices) % sg == 0u && linear) spg = sg / items;
  for (uint m = items; m < items * spg; m <<= 1) {
    [[unroll]] for (uint v = 0u; v < 32u; ++v) acc[v] += subgroupShuffleXor(acc[v], m);
  }
  const uint n_sets = slices / spg;  // slice groups left to add, one row each per item
  const uint set = ty / spg;
  uint vp = 32u;
  while (n_sets * items * (vp + 1u) > RED_FLOATS) vp >>= 1;
  const uint row_base = pc.part_base + (pc.split_begin + s) * pc.n_out;
  const uint wg_size = items * slices;
  for (uint p0 = 0u; p0 < 32u; p0 += vp) {
    if (ty % spg == 0u) {
      [[unroll]] for (uint v = 0u; v < 32u; ++v) {
        if (v >= p0 && v < p0 + vp) col_red[(set * items + tx) * (vp + 1u) + (v - p0)] = acc[v];
      }
    }
    barrier();
    for (uint o = lid; o < items * vp; o += wg_size) {
      const uint otx = o / vp;
      const uint ov = o % vp;
      float total = 0.0;
      for (uint t = 0u; t < n_sets; ++t) total += col_red[(t * items + otx) * (vp + 1u) + ov];
      const uint oitem = ig * items + otx;
      const uint n = col_output(oitem, p0 + ov);
      if (oitem < n_items && n < pc.n_out) {
        if (pc.mode == 1u) {
          y[n] = total;
        } else {
          part[row_base + n] = total;
        }
      }
    }
    barrier();
  }
  if (pc.mode != 2u) return;
  // Mode 2: the last workgroup of this item group to finish adds the n_splits partials in split order.
  memoryBarrierBuffer();
  barrier();
  if (lid == 0u) {
    const uint slot = pc.counter_base + ig;
    const uint seen = atomicAdd(cnt[slot], 1u);
    if (seen == pc.n_splits - 1u) cnt[slot] = 0u;  // at rest again for the next call
    col_ticket = seen;
  }
  barrier();
  const uint seen = col_ticket;
  if (seen < pc.n_splits - 1u) return;  // seen >= n_splits: the ticket was not at rest (below)
  memoryBarrierBuffer();
  for (uint o = lid; o < items * 32u; o += wg_size) {
    const uint oitem = ig * items + o / 32u;
    const uint n = col_output(oitem, o % 32u);
    if (oitem < n_items && n < pc.n_out) {
      if (seen >= pc.n_splits) {  // the ticket was not at rest: no sum can be trusted
        y[n] = uintBitsToFloat(0x7fc00000u);
        continue;
      }
      // Added in split order. Up to MERGE_INFLIGHT splits (the runtime's single-range limit): every partial
      // in flight at once, so the merge tail costs one memory round trip; more: eight at a time.
      float total = 0.0;
      if (pc.n_splits <= MERGE_INFLIGHT) {
        float v[MERGE_INFLIGHT];
        [[unroll]] for (uint u = 0u; u < MERGE_INFLIGHT; ++u) v[u] = u < pc.n_splits ? part[pc.part_base + u * pc.n_out + n] : 0.0;
        total = v[0];
        [[unroll]] for (uint u = 1u; u < MERGE_INFLIGHT; ++u) {
          if (u < pc.n_splits) total += v[u];
        }
      } else {
        uint t = 0u;
        for (; t + 8u <= pc.n_splits; t += 8u) {
          float v[8];
          [[unroll]] for (uint u = 0u; u < 8u; ++u) v[u] = part[pc.part_base + (t + u) * pc.n_out + n];
          [[unroll]] for (uint u = 0u; u < 8u; ++u) total += v[u];
        }
        for (; t < pc.n_splits; ++t) total += part[pc.part_base + t * pc.n_out + n];
      }
      y[n] = total;
    }
  }
}

#endif
