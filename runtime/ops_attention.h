// KV cache append and attention (decode and prefill), recorded into a Recorder. See kernels/kv_append.comp,
// kernels/attention.comp and kernels/attn_merge.comp for the exact math and layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "quant/dtype.h"
#include "quant/status.h"
#include "runtime/memory.h"
#include "runtime/recorder.h"

namespace rdrr::runtime {

// One layer of a KV cache (runtime/kv_cache.h makes them): K and V each [n_kv_heads][capacity][head_dim] of
// dtype F16 (halves, round to nearest) or F32; cache position p holds the token at absolute position p.
struct KvLayer {
  BufferRange k;
  BufferRange v;
  quant::DType dtype = quant::DType::kF16;
  uint32_t n_kv_heads = 0;
  uint32_t head_dim = 0;  // even
  uint32_t capacity = 0;  // positions
};

// Bytes of one of K / V of one layer.
uint64_t kv_layer_bytes(quant::DType dtype, uint32_t n_kv_heads, uint32_t head_dim, uint32_t capacity);

// A per-head RMSNorm applied before a rotation, in the same dispatch (Qwen3's / Gemma 3's q_norm and k_norm:
// kernels rope_norm, rope_freqs_norm, kv_append_norm_rope_*): x / sqrt(mean(x^2) + eps) * (w + weight_offset) over
// each head's head_dim values (record_head_norm's math).
struct HeadNormWeight {
  BufferRange w;  // f32[head_dim]
  float eps = 1e-6f;
  float weight_offset = 0.0f;
};

// K rotated on its way into the cache (kernels kv_append_rope_*): record_rope's arithmetic (kernels/include/rope.glsl),
// with the same fields.
struct KvRope {
  BufferRange pos;             // int32[n_tokens]
  BufferRange inv_freq;        // optional f32[n_rot / 2] (runtime/rope_freqs.h); empty: computed frequencies
  uint32_t n_rot = 0;          // rotated dims (even, <= head_dim); 0 = head_dim
  bool interleaved = false;    // GGUF llama pairs (2i, 2i + 1); false: neox / rotate-half (i, i + n_rot / 2)
  float theta_base = 10000.0f;
  float freq_scale = 1.0f;     // computed frequencies only
  float mscale = 1.0f;
  std::optional<HeadNormWeight> k_norm;  // K RMS-normed per head before the rotation (kernels kv_append_norm_rope_*)
};

// Writes k_src / v_src f32 [n_tokens, n_kv_heads, head_dim] into positions p0 .. p0 + n_tokens - 1; with `rope`,
// K is rotated first (one dispatch: no rotated copy of K, no barrier between rotation and append), and RMS-normed per
// head before that with rope->k_norm.
struct KvAppendArgs {
  KvLayer kv;
  BufferRange k_src;
  BufferRange v_src;
  uint32_t n_tokens = 0;
  uint32_t p0 = 0;
  std::optional<KvRope> rope;
};
Status record_kv_append(Recorder& rec, const KvAppendArgs& args, std::string_view label = "kv_append");

struct AttentionTuning {
  uint32_t n_splits = 0;      // split-K chunks over positions; 0 = automatic (capped by the scratch size)
  uint32_t local_size_x = 0;  // positions per tile = workgroup size; 0 = registry default
  uint32_t decode = 0;        // one query (n_q = 1): 0 auto (attention_decode.comp where it applies), 1 the tiled
                              // kernel (attention.comp), 2 attention_decode.comp (an error where it cannot run)
  uint32_t prefill = 0;       // several queries: 0 auto (attention_prefill.comp where it applies: no explicit
                              // split), 1 attention.comp, 2 attention_prefill.comp (an error where it cannot run);
                              // its local_size_x is the workgroup size (4 invocations per query row)
  uint32_t prefill_positions = 0;  // attention_prefill.comp's positions per tile (BK); 0 = the largest that fits
};

// out = softmax(scale * q K^T [soft-capped]) V for n_q queries at positions p0 .. p0 + n_q - 1, causal, GQA
// (head h reads kv head h / (n_heads / n_kv_heads)), optional sliding window (window positions including
// the query's own; 0 = off) and logit soft-capping (softcap > 0: s = softcap * tanh(s / softcap)). The cache
// must already hold positions 0 .. p0 + n_q - 1 (append first). scale is head_dim^-0.5 or
// query_pre_attn_scalar^-0.5 (Gemma), chosen by the caller.
// Split-K (decode with long contexts): n_splits > 1 writes partials to scratch (attention_scratch_bytes: a
// ticket per head, then the partials) and they are merged: by the decode kernel's last workgroup per head in the
// same dispatch (its tickets zeroed once per recording, at the scratch's first use), else by an attn_merge pass.
// Automatic splitting needs a scratch range and never exceeds it; nothing else may write the scratch between
// two calls of one recording.
struct AttentionArgs {
  BufferRange q;    // f32 [n_q, n_heads, head_dim]
  KvLayer kv;
  BufferRange out;  // f32 [n_q, n_heads, head_dim]; must not overlap q
  BufferRange scratch;  // optional, f32 partials for split-K
  uint32_t n_q = 0;
  uint32_t n_heads = 0;
  uint32_t p0 = 0;
  float scale = 0.0f;
  uint32_t window = 0;
  float softcap = 0.0f;
  AttentionTuning tuning;
};
Status record_attention(Recorder& rec, const AttentionArgs& args, std::string_view label = "attention");

// Scratch bytes record_attention needs for n_splits chunks (0 when n_splits <= 1).
uint64_t attention_scratch_bytes(uint32_t n_q, uint32_t n_heads, uint32_t head_dim, uint32_t n_splits);

}  // namespace rdrr::runtime
