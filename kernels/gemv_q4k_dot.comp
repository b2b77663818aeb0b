#version 450
// Q4_K GEMV (decode) with packed 8-bit integer dot products: y[n] = sum_k W[n, k] * x[k], W [N outputs, K
// inputs] packed Q4_K (row_wise, and flat when K % 256 == 0: every row starts on a block boundary), x and y
// f32. The variant of gemv_q4k.comp's ROWS path for devices with shaderIntegerDotProduct (runtime/ops_gemv.cpp
// picks it; graph steps pin it as gemv_q4_k_vec's companion). Blocks are read as uvec4 (q4_k_vec.glsl), so every
// block of the binding must start 16-byte aligned.
//
// x is staged once per workgroup in shared memory, XCHUNK values at a time, as 16-bit codes: each group of 16
// values (half of a Q4_K sub-block, exactly the range one nibble plane of one 16-byte item covers) gets
// scale s = max|x| / 32767 and codes c = round(x / s) in [-32767, 32767] (error <= s / 2, ~1.5e-5 of the
// group's largest value), kept as two byte planes (c = 256 * hi + lo, hi signed, lo unsigned) packed 4 per
// word, plus the exact f32 sum of the 16 values for the sub-block min term. An item's dot product per nibble
// plane is then 4 words x (1 signed-by-unsigned + 1 unsigned) 4x8-bit dot products, exact in int32
// (|sum| <= 16 * 15 * 32767 < 2^24, so its float conversion is exact too); ~1.5 instructions per weight
// against ~4 for the f32 decode.
//   Threads: local_size_y row groups of local_size_x invocations; row group ty owns NUM_ROWS rows and walks the
//   chunk's 16-byte items (item j of block b: 32 values of sub-blocks 2c, 2c + 1, c = j / 2) with stride
//   local_size_x. Values past K (row padding) are staged as 0. One subgroup-agnostic reduction per row.
//   Bindings: 0 W (uvec4), 1 x (f32[K]), 2 y (f32; writes y[row_begin .. row_begin + n_rows)).
//   Push: n_rows, k, row_stride (elements between row starts, a multiple of 256), row_begin, w_base (uvec4
//     index of the range's first block), block_begin (block index at w_base), n_groups, pad.
//   Spec: 0 local_size_x (64; a multiple of the subgroup size), 1 local_size_y (4 row groups), 2 NUM_ROWS (4),
//     3 XCHUNK (8192 x values per shared pass, a multiple of 256; 2.5 bytes of shared memory each).
//   Grid: ceil(n_rows / (local_size_y * NUM_ROWS)) workgroups, folded into x and y.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "q4_k_vec.glsl"

layout(local_size_x = 64, local_size_y = 4, local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint NUM_ROWS = 4;
layout(constant_id = 3) const uint XCHUNK = 8192;

// SPV_KHR_integer_dot_product, packed 4x8-bit operands (PackedVectorFormat4x8Bit = 0): OpSUDot (first operand's
// bytes signed, second's unsigned) and OpUDot.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int dot_s8u8x4(uint a, uint b, spirv_literal int packed_format);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4451)
uint dot_u8u8x4(uint a, uint b, spirv_literal int packed_format);

layout(binding = 0) readonly buffer W { uvec4 wv[]; };
layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 1) readonly buffer X4 { vec4 x4[]; };  // same binding, for aligned 4-value loads
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

shared uvec4 xs_hi[XCHUNK / 16u];   // group g: high bytes of its 16 codes (signed), 4 per word
shared uvec4 xs_lo[XCHUNK / 16u];   // low bytes (unsigned)
shared vec2 xs_meta[XCHUNK / 16u];  // (scale, exact sum of the 16 values)
shared float row_scratch[NUM_ROWS * gl_WorkGroupSize.x * gl_WorkGroupSize.y];  // >= NUM_ROWS * subgroups

// The 16 x values of group g of the chunk starting at value c0 (zero past k).
void load_group(uint c0, uint g, out vec4 v[4]) {
  const uint e0 = c0 + 16u * g;
  if (e0 + 16u <= pc.k) {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) v[i] = x4[(e0 >> 2) + i];
  } else {
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      [[unroll]] for (uint t = 0u; t < 4u; ++t) v[i][t] = e0 + 4u * i + t < pc.k ? x[e0 + 4u * i + t] : 0.0;
    }
  }
}

// Stages groups [0, n_grp) of the chunk at c0 (every invocation of the workgroup takes part).
void stage_x(uint c0, uint n_grp) {
  const uint lid = gl_LocalInvocationIndex;
  const uint wg = gl_WorkGroupSize.x * gl_WorkGroupSize.y;
  for (uint g = lid; g < n_grp; g += wg) {
    vec4 v[4];
    load_group(c0, g, v);
    const vec4 a = max(max(abs(v[0]), abs(v[1])), max(abs(v[2]), abs(v[3])));
    const float amax = max(max(a.x, a.y), max(a.z, a.w));
    const float inv = amax > 0.0 ? 32767.0 / amax : 0.0;
    uvec4 hi;
    uvec4 lo;
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      // round(v * inv) lands in the low mantissa bits of 1.5 * 2^23 + code: bits 0-15 are the code (two's
      // complement, |code| <= 32767 < 2^22).
      const uvec4 u = floatBitsToUint(fma(v[i], vec4(inv), vec4(12582912.0)));
      lo[i] = (u.x & 0xffu) | ((u.y & 0xffu) << 8) | ((u.z & 0xffu) << 16) | (u.w << 24);
      hi[i] = ((u.x >> 8) & 0xffu) | (u.y & 0xff00u) | ((u.z & 0xff00u) << 8) | ((u.w & 0xff00u) << 16);
    }
    xs_hi[g] = hi;
    xs_lo[g] = lo;
    xs_meta[g] = vec2(amax / 32767.0, dot(v[0] + v[1] + v[2] + v[3], vec4(1.0)));
  }
}

// Loads the weight vectors (header, item j) of item `it_` of the chunk whose first block is cb_.
#define LOAD_ITEM(cb_, it_)                                                         \
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {                                 \
    if (row0 + r < pc.n_rows) {                                                     \
      const uint bi = blk0[r] + ((cb_) + ((it_) >> 3)) * Q4V_BLOCK_VECS;           \
      hdr[r] = wv[bi];                                                              \
      qv[r] = wv[bi + 1u + ((it_) & 7u)];                                           \
    }                                                                               \
  }

// Adds item it_'s products to acc (x from the staged planes).
#define DOT_ITEM(it_)                                                                                    \
  {                                                                                                      \
    const uint bl = (it_) >> 3;                                                                          \
    const uint j = (it_) & 7u;                                                                           \
    const uint g_lo = bl * 16u + 4u * (j >> 1) + (j & 1u); /* values 64c + 16h + (0..15): low nibbles */ \
    const uint g_hi = g_lo + 2u;                           /* those + 32: high nibbles */                \
    const uvec4 xh_lo = xs_hi[g_lo];                                                                     \
    const uvec4 xl_lo = xs_lo[g_lo];                                                                     \
    const uvec4 xh_hi = xs_hi[g_hi];                                                                     \
    const uvec4 xl_hi = xs_lo[g_hi];                                                                     \
    const vec2 m_lo = xs_meta[g_lo];                                                                     \
    const vec2 m_hi = xs_meta[g_hi];                                                                     \
    [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {                                                    \
      if (row0 + r < pc.n_rows) {                                                                        \
        int d_lo_h = 0;                                                                                  \
        int d_hi_h = 0;                                                                                  \
        uint d_lo_l = 0u;                                                                                \
        uint d_hi_l = 0u;                                                                                \
        [[unroll]] for (uint m = 0u; m < 4u; ++m) {                                                      \
          const uint q_lo = qv[r][m] & 0x0f0f0f0fu;                                                      \
          const uint q_hi = (qv[r][m] >> 4) & 0x0f0f0f0fu;                                               \
          d_lo_h += dot_s8u8x4(xh_lo[m], q_lo, 0);                                                       \
          d_lo_l += dot_u8u8x4(xl_lo[m], q_lo, 0);                                                       \
          d_hi_h += dot_s8u8x4(xh_hi[m], q_hi, 0);                                                       \
          d_hi_l += dot_u8u8x4(xl_hi[m], q_hi, 0);                                                       \
        }                                                                                                \
        const float dot_lo = float(d_lo_h * 256 + int(d_lo_l)) * m_lo.x;                                 \
        const float dot_hi = float(d_hi_h * 256 + int(d_hi_l)) * m_hi.x;                                 \
        const vec2 dm = unpackHalf2x16(hdr[r].x);                                                        \
        const vec4 s = q4v_scales(hdr[r], j >> 1);                                                       \
        acc[r] += dm.x * (s.x * dot_lo + s.y * dot_hi) - dm.y * (s.z * m_lo.y + s.w * m_hi.y);           \
      }                                                                                                  \
    }                                                                                                    \
  }

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // uniform per workgroup
  const uint tx = gl_LocalInvocationID.x;
  const uint ty = gl_LocalInvocationID.y;
  const uint blocks_per_row = pc.row_stride / 256u;
  const uint k_pad = ((pc.k + 255u) / 256u) * 256u;
  const uint row0 = (g * gl_WorkGroupSize.y + ty) * NUM_ROWS;
  float acc[NUM_ROWS];
  uint blk0[NUM_ROWS];  // uvec4 index of each row's first block
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
    acc[r] = 0.0;
    blk0[r] = pc.w_base + ((pc.row_begin + row0 + r) * blocks_per_row - pc.block_begin) * Q4V_BLOCK_VECS;
  }
  uvec4 hdr[NUM_ROWS];
  uvec4 qv[NUM_ROWS];
  for (uint c0 = 0u; c0 < k_pad; c0 += XCHUNK) {
    const uint kc = min(XCHUNK, k_pad - c0);
    const uint n_items = (kc / 256u) * 8u;
    const uint cb = c0 / 256u;  // block index of the chunk's first block
    // The chunk's first item is requested before x is staged, so the two latencies overlap.
    if (tx < n_items) LOAD_ITEM(cb, tx)
    if (c0 != 0u) barrier();  // the previous chunk's readers are done with the shared planes
    stage_x(c0, kc / 16u);
    barrier();
    if (tx < n_items) DOT_ITEM(tx)
    for (uint it = tx + gl_WorkGroupSize.x; it < n_items; it += gl_WorkGroupSize.x) {
      LOAD_ITEM(cb, it)
      DOT_ITEM(it)
    }
  }
  // Subgroup sums per row, then invocation r of each row group adds its subgroups' sums in order (subgroups
  // never straddle row groups: local_size_x is a multiple of the subgroup size).
  [[unroll]] for (uint r = 0u; r < NUM_ROWS; ++r) {
    const float s = subgroupAdd(acc[r]);
    if (subgroupElect()) row_scratch[r * gl_NumSubgroups + gl_SubgroupID] = s;
  }
  barrier();
  const uint per_group = gl_NumSubgroups / gl_WorkGroupSize.y;
  if (tx < NUM_ROWS && row0 + tx < pc.n_rows) {
    float total = 0.0;
    for (uint i = 0u; i < per_group; ++i) total += row_scratch[tx * gl_NumSubgroups + ty * per_group + i];
    y[pc.row_begin + row0 + tx] = total;
  }
}
