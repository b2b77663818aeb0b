// The graph planner: writes a manifest's execution graph (inference.execution, rdrr/SPEC.md section 9)
// from its architecture, inference parameters and tensors, choosing for every matmul step the registry
// kernel that reads the weight's dtype and layout (GEMM in prefill, GEMV in decode and postLayer), pinning
// every kernel (and its companions and variants, kernels/kernel_choice.h) by the digest compiled into this build.
//
// Layer phases: steps shared by every layer are listed plainly; steps that differ between sliding and
// full attention layers (rope_*_local / rope_*, attention_sliding / attention) go in one group per layer
// type, listing its layers. Deterministic: same manifest and options, same graph.
#pragma once

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::graph {

struct GraphPlanOptions {
  KvDtype kv_dtype = KvDtype::kF16;  // KV cache precision: F16 (default, as llama.cpp) or F32
};

// Errors: kUnsupported (a weight dtype / layout or a model feature no kernel implements, naming the tensor),
// kValidation (a tensor the architecture needs is missing or has the wrong shape).
Result<ExecutionGraph> plan_execution_graph(const Manifest& m, const GraphPlanOptions& opts = {});

}  // namespace rdrr::graph
