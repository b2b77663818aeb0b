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
// COOPMAT (the *_cm kernels; not with W_F32): the same tiles staged as f16 (x and decoded weights; finite
// values saturate at +-65504, NaN / Inf pass through) and the
// products on cooperative matrices (GL_NV_cooperative_matrix, 16x16x16 f16 x f16 -> f32, sums in f32). The
// tile is fixed but for TK (a multiple of 16): 4 subgroups of 32 (local size 32 x 4), TM 64 (RM 16), TN 128
// (RN 4); subgroup s owns
// rows 32 (s / 2) .. + 31 and outputs 64 (s % 2) .. + 63 (2 x 4 accumulators). Shared rows are TK + 8 halves
// (16-byte aligned, as the matrix loads need). Results go through a per-subgroup 16x16 f32 stage to Y.
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
// 1: register double buffering as the f32 path; 0: each K tile loaded right before it is staged (fewer live
// registers, more workgroups per SM).
layout(constant_id = 5) const bool DBUF = false;
#else
const bool DBUF = true;
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
                      // blocks or column_wise, blocks starting 16-byte aligned (w_base % 4 == 0)
  uint pad1;
} pc;

const uint LX = gl_WorkGroupSize.x;
const uint LY = gl_WorkGroupSize.y;
const uint TM = LY * RM;
const uint TN = LX * RN;

#if defined(COOPMAT)
const uint TKP = TK + 8u;
shared float16_t xs[TM * TKP];
shared float16_t ws[TN * TKP];
shared float cstage[4u * 256u];
const float kF16Max = 65504.0;
// Finite values beyond f16's range saturate; NaN and infinities pass through as the f32 path would.
float16_t stage_f16(float v) { return isnan(v) || isinf(v) ? float16_t(v) : float16_t(clamp(v, -kF16Max, kF16Max)); }
#define STAGE(v) stage_f16(v)
#else
// Rows padded by one value: the products read ws down a column (stride TKP), which would otherwise hit one bank.
const uint TKP = TK + 1u;
shared float xs[TM * TKP];
shared float ws[TN * TKP];
#define STAGE(v) (v)
#endif

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
const uint RUNS_PER_ROW = TK / 16u;  // row path: 16-value runs per tile row

#if defined(W_Q4_K) && defined(COLUMN_WISE)
// From two 16-byte loads (header, qs vector); same rounding as q4k_decode.
void decode_run(uint u, uint k0, uint n0, out float v[16]) {
  [[unroll]] for (uint t = 0u; t < 16u; ++t) v[t] = 0.0;
  const uint k = k0 + u / (TN / 16u);  // this dispatch's input
  const uint nb = n0 + 16u * (u % (TN / 16u));
  if (k >= pc.k || nb >= pc.n_rows) return;
  const uint bv = pc.w_base / 4u + (k * pc.blocks_per_n + nb / 256u) * Q4V_BLOCK_VECS;
  const uint e0 = nb % 256u;
  const uint c = e0 / 64u;
  const uint plane = (e0 / 32u) % 2u;  // high nibbles: sub-block 2c + 1
  const uvec4 hdr = wv[bv];
  const uvec4 q = wv[bv + 1u + 2u * c + (e0 / 16u) % 2u];
  const vec2 dm = unpackHalf2x16(hdr.x);
  const vec4 sc = q4v_scales(hdr, c);
  precise float d1 = dm.x * (plane != 0u ? sc.y : sc.x);
  precise float m1 = dm.y * (plane != 0u ? sc.w : sc.z);
  [[unroll]] for (uint t = 0u; t < 16u; ++t) {
    precise float w = d1 * float((q[t / 4u] >> (8u * (t % 4u) + 4u * plane)) & 15u) - m1;
    v[t] = nb + t < pc.n_rows ? w : 0.0;
  }
}
#elif defined(W_Q4_K)
// One sub-block's half from two 16-byte loads (the block header and the qs vector holding it), instead of five
// word loads and a scale decode per value; same rounding as q4k_decode.
void decode_run(uint hr, uint k0, uint n0, out float v[16]) {
  [[unroll]] for (uint t = 0u; t < 16u; ++t) v[t] = 0.0;
  const uint n = n0 + hr / RUNS_PER_ROW;
  const uint kr = k0 + 16u * (hr % RUNS_PER_ROW);  // the run's first input (runs never cross a block)
  const uint half_ = (kr / 16u) % 2u;
  if (n >= pc.n_rows || kr >= pc.k) return;
  const uint blk = (pc.row_begin + n) * (pc.row_stride / 256u) + kr / 256u - pc.block_begin;
  const uint bv = pc.w_base / 4u + blk * Q4V_BLOCK_VECS;
  const uint sb = (kr % 256u) / 32u;  // sub-block: chunk c = sb / 2, nibble plane sb % 2
  const uvec4 hdr = wv[bv];
  const uvec4 q = wv[bv + 1u + 2u * (sb / 2u) + half_];
  const vec2 dm = unpackHalf2x16(hdr.x);
  const vec4 sc = q4v_scales(hdr, sb / 2u);
  precise float d1 = dm.x * ((sb & 1u) != 0u ? sc.y : sc.x);
  precise float m1 = dm.y * ((sb & 1u) != 0u ? sc.w : sc.z);
  const uint shift = 4u * (sb & 1u);
  [[unroll]] for (uint t = 0u; t < 16u; ++t) {
    precise float w = d1 * float((q[t / 4u] >> (8u * (t % 4u) + shift)) & 15u) - m1;
    v[t] = kr + t < pc.k ? w : 0.0;
  }
}
#elif defined(W_Q6_K)
// One quarter's half of a 128-value half: 16 ql bytes, 16 qh bytes (two word segments), one scale byte and d;
// same rounding as q6k_decode.
void decode_run(uint hr, uint k0, uint n0, out float v[16]) {
  [[unroll]] for (uint t = 0u; t < 16u; ++t) v[t] = 0.0;
  const uint n = n0 + hr / RUNS_PER_ROW;
  const uint kr = k0 + 16u * (hr % RUNS_PER_ROW);  // the run's first input (runs never cross a block)
  if (n >= pc.n_rows || kr >= pc.k) return;
  const uint blk = (pc.row_begin + n) * (pc.row_stride / 256u) + kr / 256u - pc.block_begin;
  const uint hb = pc.w_base + blk * Q6K_BLOCK_HALFS;
  const uint e0 = kr % 256u;
  const uint h = e0 / 128u;
  const uint qtr = (e0 % 128u) / 32u;
  const uint l0 = e0 % 32u;  // 0 or 16
  const uvec4 ql = segment16(hb + (64u * h + 32u * (qtr & 1u) + l0) / 2u);
  const uvec4 qh = segment16(hb + (128u + 32u * h + l0) / 2u);
  precise float ds = q6k_d(hb) * float(q6k_scale(hb, 8u * h + l0 / 16u + 2u * qtr));
  const uint lo_shift = qtr >= 2u ? 4u : 0u;
  [[unroll]] for (uint t = 0u; t < 16u; ++t) {
    const uint sh = 8u * (t % 4u);
    const uint q = ((ql[t / 4u] >> (sh + lo_shift)) & 15u) | (((qh[t / 4u] >> (sh + 2u * qtr)) & 3u) << 4);
    precise float x = ds * float(int(q) - 32);
    v[t] = kr + t < pc.k ? x : 0.0;
  }
}
#endif

#if defined(W_Q4_K) || defined(W_Q6_K)
void load_w_vec(uint k0, uint n0, uint tid, out float wr[W_PER]) {
  [[unroll]] for (uint i = 0u; i < RUNS_PER; ++i) {
    float v[16];
    decode_run(tid + i * LX * LY, k0, n0, v);
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
    return (u / RUNS_PER_ROW) * TK + 16u * (u % RUNS_PER_ROW) + i % 16u;
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

#if defined(COOPMAT)
#define CM_F16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_F32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
// Y tile fragment f (row block f / 4, output block f % 4) of this subgroup through its stage.
void store_fragment(CM_F32 acc, uint f, uint m0, uint n0) {
  const uint sg = gl_SubgroupID;
  const uint r0 = m0 + 32u * (sg / 2u) + 16u * (f / 4u);
  const uint c0 = n0 + 64u * (sg % 2u) + 16u * (f % 4u);
  coopMatStoreNV(acc, cstage, sg * 256u, 16u, false);
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
#endif

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // uniform per workgroup: no barrier is skipped by part of a group
  const uint m0 = (g / pc.tiles_n) * TM;
  const uint n0 = (g % pc.tiles_n) * TN;
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint tid = ty * LX + tx;

#if defined(COOPMAT)
  const uint sg = gl_SubgroupID;
  CM_F32 acc[8];
  [[unroll]] for (uint f = 0u; f < 8u; ++f) acc[f] = CM_F32(0.0);
#else
  float acc[RM * RN];
  for (uint i = 0u; i < RM * RN; ++i) acc[i] = 0.0;
#endif

  // Register double buffering: the next K tile's loads (and decode) are issued before this tile's products,
  // so their latency overlaps the arithmetic instead of adding to every step.
  float xr[X_PER];
  float wr[W_PER];
  if (DBUF) load_tiles(0u, m0, n0, tid, xr, wr);
  const bool vec = VEC_TILE && pc.fast_tiles != 0u;
  for (uint k0 = 0u; k0 < pc.k; k0 += TK) {
    if (!DBUF) load_tiles(k0, m0, n0, tid, xr, wr);
    [[unroll]] for (uint i = 0u; i < X_PER; ++i) {
      const uint idx = tid + i * LX * LY;
      if (idx < TM * TK) xs[(idx / TK) * TKP + idx % TK] = STAGE(xr[i]);
    }
    [[unroll]] for (uint i = 0u; i < W_PER; ++i) {
      const uint idx = w_slot_index(tid, i, vec);
      if (idx < TN * TK) ws[(idx / TK) * TKP + idx % TK] = STAGE(wr[i]);
    }
    barrier();
    if (DBUF && k0 + TK < pc.k) load_tiles(k0 + TK, m0, n0, tid, xr, wr);
#if defined(COOPMAT)
    [[unroll]] for (uint kk = 0u; kk < TK; kk += 16u) {
      CM_F16 a[2];
      CM_F16 b[4];
      [[unroll]] for (uint i = 0u; i < 2u; ++i) coopMatLoadNV(a[i], xs, (32u * (sg / 2u) + 16u * i) * TKP + kk, TKP, false);
      [[unroll]] for (uint j = 0u; j < 4u; ++j) coopMatLoadNV(b[j], ws, (64u * (sg % 2u) + 16u * j) * TKP + kk, TKP, true);
      [[unroll]] for (uint i = 0u; i < 2u; ++i) {
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i * 4u + j] = coopMatMulAddNV(a[i], b[j], acc[i * 4u + j]);
      }
    }
#else
    for (uint kk = 0u; kk < TK; ++kk) {
      float wcol[RN];
      for (uint j = 0u; j < RN; ++j) wcol[j] = ws[(tx + j * LX) * TKP + kk];
      for (uint i = 0u; i < RM; ++i) {
        const float xv = xs[(ty + i * LY) * TKP + kk];
        for (uint j = 0u; j < RN; ++j) acc[i * RN + j] += xv * wcol[j];
      }
    }
#endif
    barrier();
  }

#if defined(COOPMAT)
  [[unroll]] for (uint f = 0u; f < 8u; ++f) store_fragment(acc[f], f, m0, n0);
#else
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
#endif
}
