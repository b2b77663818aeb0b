#version 450
// Token selection on the GPU: greedy argmax, or temperature / top-k sampling with a seeded counter-based
// RNG (Gumbel-max: token = argmax_i logit_i / T + G_i over the kept tokens, G_i = -log(-log(u_i)) with
// u_i = hash(seed, i); the same seed gives the same token on any device up to ~1e-5 score noise). Top-k
// keeps every token whose logit >= the k-th largest logit (ties kept: HF TopKLogitsWarper). Ties of the
// winning score go to the lowest index. NaN logits are never chosen; no finite candidate gives 0xffffffff.
// Three stages (defines), recorded by runtime/ops_sample.cpp:
//   STAGE_THRESHOLD (one workgroup): radix select (4 passes of 8 bits over order-preserving keys) of the
//     k-th largest logit -> scratch[0] (float bits).
//     Bindings: 0 logits (f32[n]), 1 scratch (uint).  Push: n, k, pad, pad.
//   STAGE_PARTIAL: workgroup g scans logits [g * chunk, (g + 1) * chunk) and writes its best (score, index)
//     to scratch[4 + 2g], scratch[5 + 2g] (reads the threshold from scratch[0] when use_threshold = 1).
//     Bindings: 0 logits, 1 scratch (read-write).  Push: n, chunk, use_threshold, inv_temp (0 = greedy),
//     seed_lo, seed_hi, n_groups, pad.
//   STAGE_FINAL (one workgroup): best of the n_partials pairs -> token[0].
//     Bindings: 0 scratch, 1 token (uint32[1]).  Push: n_partials, pad, pad, pad.
// Spec: 0 local_size_x (256).
// Grid: STAGE_PARTIAL ceil(n / chunk) workgroups folded into x and y; the other stages one workgroup.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x = 256, local_size_x_id = 0) in;

const uint kNone = 0xffffffffu;
#define kNegInf uintBitsToFloat(0xff800000u)

#if defined(STAGE_THRESHOLD)

layout(binding = 0) readonly buffer Logits { float logits[]; };
layout(binding = 1) writeonly buffer Scratch { uint scratch[]; };
layout(push_constant) uniform Push {
  uint n;
  uint k;
  uint pad0;
  uint pad1;
} pc;

shared uint hist[256];
shared uint sh_prefix;
shared uint sh_remaining;

// Order-preserving key: larger float -> larger key; -0 == +0; NaN lowest.
uint order_key(float f) {
  if (isnan(f)) return 0u;
  const uint b = floatBitsToUint(f == 0.0 ? 0.0 : f);
  return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}
float key_float(uint key) { return uintBitsToFloat((key & 0x80000000u) != 0u ? (key & 0x7fffffffu) : ~key); }

void main() {
  const uint tid = gl_LocalInvocationID.x;
  uint prefix = 0u;
  uint remaining = pc.k;  // rank (1-based, from the top) of the wanted key among keys matching prefix
  for (uint pass = 0u; pass < 4u; ++pass) {
    const uint shift = 24u - 8u * pass;
    const uint hi_mask = pass == 0u ? 0u : ~((1u << (shift + 8u)) - 1u);
    for (uint b = tid; b < 256u; b += gl_WorkGroupSize.x) hist[b] = 0u;
    barrier();
    for (uint i = tid; i < pc.n; i += gl_WorkGroupSize.x) {
      const uint key = order_key(logits[i]);
      if ((key & hi_mask) == prefix) atomicAdd(hist[(key >> shift) & 255u], 1u);
    }
    barrier();
    if (tid == 0u) {
      uint above = 0u;
      uint digit = 0u;
      for (int b = 255; b >= 0; --b) {
        if (above + hist[b] >= remaining) {
          digit = uint(b);
          break;
        }
        above += hist[b];
      }
      sh_prefix = prefix | (digit << shift);
      sh_remaining = remaining - above;
    }
    barrier();
    prefix = sh_prefix;
    remaining = sh_remaining;
  }
  if (tid == 0u) scratch[0] = floatBitsToUint(key_float(prefix));
}

#else  // STAGE_PARTIAL, STAGE_FINAL

shared float red_score[gl_WorkGroupSize.x];
shared uint red_index[gl_WorkGroupSize.x];

bool better(float s, uint i, float best_s, uint best_i) { return s > best_s || (s == best_s && i < best_i); }

// Workgroup-wide best (score, index); every invocation receives it. Uniform control flow only.
void workgroup_best(inout float s, inout uint i) {
  const float ms = subgroupMax(s);
  const uint mi = subgroupMin(s == ms ? i : kNone);
  if (subgroupElect()) {
    red_score[gl_SubgroupID] = ms;
    red_index[gl_SubgroupID] = mi;
  }
  barrier();
  s = red_score[0];
  i = red_index[0];
  for (uint k = 1u; k < gl_NumSubgroups; ++k) {
    if (better(red_score[k], red_index[k], s, i)) {
      s = red_score[k];
      i = red_index[k];
    }
  }
}

#if defined(STAGE_PARTIAL)

layout(binding = 0) readonly buffer Logits { float logits[]; };
layout(binding = 1) buffer Scratch { uint scratch[]; };
layout(push_constant) uniform Push {
  uint n;
  uint chunk;
  uint use_threshold;
  float inv_temp;
  uint seed_lo;
  uint seed_hi;
  uint n_groups;
  uint pad0;
} pc;

uint mix32(uint x) {  // "lowbias32" integer hash
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// Standard Gumbel noise of token i: u = (2m + 1) / 2^24 in (0, 1) is exact in f32, as is 1 - u; -log(u)
// uses a series for u close to 1 so the large-noise tail keeps its relative accuracy.
float gumbel(uint key, uint i) {
  const uint m = mix32(mix32(i) ^ key) >> 9;
  const float u = (float(m) + 0.5) * (1.0 / 8388608.0);
  const float v = 1.0 - u;
  const float nlu = v <= 0.03125 ? v * (1.0 + v * (0.5 + v * (1.0 / 3.0 + v * (0.25 + v * 0.2)))) : -log(u);
  return -log(nlu);
}

void main() {
  const uint g = folded_group_index();
  if (g >= pc.n_groups) return;
  const float thr = pc.use_threshold != 0u ? uintBitsToFloat(scratch[0]) : kNegInf;
  const uint key = mix32(pc.seed_lo ^ mix32(pc.seed_hi ^ 0x9e3779b9u));
  const uint end = min(pc.n, (g + 1u) * pc.chunk);
  float best = kNegInf;
  uint best_i = kNone;
  for (uint i = g * pc.chunk + gl_LocalInvocationID.x; i < end; i += gl_WorkGroupSize.x) {
    const float l = logits[i];
    if (isnan(l) || l < thr) continue;
    const float s = pc.inv_temp > 0.0 ? l * pc.inv_temp + gumbel(key, i) : l;
    if (s > best) {  // indices grow along the loop: strict > keeps the first of equal scores
      best = s;
      best_i = i;
    }
  }
  workgroup_best(best, best_i);
  if (gl_LocalInvocationID.x == 0u) {
    scratch[4u + 2u * g] = floatBitsToUint(best);
    scratch[5u + 2u * g] = best_i;
  }
}

#elif defined(STAGE_FINAL)

layout(binding = 0) readonly buffer Scratch { uint scratch[]; };
layout(binding = 1) writeonly buffer Token { uint token[]; };
layout(push_constant) uniform Push {
  uint n_partials;
  uint pad0;
  uint pad1;
  uint pad2;
} pc;

void main() {
  float best = kNegInf;
  uint best_i = kNone;
  for (uint p = gl_LocalInvocationID.x; p < pc.n_partials; p += gl_WorkGroupSize.x) {
    const float s = uintBitsToFloat(scratch[4u + 2u * p]);
    const uint i = scratch[5u + 2u * p];
    if (i != kNone && better(s, i, best, best_i)) {
      best = s;
      best_i = i;
    }
  }
  workgroup_best(best, best_i);
  if (gl_LocalInvocationID.x == 0u) token[0] = best_i;
}

#else
#error "sample.comp: define one of STAGE_THRESHOLD, STAGE_PARTIAL, STAGE_FINAL"
#endif
#endif
