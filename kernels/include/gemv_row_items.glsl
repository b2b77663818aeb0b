// Work items of gemv.comp's row path (included there; uses its bindings and push constants).
// Each weight type cuts a block into ITEMS_PER_BLOCK items; consecutive invocations take consecutive items
// so that a subgroup reads contiguous weight words and contiguous x values:
//   Q4_K: 32 items = one qs word each: 4 values of sub-block 2c (low nibbles) + 4 of sub-block 2c+1 (high)
//   Q6_K: 32 items = ql/qh bytes l, l+1 of one 128-value half: 8 values (4 quarters x 2)
//   Q8_0:  8 items = 4 int8 values each
//   Q4_0 / Q5_0: 4 items = one qs word each: 4 low-nibble values and the 4 high-nibble values 16 later
//   Q5_K: as Q4_K, with each value's fifth bit from the qh word of its 4 positions
//   F32 / F16: one element per step (ITEM_IS_ELEMENT).
// item_dot(b, i, v0, full) returns item i of block b dotted with x, where the row starts at virtual element
// v0 (x index = element - v0); `full` = the whole block lies inside the row, otherwise values outside
// [v0, v0 + k) are masked (padding, or a neighbouring row in the flat layout).
#ifndef RDRR_GEMV_ROW_ITEMS_GLSL
#define RDRR_GEMV_ROW_ITEMS_GLSL

// x value of virtual element e (x index xi), 0 outside the row.
float x_masked(uint e, uint xi, uint v0) { return (e >= v0 && e - v0 < pc.k) ? x[xi] : 0.0; }

// x of the four elements e .. e + 3 (xl) and e + gap .. e + gap + 3 (xh), gap a multiple of 4: aligned vec4
// loads when the item lies inside the row, masked loads otherwise.
void item_x(uint e, uint gap, uint v0, bool full, out vec4 xl, out vec4 xh) {
  const uint xi = e - v0;
  if (full && (xi & 3u) == 0u) {
    xl = x4[xi >> 2];
    xh = x4[(xi + gap) >> 2];
    return;
  }
  for (uint t = 0u; t < 4u; ++t) {
    xl[t] = x_masked(e + t, xi + t, v0);
    xh[t] = x_masked(e + gap + t, xi + gap + t, v0);
  }
}

#if defined(W_Q4_K) || defined(W_Q5_K)
// A K-quant item's dot: codes ql of sub-block 2c and qh of 2c + 1 (scales and mins from the block at wb, Q4_K's
// header layout) against xl / xh.
float kquant_item_dot(uint wb, uint c, vec4 ql, vec4 qh, vec4 xl, vec4 xh) {
  const vec2 dm = q4k_d_dmin(wb);
  const uvec3 sw = q4k_scale_words(wb);
  const uvec2 lo = q4k_scale_min_w(sw, 2u * c);
  const uvec2 hi = q4k_scale_min_w(sw, 2u * c + 1u);
  const vec4 ones = vec4(1.0);
  return dm.x * (float(lo.x) * dot(ql, xl) + float(hi.x) * dot(qh, xh)) -
         dm.y * (float(lo.y) * dot(xl, ones) + float(hi.y) * dot(xh, ones));
}
#endif

#if defined(W_F32) || defined(W_F16)
#define ITEM_IS_ELEMENT 1
#define BLOCK_ELEMS 1u
float w_elem(uint v) {
#if defined(W_F32)
  return wf[pc.w_base + v];
#else
  return half_bits_to_float(uint(w16[pc.w_base + v]));
#endif
}

#elif defined(W_Q8_0)
#define BLOCK_ELEMS 32u
#define ITEMS_PER_BLOCK 8u
float item_dot(uint b, uint i, uint v0, bool full) {
  const uint hb = pc.w_base + b * Q80_BLOCK_HALFS;
  const ivec2 p0 = q80_pair(hb, 2u * i);
  const ivec2 p1 = q80_pair(hb, 2u * i + 1u);
  const uint e = b * 32u + 4u * i;
  const uint xi = e - v0;
  vec4 xv;
  if (full && (xi & 3u) == 0u) {
    xv = x4[xi >> 2];
  } else {
    for (uint t = 0u; t < 4u; ++t) xv[t] = x_masked(e + t, xi + t, v0);
  }
  return q80_d(hb) * dot(vec4(p0.x, p0.y, p1.x, p1.y), xv);
}

#elif defined(W_Q6_K)
#define BLOCK_ELEMS 256u
#define ITEMS_PER_BLOCK 32u
float item_dot(uint b, uint i, uint v0, bool full) {
  const uint hb = pc.w_base + b * Q6K_BLOCK_HALFS;
  const uint h = i >> 4;
  const uint l = 2u * (i & 15u);
  const uint ql_a = Q6K_HALF(hb + 32u * h + (l >> 1));        // ql[64h + l], ql[64h + l + 1]
  const uint ql_b = Q6K_HALF(hb + 32u * h + 16u + (l >> 1));  // ql[64h + l + 32], ...
  const uint qh_w = Q6K_HALF(hb + 64u + 16u * h + (l >> 1));  // qh[32h + l], qh[32h + l + 1]
  const uint e0 = b * 256u + 128u * h + l;                    // virtual element of quarter 0, t = 0
  const uint s0 = 8u * h + (l >> 4);                          // its scale group
  float acc = 0.0;
  for (uint qtr = 0u; qtr < 4u; ++qtr) {
    const uint lw = (qtr & 1u) == 0u ? ql_a : ql_b;
    const uint lshift = qtr >= 2u ? 4u : 0u;
    float sum = 0.0;
    for (uint t = 0u; t < 2u; ++t) {
      const uint q = ((lw >> (8u * t + lshift)) & 15u) | (((qh_w >> (8u * t + 2u * qtr)) & 3u) << 4);
      const uint e = e0 + 32u * qtr + t;
      sum += float(int(q) - 32) * (full ? x[e - v0] : x_masked(e, e - v0, v0));
    }
    acc += float(q6k_scale(hb, s0 + 2u * qtr)) * sum;
  }
  return q6k_d(hb) * acc;
}

#elif defined(W_Q4_K)
#define BLOCK_ELEMS 256u
#define ITEMS_PER_BLOCK 32u
float item_dot(uint b, uint i, uint v0, bool full) {
  const uint wb = pc.w_base + b * Q4K_BLOCK_WORDS;
  const uint c = i >> 3;
  const uint q = Q4K_WORD(wb + 4u + i);
  const uint e = b * 256u + 64u * c + 4u * (i & 7u);  // virtual element of the first low-nibble value
  vec4 xl;
  vec4 xh;
  item_x(e, 32u, v0, full, xl, xh);
  const vec4 ql = vec4(uvec4(q, q >> 8, q >> 16, q >> 24) & 15u);
  const vec4 qh = vec4(uvec4(q >> 4, q >> 12, q >> 20, q >> 28) & 15u);
  return kquant_item_dot(wb, c, ql, qh, xl, xh);
}

#elif defined(W_Q4_0) || defined(W_Q5_0)
#define BLOCK_ELEMS 32u
#define ITEMS_PER_BLOCK 4u
// Item i: qs bytes 4i .. 4i + 3, i.e. values 4i .. 4i + 3 (low nibbles) and 16 + 4i .. 16 + 4i + 3 (high).
float item_dot(uint b, uint i, uint v0, bool full) {
#if defined(W_Q4_0)
  const uint hb = pc.w_base + b * Q40_BLOCK_HALFS;
  const uint q = q40_qs_word(hb, 1u, i);
  const vec4 off = vec4(8.0);
  const uvec4 bits_l = uvec4(0u), bits_h = uvec4(0u);
#else
  const uint hb = pc.w_base + b * Q50_BLOCK_HALFS;
  const uint q = q40_qs_word(hb, 3u, i);
  const uint qh = q50_qh(hb);
  const vec4 off = vec4(16.0);
  const uvec4 sh = uvec4(0u, 1u, 2u, 3u) + 4u * i;
  const uvec4 bits_l = ((uvec4(qh) >> sh) & 1u) << 4;
  const uvec4 bits_h = ((uvec4(qh) >> (sh + 16u)) & 1u) << 4;
#endif
  const uint e = b * 32u + 4u * i;  // virtual element of the first low-nibble value
  vec4 xl;
  vec4 xh;
  item_x(e, 16u, v0, full, xl, xh);
  const vec4 ql = vec4((uvec4(q, q >> 8, q >> 16, q >> 24) & 15u) | bits_l) - off;
  const vec4 qhv = vec4((uvec4(q >> 4, q >> 12, q >> 20, q >> 28) & 15u) | bits_h) - off;
  return q40_d(hb) * (dot(ql, xl) + dot(qhv, xh));
}

#elif defined(W_Q5_K)
#define BLOCK_ELEMS 256u
#define ITEMS_PER_BLOCK 32u
// As Q4_K's items (one qs word: 4 values of sub-block 2c, 4 of 2c + 1) with the fifth bits from qh.
float item_dot(uint b, uint i, uint v0, bool full) {
  const uint wb = pc.w_base + b * Q5K_BLOCK_WORDS;
  const uint c = i >> 3;
  const uint q = Q4K_WORD(wb + Q5K_QS_WORD + i);
  const uint h = Q4K_WORD(wb + Q5K_QH_WORD + (i & 7u));  // qh bytes l .. l + 3, l = 4 (i & 7)
  const uint e = b * 256u + 64u * c + 4u * (i & 7u);
  vec4 xl;
  vec4 xh;
  item_x(e, 32u, v0, full, xl, xh);
  const uvec4 hb4 = uvec4(h, h >> 8, h >> 16, h >> 24);
  const vec4 ql = vec4((uvec4(q, q >> 8, q >> 16, q >> 24) & 15u) | (((hb4 >> (2u * c)) & 1u) << 4));
  const vec4 qh = vec4((uvec4(q >> 4, q >> 12, q >> 20, q >> 28) & 15u) | (((hb4 >> (2u * c + 1u)) & 1u) << 4));
  return kquant_item_dot(wb, c, ql, qh, xl, xh);
}

#else
#error "gemv.comp: define one of W_F32, W_F16, W_Q8_0, W_Q6_K, W_Q4_K, W_Q4_0, W_Q5_0, W_Q5_K"
#endif

#endif
