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
//
// COLUMN_SPLIT (column_wise): block (k, b) at k * blocks_per_k + b holds outputs b*256 .. b*256+255 of input
// k, so the blocks of a range of inputs are contiguous memory. The inputs are cut into splits of k_chunk;
// workgroup (item group ig, split s) streams the blocks of its split: invocation (tx, ty) owns item
// ig * local_size_x + tx (32 outputs) and accumulates inputs k = ty, ty + local_size_y, ... of the split
// (four inputs' vectors in flight), then the local_size_y partial sums of each output are added in order
// through shared memory. Modes: 1 (one split) writes y; 0 writes partials[split_begin + s][n] for
// gemv_reduce.comp (several binding ranges); 2 writes the partials, then the last workgroup of each item
// group to finish (a ticket per item group: atomic compare-swap on the scratch, tagged with the call's epoch
// so stale or uninitialised tickets count as zero, and invalidated by the last arrival) adds the n_splits
// partials of its outputs in split order and writes y: one dispatch, deterministic.
//   Bindings: 0 W (uvec4), 1 x (f32; reads x[k_begin .. k_begin + k)), 2 scratch (coherent; f32 partials
//     [splits][n_out], uint tickets at counter_base), 3 y (f32[n_out]).
//   Push: n_out, k (inputs in this dispatch), k_begin, blocks_per_k (ceil(N / 256)), w_base (uvec4 index of
//     block (k_begin, 0)), k_chunk (inputs per split), split_begin, n_item_groups, n_groups, mode, n_splits,
//     counter_base, epoch, pad x3.
//   Spec: 0 local_size_x (8 items), 1 local_size_y (32 input slices), 2 DIAG (0), 3 UNROLL (4).
//   Grid: n_item_groups * ceil(k / k_chunk) workgroups, folded into x and y.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "q4_k_vec.glsl"

#if defined(COLUMN_SPLIT)
layout(local_size_x = 8, local_size_y = 32, local_size_x_id = 0, local_size_y_id = 1) in;
#elif defined(ROWS)
layout(local_size_x = 64, local_size_x_id = 0) in;
layout(constant_id = 1) const uint NUM_ROWS = 4;
#else
#error "gemv_q4k.comp: define ROWS or COLUMN_SPLIT"
#endif
// Diagnostics for bench_kernels only (wrong results), bit flags: 1 = x never read from memory (rows path),
// 2 = weights read but not decoded (rows 3 = both: the weight stream alone), 4 = column split: no sum over the
// input slices (partials straight from slice 0; mode 2 only). 0 in every real use.
layout(constant_id = 2) const uint DIAG = 0;
#if defined(ROWS)
layout(constant_id = 3) const uint UNROLL = 1;  // items per iteration, all their weights loaded first
#else
layout(constant_id = 3) const uint UNROLL = 4;  // inputs per slice and iteration, all their vectors loaded first
#endif

layout(binding = 0) readonly buffer W { uvec4 wv[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };  // same binding, for aligned 4-value loads
#if defined(ROWS)
layout(binding = 2) writeonly buffer Y { float y[]; };
#else
layout(binding = 2) coherent buffer Part { float part[]; };  // partials [splits][n_out], then tickets
layout(binding = 2) coherent buffer Cnt { uint cnt[]; };     // same binding
layout(binding = 3) writeonly buffer Y { float y[]; };
#endif

#if defined(ROWS)

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

shared float row_scratch[NUM_ROWS * gl_WorkGroupSize.x];

// x values of item j of block b: xl = values 64c + 16h + (0..15), xh = those + 32; zero past k.
void load_x(uint b, uint j, out vec4 xl[4], out vec4 xh[4]) {
  const uint e0 = b * 256u + 64u * (j >> 1) + 16u * (j & 1u);
  if (b * 256u + 256u <= pc.k) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      xl[i] = x4[(e0 >> 2) + i];
      xh[i] = x4[((e0 + 32u) >> 2) + i];
    }
  } else {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      [[unroll]] for (uint t = 0u; t < 4u; ++t) {
        const uint e = e0 + 4u * i + t;
        xl[i][t] = e < pc.k ? x[e] : 0.0;
        xh[i][t] = e + 32u < pc.k ? x[e + 32u] : 0.0;
      }
    }
  }
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;
  const uint blocks_per_row = pc.row_stride / 256u;
  const uint n_items = ((pc.k + 255u) / 256u) * 8u;
  const uint row0 = g * NUM_ROWS;
  float acc[NUM_ROWS];
  uint blk0[NUM_ROWS];  // uvec4 index of each row's first block
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
    acc[r] = 0.0;
    blk0[r] = pc.w_base + ((pc.row_begin + row0 + r) * blocks_per_row - pc.block_begin) * Q4V_BLOCK_VECS;
  }
  const vec4 ones = vec4(1.0);
  // UNROLL items per iteration: every weight vector of all of them is loaded before any is decoded.
  for (uint it0 = gl_LocalInvocationID.x; it0 < n_items; it0 += UNROLL * gl_WorkGroupSize.x) {
    uvec4 hdr[UNROLL * NUM_ROWS];
    uvec4 qv[UNROLL * NUM_ROWS];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const uint item = it0 + u * gl_WorkGroupSize.x;
      [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
        if (item < n_items && row0 + r < pc.n_rows) {
          const uint bi = blk0[r] + (item >> 3) * Q4V_BLOCK_VECS;
          hdr[u * NUM_ROWS + r] = wv[bi];
          qv[u * NUM_ROWS + r] = wv[bi + 1u + (item & 7u)];
        }
      }
    }
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const uint it = it0 + u * gl_WorkGroupSize.x;
      if (it >= n_items) break;
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
        load_x(b, j, xl, xh);
      }
      const float sum_lo = dot(xl[0] + xl[1] + xl[2] + xl[3], ones);
      const float sum_hi = dot(xh[0] + xh[1] + xh[2] + xh[3], ones);
      [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
        if (row0 + r < pc.n_rows) {
          const uvec4 h = hdr[u * NUM_ROWS + r];
          const uvec4 q = qv[u * NUM_ROWS + r];
          float dot_lo = 0.0;
          float dot_hi = 0.0;
          if ((DIAG & 2u) != 0u) {
            dot_lo = uintBitsToFloat(((q.x ^ q.y ^ q.z ^ q.w) & 0x007fffffu) | 0x3f800000u) * xl[0].x;
          } else {
            [[unroll]] for (uint m = 0u; m < 4u; ++m) {
              vec4 lo;
              vec4 hi;
              q4v_word(q[m], lo, hi);
              [[unroll]] for (uint t = 0u; t < 4u; ++t) {
                dot_lo = fma(lo[t], xl[m][t], dot_lo);
                dot_hi = fma(hi[t], xh[m][t], dot_hi);
              }
            }
          }
          const vec2 dm = unpackHalf2x16(h.x);
          const vec4 s = q4v_scales(h, j >> 1);
          acc[r] += dm.x * (s.x * dot_lo + s.y * dot_hi) - dm.y * (s.z * sum_lo + s.w * sum_hi);
        }
      }
    }
  }
  // One reduction for all rows: subgroup sums, then invocation r adds row r's subgroup sums in order.
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
    const float s = subgroupAdd(acc[r]);
    if (subgroupElect()) row_scratch[r * gl_NumSubgroups + gl_SubgroupID] = s;
  }
  barrier();
  const uint r = gl_LocalInvocationID.x;
  if (r < NUM_ROWS && row0 + r < pc.n_rows) {
    float total = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) total += row_scratch[r * gl_NumSubgroups + i];
    y[pc.row_begin + row0 + r] = total;
  }
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
  uint epoch;         // mode 2: 1 .. 2^20 - 2, different for consecutive calls
  uint pad0;
  uint pad1;
  uint pad2;
} pc;

shared bool col_last;

// Ticket of item group ig for this call: (epoch << 12) | arrivals; a ticket of another epoch (an earlier
// call, or uninitialised memory) counts as 0 arrivals. Returns true for the last of the n_splits arrivals,
// which then invalidates the ticket (all ones: no epoch matches it).
bool arrive_last(uint slot) {
  uint old = cnt[slot];
  uint nxt = 0u;
  for (;;) {
    nxt = (old >> 12) == pc.epoch ? old + 1u : (pc.epoch << 12) | 1u;
    const uint seen = atomicCompSwap(cnt[slot], old, nxt);
    if (seen == old) break;
    old = seen;
  }
  const bool last = (nxt & 0xfffu) == pc.n_splits;
  if (last) atomicExchange(cnt[slot], 0xffffffffu);
  return last;
}

#define MERGE_INFLIGHT 32u  // runtime/ops_gemv.cpp kMaxMergeSplits
#define PASS_OUTPUTS 8u  // outputs per invocation reduced per shared-memory pass (4 passes of 32)
shared float col_scratch[gl_WorkGroupSize.x * gl_WorkGroupSize.y * PASS_OUTPUTS];

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // uniform per workgroup
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint ig = g % pc.n_item_groups;
  const uint s = g / pc.n_item_groups;
  const uint item = ig * gl_WorkGroupSize.x + tx;
  const bool valid = item < pc.blocks_per_k * 8u;
  const uint b = item >> 3;
  const uint j = item & 7u;
  const uint k_lo = s * pc.k_chunk;
  const uint k_hi = min(pc.k, k_lo + pc.k_chunk);

  float acc[32];  // outputs 64c + 16h + i (i < 16) and 64c + 32 + 16h + (i - 16) of block b
  [[unroll]] for (uint i = 0u; i < 32u; ++i) acc[i] = 0.0;
  float min_lo = 0.0;
  float min_hi = 0.0;
  if (valid) {
    for (uint k0 = k_lo + ty; k0 < k_hi; k0 += UNROLL * gl_WorkGroupSize.y) {
      uvec4 hdr[UNROLL];
      uvec4 qv[UNROLL];
      float xs[UNROLL];
      [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        const uint kk = k0 + u * gl_WorkGroupSize.y;
        hdr[u] = uvec4(0u);
        qv[u] = uvec4(0u);
        xs[u] = 0.0;
        if (kk < k_hi) {
          const uint bi = pc.w_base + (kk * pc.blocks_per_k + b) * Q4V_BLOCK_VECS;
          hdr[u] = wv[bi];
          qv[u] = wv[bi + 1u + j];
          xs[u] = x[pc.k_begin + kk];
        }
      }
      [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
        const vec2 dm = unpackHalf2x16(hdr[u].x) * xs[u];
        const vec4 sc = q4v_scales(hdr[u], j >> 1);
        const float a_lo = dm.x * sc.x;
        const float a_hi = dm.x * sc.y;
        min_lo += dm.y * sc.z;
        min_hi += dm.y * sc.w;
        if ((DIAG & 2u) != 0u) {
          [[unroll]] for (uint m = 0u; m < 4u; ++m) acc[m] += a_lo * uintBitsToFloat((qv[u][m] & 0x007fffffu) | 0x3f800000u);
        } else {
          [[unroll]] for (uint m = 0u; m < 4u; ++m) {
            vec4 lo;
            vec4 hi;
            q4v_word(qv[u][m], lo, hi);
            [[unroll]] for (uint t = 0u; t < 4u; ++t) {
              acc[4u * m + t] += a_lo * lo[t];
              acc[16u + 4u * m + t] += a_hi * hi[t];
            }
          }
        }
      }
    }
  }
  [[unroll]] for (uint i = 0u; i < 16u; ++i) {
    acc[i] -= min_lo;
    acc[16u + i] -= min_hi;
  }
  // Sum over ty in order, PASS_OUTPUTS outputs per invocation at a time.
  const uint lid = gl_LocalInvocationIndex;
  const uint items = gl_WorkGroupSize.x;
  const uint row_base = (pc.split_begin + s) * pc.n_out;
  if ((DIAG & 4u) != 0u) {  // diagnostic: no sum over ty (slice 0's sums stand for the totals)
    if (ty == 0u && item < pc.blocks_per_k * 8u) {
      [[unroll]] for (uint v = 0u; v < 32u; ++v) {
        const uint n = b * 256u + 64u * (j >> 1) + 16u * (j & 1u) + (v < 16u ? v : v + 16u);
        if (n < pc.n_out) part[row_base + n] = acc[v];
      }
    }
  }
  [[unroll]] for (uint p = 0u; p < ((DIAG & 4u) != 0u ? 0u : 32u / PASS_OUTPUTS); ++p) {
    [[unroll]] for (uint i = 0u; i < PASS_OUTPUTS; ++i) col_scratch[(ty * items + tx) * PASS_OUTPUTS + i] = acc[p * PASS_OUTPUTS + i];
    barrier();
    for (uint o = lid; o < items * PASS_OUTPUTS; o += gl_WorkGroupSize.x * gl_WorkGroupSize.y) {
      const uint otx = o / PASS_OUTPUTS;
      const uint v = p * PASS_OUTPUTS + o % PASS_OUTPUTS;  // value index 0..31 of item otx
      float total = 0.0;
      for (uint t = 0u; t < gl_WorkGroupSize.y; ++t) total += col_scratch[(t * items + otx) * PASS_OUTPUTS + (o % PASS_OUTPUTS)];
      const uint oitem = ig * items + otx;
      const uint oj = oitem & 7u;
      const uint n = (oitem >> 3) * 256u + 64u * (oj >> 1) + 16u * (oj & 1u) + (v < 16u ? v : v + 16u);
      if (oitem < pc.blocks_per_k * 8u && n < pc.n_out) {
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
  if (lid == 0u) col_last = arrive_last(pc.counter_base + ig);
  barrier();
  if (!col_last) return;
  memoryBarrierBuffer();
  for (uint o = lid; o < items * 32u; o += gl_WorkGroupSize.x * gl_WorkGroupSize.y) {
    const uint oitem = ig * items + o / 32u;
    const uint v = o % 32u;
    const uint oj = oitem & 7u;
    const uint n = (oitem >> 3) * 256u + 64u * (oj >> 1) + 16u * (oj & 1u) + (v < 16u ? v : v + 16u);
    if (oitem < pc.blocks_per_k * 8u && n < pc.n_out) {
      // Added in split order. Up to MERGE_INFLIGHT splits (the runtime's single-range limit): every partial
      // in flight at once, so the merge tail costs one memory round trip; more: eight at a time.
      float total = 0.0;
      if (pc.n_splits <= MERGE_INFLIGHT) {
        float v[MERGE_INFLIGHT];
        [[unroll]] for (uint u = 0u; u < MERGE_INFLIGHT; ++u) v[u] = u < pc.n_splits ? part[u * pc.n_out + n] : 0.0;
        total = v[0];
        [[unroll]] for (uint u = 1u; u < MERGE_INFLIGHT; ++u) {
          if (u < pc.n_splits) total += v[u];
        }
      } else {
        uint t = 0u;
        for (; t + 8u <= pc.n_splits; t += 8u) {
          float v[8];
          [[unroll]] for (uint u = 0u; u < 8u; ++u) v[u] = part[(t + u) * pc.n_out + n];
          [[unroll]] for (uint u = 0u; u < 8u; ++u) total += v[u];
        }
        for (; t < pc.n_splits; ++t) total += part[t * pc.n_out + n];
      }
      y[n] = total;
    }
  }
}

#endif
