// Op-level recording: validates shapes and ranges, picks the registry kernel, splits large weight bindings
// (binding_split.h), computes push constants and the grid, and records the dispatches into a Recorder.
// Every error names the op, its label and the offending field with expected vs actual values.
// Families: this header (gemv, norms, elementwise, rope, dequant, embedding), ops_attention.h (KV cache
// append, attention), ops_sample.h (argmax, sampling), ops_moe.h (mixture-of-experts router, expert GEMVs,
// gated add); it includes the other three.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/registry.h"
#include "quant/dtype.h"
#include "quant/status.h"
#include "runtime/memory.h"
#include "runtime/ops_attention.h"  // IWYU pragma: export
#include "runtime/recorder.h"

namespace rdrr::runtime {

// Bytes of a packed 2-D weight [n_rows = outputs, k = inputs] of `dtype` stored in `layout`.
uint64_t packed_weight_bytes(quant::DType dtype, quant::Layout layout, uint64_t n_rows, uint64_t k);

struct GemvTuning {
  uint32_t local_size_x = 0;  // 0 = registry default (column split path: items of 32 outputs per workgroup)
  uint32_t num_rows = 0;      // row path: rows per workgroup (NUM_ROWS)
  uint32_t k_split = 0;       // column path: input slices per workgroup (local_size_y)
  uint32_t k_chunk = 0;       // column split path: inputs per split (0 = automatic)
  uint32_t diag = 0;          // vectorized Q4_K kernels: bench-only diagnostics (DIAG; wrong results), 0 = off
  uint32_t unroll = 0;        // vectorized Q4_K kernels: UNROLL (rows: items per iteration; column: inputs per slice)
  uint32_t decode = 0;        // vectorized Q4_K rows path: 0 auto (integer dot where the device has it), 1 f32
                              // decode (gemv_q4_k_vec), 2 integer dot (gemv_q4_k_dot)
  uint32_t row_groups = 0;    // gemv_q4_k_dot: row groups per workgroup (local_size_y), 0 = default
};

// y[n] = sum_k W[n, k] x[k]; W packed (F32, F16 plain row-major; Q8_0, Q6_K, Q4_K flat / row_wise;
// Q4_K column_wise), x f32[k], y f32[n_rows].
// Q4_K whose blocks start 16-byte aligned (w offset % 16 == 0) runs the vectorized kernels (gemv_q4k.comp):
// row_wise and flat with k % 256 == 0 in one dispatch per binding range; column_wise streams its blocks in
// split-K form when `scratch` holds the partial sums (gemv_scratch_bytes): one dispatch whose last workgroup
// per output group adds the splits in a fixed order (deterministic); a weight spanning several binding
// ranges adds a gemv_reduce.comp dispatch. The scratch needs no initialisation: its first 4 KiB are the
// merge tickets, zeroed by a small gemv_reduce dispatch at the scratch's first use in a recording and left at
// zero by every call; between calls in one recording nothing else may write it. Without scratch (or
// unaligned), the generic gemv.comp paths run.
struct GemvArgs {
  BufferRange w;
  quant::DType dtype = quant::DType::kF32;
  quant::Layout layout = quant::Layout::kRowWise;
  uint32_t n_rows = 0;
  uint32_t k = 0;
  BufferRange x;
  BufferRange y;
  BufferRange scratch;  // optional, f32 split-K partials (Q4_K column_wise); must not overlap w, x or y
  GemvTuning tuning;
  // Forced kernel (registry name, e.g. a graph's pinned choice); empty = the automatic choice above. A kernel
  // that is not a gemv kernel for dtype / layout, or whose path cannot run these args (gemv_q4_k_vec with
  // unaligned blocks, gemv_q4_k_col_split without a usable scratch), is an error, never a silent fallback.
  std::string_view kernel;
};
Status record_gemv(Recorder& rec, const GemvArgs& args, std::string_view label = "gemv");

// Zeroes the split-K tickets of `scratch` unless this recording already did. record_gemv does it itself
// before a scratch's first merging call; recording it ahead of several independent calls (each with its own
// scratch) keeps the barrier that orders it before them from separating the calls.
Status record_gemv_scratch_init(Recorder& rec, const BufferRange& scratch);

// Scratch bytes that let record_gemv use the split-K path with its automatic split size (Q4_K column_wise;
// 0 for every other dtype / layout). A smaller scratch makes the splits longer (fewer partials); one too
// small for a single split per binding range falls back to the generic kernel.
uint64_t gemv_scratch_bytes(quant::DType dtype, quant::Layout layout, uint32_t n_rows, uint32_t k);

// Prefill matmul: y[m, n] = sum_k x[m, k] W[n, k]; W packed like record_gemv's (F32, F16 row-major; Q8_0,
// Q6_K, Q4_K flat / row_wise; Q4_K column_wise), x f32 [m_rows, k], y f32 [m_rows, n_rows] (row-major),
// kernels/gemm.comp: shared-memory tiles of x and of W decoded from its blocks per K tile (no whole-tensor
// dequantization). Weights beyond one binding are split over several dispatches (row layouts: ranges of
// outputs; column_wise: ranges of inputs added into y). y must not overlap w or x. Tuning 0 = registry
// default (tile TM = local_size_y * rm rows, TN = local_size_x * rn outputs, tk inputs).
struct GemmTuning {
  uint32_t local_size_x = 0;
  uint32_t local_size_y = 0;
  uint32_t rm = 0;
  uint32_t rn = 0;
  uint32_t tk = 0;
  uint32_t dbuf = 0;  // *_cm kernels only: 1 = one shared-memory stage, 2 = two (gemm.comp DBUF)
  uint32_t wn = 0;    // *_cm kernels only: subgroups across N (local_size_y / wn across M)
};
struct GemmArgs {
  BufferRange w;
  quant::DType dtype = quant::DType::kF32;
  quant::Layout layout = quant::Layout::kRowWise;
  uint32_t n_rows = 0;  // N, outputs
  uint32_t k = 0;       // K, inputs
  uint32_t m_rows = 0;  // M, tokens
  BufferRange x;
  BufferRange y;
  GemmTuning tuning;
  std::string_view kernel;  // forced kernel (registry name); empty = automatic; a mismatch is an error
  // Opt in to the kernel's cooperative-matrix variant (<kernel>_cm: f16 products, f32 sums), run for more than
  // 32 rows where the device has DeviceCaps::coopmat_f16_16x16, the recorder allows it (Recorder::allows: the
  // pack pins it) and the tuning is automatic (the executor passes ExecutorOptions::cooperative_matrix).
  // Forcing a *_cm kernel needs the device support (kUnsupported otherwise).
  bool cooperative_matrix = false;
};
Status record_gemm(Recorder& rec, const GemmArgs& args, std::string_view label = "gemm");

// y = x / sqrt(mean(x^2) + eps) * (w + weight_offset) per row of d; weight_offset 0 (plain) or 1 (Gemma).
struct RmsNormArgs {
  BufferRange x;  // f32[n_rows * d]
  BufferRange w;  // f32[d]
  BufferRange y;  // f32[n_rows * d]; may equal x
  uint32_t d = 0;
  uint32_t n_rows = 0;
  float eps = 1e-6f;
  float weight_offset = 0.0f;
};
Status record_rms_norm(Recorder& rec, const RmsNormArgs& args, std::string_view label = "rms_norm");

// out = a + b, n f32 elements; out may equal a or b.
Status record_add(Recorder& rec, const BufferRange& a, const BufferRange& b, const BufferRange& out, uint32_t n,
                  std::string_view label = "add");

// Bias broadcast (add_bias kernel): out[r, j] = x[r, j] + bias[j] for n_rows rows of n_b f32 values; out may
// equal x. Prefill q / k / v projection biases.
Status record_add_bias(Recorder& rec, const BufferRange& x, const BufferRange& bias, const BufferRange& out, uint32_t n_b,
                       uint32_t n_rows, std::string_view label = "add_bias");

// Per-head RMSNorm over head_dim (Qwen3 / Gemma 3 q_norm and k_norm): x [n_tokens, n_heads, head_dim], one
// weight f32[head_dim] shared by all heads; weight_offset 0 (plain) or 1 ((1 + w), HF Gemma). The rms_norm
// kernel with rows = n_tokens * n_heads.
struct HeadNormArgs {
  BufferRange x;  // f32[n_tokens * n_heads * head_dim]
  BufferRange w;  // f32[head_dim]
  BufferRange y;  // same shape as x; may equal x
  uint32_t n_tokens = 0;
  uint32_t n_heads = 0;
  uint32_t head_dim = 0;
  float eps = 1e-6f;
  float weight_offset = 0.0f;
};
Status record_head_norm(Recorder& rec, const HeadNormArgs& args, std::string_view label = "head_norm");

// Residual add fused with the next RMSNorm, per row of d: x += res (in place), y = norm(x) * (w + offset).
// y must not overlap x or res.
struct AddRmsNormArgs {
  BufferRange x;    // f32[n_rows * d], the residual stream (read and written)
  BufferRange res;  // f32[n_rows * d], the branch output added to it
  BufferRange w;    // f32[d]
  BufferRange y;    // f32[n_rows * d]
  uint32_t d = 0;
  uint32_t n_rows = 0;
  float eps = 1e-6f;
  float weight_offset = 0.0f;
};
Status record_add_rms_norm(Recorder& rec, const AddRmsNormArgs& args, std::string_view label = "add_rms_norm");

// y = f(x, param) elementwise over n f32 elements with a unary kernel (registry op kUnary: softcap, ...), push
// {n, param, n_groups}; y may equal x. The graph's unary ops (graph/graph_ops.h Dispatch::kUnary) run through it.
Status record_unary(Recorder& rec, std::string_view kernel, const BufferRange& x, const BufferRange& y, uint32_t n,
                    float param, std::string_view label);

// y = cap * tanh(x / cap), n f32 elements, cap > 0 (Gemma 2 / 3 final logit soft-capping); y may equal x.
Status record_softcap(Recorder& rec, const BufferRange& x, const BufferRange& y, uint32_t n, float cap,
                      std::string_view label = "softcap");

enum class Activation : uint32_t { kSilu = 0, kGeluTanh = 1 };
// out = act(gate) * up, n f32 elements; out may equal gate or up.
Status record_glu(Recorder& rec, Activation act, const BufferRange& gate, const BufferRange& up, const BufferRange& out,
                  uint32_t n, std::string_view label = "glu");
// Row split of a fused qkv_proj output: qkv f32 [n_tokens, n_q + 2 n_kv] (q, then k, then v, per token) into
// q f32 [n_tokens, n_q], k and v f32 [n_tokens, n_kv]; none of q, k, v may overlap qkv.
Status record_split_qkv(Recorder& rec, const BufferRange& qkv, const BufferRange& q, const BufferRange& k,
                        const BufferRange& v, uint32_t n_q, uint32_t n_kv, uint32_t n_tokens, std::string_view label = "split_qkv");

// Split form for a fused gate_up projection: gate_up f32 [n_tokens, 2 * n_ff] (gate first, then up, per
// token), out f32 [n_tokens, n_ff] = act(gate) * up; out must not overlap gate_up.
Status record_glu_split(Recorder& rec, Activation act, const BufferRange& gate_up, const BufferRange& out, uint32_t n_ff,
                        uint32_t n_tokens, std::string_view label = "glu_split");

enum class RopeMode : uint32_t { kInterleaved = 0, kNeox = 1 };
struct RopeArgs {
  BufferRange x;    // f32[n_tokens * n_heads * head_dim]
  BufferRange pos;  // int32[n_tokens]
  BufferRange y;    // same shape as x; may equal x
  uint32_t n_tokens = 0;
  uint32_t n_heads = 0;
  uint32_t head_dim = 0;
  uint32_t n_rot = 0;  // rotated dims (even, <= head_dim); 0 = head_dim
  float theta_base = 10000.0f;
  float freq_scale = 1.0f;  // linear scaling (1 / factor) for the computed frequencies
  RopeMode mode = RopeMode::kNeox;
  // Optional f32[n_rot / 2] inverse frequencies from rope_frequencies() (runtime/rope_freqs.h: llama3, YaRN,
  // LongRoPE, linear); when set, theta = pos * inv_freq[i] and theta_base / freq_scale are not used.
  BufferRange inv_freq;
  float mscale = 1.0f;  // multiplies cos and sin (YaRN / LongRoPE attention factor)
  // Optional per-head RMSNorm before the rotation (kernels rope_norm / rope_freqs_norm: one workgroup of head_dim / 2
  // invocations per head; head_dim / 2 must not exceed the device's workgroup size).
  std::optional<HeadNormWeight> norm;
};
Status record_rope(Recorder& rec, const RopeArgs& args, std::string_view label = "rope");

// dst f32[n_blocks * block_elems] = exact decode of n_blocks blocks of dtype (Q4_K, Q6_K, Q8_0, F16 with
// one element per "block") starting at src.
Status record_dequant(Recorder& rec, quant::DType dtype, const BufferRange& src, const BufferRange& dst,
                      uint32_t n_blocks, std::string_view label = "dequant");

// Embedding gather: out[t, :] = row ids[t] of the packed table [vocab, dim], times scale (Gemma: sqrt(dim)).
// Tables: F32, F16 (row-major); Q8_0, Q6_K, Q4_K flat or row_wise; Q4_K column_wise. Ids >= vocab give
// zero rows. Tables beyond one binding are split over several dispatches.
struct EmbedArgs {
  BufferRange table;
  quant::DType dtype = quant::DType::kF32;
  quant::Layout layout = quant::Layout::kRowWise;
  uint32_t vocab = 0;
  uint32_t dim = 0;
  BufferRange ids;  // uint32[n_tokens]
  BufferRange out;  // f32[n_tokens * dim]
  uint32_t n_tokens = 0;
  float scale = 1.0f;
  std::string_view kernel;  // forced kernel (registry name); empty = automatic; a mismatch is an error
};
Status record_embed(Recorder& rec, const EmbedArgs& args, std::string_view label = "embed");

// The kernel `forced` names when it is a registry kernel of `op` accepting dtype / layout; else kUnsupported
// (kNotFound for an unknown name) with ctx in front. Shared by the ops' kernel overrides.
Result<const kernels::KernelInfo*> forced_kernel(std::string_view forced, kernels::Op op, quant::DType dtype,
                                                 quant::Layout layout, const std::string& ctx);

// Folds a 1-D count of workgroups into (x, y) within the device's maxComputeWorkGroupCount.
Result<std::array<uint32_t, 3>> fold_groups(Recorder& rec, uint64_t groups, std::string_view what);

}  // namespace rdrr::runtime

#include "runtime/ops_moe.h"        // IWYU pragma: export
#include "runtime/ops_sample.h"     // IWYU pragma: export
