#version 450
// Decode attention: one query token (position qp = p0) per head over one layer's KV cache, the n_q = 1 case of
// attention.comp (same bindings, push constants and split partials, merged by attn_merge.comp) organised for
// bandwidth: the positions of a workgroup's range go to its subgroups in blocks of one position per lane.
// For a block, lane i scores position b0 + i over the whole head (its K row read as 16-byte vectors), the
// subgroup updates its online softmax (subgroupMax / subgroupAdd), then every lane adds p_t * V[t] for the
// block's positions t over the value pairs it owns (PAIRS_PER_LANE consecutive pairs; V rows read by the whole
// subgroup, coalesced). The subgroups' (m, l, o) are combined through shared memory at the end.
//   q:   f32 [n_heads, head_dim]; K/V: [n_kv_heads][capacity][head_dim] F32 or F16 (include/kv.glsl)
//   out: f32 [n_heads, head_dim] (SPLIT: partials (m, l, o[head_dim]) per (head, split), as attention.comp,
//     from float part_base of the scratch binding)
// SPLIT with ticket_base != ~0: the last workgroup of each head to finish merges its n_splits partials (as
// attn_merge.comp, in split order) and writes out[head]: one dispatch. "Last" is counted on a ticket per head
// (uint ticket_base + h of the scratch; one atomicAdd per workgroup). Tickets are zero at rest: the last
// arrival stores zero again, and the runtime zeroes them (attn_merge with no splits) before a scratch's first
// use in a command buffer. A workgroup that finds its ticket at n_splits or more (something else wrote the
// scratch) writes NaN to the head's outputs instead of a wrong result.
// Head h reads kv head h / (n_heads / n_kv_heads), positions lo .. qp (lo = qp - window + 1 with a sliding
// window), scores scale * q . k (softcap * tanh(s / softcap) with soft-capping). Workgroup g = split * n_heads +
// h covers [lo + split * chunk_len, min(qp + 1, lo + (split + 1) * chunk_len)) and writes partial h * n_splits +
// split.
// Defines: one of KV_F32, KV_F16; optional SPLIT.
// Bindings: 0 q, 1 k_cache, 2 v_cache, 3 out (SPLIT: scratch: tickets, partials; coherent), SPLIT: 4 out.
//   The K binding is also read as 16-byte vectors: its offset and every row must be 16-byte aligned
//   (head_dim % 8 == 0 for F16, % 4 for F32).
// Push: as attention.comp (n_q must be 1); SPLIT adds ticket_base (~0: partials only, merged by attn_merge),
//   part_base and 2 pad words.
// Spec: 0 local_size_x (128), 1 HEAD_DIM (128; <= 256), 2 PAIRS_PER_LANE (2; >= head_dim / 2 / subgroup size).
// Grid: n_heads * n_splits workgroups, folded into x and y.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 128;
layout(constant_id = 2) const uint PAIRS_PER_LANE = 2;

#define MAX_HEAD_DIM 256u
#define MAX_SUBGROUPS 16u  // local_size_x (<= 128) / the smallest subgroup (8)
#define VCHUNK 8u          // positions whose V pairs are loaded together (divides every subgroup size >= 8)
const float kNegBig = -3.0e38;  // "no score yet": exp(kNegBig - m) = 0 for any real m, never inf - inf

layout(binding = 0) readonly buffer Q { float q[]; };
#if defined(KV_F32)
layout(binding = 1) readonly buffer K { float kc[]; };
layout(binding = 1) readonly buffer K4 { vec4 kc4[]; };
layout(binding = 2) readonly buffer V { float vc[]; };
#else
layout(binding = 1) readonly buffer K { uint kc[]; };
layout(binding = 1) readonly buffer K4 { uvec4 kc4[]; };
layout(binding = 2) readonly buffer V { uint vc[]; };
#endif
#if defined(SPLIT)
layout(binding = 3) coherent buffer Part { float outv[]; };  // tickets (uint, from 0), partials from part_base
layout(binding = 3) coherent buffer Cnt { uint cnt[]; };     // same binding
layout(binding = 4) writeonly buffer Final { float final_out[]; };
#else
layout(binding = 3) writeonly buffer Out { float outv[]; };
#endif
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
#if defined(SPLIT)
  uint ticket_base;  // ~0: no merge here
  uint part_base;
  uint pad0;
  uint pad1;
#endif
} pc;

shared vec4 q_s[MAX_HEAD_DIM / 4u];
shared vec2 o_s[MAX_SUBGROUPS * (MAX_HEAD_DIM / 2u)];
shared vec2 ml_s[MAX_SUBGROUPS];
shared uint ticket_s;

// scale * q . k_row (soft-capped), the K row read as 16-byte vectors.
float score(uint row) {
  float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
#if defined(KV_F16)
  const uint base = row * (HEAD_DIM / 8u);  // 8 halves per uvec4
  [[unroll]] for (uint c = 0u; c < HEAD_DIM / 8u; ++c) {
    const uvec4 w = kc4[base + c];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      const vec2 k = unpackHalf2x16(w[i]);
      const vec4 qq = q_s[2u * c + (i >> 1)];
      const vec2 qp = (i & 1u) == 0u ? qq.xy : qq.zw;
      acc[i] = fma(qp.x, k.x, fma(qp.y, k.y, acc[i]));
    }
  }
#else
  const uint base = row * (HEAD_DIM / 4u);
  [[unroll]] for (uint c = 0u; c < HEAD_DIM / 4u; ++c) {
    const vec4 k = kc4[base + c];
    const vec4 qq = q_s[c];
    acc[c & 3u] += dot(qq, k);
  }
#endif
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) * pc.scale;
  // tanh saturates to +-1 in f32 well before |u| = 10; the clamp avoids inf / inf in some tanh lowerings.
  if (pc.softcap > 0.0) s = pc.softcap * tanh(clamp(s / pc.softcap, -10.0, 10.0));
  return s;
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // whole workgroups only: barriers below stay in uniform control flow
  const uint tid = gl_LocalInvocationID.x;
  // Split-major order: the heads sharing a KV head run side by side, so their K / V reads hit in L2.
  const uint split = g / pc.n_heads;
  const uint h = g % pc.n_heads;
  const uint row_out = h * pc.n_splits + split;  // partial slot (attn_merge reads [head][split])
  const uint qp = pc.p0;
  const uint kv_base = (h / (pc.n_heads / pc.n_kv_heads)) * pc.capacity;
  const uint pairs = HEAD_DIM / 2u;
  const uint lo = (pc.window != 0u && qp + 1u > pc.window ? qp + 1u - pc.window : 0u) + split * pc.chunk_len;
  const uint end = lo > qp ? lo : min(qp + 1u, lo + pc.chunk_len);  // [lo, end), possibly empty

  for (uint d = tid; d < HEAD_DIM / 4u; d += gl_WorkGroupSize.x) {
    q_s[d] = vec4(q[h * HEAD_DIM + 4u * d], q[h * HEAD_DIM + 4u * d + 1u], q[h * HEAD_DIM + 4u * d + 2u],
                  q[h * HEAD_DIM + 4u * d + 3u]);
  }
  barrier();

  const uint sg = gl_SubgroupSize;
  const uint lane = gl_SubgroupInvocationID;
  const uint sid = gl_SubgroupID;
  const uint w0 = lane * PAIRS_PER_LANE;  // first value pair this lane owns
  float m = kNegBig;
  float l = 0.0;
  vec2 o[PAIRS_PER_LANE];
  [[unroll]] for (uint i = 0u; i < PAIRS_PER_LANE; ++i) o[i] = vec2(0.0);
  for (uint b0 = lo + sid * sg; b0 < end; b0 += gl_NumSubgroups * sg) {
    const uint n = min(sg, end - b0);
    const float s = lane < n ? score(kv_base + b0 + lane) : kNegBig;
    const float m_new = max(m, subgroupMax(s));
    const float p = lane < n ? exp(s - m_new) : 0.0;
    const float corr = exp(m - m_new);
    l = l * corr + subgroupAdd(p);
    m = m_new;
    [[unroll]] for (uint i = 0u; i < PAIRS_PER_LANE; ++i) o[i] *= corr;
    // VCHUNK positions per step, all their V pairs loaded before any is used (one memory round trip per
    // step, not per position). Positions past n (a partial last block) have p = 0 and load nothing; the
    // shuffle index stays below the subgroup size (a multiple of VCHUNK).
    for (uint t = 0u; t < n; t += VCHUNK) {
      float pt[VCHUNK];
      [[unroll]] for (uint u = 0u; u < VCHUNK; ++u) pt[u] = subgroupShuffle(p, t + u);
      vec2 v[PAIRS_PER_LANE * VCHUNK];
      [[unroll]] for (uint i = 0u; i < PAIRS_PER_LANE; ++i) {
        [[unroll]] for (uint u = 0u; u < VCHUNK; ++u) {
          v[i * VCHUNK + u] = w0 + i < pairs && t + u < n ? v_pair(kv_base + b0 + t + u, pairs, w0 + i) : vec2(0.0);
        }
      }
      [[unroll]] for (uint i = 0u; i < PAIRS_PER_LANE; ++i) {
        [[unroll]] for (uint u = 0u; u < VCHUNK; ++u) o[i] += pt[u] * v[i * VCHUNK + u];
      }
    }
  }

  // Combine the subgroups: M = max m_s, L = sum l_s e^(m_s - M), o = sum o_s e^(m_s - M).
  if (subgroupElect()) ml_s[sid] = vec2(m, l);
  [[unroll]] for (uint i = 0u; i < PAIRS_PER_LANE; ++i) {
    if (w0 + i < pairs) o_s[sid * (MAX_HEAD_DIM / 2u) + w0 + i] = o[i];
  }
  barrier();
  float big_m = kNegBig;
  for (uint k = 0u; k < gl_NumSubgroups; ++k) big_m = max(big_m, ml_s[k].x);
  float big_l = 0.0;
  for (uint k = 0u; k < gl_NumSubgroups; ++k) big_l += ml_s[k].y * exp(ml_s[k].x - big_m);
#if defined(SPLIT)
  const uint base = pc.part_base + row_out * (HEAD_DIM + 2u);
  if (tid == 0u) {
    outv[base] = big_m;
    outv[base + 1u] = big_l;
  }
#else
  const float inv_l = 1.0 / big_l;
#endif
  for (uint w = tid; w < pairs; w += gl_WorkGroupSize.x) {
    vec2 acc = vec2(0.0);
    for (uint k = 0u; k < gl_NumSubgroups; ++k) acc += o_s[k * (MAX_HEAD_DIM / 2u) + w] * exp(ml_s[k].x - big_m);
#if defined(SPLIT)
    outv[base + 2u + 2u * w] = acc.x;
    outv[base + 3u + 2u * w] = acc.y;
#else
    outv[h * HEAD_DIM + 2u * w] = acc.x * inv_l;
    outv[h * HEAD_DIM + 2u * w + 1u] = acc.y * inv_l;
#endif
  }
#if defined(SPLIT)
  if (pc.ticket_base == 0xffffffffu) return;
  // The last workgroup of head h merges its partials (attn_merge.comp's sums, in split order).
  memoryBarrierBuffer();
  barrier();
  if (tid == 0u) {
    const uint slot = pc.ticket_base + h;
    const uint seen = atomicAdd(cnt[slot], 1u);
    if (seen == pc.n_splits - 1u) cnt[slot] = 0u;  // at rest again for the next call
    ticket_s = seen;
  }
  barrier();
  const uint seen = ticket_s;
  if (seen < pc.n_splits - 1u) return;  // uniform; seen >= n_splits: the ticket was not at rest (below)
  memoryBarrierBuffer();
  const uint stride = HEAD_DIM + 2u;
  const uint head_base = pc.part_base + h * pc.n_splits * stride;
  float mm = outv[head_base];
  for (uint t = 1u; t < pc.n_splits; ++t) mm = max(mm, outv[head_base + t * stride]);
  float ll = 0.0;
  for (uint t = 0u; t < pc.n_splits; ++t) ll += outv[head_base + t * stride + 1u] * exp(outv[head_base + t * stride] - mm);
  const float inv_ll = 1.0 / ll;
  for (uint d = tid; d < HEAD_DIM; d += gl_WorkGroupSize.x) {
    float o = 0.0;
    for (uint t = 0u; t < pc.n_splits; ++t) o += outv[head_base + t * stride + 2u + d] * exp(outv[head_base + t * stride] - mm);
    final_out[h * HEAD_DIM + d] = seen >= pc.n_splits ? uintBitsToFloat(0x7fc00000u) : o * inv_ll;
  }
#endif
}
