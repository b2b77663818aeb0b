// Internal to the executor (runtime/executor.cpp, executor_plan.cpp): the execution graph compiled into
// per-layer step lists with resolved weights, kernels and activation buffers. Not part of the public API.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/graph_ops.h"
#include "kernels/registry.h"
#include "quant/dtype.h"
#include "quant/status.h"
#include "rdrr/manifest.h"
#include "runtime/pack.h"

namespace rdrr::runtime::exec_detail {

using graph::Buf;
using graph::Dims;
using graph::Dispatch;

struct Step {
  const graph::OpInfo* op = nullptr;  // the op's row (graph/graph_ops.h)
  std::string label;  // the graph op, e.g. "q_proj" (dispatch labels, profiles)
  std::string where;  // "decode[3] layer 2" (error messages)
  const kernels::KernelInfo* kernel = nullptr;  // the pinned kernel (kernel key)
  const PackTensor* weight = nullptr;           // resolved weight (layer substituted), or nullptr
  uint32_t n = 0;         // matmul outputs / bias length; heads for head norm / rope
  uint32_t k = 0;         // matmul inputs
  bool freq_table = false;  // rotates with the CPU frequency table (non-local, rope_needs_freq_table)
  float param = 0.0f;       // kUnary: the op's manifest parameter (graph::OpInfo::param)
  // From the op's row: how it is recorded, its first buffer read and last written, and whether it runs with
  // the local rope theta / the sliding window (graph::kLocal).
  Dispatch kind() const { return op->dispatch; }
  Buf in() const { return op->input(); }
  Buf out() const { return op->output(); }
  bool local() const { return op->has(graph::kLocal); }
  // Prefill GEMM matmuls: the GEMV kernel the decode phase pins for the same weight in the same layer, which
  // the executor runs once per row for short prompts (ExecutorOptions::gemv_prefill_rows); nullptr if none.
  const kernels::KernelInfo* row_kernel = nullptr;
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
  bool needs_rope_table = false;    // some step runs rope_freqs, or kv_append_rope with a frequency-table scaling
  bool fused_qkv = false;           // some layer runs qkv_proj (the executor allocates the qkv buffer)
};

// check_execution_graph (with digests), then maps every step to its op row, kernel, weight and buffers.
// Errors name the phase / step / layer.
Result<Plan> compile_plan(const Pack& pack);

}  // namespace rdrr::runtime::exec_detail
