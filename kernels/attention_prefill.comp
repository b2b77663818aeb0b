#version 450
// Prefill attention: n_q query tokens at positions p0 .. p0 + n_q - 1 over one layer's KV cache (causal, GQA,
// optional sliding window and logit soft-capping), the n_q > 1 case of attention.comp (same bindings and push
// constants, no split) organised as flash attention: a workgroup takes ROWS query rows of one KV head and walks
// the positions they need in tiles of BK, so each K / V tile is read once for all its rows (attention.comp reads
// the whole context once per query row).
//   q:   f32 [n_q, n_heads, head_dim]; K/V: [n_kv_heads][capacity][head_dim] F32 or F16 (include/kv.glsl)
//   out: f32 [n_q, n_heads, head_dim]
// Rows: the G = n_heads / n_kv_heads query heads of KV head hk, token-major: row r of KV head hk is token
// t = r / G, head h = hk * G + r % G (r < n_q * G). Workgroup g covers KV head hk = g % n_kv_heads and rows
// [ROWS * (g / n_kv_heads), + ROWS). Token t (position qp = p0 + t) reads positions lo(t) .. qp, lo(t) =
// qp - window + 1 with a sliding window (else 0); s = scale * q . k, softcap * tanh(s / softcap) with
// soft-capping; out = sum softmax(s)_j v_j (online softmax over the tiles, as attention.comp).
// Invocations: 4 per row (ROWS = local_size_x / 4); lane c of a row scores positions j0 + c + 4 i of a tile
// (i < BK / 4) from the staged q and K (16-byte shared reads; K rows padded by one vector against bank
// conflicts) and owns the output vectors c + 4 i (i < ceil(head_dim / 16)). The row's max and sum go through
// shared memory (no subgroup operations: any subgroup size). Tile positions past the last filled one are
// staged as zeros (an unwritten cache slot may hold NaN) and masked positions get p = 0.
// Defines: one of KV_F32, KV_F16.
// Bindings: 0 q, 1 k_cache, 2 v_cache, 3 out.
// Push: as attention.comp (n_splits 1, chunk_len unused; n_groups = workgroups).
// Spec: 0 local_size_x (128, a multiple of 4), 1 HEAD_DIM (128; a multiple of 4, <= 256), 2 BK (16; a multiple
//   of 4). Shared memory: 4 * (ROWS * (HEAD_DIM + 4) + BK * (2 HEAD_DIM + 4) + ROWS * (BK + 1) + 2 local_size_x)
//   bytes
//   (the runtime picks local_size_x and BK to fit the device).
// Grid: n_kv_heads * ceil(n_q * G / ROWS) workgroups, folded into x and y.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 128;
layout(constant_id = 2) const uint BK = 16;

const uint NT = gl_WorkGroupSize.x;
const uint ROWS = NT / 4u;
const uint D4 = HEAD_DIM / 4u;      // vectors per row
const uint QS = D4 + 1u;            // padded row strides (vectors)
const uint KS = D4 + 1u;
const uint PS = BK + 1u;            // padded p_s row stride
const uint SPL = BK / 4u;           // scores per invocation per tile
const uint OPL = (D4 + 3u) / 4u;    // output vectors per invocation
const float kNegBig = -3.0e38;      // "no score yet": exp(kNegBig - m) = 0 for any real m

layout(binding = 0) readonly buffer Q { vec4 q4[]; };
#if defined(KV_F32)
layout(binding = 1) readonly buffer K { float kc[]; };
layout(binding = 2) readonly buffer V { float vc[]; };
#else
layout(binding = 1) readonly buffer K { uint kc[]; };
layout(binding = 2) readonly buffer V { uint vc[]; };
#endif
layout(binding = 3) writeonly buffer Out { vec4 out4[]; };
#include "kv.glsl"

layout(push_constant) uniform Push {
  uint n_q;
  uint n_heads;
  uint n_kv_heads;
  uint head_dim;
  uint capacity;
  uint p0;
  uint window;
  uint n_splits;
  uint chunk_len;
  float scale;
  float softcap;
  uint n_groups;
} pc;

shared vec4 q_s[ROWS * QS];
shared vec4 k_s[BK * KS];
shared vec4 v_s[BK * D4];
shared float p_s[ROWS * PS];
shared float max_s[NT];
shared float sum_s[NT];

uint lo_of(uint qp) { return pc.window != 0u && qp + 1u > pc.window ? qp + 1u - pc.window : 0u; }

// Positions [j0, j0 + BK) of KV head hk into k_s / v_s; positions >= filled_end as zeros.
void stage_tile(uint kv_base, uint j0, uint filled_end, uint tid) {
  const uint pairs = HEAD_DIM / 2u;
  for (uint e = tid; e < BK * D4; e += NT) {
    const uint j = e / D4, c = e % D4;
    vec4 kv = vec4(0.0), vv = vec4(0.0);
    if (j0 + j < filled_end) {
      const uint row = kv_base + j0 + j;
      kv = vec4(k_pair(row, pairs, 2u * c), k_pair(row, pairs, 2u * c + 1u));
      vv = vec4(v_pair(row, pairs, 2u * c), v_pair(row, pairs, 2u * c + 1u));
    }
    k_s[j * KS + c] = kv;
    v_s[j * D4 + c] = vv;
  }
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // whole workgroups only: barriers below stay in uniform control flow
  const uint tid = gl_LocalInvocationID.x;
  const uint row = tid >> 2u, lane = tid & 3u;
  const uint group_heads = pc.n_heads / pc.n_kv_heads;
  const uint hk = g % pc.n_kv_heads;
  const uint r0 = (g / pc.n_kv_heads) * ROWS;
  const uint n_rows = pc.n_q * group_heads;
  const uint r = r0 + row;
  const bool row_live = r < n_rows;
  const uint t = row_live ? r / group_heads : 0u;
  const uint h = hk * group_heads + (row_live ? r % group_heads : 0u);
  const uint qp = pc.p0 + t;
  const uint lo = lo_of(qp);
  const uint kv_base = hk * pc.capacity;

  // The workgroup's positions: from its first token's lo to its last token's position.
  const uint t_first = r0 / group_heads;
  const uint t_last = (min(r0 + ROWS, n_rows) - 1u) / group_heads;
  const uint j_begin = lo_of(pc.p0 + t_first);
  const uint j_end = pc.p0 + t_last + 1u;  // also the end of the filled positions this workgroup reads

  for (uint e = tid; e < ROWS * D4; e += NT) {
    const uint rr = e / D4, c = e % D4, rg = r0 + rr;
    vec4 v = vec4(0.0);
    if (rg < n_rows) {
      const uint tt = rg / group_heads, hh = hk * group_heads + rg % group_heads;
      v = q4[(tt * pc.n_heads + hh) * D4 + c];
    }
    q_s[rr * QS + c] = v;
  }

  vec4 o[OPL];
  [[unroll]] for (uint i = 0u; i < OPL; ++i) o[i] = vec4(0.0);
  float m = kNegBig;
  float l = 0.0;
  for (uint j0 = j_begin; j0 < j_end; j0 += BK) {
    barrier();  // the previous tile's k_s / v_s / p_s are no longer read (and q_s is written, first time)
    stage_tile(kv_base, j0, j_end, tid);
    barrier();
    float s[SPL];
    [[unroll]] for (uint i = 0u; i < SPL; ++i) s[i] = 0.0;
    for (uint c = 0u; c < D4; ++c) {
      const vec4 qv = q_s[row * QS + c];
      [[unroll]] for (uint i = 0u; i < SPL; ++i) s[i] += dot(qv, k_s[(lane + 4u * i) * KS + c]);
    }
    float local_max = kNegBig;
    [[unroll]] for (uint i = 0u; i < SPL; ++i) {
      const uint j = j0 + lane + 4u * i;
      float x = s[i] * pc.scale;
      // tanh saturates to +-1 in f32 well before |u| = 10; the clamp avoids inf / inf in some tanh lowerings.
      if (pc.softcap > 0.0) x = pc.softcap * tanh(clamp(x / pc.softcap, -10.0, 10.0));
      const bool valid = row_live && j >= lo && j <= qp;
      s[i] = valid ? x : kNegBig;
      local_max = max(local_max, s[i]);
    }
    max_s[tid] = local_max;
    barrier();
    const uint b = row * 4u;
    const float m_new = max(m, max(max(max_s[b], max_s[b + 1u]), max(max_s[b + 2u], max_s[b + 3u])));
    float local_sum = 0.0;
    [[unroll]] for (uint i = 0u; i < SPL; ++i) {
      const float p = s[i] > kNegBig ? exp(s[i] - m_new) : 0.0;
      p_s[row * PS + lane + 4u * i] = p;
      local_sum += p;
    }
    sum_s[tid] = local_sum;
    barrier();
    const float corr = exp(m - m_new);
    l = l * corr + ((sum_s[b] + sum_s[b + 1u]) + (sum_s[b + 2u] + sum_s[b + 3u]));
    m = m_new;
    [[unroll]] for (uint i = 0u; i < OPL; ++i) o[i] *= corr;
    for (uint j = 0u; j < BK; ++j) {
      const float p = p_s[row * PS + j];
      [[unroll]] for (uint i = 0u; i < OPL; ++i) {
        const uint c = lane + 4u * i;
        if (c < D4) o[i] += p * v_s[j * D4 + c];
      }
    }
  }

  if (!row_live) return;
  const float inv_l = 1.0 / l;
  [[unroll]] for (uint i = 0u; i < OPL; ++i) {
    const uint c = lane + 4u * i;
    if (c < D4) out4[(t * pc.n_heads + h) * D4 + c] = o[i] * inv_l;
  }
}
