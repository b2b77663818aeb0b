// Work items of gemv.comp's row path (included there; uses its bindings and push constants).
// Each weight type cuts a block into ITEMS_PER_BLOCK items; consecutive invocations take consecutive items
// so that a subgroup reads contiguous weight words and contiguous x values:
//   Q4_K: 32 items = one qs word each: 4 values of sub-block 2c (low nibbles) + 4 of sub-block 2c+1 (high)
//   Q6_K: 32 items = ql/qh bytes l, l+1 of one 128-value half: 8 values (4 quarters x 2)
//   Q8_0:  8 items = 4 int8 values each
//   F32 / F16: one element per step (ITEM_IS_ELEMENT).
// item_dot(b, i, v0, full) returns item i of block b dotted with x, where the row starts at virtual element
// v0 (x index = element - v0); `full` = the whole block lies inside the row, otherwise values outside
// [v0, v0 + k) are masked (padding, or a neighbouring row in the flat layout).
#ifndef RDRR_GEMV_ROW_ITEMS_GLSL
#define RDRR_GEMV_ROW_ITEMS_GLSL

// x value of virtual element e (x index xi), 0 outside the row.
float x_masked(uint e, uint xi, uint v0) { return (e >= v0 && e - v0 < pc.k) ? x[xi] : 0.0; }

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
  const uint xi = e - v0;
  vec4 xl;
  vec4 xh;
  if (full && (xi & 3u) == 0u) {
    xl = x4[xi >> 2];
    xh = x4[(xi + 32u) >> 2];
  } else {
    for (uint t = 0u; t < 4u; ++t) {
      xl[t] = x_masked(e + t, xi + t, v0);
      xh[t] = x_masked(e + 32u + t, xi + 32u + t, v0);
    }
  }
  const vec4 ql = vec4(uvec4(q, q >> 8, q >> 16, q >> 24) & 15u);
  const vec4 qh = vec4(uvec4(q >> 4, q >> 12, q >> 20, q >> 28) & 15u);
  const vec2 dm = q4k_d_dmin(wb);
  const uvec3 sw = q4k_scale_words(wb);
  const uvec2 lo = q4k_scale_min_w(sw, 2u * c);
  const uvec2 hi = q4k_scale_min_w(sw, 2u * c + 1u);
  const vec4 ones = vec4(1.0);
  return dm.x * (float(lo.x) * dot(ql, xl) + float(hi.x) * dot(qh, xh)) -
         dm.y * (float(lo.y) * dot(xl, ones) + float(hi.y) * dot(xh, ones));
}

#else
#error "gemv.comp: define one of W_F32, W_F16, W_Q8_0, W_Q6_K, W_Q4_K"
#endif

#endif
