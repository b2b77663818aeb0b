#version 450
// Attention of n_q query tokens at positions p0 .. p0 + n_q - 1 over one layer's KV cache: causal, GQA,
// optional sliding window and logit soft-capping, online softmax over tiles of local_size_x positions.
// Serves decode (n_q = 1, long KV: split-K over positions, SPLIT + attn_merge.comp) and prefill (n_q > 1).
//   q:   f32 [n_q, n_heads, head_dim]
//   K/V: [n_kv_heads][capacity][head_dim], F32 or F16 (include/kv.glsl); positions 0 .. p0 + n_q - 1 filled
//   out: f32 [n_q, n_heads, head_dim]
// Query t (position qp = p0 + t) of head h reads kv head h / (n_heads / n_kv_heads), positions j with
// lo <= j <= qp, lo = max(0, qp - window + 1) when window > 0 (the window counts the query itself: HF and
// llama.cpp sliding windows), else 0. s_j = scale * q . k_j; with softcap > 0, s_j = softcap * tanh(s_j /
// softcap) (Gemma 2 attn_logit_softcapping); out = sum_j softmax(s)_j v_j.
// Workgroup g = (t * n_heads + h) * n_splits + split covers positions [lo + split * chunk_len,
// min(qp + 1, lo + (split + 1) * chunk_len)); chunk_len is a multiple of local_size_x (or >= the range when
// n_splits = 1). Without SPLIT it writes out; with SPLIT it writes partial (m, l, o[head_dim]) =
// (max score, sum exp(s - m), sum exp(s - m) v) to partials[g * (head_dim + 2)] (empty chunk: m = -3e38,
// l = 0, o = 0), and attn_merge.comp combines the splits.
// Per tile: invocation i scores position j0 + i (dot over head_dim in f32), workgroup max and sum of
// exp, then invocation w rescales and accumulates output pair w (and w + local_size_x, ...).
// Defines: one of KV_F32, KV_F16; optional SPLIT.
// Bindings: 0 q, 1 k_cache, 2 v_cache, 3 out (SPLIT: partials).
// Push: n_q, n_heads, n_kv_heads, head_dim (even, <= 512), capacity, p0, window, n_splits, chunk_len, scale,
//   softcap, n_groups.
// Spec: 0 local_size_x (128) = positions per tile.
// Grid: n_q * n_heads * n_splits workgroups, folded into x and y.
#include "common.glsl"

layout(local_size_x = 128, local_size_x_id = 0) in;
#include "reduce.glsl"

#define MAX_HEAD_DIM 512u
const float kNegBig = -3.0e38;  // "no score yet": exp(kNegBig - m) = 0 for any real m, never inf - inf

layout(binding = 0) readonly buffer Q { float q[]; };
#if defined(KV_F32)
layout(binding = 1) readonly buffer K { float kc[]; };
layout(binding = 2) readonly buffer V { float vc[]; };
#else
layout(binding = 1) readonly buffer K { uint kc[]; };
layout(binding = 2) readonly buffer V { uint vc[]; };
#endif
layout(binding = 3) writeonly buffer Out { float outv[]; };
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

shared float q_s[MAX_HEAD_DIM];
shared vec2 o_acc[MAX_HEAD_DIM / 2u];  // pair w is owned by invocation w % local_size_x
shared float p_s[gl_WorkGroupSize.x];   // exp(s - m) of the current tile

float score(uint row, uint pairs) {
  float dot_qk = 0.0;
  for (uint w = 0u; w < pairs; ++w) {
    const vec2 k = k_pair(row, pairs, w);
    dot_qk += q_s[2u * w] * k.x + q_s[2u * w + 1u] * k.y;
  }
  float s = dot_qk * pc.scale;
  // tanh saturates to +-1 in f32 well before |u| = 10; the clamp avoids inf / inf in some tanh lowerings.
  if (pc.softcap > 0.0) s = pc.softcap * tanh(clamp(s / pc.softcap, -10.0, 10.0));
  return s;
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;  // whole workgroups only: barriers below stay in uniform control flow
  const uint tid = gl_LocalInvocationID.x;
  const uint tile = gl_WorkGroupSize.x;
  const uint split = g % pc.n_splits;
  const uint qh = g / pc.n_splits;  // t * n_heads + h
  const uint h = qh % pc.n_heads;
  const uint qp = pc.p0 + qh / pc.n_heads;
  const uint kv_base = (h / (pc.n_heads / pc.n_kv_heads)) * pc.capacity;
  const uint pairs = pc.head_dim >> 1;
  const uint lo = (pc.window != 0u && qp + 1u > pc.window ? qp + 1u - pc.window : 0u) + split * pc.chunk_len;
  const uint end = lo > qp ? lo : min(qp + 1u, lo + pc.chunk_len);  // [lo, end), possibly empty

  for (uint d = tid; d < pc.head_dim; d += tile) q_s[d] = q[qh * pc.head_dim + d];
  for (uint w = tid; w < pairs; w += tile) o_acc[w] = vec2(0.0);
  barrier();

  float m = kNegBig;
  float l = 0.0;
  for (uint j0 = lo; j0 < end; j0 += tile) {
    const uint n = min(tile, end - j0);
    const float s = tid < n ? score(kv_base + j0 + tid, pairs) : kNegBig;
    const float m_new = max(m, workgroup_max(s));
    const float p = tid < n ? exp(s - m_new) : 0.0;
    p_s[tid] = p;
    const float corr = exp(m - m_new);
    l = l * corr + workgroup_sum(p);  // its barriers also publish p_s
    m = m_new;
    for (uint w = tid; w < pairs; w += tile) {
      vec2 acc = o_acc[w] * corr;
      for (uint j = 0u; j < n; ++j) acc += p_s[j] * v_pair(kv_base + j0 + j, pairs, w);
      o_acc[w] = acc;
    }
    barrier();  // p_s is rewritten by the next tile
  }

#if defined(SPLIT)
  const uint base = g * (pc.head_dim + 2u);
  if (tid == 0u) {
    outv[base] = m;
    outv[base + 1u] = l;
  }
  for (uint w = tid; w < pairs; w += tile) {
    outv[base + 2u + 2u * w] = o_acc[w].x;
    outv[base + 3u + 2u * w] = o_acc[w].y;
  }
#else
  const float inv_l = 1.0 / l;
  for (uint w = tid; w < pairs; w += tile) {
    outv[qh * pc.head_dim + 2u * w] = o_acc[w].x * inv_l;
    outv[qh * pc.head_dim + 2u * w + 1u] = o_acc[w].y * inv_l;
  }
#endif
}
