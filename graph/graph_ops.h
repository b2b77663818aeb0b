// The op vocabulary of the execution graph (rdrr/SPEC.md section 9, inference.execution): ONE row per op
// says what a step `[op, kernelKey, weightRef?]` means, where it may appear, which weight it takes, which
// registry kernels may implement it, which buffers it reads and writes, how the runtime dispatches it and the
// facts the graph checker's layer rules read. Everything else derives from this table: the planner
// (graph_plan.h) writes steps by op name, the checker (graph_check.h) enforces the rows, the runtime executor
// (runtime/executor_plan.cpp) maps each row's `dispatch` to a recording function and nothing more, and
// SPEC.md section 9.2's table is generated from it (op_table_markdown(); graph_ops_test fails when they differ).
//
// Data flow. Ops read and write the executor's activation buffers, all f32, M = rows of the pass (prompt
// tokens in prefill, 1 in decode), D = hiddenSize, H = numAttentionHeads, KV = numKeyValueHeads,
// hd = headDim, F = intermediateSize, V = vocabSize (widths: buffer_width()).
// Parameters come from the manifest only (normalization eps and weight offset, rope, attention, output).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kernels/registry.h"
#include "rdrr/manifest.h"

namespace rdrr::graph {

// Where a step may appear: preLayer, the per-layer phases (prefill / decode), postLayer.
enum class Phase : uint8_t { kPreLayer, kLayer, kPostLayer };
std::string_view phase_name(Phase p);  // "preLayer", "prefill / decode", "postLayer"

// What the step's weight ref must name.
enum class WeightKind : uint8_t {
  kNone,       // no weight ref allowed
  kNorm,       // f32 1-D: a norm weight
  kBias,       // f32 1-D: a projection bias
  kMatmul,     // 2-D [N, K] in a dtype / layout the kernel accepts
  kEmbedding,  // 2-D [V, D] embedding table in a dtype / layout the kernel accepts
  kExpertsIn,  // stacked experts read per selected expert: [E * width(output) / T, width(input)] (T = experts per token)
  kExpertsOut, // stacked experts whose outputs are summed per token: [E * width(output), width(input) / T]
  kExpertsGlu, // stacked gate / up experts read per selected expert and activated: [E * 2 width(output) / T, width(input)]
};

// The length of a norm / bias weight.
enum class WeightLength : uint8_t {
  kNone,     // not a 1-D weight
  kHidden,   // D
  kHeadDim,  // hd (per-head norms)
  kOutput,   // the width of the buffer the op writes (biases)
};

// The data ops read and write: the executor's activation buffers (the first kActivationCount) and the rest.
enum class Buf : uint8_t {
  kHidden,   // [M, D] the residual stream
  kNormed,   // [M, D] norm output, matmul input
  kQ,        // [M, H*hd]
  kK,        // [M, KV*hd]
  kV,        // [M, KV*hd]
  kAttn,     // [M, H*hd] attention output
  kProj,     // [M, D] o_proj / down_proj output
  kGate,     // [M, F]
  kUp,       // [M, F]
  kGateUp,   // [M, 2F] fused gate_up output, gate rows first
  kQkv,      // [M, (H + 2 KV) * hd] fused qkv_proj output: q, then k, then v
  kAct,      // [M, F]
  kRouter,        // [M, E] router logits (E = moe.numExperts)
  kExpertIds,     // uint32 [M, T] the selected experts (T = moe.expertsPerToken)
  kExpertWeights, // [M, T] their weights
  kExpertGateUp,  // [M, T * 2 Fe] the selected experts' gate_up rows (Fe = moe.expertIntermediateSize)
  kExpertAct,     // [M, T * Fe]
  kSharedGate,    // [M, Fs] shared expert (Fs = moe.sharedExpertIntermediateSize)
  kSharedUp,      // [M, Fs]
  kSharedAct,     // [M, Fs]
  kSharedOut,     // [M, D]
  kSharedScale,   // [M, 1] the shared expert's gate logit
  kLogits,   // [R, V] R = rows the post-layer phase runs for (last token, or every prompt token on request)
  kTokenIds,  // uint32 [M] the pass's token ids
  kKvCache,   // the layer's KV cache (precision kvDtype)
  kToken,     // uint32 [1] the sampled id (fed to `embed` of the next decode step on the GPU)
  kNone,
};
inline constexpr size_t kActivationCount = static_cast<size_t>(Buf::kTokenIds);
std::string_view buf_name(Buf b);  // "hidden", "kv cache", ...

// Model dimensions the buffer widths derive from.
struct Dims {
  uint32_t d = 0, heads = 0, kv_heads = 0, head_dim = 0, ff = 0, vocab = 0, layers = 0;
  uint32_t experts = 0, top_k = 0, expert_ff = 0, shared_ff = 0;  // architecture.moe (0: dense)
};
// kUnsupported when a dimension is 2^31 or more.
Result<Dims> model_dims(const Architecture& a);
// f32 elements per row of an activation buffer; 0 for the others.
uint32_t buffer_width(const Dims& d, Buf b);

// How the runtime records the op (one recording function each, runtime/executor.cpp).
enum class Dispatch : uint8_t {
  kEmbed,         // table gather
  kNorm,          // rms_norm reads[0] -> writes[0]
  kAddNorm,       // hidden += proj; normed = norm(hidden)
  kMatmul,        // writes[0] = reads[0] W^T
  kBias,          // writes[0] += bias (broadcast per row)
  kHeadNorm,      // per-head rms_norm of q / k
  kRope,          // rotary embedding of writes[0] in place
  kKvAppend,      // k, v into the cache
  kKvAppendRope,  // k rotated into the cache with v
  kAttention,
  kGlu,
  kGluSplit,
  kResidual,      // hidden += proj
  kUnary,         // writes[0] = f(reads[0], param) elementwise: the row's kernel (Op::kUnary) and param
  kSample,
  kSplitQkv,      // qkv -> q, k, v (skipped where the executor lays q, k, v out as qkv's row 0: one-row passes)
  kMoeRoute,      // router logits -> expert ids and weights
  kMoeGemv,       // per token and selected expert: writes[0] = reads[0] W_e^T
  kMoeCombine,    // per token: writes[0] = sum over its experts of weight * reads[0] row W_e^T
  kGatedAdd,      // writes[0] += sigmoid(reads[0]) * reads[1]
  kMoeRouteGlu,   // router logits -> expert ids and weights, then per selected expert act = act(gate) * up
};

// Facts the graph checker's layer rules read (SPEC 9.3).
enum OpFlag : uint32_t {
  kRotatesQ = 1u << 0,         // applies the rotary embedding to q
  kRotatesK = 1u << 1,         // ... to k
  kAppendsKv = 1u << 2,        // writes k and v into the layer's cache
  kAttends = 1u << 3,          // the layer's attention
  kLocal = 1u << 4,            // sliding_attention layers only (local rope theta, sliding window)
  kAddsOwnOutput = 1u << 5,    // adds this layer's output (proj) to hidden
  kAddsPrevOutput = 1u << 6,   // adds the previous layer's output to hidden (in place of its kAddsOwnOutput step)
};

// The buffers an op reads or writes, kNone-padded.
struct BufList {
  std::array<Buf, 3> at{Buf::kNone, Buf::kNone, Buf::kNone};
  constexpr BufList(Buf a = Buf::kNone, Buf b = Buf::kNone, Buf c = Buf::kNone) : at{a, b, c} {}
  constexpr Buf operator[](size_t i) const { return at[i]; }
  constexpr auto begin() const { return at.begin(); }
  constexpr auto end() const { return at.end(); }
  // The last entry that is not kNone (kNone for an empty list).
  constexpr Buf last() const {
    for (size_t i = at.size(); i-- > 0;) {
      if (at[i] != Buf::kNone) return at[i];
    }
    return Buf::kNone;
  }
};

struct OpInfo {
  std::string_view name;  // the step's op, [a-z0-9_]+
  Phase phase;
  WeightKind weight;
  WeightLength weight_length;
  // Registry ops whose kernels may implement the step. Matmul ops: kGemm in prefill, kGemv in decode and
  // postLayer (checked by the graph checker against the phase).
  std::span<const kernels::Op> kernel_ops;
  // The one registry kernel that runs the op, when there is one (the planner pins it, the checker requires it);
  // empty where the kernel depends on the weight, the KV cache type or the rope scaling.
  std::string_view kernel;
  Dispatch dispatch;
  BufList reads;
  BufList writes;
  uint32_t flags;             // OpFlag bits
  // kUnary ops: the kernel's parameter from the manifest (e.g. logit_softcap's finalLogitSoftcapping), or a
  // kValidation error naming the field; the graph checker calls it, the executor passes the value. nullptr: none.
  Result<float> (*param)(const Manifest& m);
  std::string_view semantics;  // one line for SPEC.md and `rdrr-inspect`

  bool has(OpFlag f) const { return (flags & f) != 0; }
  Buf input() const { return reads[0]; }                                  // the first buffer read
  Buf output() const { return writes.last(); }                             // the last buffer written
};

std::span<const OpInfo> all_ops();
const OpInfo* find_op(std::string_view name);

// 's' in single quotes, as the graph checker's and repin's messages name ops, kernels and tensors.
std::string single_quoted(std::string_view s);

// The op vocabulary as SPEC.md section 9.2's markdown table (one row per op; its kernels from the registry).
std::string op_table_markdown();

}  // namespace rdrr::graph
