// Mixture-of-experts ops (Mixtral, Qwen2-MoE, Qwen3-MoE), recorded into a Recorder: the router (softmax, top-k,
// optional renormalisation), expert GEMVs over a stacked expert weight with expert indirection, and the gated
// add of Qwen2-MoE's shared expert. See kernels/moe_route.comp, kernels/moe_gemv.comp and
// kernels/gated_add.comp for the exact math and layouts. Every error names the op, its label and the field.
//
// Decode (m_rows = 1) reads only the selected experts' rows. Prefill runs the same kernels with m_rows = the
// prompt's tokens: one GEMV row per (token, expert) pair, each re-reading its expert's rows (correct, not fast;
// a grouped GEMM over the tokens routed to each expert is later work).
#pragma once

#include <cstdint>
#include <string_view>

#include "quant/dtype.h"
#include "quant/status.h"
#include "runtime/memory.h"
#include "runtime/recorder.h"

namespace rdrr::runtime {

enum class Activation : uint32_t;  // runtime/ops.h

// The router's limits (kernels/moe_route.comp stages the probabilities of a row in shared memory).
inline constexpr uint32_t kMoeMaxExperts = 256;
inline constexpr uint32_t kMoeMaxTopK = 8;

// Per row m of router logits: p = softmax(logits[m, :]) in f32 (max-subtracted); ids[m, :] = the top_k experts
// of largest p in descending p order (ties: the lower expert index first); weights[m, j] = p[ids[m, j]], divided
// by the sum of the top_k selected p (added in j order) when `normalize` (Mixtral always; Qwen2-MoE / Qwen3-MoE
// when norm_topk_prob).
// Errors: kInvalidArgument for a zero size, top_k > n_experts, or ids / weights overlapping logits or each
// other (over the extents the shapes give); kUnsupported for n_experts > kMoeMaxExperts or top_k > kMoeMaxTopK;
// kValidation for a range shorter than its shape.
struct MoeRouteArgs {
  BufferRange logits;   // f32 [m_rows, n_experts]
  BufferRange ids;      // uint32 [m_rows, top_k] (written)
  BufferRange weights;  // f32 [m_rows, top_k] (written)
  uint32_t m_rows = 0;
  uint32_t n_experts = 0;
  uint32_t top_k = 0;
  bool normalize = false;
  // Workgroup size (0 = automatic: the device's subgroup size where it is 8 .. 64, one subgroup per row, else 64).
  // Tests pass 64 to run the several-subgroup rounds on any device.
  uint32_t local_size_x = 0;
};
Status record_moe_route(Recorder& rec, const MoeRouteArgs& args, std::string_view label = "moe_route");

// Optional workgroup shape of the MoE GEMV kernels (0 = registry default: 64 invocations, one row each).
struct MoeGemvTuning {
  uint32_t local_size_x = 0;
  uint32_t num_rows = 0;  // rows per workgroup (NUM_ROWS)
  uint32_t unroll = 0;    // items per invocation in flight (UNROLL; gemv_q4k.comp's vectorized kernels only)
};

// Expert GEMV over a stacked expert weight W [n_experts * n_rows, k] (expert e's rows are rows
// e * n_rows .. e * n_rows + n_rows - 1: one ordinary 2-D packed matrix of n_experts * n_rows rows). T = top_k
// experts per token; ids[m * T + j] is token m's j-th expert (from record_moe_route).
//   gather (combine = false; gate / up / gate_up):
//     y[m*T + j, n] = sum_i W[ids[m*T + j] * n_rows + n, i] * x[m, i]
//     x f32 [m_rows, k], y f32 [m_rows * T, n_rows]; `weights` must be empty.
//   combine (down_proj, weighted sum over the selected experts):
//     y[m, n] = sum_j weights[m*T + j] * (sum_i W[ids[m*T + j] * n_rows + n, i] * x[m*T + j, i])
//     x f32 [m_rows * T, k], weights f32 [m_rows * T], y f32 [m_rows, n_rows]. y is written (not accumulated),
//     the terms added in a fixed order (deterministic).
// An id >= n_experts reads nothing (its gather row is 0, its combine term left out).
// Weights: F32, F16 (row-major), Q8_0, Q6_K, Q4_K, Q4_0, Q5_0, Q5_K row_wise, or flat when k is a multiple of
// the block size (the same bytes as row_wise); no column_wise. The kernels are moe_gemv_<dtype> (gather) and
// moe_gemv_combine_<dtype> (kernels/moe_gemv.comp: gemv.comp's generic row path, not the vectorized Q4_K /
// Q6_K kernels).
// Limits: the whole stacked weight is bound at once (no binding split for MoE weights yet): one larger than the
// device's storage-buffer binding limit (binding_limit_bytes(); lavapipe 128 MiB) is kUnsupported, naming both
// sizes; element indices are 32-bit (n_experts * n_rows * row stride + m_rows * T * k + 256 < 2^32).
// Errors: kInvalidArgument (a zero size, top_k > n_experts, weights given to a gather / missing for a combine,
// y overlapping w, x, ids or weights), kUnsupported (dtype / layout, flat with k % block != 0, the binding and
// indexing limits, a forced kernel of another op / dtype; kNotFound for an unknown one), kValidation (a range
// shorter than its shape, a w offset not a multiple of the kernel's weight unit: 4 bytes for F32 / Q4_K / Q5_K,
// 2 for the others).
struct MoeGemvArgs {
  BufferRange w;
  quant::DType dtype = quant::DType::kF32;
  quant::Layout layout = quant::Layout::kRowWise;
  uint32_t n_experts = 0;  // E
  uint32_t n_rows = 0;     // N, outputs per expert
  uint32_t k = 0;          // K, inputs
  uint32_t m_rows = 0;     // M, tokens
  uint32_t top_k = 0;      // T, experts per token
  BufferRange x;
  BufferRange ids;         // uint32 [m_rows * top_k]
  BufferRange weights;     // combine only
  BufferRange y;
  bool combine = false;
  MoeGemvTuning tuning;
  // Forced kernel (registry name, e.g. a graph's pinned choice); empty = the kernel for dtype and mode. One of
  // another op or dtype is an error.
  std::string_view kernel;
};
Status record_moe_gemv(Recorder& rec, const MoeGemvArgs& args, std::string_view label = "moe_gemv");

// A decode layer's expert gate / up half in one dispatch (kernels/gemv_q4k.comp ROWS MOE ROUTE_GLU, in place of
// record_moe_route, the gather record_moe_gemv and glu_split): per token m, the top_k experts of its router row
// exactly as record_moe_route picks them (ids and weights written for the combine that follows), then for each
// selected expert e = ids[m*T + j]:
//   act[m*T + j, n] = act(W[e * 2F + n, :] . x[m, :]) * (W[e * 2F + F + n, :] . x[m, :])   for n < F
// W: the stacked gate_up weight [n_experts * 2F, k] (per expert F gate rows, then F up rows), Q4_K or Q5_K row_wise
// (or flat with k % 256 == 0), its blocks 16-byte aligned; x f32 [m_rows, k]; logits f32 [m_rows, n_experts];
// ids uint32 / weights f32 [m_rows * top_k] (written); act f32 [m_rows * top_k, F].
// Errors: kInvalidArgument (a zero size, top_k > n_experts, the outputs overlapping the inputs or each other),
// kUnsupported (another dtype / layout, blocks not 16-byte aligned, n_experts > kMoeMaxExperts, top_k > kMoeMaxTopK,
// the binding and 32-bit indexing limits), kValidation (a range
// shorter than its shape).
struct MoeRouteGluArgs {
  BufferRange w;
  quant::DType dtype = quant::DType::kQ4_K;
  quant::Layout layout = quant::Layout::kRowWise;
  uint32_t n_experts = 0;  // E
  uint32_t ff = 0;         // F, gate (and up) rows per expert
  uint32_t k = 0;          // K, inputs
  uint32_t m_rows = 0;     // M, tokens
  uint32_t top_k = 0;      // T, experts per token
  bool normalize = false;  // renormalize the top-k weights
  Activation act{};          // kSilu (0) unless set
  BufferRange x;
  BufferRange logits;
  BufferRange ids;
  BufferRange weights;
  BufferRange act_out;
  MoeGemvTuning tuning;  // num_rows: gate + up rows per workgroup (even)
};
Status record_moe_route_glu(Recorder& rec, const MoeRouteGluArgs& args, std::string_view label = "moe_route_glu");

// Qwen2-MoE's shared expert: y[m, :] += sigmoid(g[m]) * s[m, :] over m_rows rows of d. y must not overlap g or s.
struct GatedAddArgs {
  BufferRange g;  // f32 [m_rows] (the shared_expert_gate output)
  BufferRange s;  // f32 [m_rows, d] (the shared expert's output)
  BufferRange y;  // f32 [m_rows, d], read and written
  uint32_t m_rows = 0;
  uint32_t d = 0;
};
Status record_gated_add(Recorder& rec, const GatedAddArgs& args, std::string_view label = "gated_add");

}  // namespace rdrr::runtime
