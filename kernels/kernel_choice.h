// Which kernel runs: the one home of every kernel-choice rule. The graph planner (graph/graph_plan.h) pins
// pinned_matmul_kernel() for each matmul step; the runtime (runtime/ops_gemv.cpp, ops_gemm.cpp) runs that
// pinned kernel, or one of its device choices below, never another kernel.
//
// Two kinds of kernels travel with a pinned kernel, both listed in the pack's kernels map so every dispatched
// kernel is pinned by digest (rdrr/SPEC.md 9.1):
//   companions  dispatched together with the kernel (gemv_q4_k_col_split -> gemv_reduce; attention_f16 -> its
//               split / decode kernels and attn_merge; the three sampling stages), or run in its place where
//               the device has what they need (gemv_q4_k_vec -> gemv_q4_k_dot). Required in the kernels map.
//   variants    optional: run in the kernel's place where the device supports them and the map pins them
//               (gemm_q4_k -> gemm_q4_k_cm; attention_f16 -> attention_prefill_f16 for prefill); a graph
//               without them is still valid.
// device_choices() states, per pinned kernel, every kernel the runtime may run in its place and when; it is
// what `rdrr-inspect` prints beside the kernels map.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/registry.h"
#include "quant/dtype.h"
#include "quant/status.h"

namespace rdrr::kernels {

// Kernels the runtime may dispatch together with `kernel_name`. Empty for most kernels and unknown names.
std::span<const std::string_view> kernel_companions(std::string_view kernel_name);

// Optional variants of `kernel_name` (see above). Empty for most kernels and unknown names.
std::span<const std::string_view> kernel_variants(std::string_view kernel_name);
// Whether `kernel_name` is some kernel's optional variant: steps never name one (they name the base kernel).
bool is_optional_variant(std::string_view kernel_name);

// A kernel the runtime may run in place of a pinned one, and when.
struct DeviceChoice {
  std::string_view kernel;  // a companion or optional variant of the pinned kernel
  std::string_view when;    // the rule, in words (rdrr-inspect, SPEC)
};
std::vector<DeviceChoice> device_choices(std::string_view pinned_kernel);

enum class MatmulPass : uint8_t {
  kPrefill,  // GEMM over the pass's rows
  kDecode,   // GEMV over one row (decode and postLayer)
};

// The kernel a graph pins for a matmul by a [N, K] weight of this dtype / layout: the vectorized GEMVs where
// their block rules hold (Q4_K column_wise: the split-K kernel; Q4_K and Q5_K rows of whole blocks; Q6_K rows of
// whole blocks with K % 4 == 0), else the generic kernel of the pass. nullptr: no kernel reads the weight.
const KernelInfo* pinned_matmul_kernel(MatmulPass pass, quant::DType dtype, quant::Layout layout, uint64_t k);

// The kernel a graph pins for an expert step (op kMoeGemv or kMoeGemvCombine) over a stacked [E * N, K] weight:
// the vectorized expert GEMVs (moe_gemv[_combine]_q4_k_vec / _q5_k_vec / _q6_k_vec) where matmul_kernel_fits, else the
// generic moe_gemv kernel of the dtype. nullptr: no kernel reads the weight.
const KernelInfo* pinned_moe_kernel(Op op, quant::DType dtype, quant::Layout layout, uint64_t k);

// The kernel that runs a decode layer's router top-k, gate / up expert GEMV and gated activation in one dispatch
// (op kMoeGemvRouteGlu: moe_gemv_route_glu_q4_k_vec / _q5_k_vec) over a stacked [E * 2 Fe, K] gate_up weight of this
// dtype / layout where matmul_kernel_fits; nullptr where none does (the graph then runs moe_route, moe_gate_up and
// moe_glu).
const KernelInfo* pinned_moe_route_glu_kernel(quant::DType dtype, quant::Layout layout, uint64_t k);

// The rope kernel of a rope_q / rope_k step: rope_freqs when it rotates with the CPU frequency table (llama3 /
// YaRN scaling, rdrr::rope_needs_freq_table, never on local steps), else rope.
// With `head_norm` (ops q_norm_rope[_local]): rope_freqs_norm / rope_norm, the per-head RMSNorm first.
std::string_view rope_kernel(bool freq_table, bool head_norm = false);

// Whether a rope / kv_append kernel RMS-norms each head before rotating (rope_norm, rope_freqs_norm,
// kv_append_norm_rope_*): it runs exactly the ops that take a norm weight.
bool fuses_head_norm(std::string_view kernel);

// Whether `kernel` (one that accepts the dtype and layout) can multiply by a weight with K inputs: the
// vectorized GEMVs need rows of whole blocks (row_wise, or K a multiple of 256), gemv_q6_k_vec also K % 4 == 0;
// every expert GEMV needs rows that start on a block boundary (row_wise, or flat with K a multiple of the
// block), the vectorized ones also K % 4 == 0 (each selected expert's x row starts at a multiple of K).
// The graph checker and the runtime both apply it; `why` (when not null) gets the rule that failed.
bool matmul_kernel_fits(const KernelInfo& kernel, quant::Layout layout, uint64_t k, std::string_view* why = nullptr);

// What the device offers the run-time choice (runtime/ builds it from its DeviceCaps).
struct DeviceFacts {
  bool int_dot_usable = false;  // shaderIntegerDotProduct, subgroups that tile gemv_q4_k_dot's row groups
  bool int_dot_fast = false;    // ... and 4x8-bit dot products are native (accelerated)
  bool coopmat_f16 = false;     // VK_NV_cooperative_matrix with the 16x16x16 f16 shape, subgroups of 32
};

// How a GEMV caller asks for the Q4_K rows decode (GemvTuning::decode): automatic, f32 only, integer dot.
enum class Q4KDecode : uint8_t { kAuto = 0, kF32 = 1, kIntDot = 2 };

// The GEMV kernel that runs for `pinned` (a gemv_* kernel): gemv_q4_k_vec's companion gemv_q4_k_dot where the
// device's integer dot products are usable and fast and K >= kIntDotMinK (or the caller asks for it), else
// `pinned` itself. kUnsupported when the caller asks for the integer-dot kernel and the device cannot run it.
Result<const KernelInfo*> device_gemv_kernel(const KernelInfo& pinned, uint32_t k, const DeviceFacts& device,
                                             Q4KDecode decode);
// gemv_q4_k_dot from this K on: below it each workgroup's x staging is a large share of its work.
inline constexpr uint32_t kIntDotMinK = 8192;

// The GEMM kernel that runs for `pinned` (a gemm_* kernel) over `m_rows` rows: its cooperative-matrix variant
// where the device has them, more than kCoopmatAboveRows rows run and `allowed` (the pack pins the variant),
// else `pinned`. Callers that tune the tile or turn cooperative matrices off pass automatic = false.
template <typename Allowed>
const KernelInfo* device_gemm_kernel(const KernelInfo& pinned, uint32_t m_rows, const DeviceFacts& device,
                                     bool automatic, Allowed&& allowed);
// The cooperative-matrix GEMM's tiles leave too few workgroups for short passes: the f32 GEMM is
// faster up to this many rows (bench/README.md, GEMM).
inline constexpr uint32_t kCoopmatAboveRows = 32;
// Whether `name` is a cooperative-matrix GEMM (a `_cm` variant).
bool is_coopmat_kernel(std::string_view name);

template <typename Allowed>
const KernelInfo* device_gemm_kernel(const KernelInfo& pinned, uint32_t m_rows, const DeviceFacts& device,
                                     bool automatic, Allowed&& allowed) {
  if (!device.coopmat_f16 || !automatic || m_rows <= kCoopmatAboveRows) return &pinned;
  for (std::string_view v : kernel_variants(pinned.name)) {
    const KernelInfo* info = find_kernel(v);
    if (info != nullptr && is_coopmat_kernel(v) && allowed(v)) return info;
  }
  return &pinned;
}

}  // namespace rdrr::kernels
