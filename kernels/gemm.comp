#version 450
// GEMM (prefill matmul): Y[m, n] = sum_k X[m, k] * W[n, k] for X f32 [M, K] (row-major), W [N outputs, K inputs]
// packed, Y f32 [M, N] (row-major). Weights stay packed: each K tile of W is decoded from its blocks straight
// into shared memory (exact decode, as gemv / dequant), never dequantized as a whole tensor.
//
// Defines: exactly one of W_F32, W_F16, W_Q8_0, W_Q6_K, W_Q4_K; plus COLUMN_WISE (with W_Q4_K only).
//
// Tiling: a workgroup of local_size_x * local_size_y invocations computes a TM x TN tile of Y with
// TM = local_size_y * RM rows (of X / Y) and TN = local_size_x * RN outputs; invocation (tx, ty) owns rows
// ty + i * local_size_y (i < RM) and outputs tx + j * local_size_x (j < RN), so Y stores are contiguous per
// row across tx. K is walked in tiles of TK: the workgroup stages X[TM][TK] and the decoded W[TN][TK] in
// shared memory (zeros outside M, N and K: padding and neighbouring rows are masked), then every invocation
// accumulates its RM x RN outputs in f32. No subgroup operations: correct for any subgroup size.
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
#extension GL_EXT_shader_16bit_storage : require
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 8, local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint RM = 2;
layout(constant_id = 3) const uint RN = 4;
layout(constant_id = 4) const uint TK = 32;

#if defined(W_F32)
layout(binding = 0) readonly buffer Wf { float wf[]; };
#elif defined(W_Q4_K)
layout(binding = 0) readonly buffer W32 { uint w32[]; };
#define Q4K_WORD(i) w32[i]
#include "q4_k.glsl"
#else
layout(binding = 0) readonly buffer W16 { uint16_t w16[]; };
#define Q6K_HALF(i) uint(w16[i])
#define Q80_HALF(i) uint(w16[i])
#include "q6_k.glsl"
#include "q8_0.glsl"
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
  uint pad0;
  uint pad1;
} pc;

const uint LX = gl_WorkGroupSize.x;
const uint LY = gl_WorkGroupSize.y;
const uint TM = LY * RM;
const uint TN = LX * RN;

shared float xs[TM * TK];
shared float ws[TN * TK];

// Decoded W value of local output n (< n_rows) and local input k (< pc.k) of this dispatch.
float w_value(uint n, uint k) {
#if defined(COLUMN_WISE)
  const uint gn = n;  // column path dispatches cover all outputs
  return q4k_decode(pc.w_base + (k * pc.blocks_per_n + (gn >> 8)) * Q4K_BLOCK_WORDS, gn & 255u);
#else
  const uint v = (pc.row_begin + n) * pc.row_stride + k - pc.block_begin *
#if defined(W_F32) || defined(W_F16)
                 1u;
#elif defined(W_Q8_0)
                 Q80_BLOCK_ELEMS;
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
#else
#error "gemm.comp: define one of W_F32, W_F16, W_Q8_0, W_Q6_K, W_Q4_K"
#endif
#endif
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // uniform per workgroup: no barrier is skipped by part of a group
  const uint m0 = (g / pc.tiles_n) * TM;
  const uint n0 = (g % pc.tiles_n) * TN;
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint tid = ty * LX + tx;
  const uint n_threads = LX * LY;

  float acc[RM * RN];
  for (uint i = 0u; i < RM * RN; ++i) acc[i] = 0.0;

  for (uint k0 = 0u; k0 < pc.k; k0 += TK) {
    for (uint idx = tid; idx < TM * TK; idx += n_threads) {
      const uint r = m0 + idx / TK;
      const uint c = k0 + idx % TK;
      xs[idx] = (r < pc.m && c < pc.k) ? x[r * pc.k_total + pc.k_begin + c] : 0.0;
    }
    for (uint idx = tid; idx < TN * TK; idx += n_threads) {
      const uint n = n0 + idx / TK;
      const uint c = k0 + idx % TK;
      ws[idx] = (n < pc.n_rows && c < pc.k) ? w_value(n, c) : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < TK; ++kk) {
      float wv[RN];
      for (uint j = 0u; j < RN; ++j) wv[j] = ws[(tx + j * LX) * TK + kk];
      for (uint i = 0u; i < RM; ++i) {
        const float xv = xs[(ty + i * LY) * TK + kk];
        for (uint j = 0u; j < RN; ++j) acc[i * RN + j] += xv * wv[j];
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
