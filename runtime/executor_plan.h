// Internal to the executor (runtime/executor.cpp, executor_plan.cpp): the execution graph compiled into
// per-layer step lists with resolved weights, kernels and activation buffers. Not part of the public API.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernels/registry.h"
#include "quant/dtype.h"
#include "quant/status.h"
#include "rdrr/manifest.h"
#include "runtime/pack.h"

namespace rdrr::runtime::exec_detail {

// Activation buffers (kernels/graph_ops.h "Data flow").
enum class Buf : uint8_t { kHidden, kNormed, kQ, kK, kV, kAttn, kProj, kGate, kUp, kGateUp, kAct, kLogits, kCount };

enum class Kind : uint8_t {
  kEmbed,
  kNorm,       // rms_norm in -> out
  kAddNorm,    // hidden += proj; normed = norm(hidden)
  kMatmul,
  kBias,       // out += bias (broadcast per row)
  kHeadNorm,   // per-head rms_norm of q / k
  kRope,
  kKvAppend,
  kKvAppendRope,  // k rotated into the cache with v (kv_append_rope / kv_append_rope_local)
  kAttention,
  kGlu,
  kGluSplit,
  kResidual,   // hidden += proj
  kSoftcap,
  kSample,
};

struct Step {
  std::string label;  // the graph op, e.g. "q_proj" (dispatch labels, profiles)
  std::string where;  // "decode[3] layer 2" (error messages)
  Kind kind = Kind::kNorm;
  const kernels::KernelInfo* kernel = nullptr;  // the pinned kernel (kernel key)
  const PackTensor* weight = nullptr;           // resolved weight (layer substituted), or nullptr
  Buf in = Buf::kHidden;
  Buf out = Buf::kHidden;
  uint32_t n = 0;         // matmul outputs / bias length; heads for head norm / rope
  uint32_t k = 0;         // matmul inputs
  bool local = false;     // rope: local theta, unscaled; attention: sliding window
  // Prefill GEMM matmuls: the GEMV kernel the decode phase pins for the same weight in the same layer, which
  // the executor runs once per row for short prompts (ExecutorOptions::gemv_prefill_rows); nullptr if none.
  const kernels::KernelInfo* row_kernel = nullptr;
};

struct Dims {
  uint32_t d = 0, heads = 0, kv_heads = 0, head_dim = 0, ff = 0, vocab = 0, layers = 0;
  uint32_t width(Buf b) const;  // f32 elements per row of an activation buffer
};

struct Plan {
  Dims dims;
  std::vector<Step> pre;
  std::vector<std::vector<Step>> prefill;  // [layer] -> steps
  std::vector<std::vector<Step>> decode;
  std::vector<Step> post;
  quant::DType kv_dtype = quant::DType::kF16;
  std::shared_ptr<const std::set<std::string, std::less<>>> pinned;  // kernels map keys
  uint64_t gemv_scratch_bytes = 0;  // largest split-K scratch of the gemv steps
  bool needs_rope_table = false;    // some step runs rope_freqs, or kv_append_rope with llama3 / YaRN scaling
};

// check_execution_graph (with digests), then resolves every step. Errors name the phase / step / layer.
Result<Plan> compile_plan(const Pack& pack);

// Whether the model's global rotary embedding needs the CPU frequency table (llama3 / YaRN scaling), the rule
// by which kernels/graph_plan.cpp picks rope_freqs; kv_append_rope follows it at run time.
bool rope_needs_table(const RopeConfig& rope);

}  // namespace rdrr::runtime::exec_detail
