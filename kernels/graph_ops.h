// The op vocabulary of the execution graph (rdrr/SPEC.md section 9, inference.execution): what each step
// `[op, kernelKey, weightRef?]` means, where it may appear, which weight it takes and which registry kernels
// may implement it. The graph planner (kernels/graph_plan.h) writes steps from this table, the checker
// (kernels/graph_check.h) enforces it, and the runtime executor (runtime/executor.h) implements exactly
// these ops and rejects any other.
//
// Data flow. Ops read and write the executor's activation buffers, all f32, M = rows of the pass (prompt
// tokens in prefill, 1 in decode), D = hiddenSize, H = numAttentionHeads, KV = numKeyValueHeads,
// hd = headDim, F = intermediateSize, V = vocabSize:
//   hidden [M, D]  the residual stream          normed [M, D]  norm output, matmul input
//   q [M, H*hd]  k, v [M, KV*hd]                 attn [M, H*hd] attention output
//   proj [M, D]  o_proj / down_proj output       gate, up, act [M, F]   gate_up [M, 2F] (gate rows first)
//   logits [R, V]  R = rows the post-layer phase runs for (last token, or every prompt token on request)
//   token uint32[1]  the sampled id (fed to `embed` of the next decode step on the GPU)
// Parameters come from the manifest only (normalization eps and weight offset, rope, attention, output).
//
// Kernel keys are registry kernel names (kernels/registry.h). A kernel may need companion kernels that the
// runtime dispatches with it (kernel_companions); they must be listed in the graph's kernels map too, so
// every dispatched kernel is pinned by digest.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/registry.h"

namespace rdrr::kernels {

// Where a step may appear: preLayer, the per-layer phases (prefill / decode), postLayer.
enum class GraphPhase : uint8_t { kPreLayer, kLayer, kPostLayer };

// What the step's weight ref must name.
enum class WeightKind : uint8_t {
  kNone,       // no weight ref allowed
  kNormF32,    // f32 [D] (or [hd] for q_norm / k_norm): a norm weight
  kBiasF32,    // f32 [N]: a projection bias
  kMatmul,     // 2-D [N, K] in a dtype / layout the kernel accepts
  kEmbedding,  // 2-D [V, D] embedding table in a dtype / layout the kernel accepts
};

struct GraphOpInfo {
  std::string_view name;        // the step's op, [a-z0-9_]+
  GraphPhase phase;
  WeightKind weight;
  // Registry ops whose kernels may implement the step. Matmul ops: kGemm in prefill, kGemv in decode and
  // postLayer (checked by the graph checker against the phase).
  std::span<const Op> kernel_ops;
  std::string_view reads;       // activation buffers read, e.g. "normed"
  std::string_view writes;      // activation buffers written, e.g. "q"
  std::string_view semantics;   // one line for SPEC.md and `rdrr-inspect`
};

std::span<const GraphOpInfo> all_graph_ops();
const GraphOpInfo* find_graph_op(std::string_view name);

// Kernels the runtime may dispatch together with `kernel_name` (e.g. gemv_q4_k_col_split -> gemv_reduce;
// attention_f16 -> attention_split_f16, attn_merge; sample_final -> the other sampling stages). Empty for
// most kernels and for unknown names.
std::span<const std::string_view> kernel_companions(std::string_view kernel_name);

// Optional variants of `kernel_name` that the runtime may run in its place, each only where the device has
// what the variant needs and the graph's kernels map pins it (e.g. gemm_q4_k -> gemm_q4_k_cm, the
// cooperative-matrix GEMM). The graph planner pins them; a graph without them is still valid (the runtime
// then runs the kernel itself). Empty for most kernels and for unknown names.
std::span<const std::string_view> kernel_variants(std::string_view kernel_name);
// Whether `kernel_name` is some kernel's optional variant: steps never name one (they name the base kernel).
bool is_optional_variant(std::string_view kernel_name);

}  // namespace rdrr::kernels
