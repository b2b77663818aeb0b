#version 450
// GEMM (prefill matmul): Y[m, n] = sum_k X[m, k] * W[n, k] for X f32 [M, K] (row-major), W [N outputs, K inputs]
// packed, Y f32 [M, N] (row-major). Weights stay packed: each K tile of W is decoded from its blocks straight
// into shared memory (exact decode, as gemv / dequant), never dequantized as a whole tensor.
//
// Defines: exactly one of W_F32, W_F16, W_Q8_0, W_Q6_K, W_Q4_K, W_Q4_0, W_Q5_0, W_Q5_K; plus COLUMN_WISE (with
// W_Q4_K only).
//
// Tiling: a workgroup of local_size_x * local_size_y invocations computes a TM x TN tile of Y with
// TM = local_size_y * RM rows (of X / Y) and TN = local_size_x * RN outputs; invocation (tx, ty) owns rows
// ty + i * local_size_y (i < RM) and outputs tx + j * local_size_x (j < RN), so Y stores are contiguous per
// row across tx. K is walked in tiles of TK: the workgroup stages X[TM][TK] and the decoded W[TN][TK] in
// shared memory (zeros outside M, N and K: padding and neighbouring rows are masked), then every invocation
// accumulates its RM x RN outputs in f32. No subgroup operations: correct for any subgroup size. K tiles are
// double-buffered in registers (tile k0 + TK is loaded and decoded before tile k0's products), and shared rows
// are padded to TK + 1 values (the products read W down a column, which would otherwise hit one bank).
//
// W tiles: the generic path decodes value by value (q4k_decode, q6k_decode, ...: several loads and a scale
// decode per value). With push fast_tiles = 1 (and a tile that VEC_TILE accepts), load_w_vec reads whole
// 16-value runs: Q4_K rows of whole blocks (TK a multiple of 32 dividing 256; two 16-byte loads per half
// sub-block), Q6_K rows of whole blocks (same TK; two 16-byte word segments per half quarter,
// word_loads.glsl), Q4_K column_wise (16 outputs of one input: two 16-byte loads). Both paths round exactly
// like the CPU reference.
//
// Row path (flat / row_wise; F32 and F16 plain row-major): output n covers the virtual elements
// [n * row_stride, n * row_stride + K) of the block stream (row_stride = K for flat, ceil(K/B)*B for
// row_wise); a dispatch covers outputs [row_begin, row_begin + n_rows) of one binding range.
// Column path (Q4_K column_wise): block (k, b) at k * blocks_per_n + b holds outputs b*256 .. b*256+255 of
// input k; a dispatch covers inputs [k_begin, k_begin + k) of one binding range and adds into Y when
// accumulate = 1 (later ranges).
//   Bindings: 0 W (packed), 1 X (f32 [M, k_total]), 2 Y (f32 [M, n_total]; read too when accumulate = 1).
//   Push constants: see Push below (64 bytes).
//   Spec: 0 local_size_x (16), 1 local_size_y (8), 2 RM (2), 3 RN (4), 4 TK (32).
//   Grid: ceil(M / TM) * ceil(n_rows / TN) workgroups (column path: n_rows = N), folded into x and y.
//
// COOPMAT (the *_cm kernels; not with W_F32): X and the decoded weights staged as f16 (finite values saturate
// at +-65504, NaN / Inf pass through) and the products on cooperative matrices (GL_NV_cooperative_matrix,
// 16x16x16 f16 x f16 -> f32, sums in f32). Workgroup: local_size_y subgroups of 32 (local_size_x 32), WN of
// them across N and local_size_y / WN across M; TM = local_size_y * RM tokens, TN = 32 * RN outputs, so a
// subgroup owns a (TM / (local_size_y / WN)) x (TN / WN) block of Y as FM x FN 16x16 accumulators (both
// multiples of 16). Workgroup g takes M tile g % ceil(M / TM) and N tile g / ceil(M / TM): the M tiles of one
// weight tile run side by side, so each weight tile is read from memory about once.
// K steps of TK (a multiple of 16). Shared memory holds DBUF ? 2 : 1 stages of the X tile [TM][TK] and the
// W tile ([TN][TK]; column_wise [TK][TN]) as f16 in 16-byte vectors (uvec4, 8 halves), each row padded by
// one vector (matrix loads of 8 rows hit distinct banks). Step k: the invocations issue the global loads of
// tile k + 1 into registers (X: two 16-byte vec4 loads per 8 values when flags bit 0 says X rows are 16-byte
// aligned; W: the 16-byte block vectors of the fast runs, F16 8 halves per 16-byte load), run the products
// of tile k from shared memory, then decode / convert the registers into the other stage (one stage: after
// a barrier), and one barrier ends the step. Other weight formats (or fast_tiles = 0) decode value by value
// straight into the stage after the products. Values past M, N and K stage as 0. Weight runs whose extremes
// are within f16 range convert without the per-value saturation; X in groups of 8 likewise.
// Results go through a per-subgroup 16x16 f32 stage to Y (accumulate as the f32 path).
// The fast W runs need only TK % 16 == 0 here (a run never crosses a tile or a block).
//   Bindings, push constants: as above (flags bit 0: X vec4 loads; fast_tiles also for F16).
//   Spec (COOPMAT): 0 local_size_x (32), 1 local_size_y (subgroups), 2 RM, 3 RN, 4 TK, 5 DBUF (two shared
//   stages), 6 WN (subgroups across N; divides local_size_y). Registry values: kernels/registry.cpp
//   kGemmCmSpec; record_gemm's automatic tiles: runtime/ops_gemm.cpp cm_auto_tile.
//   Shared memory: (DBUF ? 2 : 1) * (TM (TK + 8) + TN (TK + 8)) * 2 bytes (column_wise W: TK (TN + 8)) plus 1 KiB
//   per subgroup.
//   Grid: ceil(M / TM) * ceil(n_rows / TN) workgroups, folded into x and y.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#if defined(COOPMAT)
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#if defined(W_F32)
#error "gemm.comp: COOPMAT does not take W_F32 (f32 weights keep f32 products)"
#endif
#endif
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint RM = 2;
layout(constant_id = 3) const uint RN = 4;
layout(constant_id = 4) const uint TK = 32;
#if defined(COOPMAT)
// 1: two shared-memory stages (one barrier per K step); 0: one stage (two barriers per step, half the shared
// memory).
layout(constant_id = 5) const bool DBUF = true;
layout(constant_id = 6) const uint WN = 2;  // subgroups across N
#else
const bool DBUF = true;  // K tiles double-buffered in registers
#endif

#if defined(W_F32)
layout(binding = 0) readonly buffer Wf { float wf[]; };
#elif defined(W_Q4_K) || defined(W_Q5_K)
layout(binding = 0) readonly buffer W32 { uint w32[]; };
layout(binding = 0) readonly buffer W128 { uvec4 wv[]; };  // same binding: whole blocks as 9 uvec4 (vec4_blocks)
#define Q4K_WORD(i) w32[i]
#include "q4_k.glsl"
#include "q5_k.glsl"
#include "q4_k_vec.glsl"
#else
layout(binding = 0) readonly buffer W16 { uint16_t w16[]; };
#if defined(W_F16) && defined(COOPMAT)
layout(binding = 0) readonly buffer W128 { uvec4 wv[]; };  // same binding: 8 halves per 16-byte load
#endif
#define Q6K_HALF(i) uint(w16[i])
#define Q80_HALF(i) uint(w16[i])
#define Q40_HALF(i) uint(w16[i])
#include "q6_k.glsl"
#include "q8_0.glsl"
#include "q4_0.glsl"
#if defined(W_Q6_K)
layout(binding = 0) readonly buffer W32 { uint w[]; };  // same binding: segments as words (word_loads.glsl)
#include "word_loads.glsl"
#endif
#endif
layout(binding = 1) readonly buffer X { float x[]; };
#if defined(COOPMAT)
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };  // same binding: 4 values per 16-byte load
#endif
layout(binding = 2) buffer Y { float y[]; };

layout(push_constant) uniform Push {
  uint m;             // rows of X / Y
  uint n_total;       // N: Y row stride
  uint n_rows;        // outputs in this dispatch (row path); N (column path)
  uint row_begin;     // first output of this dispatch (row path); 0 (column path)
  uint k;             // inputs in this dispatch (row path: K; column path: this range's inputs)
  uint k_begin;       // X column of this dispatch's first input (column path); 0 (row path)
  uint k_total;       // K: X row stride
  uint row_stride;    // row path: virtual elements between output rows
  uint w_base;        // binding index (f32 / uint16 / uint32 units) of the range's first block / element
  uint block_begin;   // row path: virtual block index at w_base (element index for F32 / F16)
  uint blocks_per_n;  // column path: ceil(N / 256)
  uint accumulate;    // column path: 1 = Y += result
  uint tiles_n;       // ceil(n_rows / TN)
  uint n_groups;      // workgroups with work
  uint fast_tiles;    // 1 = W tiles from vector loads (load_w_vec): Q6_K rows of whole blocks; Q4_K rows of whole
                      // blocks or column_wise, blocks starting 16-byte aligned (w_base % 4 == 0); COOPMAT F16:
                      // K % 8 == 0 and w_base % 8 == 0 (8 halves per 16-byte load)
  uint flags;         // COOPMAT: bit 0 = X rows 16-byte aligned (k_total % 4 == 0, k_begin % 4 == 0, x binding
                      // offset % 16 == 0): X staged from vec4 loads
} pc;

const uint LX = gl_WorkGroupSize.x;
const uint LY = gl_WorkGroupSize.y;
const uint TM = LY * RM;
const uint TN = LX * RN;

// Decoded W value of local output n (< n_rows) and local input k (< pc.k) of this dispatch.
float w_value(uint n, uint k) {
#if defined(COLUMN_WISE)
  const uint gn = n;  // column path dispatches cover all outputs
  return q4k_decode(pc.w_base + (k * pc.blocks_per_n + (gn >> 8)) * Q4K_BLOCK_WORDS, gn & 255u);
#else
  const uint v = (pc.row_begin + n) * pc.row_stride + k - pc.block_begin *
#if defined(W_F32) || defined(W_F16)
                 1u;
#elif defined(W_Q8_0) || defined(W_Q4_0) || defined(W_Q5_0)
                 32u;
#else
                 256u;
#endif
#if defined(W_F32)
  return wf[pc.w_base + v];
#elif defined(W_F16)
  return half_bits_to_float(uint(w16[pc.w_base + v]));
#elif defined(W_Q8_0)
  return q80_decode(pc.w_base + (v / Q80_BLOCK_ELEMS) * Q80_BLOCK_HALFS, v % Q80_BLOCK_ELEMS);
#elif defined(W_Q6_K)
  return q6k_decode(pc.w_base + (v >> 8) * Q6K_BLOCK_HALFS, v & 255u);
#elif defined(W_Q4_K)
  return q4k_decode(pc.w_base + (v >> 8) * Q4K_BLOCK_WORDS, v & 255u);
#elif defined(W_Q4_0)
  return q40_decode(pc.w_base + (v >> 5) * Q40_BLOCK_HALFS, v & 31u);
#elif defined(W_Q5_0)
  return q50_decode(pc.w_base + (v >> 5) * Q50_BLOCK_HALFS, v & 31u);
#elif defined(W_Q5_K)
  return q5k_decode(pc.w_base + (v >> 8) * Q5K_BLOCK_WORDS, v & 255u);
#else
#error "gemm.comp: define one of W_F32, W_F16, W_Q8_0, W_Q6_K, W_Q4_K, W_Q4_0, W_Q5_0, W_Q5_K"
#endif
#endif
}

// Fast W runs (load_w_vec, COOPMAT's staging): 16 values decoded from 16-byte vectors, in two parts so the loads
// can be in flight while other work runs: run_load (the global loads only) and run_decode (arithmetic only).
// Both give exactly q4k_decode's / q6k_decode's values.
#if (defined(W_Q4_K) || defined(W_Q6_K)) && !defined(COLUMN_WISE)
const uint RUNS_PER_ROW = TK / 16u;  // row path: 16-value runs per tile row (TK a multiple of 16)
#endif
#if defined(W_Q4_K)
struct RunRaw {
  uvec4 hdr;  // block header (d | dmin, scale words)
  uvec4 q;    // the qs vector holding the run
};
#elif defined(W_Q6_K)
struct RunRaw {
  uvec4 ql;   // the aligned words under the run's 16 ql bytes (funnel-shifted by run_decode) ...
  uvec4 qh;   // ... and under its 16 qh bytes
  uvec4 ext;  // x: word 5 of ql, y: word 5 of qh (0 unless the block starts 2 bytes past a word), z: d, w: the
              // 16 bits holding the run's scale byte
};
#endif

#if defined(W_Q4_K) && defined(COLUMN_WISE)
// Run u: one input and 16 consecutive outputs (16-aligned), i.e. one nibble plane of one 16-byte qs vector.
RunRaw run_load(uint u, uint k0, uint n0) {
  RunRaw r;
  r.hdr = uvec4(0u);
  r.q = uvec4(0u);
  const uint k = k0 + u / (TN / 16u);  // this dispatch's input
  const uint nb = n0 + 16u * (u % (TN / 16u));
  if (k >= pc.k || nb >= pc.n_rows) return r;
  const uint bv = pc.w_base / 4u + (k * pc.blocks_per_n + nb / 256u) * Q4V_BLOCK_VECS;
  const uint e0 = nb % 256u;
  r.hdr = wv[bv];
  r.q = wv[bv + 1u + 2u * (e0 / 64u) + (e0 / 16u) % 2u];
  return r;
}
// Values past n_rows are 0; `extreme` gets the largest magnitude the run's scale and min can produce.
void run_decode(uint u, uint k0, uint n0, RunRaw r, out float v[16], out float extreme) {
  const uint nb = n0 + 16u * (u % (TN / 16u));
  const uint e0 = nb % 256u;
  const uint plane = (e0 / 32u) % 2u;  // high nibbles: sub-block 2c + 1
  const vec2 dm = unpackHalf2x16(r.hdr.x);
  const vec4 sc = q4v_scales(r.hdr, e0 / 64u);
  precise float d1 = dm.x * (plane != 0u ? sc.y : sc.x);
  precise float m1 = dm.y * (plane != 0u ? sc.w : sc.z);
  precise float top = d1 * 15.0 - m1;
  extreme = max(abs(m1), abs(top));
  [[unroll]] for (uint t = 0u; t < 16u; ++t) {
    precise float w = d1 * float((r.q[t / 4u] >> (8u * (t % 4u) + 4u * plane)) & 15u) - m1;
    v[t] = nb + t < pc.n_rows ? w : 0.0;
  }
}
#elif defined(W_Q4_K)
// Run hr: output n0 + hr / RUNS_PER_ROW, inputs k0 + 16 (hr % RUNS_PER_ROW) + (0..15), one sub-block's half
// (two 16-byte loads: the block header and the qs vector holding it; runs never cross a block).
RunRaw run_load(uint hr, uint k0, uint n0) {
  RunRaw r;
  r.hdr = uvec4(0u);
  r.q = uvec4(0u);
  const uint n = n0 + hr / RUNS_PER_ROW;
  const uint kr = k0 + 16u * (hr % RUNS_PER_ROW);
  if (n >= pc.n_rows || kr >= pc.k) return r;
  const uint blk = (pc.row_begin + n) * (pc.row_stride / 256u) + kr / 256u - pc.block_begin;
  const uint bv = pc.w_base / 4u + blk * Q4V_BLOCK_VECS;
  const uint sb = (kr % 256u) / 32u;  // sub-block: chunk c = sb / 2, nibble plane sb % 2
  r.hdr = wv[bv];
  r.q = wv[bv + 1u + 2u * (sb / 2u) + (kr / 16u) % 2u];
  return r;
}
// Values past k are 0; `extreme` gets the largest magnitude the run's scale and min can produce.
void run_decode(uint hr, uint k0, uint n0, RunRaw r, out float v[16], out float extreme) {
  const uint kr = k0 + 16u * (hr % RUNS_PER_ROW);
  const uint sb = (kr % 256u) / 32u;
  const vec2 dm = unpackHalf2x16(r.hdr.x);
  const vec4 sc = q4v_scales(r.hdr, sb / 2u);
  precise float d1 = dm.x * ((sb & 1u) != 0u ? sc.y : sc.x);
  precise float m1 = dm.y * ((sb & 1u) != 0u ? sc.w : sc.z);
  precise float top = d1 * 15.0 - m1;
  extreme = max(abs(m1), abs(top));
  const uint shift = 4u * (sb & 1u);
  [[unroll]] for (uint t = 0u; t < 16u; ++t) {
    precise float w = d1 * float((r.q[t / 4u] >> (8u * (t % 4u) + shift)) & 15u) - m1;
    v[t] = kr + t < pc.k ? w : 0.0;
  }
}
#elif defined(W_Q6_K)
// Run hr (as Q4_K rows): one quarter's half of a 128-value half: 16 ql bytes, 16 qh bytes (two word segments,
// word_loads.glsl), one scale byte and d. The segments start at even 2-byte offsets from the block, so both
// share the block's word shift.
uint q6_run_block(uint hr, uint k0, uint n0) {
  const uint n = n0 + hr / RUNS_PER_ROW;
  const uint kr = k0 + 16u * (hr % RUNS_PER_ROW);
  return pc.w_base + ((pc.row_begin + n) * (pc.row_stride / 256u) + kr / 256u - pc.block_begin) * Q6K_BLOCK_HALFS;
}
RunRaw run_load(uint hr, uint k0, uint n0) {
  RunRaw r;
  r.ql = uvec4(0u);
  r.qh = uvec4(0u);
  r.ext = uvec4(0u);
  const uint n = n0 + hr / RUNS_PER_ROW;
  const uint kr = k0 + 16u * (hr % RUNS_PER_ROW);
  if (n >= pc.n_rows || kr >= pc.k) return r;
  const uint hb = q6_run_block(hr, k0, n0);
  const uint e0 = kr % 256u;
  const uint h = e0 / 128u;
  const uint qtr = (e0 % 128u) / 32u;
  const uint l0 = e0 % 32u;  // 0 or 16
  const uint odd = hb & 1u;
  const uint lw = (hb + (64u * h + 32u * (qtr & 1u) + l0) / 2u) >> 1;
  const uint hw = (hb + (128u + 32u * h + l0) / 2u) >> 1;
  r.ql = uvec4(w[lw], w[lw + 1u], w[lw + 2u], w[lw + 3u]);
  r.qh = uvec4(w[hw], w[hw + 1u], w[hw + 2u], w[hw + 3u]);
  r.ext.x = odd != 0u ? w[lw + 4u] : 0u;
  r.ext.y = odd != 0u ? w[hw + 4u] : 0u;
  r.ext.z = uint(w16[hb + 104u]);
  r.ext.w = uint(w16[hb + (192u + 8u * h + l0 / 16u + 2u * qtr) / 2u]);
  return r;
}
// Values past k are 0; `extreme` gets the largest magnitude the run's scale can produce (32 |d * scale|).
void run_decode(uint hr, uint k0, uint n0, RunRaw r, out float v[16], out float extreme) {
  const uint kr = k0 + 16u * (hr % RUNS_PER_ROW);
  const uint e0 = kr % 256u;
  const uint h = e0 / 128u;
  const uint qtr = (e0 % 128u) / 32u;
  const uint l0 = e0 % 32u;
  const uint sh = (q6_run_block(hr, k0, n0) & 1u) * 16u;
  const uvec4 ql = uvec4(funnel16(r.ql.x, r.ql.y, sh), funnel16(r.ql.y, r.ql.z, sh), funnel16(r.ql.z, r.ql.w, sh),
                         funnel16(r.ql.w, r.ext.x, sh));
  const uvec4 qh = uvec4(funnel16(r.qh.x, r.qh.y, sh), funnel16(r.qh.y, r.qh.z, sh), funnel16(r.qh.z, r.qh.w, sh),
                         funnel16(r.qh.w, r.ext.y, sh));
  const uint sbyte_ = (192u + 8u * h + l0 / 16u + 2u * qtr) & 1u;
  precise float ds = unpackHalf2x16(r.ext.z).x * float(bitfieldExtract(int(r.ext.w >> (8u * sbyte_)), 0, 8));
  extreme = abs(ds) * 32.0;
  const uint lo_shift = qtr >= 2u ? 4u : 0u;
  [[unroll]] for (uint t = 0u; t < 16u; ++t) {
    const uint s8 = 8u * (t % 4u);
    const uint q = ((ql[t / 4u] >> (s8 + lo_shift)) & 15u) | (((qh[t / 4u] >> (s8 + 2u * qtr)) & 3u) << 4);
    precise float x = ds * float(int(q) - 32);
    v[t] = kr + t < pc.k ? x : 0.0;
  }
}
#endif

#if !defined(COOPMAT)
// ---- f32 products ----------------------------------------------------------------------------------------------
// Rows padded by one value: the products read ws down a column (stride TKP), which would otherwise hit one bank.
const uint TKP = TK + 1u;
shared float xs[TM * TKP];
shared float ws[TN * TKP];

// Elements of the X and W tiles each invocation stages per K step.
const uint X_PER = (TM * TK + LX * LY - 1u) / (LX * LY);
const uint W_PER = (TN * TK + LX * LY - 1u) / (LX * LY);

// Fast W tiles (load_w_vec): each invocation decodes whole runs of 16 values, run r = tid + i * threads for
// register slots 16 i .. 16 i + 15. VEC_TILE holds when every invocation gets whole runs (W_PER = 16 RUNS_PER).
#if (defined(W_Q4_K) || defined(W_Q6_K)) && !defined(COLUMN_WISE)
// Rows of whole blocks, TK a multiple of 32 dividing 256: run hr is output n0 + hr / RUNS_PER_ROW, values
// k0 + 16 (hr % RUNS_PER_ROW) + (0..15); values past k are 0.
#define VEC_TILE (TK % 32u == 0u && 256u % TK == 0u && (TN * RUNS_PER_ROW) % (LX * LY) == 0u)
#elif defined(W_Q4_K) && defined(COLUMN_WISE)
// Column_wise: run u is one input and 16 consecutive outputs (16-aligned), i.e. one nibble plane of one 16-byte
// qs vector of one block.
#define VEC_TILE (TN % 16u == 0u && (TK * (TN / 16u)) % (LX * LY) == 0u)
#else
#define VEC_TILE false
#endif
const uint RUNS_PER = W_PER / 16u;

#if defined(W_Q4_K) || defined(W_Q6_K)
void load_w_vec(uint k0, uint n0, uint tid, out float wr[W_PER]) {
  [[unroll]] for (uint i = 0u; i < RUNS_PER; ++i) {
    const uint hr = tid + i * LX * LY;
    float v[16];
    float extreme;
    run_decode(hr, k0, n0, run_load(hr, k0, n0), v, extreme);
    [[unroll]] for (uint t = 0u; t < 16u; ++t) wr[i * 16u + t] = v[t];
  }
}
#endif

// Tile element (n * TK + k) of register slot i: the generic path stages elements tid + i * threads; the row
// path of load_w_vec 16 consecutive values of half-row tid + (i / 16) * threads; the column path 16
// consecutive outputs of unit tid + (i / 16) * threads.
uint w_slot_index(uint tid, uint i, bool vec) {
  if (vec) {
    const uint u = tid + (i / 16u) * LX * LY;
#if defined(COLUMN_WISE)
    return (16u * (u % (TN / 16u)) + i % 16u) * TK + u / (TN / 16u);
#else
    return (u / (TK / 16u)) * TK + 16u * (u % (TK / 16u)) + i % 16u;
#endif
  }
  return tid + i * LX * LY;
}

// Loads (and decodes) this invocation's share of the tiles at k0 into registers: elements tid + i * threads.
void load_tiles(uint k0, uint m0, uint n0, uint tid, out float xr[X_PER], out float wr[W_PER]) {
  [[unroll]] for (uint i = 0u; i < X_PER; ++i) {
    const uint idx = tid + i * LX * LY;
    const uint r = m0 + idx / TK;
    const uint c = k0 + idx % TK;
    xr[i] = (idx < TM * TK && r < pc.m && c < pc.k) ? x[r * pc.k_total + pc.k_begin + c] : 0.0;
  }
#if defined(W_Q4_K) || defined(W_Q6_K)
  if (VEC_TILE && pc.fast_tiles != 0u) {
    load_w_vec(k0, n0, tid, wr);
    return;
  }
#endif
  [[unroll]] for (uint i = 0u; i < W_PER; ++i) {
    const uint idx = tid + i * LX * LY;
    const uint n = n0 + idx / TK;
    const uint c = k0 + idx % TK;
    wr[i] = (idx < TN * TK && n < pc.n_rows && c < pc.k) ? w_value(n, c) : 0.0;
  }
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // uniform per workgroup: no barrier is skipped by part of a group
  const uint m0 = (g / pc.tiles_n) * TM;
  const uint n0 = (g % pc.tiles_n) * TN;
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint tid = ty * LX + tx;

  float acc[RM * RN];
  for (uint i = 0u; i < RM * RN; ++i) acc[i] = 0.0;

  // Register double buffering: the next K tile's loads (and decode) are issued before this tile's products,
  // so their latency overlaps the arithmetic instead of adding to every step.
  float xr[X_PER];
  float wr[W_PER];
  load_tiles(0u, m0, n0, tid, xr, wr);
  const bool vec = VEC_TILE && pc.fast_tiles != 0u;
  for (uint k0 = 0u; k0 < pc.k; k0 += TK) {
    [[unroll]] for (uint i = 0u; i < X_PER; ++i) {
      const uint idx = tid + i * LX * LY;
      if (idx < TM * TK) xs[(idx / TK) * TKP + idx % TK] = xr[i];
    }
    [[unroll]] for (uint i = 0u; i < W_PER; ++i) {
      const uint idx = w_slot_index(tid, i, vec);
      if (idx < TN * TK) ws[(idx / TK) * TKP + idx % TK] = wr[i];
    }
    barrier();
    if (k0 + TK < pc.k) load_tiles(k0 + TK, m0, n0, tid, xr, wr);
    for (uint kk = 0u; kk < TK; ++kk) {
      float wcol[RN];
      for (uint j = 0u; j < RN; ++j) wcol[j] = ws[(tx + j * LX) * TKP + kk];
      for (uint i = 0u; i < RM; ++i) {
        const float xv = xs[(ty + i * LY) * TKP + kk];
        for (uint j = 0u; j < RN; ++j) acc[i * RN + j] += xv * wcol[j];
      }
    }
    barrier();
  }

  for (uint i = 0u; i < RM; ++i) {
    const uint r = m0 + ty + i * LY;
    if (r >= pc.m) continue;
    for (uint j = 0u; j < RN; ++j) {
      const uint n = n0 + tx + j * LX;
      if (n >= pc.n_rows) continue;
      const uint yi = r * pc.n_total + pc.row_begin + n;
      y[yi] = (pc.accumulate != 0u ? y[yi] : 0.0) + acc[i * RN + j];
    }
  }
}

#else
// ---- cooperative matrices (f16 products) -----------------------------------------------------------------------
const uint THREADS = LX * LY;
const uint WM = LY / WN;              // subgroups across M
const uint FM = TM / (16u * WM);      // 16-row fragments per subgroup
const uint FN = TN / (16u * WN);      // 16-output fragments per subgroup
const uint STAGES = DBUF ? 2u : 1u;
const uint KV = TK / 8u;              // 16-byte vectors (8 halves) per tile row along K
const uint XROW = KV + 1u;            // shared row strides in vectors: one vector of padding
const uint XS_STAGE = TM * XROW;
#if defined(COLUMN_WISE)
const uint WROW = TN / 8u + 1u;       // W staged [TK][TN]: B loaded row-major
const uint WS_STAGE = TK * WROW;
#else
const uint WROW = XROW;               // W staged [TN][TK]: B loaded column-major
const uint WS_STAGE = TN * WROW;
#endif
shared uvec4 xs[STAGES * XS_STAGE];
shared uvec4 ws[STAGES * WS_STAGE];
shared float cstage[LY * 256u];

// Per-invocation shares of a tile: X in groups of 8 values along K; W in runs of 16 (Q4_K, Q6_K) or groups of
// 8 (F16, and every format's value-by-value path).
const uint X_GROUPS = TM * KV;
const uint X_PER = (X_GROUPS + THREADS - 1u) / THREADS;
const uint X_REGS = 2u * X_PER;  // two vec4 per group
#if defined(W_Q4_K) && defined(COLUMN_WISE)
const uint W_RUNS = TK * (TN / 16u);
#else
const uint W_RUNS = TN * (TK / 16u);
#endif
const uint W_RUN_PER = (W_RUNS + THREADS - 1u) / THREADS;
#if defined(COLUMN_WISE)
const uint W_GROUPS = TK * (TN / 8u);  // 8 outputs of one input
#else
const uint W_GROUPS = TN * KV;         // 8 inputs of one output
#endif
const uint W_GROUP_PER = (W_GROUPS + THREADS - 1u) / THREADS;

const float kF16Max = 65504.0;
// Finite values beyond f16's range saturate; NaN and infinities pass through as the f32 path would.
float16_t stage_f16(float v) { return isnan(v) || isinf(v) ? float16_t(v) : float16_t(clamp(v, -kF16Max, kF16Max)); }
// 8 values as f16 in one 16-byte vector; `in_range`: every value is known to be finite and within f16's range.
uvec4 pack8(vec4 a, vec4 b, bool in_range) {
  if (in_range) {
    return uvec4(packFloat2x16(f16vec2(a.xy)), packFloat2x16(f16vec2(a.zw)), packFloat2x16(f16vec2(b.xy)),
                 packFloat2x16(f16vec2(b.zw)));
  }
  return uvec4(packFloat2x16(f16vec2(stage_f16(a.x), stage_f16(a.y))), packFloat2x16(f16vec2(stage_f16(a.z), stage_f16(a.w))),
               packFloat2x16(f16vec2(stage_f16(b.x), stage_f16(b.y))), packFloat2x16(f16vec2(stage_f16(b.z), stage_f16(b.w))));
}
bool within_f16(vec4 a, vec4 b) {
  const vec4 m = max(abs(a), abs(b));
  return max(max(m.x, m.y), max(m.z, m.w)) <= kF16Max;  // false for NaN
}

// X group i of this invocation: row m0 + gi / KV, inputs k0 + 8 (gi % KV) + (0..7), gi = tid + i * THREADS.
void load_x(uint k0, uint m0, uint tid, out vec4 xr[X_REGS]) {
  [[unroll]] for (uint i = 0u; i < X_PER; ++i) {
    const uint gi = tid + i * THREADS;
    const uint r = m0 + gi / KV;
    const uint c = k0 + 8u * (gi % KV);
    xr[2u * i] = vec4(0.0);
    xr[2u * i + 1u] = vec4(0.0);
    if (gi >= X_GROUPS || r >= pc.m || c >= pc.k) continue;
    const uint base = r * pc.k_total + pc.k_begin + c;
    if ((pc.flags & 1u) != 0u && c + 8u <= pc.k) {
      xr[2u * i] = x4[base / 4u];
      xr[2u * i + 1u] = x4[base / 4u + 1u];
    } else {
      [[unroll]] for (uint t = 0u; t < 4u; ++t) {
        xr[2u * i][t] = c + t < pc.k ? x[base + t] : 0.0;
        xr[2u * i + 1u][t] = c + 4u + t < pc.k ? x[base + 4u + t] : 0.0;
      }
    }
  }
}
void stage_x(uint st, uint tid, vec4 xr[X_REGS]) {
  [[unroll]] for (uint i = 0u; i < X_PER; ++i) {
    const uint gi = tid + i * THREADS;
    if (gi < X_GROUPS) {
      xs[st * XS_STAGE + (gi / KV) * XROW + gi % KV] =
          pack8(xr[2u * i], xr[2u * i + 1u], within_f16(xr[2u * i], xr[2u * i + 1u]));
    }
  }
}

// Value-by-value W staging (every format; the only path but for fast_tiles).
void stage_w_values(uint st, uint k0, uint n0, uint tid) {
  [[unroll]] for (uint i = 0u; i < W_GROUP_PER; ++i) {
    const uint gi = tid + i * THREADS;
    if (gi >= W_GROUPS) continue;
    float v[8];
#if defined(COLUMN_WISE)
    const uint kl = gi / (TN / 8u);
    const uint nl = 8u * (gi % (TN / 8u));
    [[unroll]] for (uint t = 0u; t < 8u; ++t) {
      v[t] = (k0 + kl < pc.k && n0 + nl + t < pc.n_rows) ? w_value(n0 + nl + t, k0 + kl) : 0.0;
    }
    const uint at = kl * WROW + nl / 8u;
#else
    const uint nl = gi / KV;
    const uint kl = 8u * (gi % KV);
    [[unroll]] for (uint t = 0u; t < 8u; ++t) {
      v[t] = (n0 + nl < pc.n_rows && k0 + kl + t < pc.k) ? w_value(n0 + nl, k0 + kl + t) : 0.0;
    }
    const uint at = nl * WROW + kl / 8u;
#endif
    ws[st * WS_STAGE + at] = pack8(vec4(v[0], v[1], v[2], v[3]), vec4(v[4], v[5], v[6], v[7]), false);
  }
}

#if defined(W_Q4_K) || defined(W_Q6_K)
#define W_VEC 1
// Registers of the fast path: the raw vectors of this invocation's runs.
#define WRaw RunRaw
#define W_VEC_PER W_RUN_PER
void load_w_raw(uint k0, uint n0, uint tid, out WRaw wr[W_VEC_PER]) {
  [[unroll]] for (uint i = 0u; i < W_RUN_PER; ++i) wr[i] = run_load(tid + i * THREADS, k0, n0);
}
void stage_w_raw(uint st, uint k0, uint n0, uint tid, WRaw wr[W_VEC_PER]) {
  [[unroll]] for (uint i = 0u; i < W_RUN_PER; ++i) {
    const uint u = tid + i * THREADS;
    if (u >= W_RUNS) continue;
    float v[16];
    float extreme;
    run_decode(u, k0, n0, wr[i], v, extreme);
    const bool in_range = extreme <= kF16Max;  // false for NaN / Inf: per-value saturation
#if defined(COLUMN_WISE)
    const uint at = (u / (TN / 16u)) * WROW + 2u * (u % (TN / 16u));
#else
    const uint at = (u / (TK / 16u)) * WROW + 2u * (u % (TK / 16u));
#endif
    ws[st * WS_STAGE + at] = pack8(vec4(v[0], v[1], v[2], v[3]), vec4(v[4], v[5], v[6], v[7]), in_range);
    ws[st * WS_STAGE + at + 1u] = pack8(vec4(v[8], v[9], v[10], v[11]), vec4(v[12], v[13], v[14], v[15]), in_range);
  }
}
#elif defined(W_F16)
#define W_VEC 1
// F16 rows with K % 8 == 0 and w_base % 8 == 0: each group of 8 halves is one 16-byte load, staged as is (f16
// to f16 is exact, so no saturation applies).
struct WRaw { uvec4 h; };
#define W_VEC_PER W_GROUP_PER
void load_w_raw(uint k0, uint n0, uint tid, out WRaw wr[W_VEC_PER]) {
  [[unroll]] for (uint i = 0u; i < W_GROUP_PER; ++i) {
    const uint gi = tid + i * THREADS;
    const uint n = n0 + gi / KV;
    const uint c = k0 + 8u * (gi % KV);
    wr[i].h = uvec4(0u);
    if (gi < W_GROUPS && n < pc.n_rows && c < pc.k) {
      wr[i].h = wv[(pc.w_base + (pc.row_begin + n) * pc.row_stride + c - pc.block_begin) / 8u];
    }
  }
}
void stage_w_raw(uint st, uint k0, uint n0, uint tid, WRaw wr[W_VEC_PER]) {
  [[unroll]] for (uint i = 0u; i < W_GROUP_PER; ++i) {
    const uint gi = tid + i * THREADS;
    if (gi < W_GROUPS) ws[st * WS_STAGE + (gi / KV) * WROW + gi % KV] = wr[i].h;
  }
}
#else
#define W_VEC 0
#endif

#define CM_F16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_F32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // uniform per workgroup: no barrier is skipped by part of a group
  const uint tiles_m = pc.n_groups / pc.tiles_n;
  const uint m0 = (g % tiles_m) * TM;
  const uint n0 = (g / tiles_m) * TN;
  const uint tid = gl_LocalInvocationID.y * LX + gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID;
  const uint sm = sg / WN;  // this subgroup's block: rows 16 FM sm .., outputs 16 FN sn ..
  const uint sn = sg % WN;

  CM_F32 acc[FM * FN];
  [[unroll]] for (uint f = 0u; f < FM * FN; ++f) acc[f] = CM_F32(0.0);

  vec4 xr[X_REGS];
#if W_VEC
  const bool vec = pc.fast_tiles != 0u;
  WRaw wr[W_VEC_PER];
#endif
  // Tile 0 into stage 0.
  load_x(0u, m0, tid, xr);
  stage_x(0u, tid, xr);
#if W_VEC
  if (vec) {
    load_w_raw(0u, n0, tid, wr);
    stage_w_raw(0u, 0u, n0, tid, wr);
  } else
#endif
  {
    stage_w_values(0u, 0u, n0, tid);
  }
  barrier();

  uint st = 0u;
  for (uint k0 = 0u; k0 < pc.k; k0 += TK) {
    const bool next = k0 + TK < pc.k;  // uniform
    // Tile k0 + TK's global loads, in flight during this tile's products.
    if (next) {
      load_x(k0 + TK, m0, tid, xr);
#if W_VEC
      if (vec) load_w_raw(k0 + TK, n0, tid, wr);
#endif
    }
    const uint xb = st * XS_STAGE + 16u * FM * sm * XROW;
#if defined(COLUMN_WISE)
    const uint wb = st * WS_STAGE + 2u * FN * sn;
#else
    const uint wb = st * WS_STAGE + 16u * FN * sn * WROW;
#endif
    [[unroll]] for (uint kk = 0u; kk < TK / 16u; ++kk) {
      CM_F16 b[FN];
      [[unroll]] for (uint j = 0u; j < FN; ++j) {
#if defined(COLUMN_WISE)
        coopMatLoadNV(b[j], ws, wb + 16u * kk * WROW + 2u * j, WROW, false);
#else
        coopMatLoadNV(b[j], ws, wb + 16u * j * WROW + 2u * kk, WROW, true);
#endif
      }
      [[unroll]] for (uint i = 0u; i < FM; ++i) {
        CM_F16 a;
        coopMatLoadNV(a, xs, xb + 16u * i * XROW + 2u * kk, XROW, false);
        [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i * FN + j] = coopMatMulAddNV(a, b[j], acc[i * FN + j]);
      }
    }
    if (next) {
      if (STAGES == 1u) barrier();  // one stage: every subgroup is done reading it
      const uint nst = STAGES == 2u ? st ^ 1u : 0u;
      stage_x(nst, tid, xr);
#if W_VEC
      if (vec) {
        stage_w_raw(nst, k0 + TK, n0, tid, wr);
      } else
#endif
      {
        stage_w_values(nst, k0 + TK, n0, tid);
      }
      st = nst;
    }
    barrier();
  }

  // Y through a per-subgroup 16x16 f32 stage.
  [[unroll]] for (uint f = 0u; f < FM * FN; ++f) {
    const uint r0 = m0 + 16u * (FM * sm + f / FN);
    const uint c0 = n0 + 16u * (FN * sn + f % FN);
    if (r0 >= pc.m || c0 >= pc.n_rows) continue;  // uniform per subgroup
    coopMatStoreNV(acc[f], cstage, sg * 256u, 16u, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint e = gl_SubgroupInvocationID; e < 256u; e += gl_SubgroupSize) {
      const uint r = r0 + e / 16u;
      const uint n = c0 + e % 16u;
      if (r >= pc.m || n >= pc.n_rows) continue;
      const uint yi = r * pc.n_total + pc.row_begin + n;
      y[yi] = (pc.accumulate != 0u ? y[yi] : 0.0) + cstage[sg * 256u + e];
    }
    subgroupBarrier();
  }
}
#endif
