// The semantic check of a manifest's execution graph (inference.execution, rdrr/SPEC.md section 9) against
// this build: the op vocabulary (graph/graph_ops.h), the kernel registry (kernels/registry.h) and the
// digests compiled into it (kernels/digest_table.h). validate_manifest() checks the graph's structure; this
// checks that this build can run it exactly as pinned. The converter runs it before it writes a pack
// (a violation fails the conversion); the runtime runs it before it builds a plan; `rdrr-digests repin`
// runs it (without digests) before it re-pins a pack.
//
// Rules, in the order they are checked (the first violation wins; messages name the phase, step index,
// layer, op, kernel key and tensor with expected vs actual):
//   graph present                                                                        kValidation
//   kernels map: every key a registry kernel name                                        kUnsupported
//                file / entry equal the registry's                                       kUnsupported
//                precision only {"kvDtype": "f16"|"f32"} on kv_append_* / attention_*
//                kernels, equal to the kernel's KV type (policy unsupportedPrecision)   kUnsupported
//   steps:       op known                                                                kUnsupported
//                op allowed in the phase                                                 kValidation
//                kernel key in the kernels map                                           kValidation
//                kernel not an optional variant (steps name the base kernel)               kValidation
//                the op's own kernel where its row names one (graph_ops.h OpInfo::kernel)  kValidation
//                kernel's registry op among the op's kernel ops; matmul steps use kGemm
//                in prefill and kGemv in decode / postLayer                              kValidation
//                the op's manifest parameter (OpInfo::param) valid                        kValidation
//                weight ref present iff the op takes a weight                            kValidation
//                after {L} expansion the weight exists for every layer the step runs for kValidation
//                matmul / embedding weight 2-D; a matmul's [N, K] the widths of the op's
//                output and input buffers (graph_ops.h); an embedding [>= V, D]          kValidation
//                kernel accepts the weight's dtype and layout (plain dtypes: row_wise),
//                and its block rule (kernels::matmul_kernel_fits)                        kUnsupported
//                a rope step's kernel is kernels::rope_kernel(non-local and the scaling
//                needs the frequency table)                                              kValidation
//                norm / bias weight F32 1-D of the op's weight_length (D; headDim for
//                q_norm / k_norm; the written buffer's width for biases)                kValidation
//                kv_append[_rope] and attention kernels agree on the KV cache type       kValidation
//   layers (the op flags of graph_ops.h): every layer runs exactly one kAttends op per layer phase;
//                kLocal ones (attention_sliding) only for sliding_attention layers
//                (inference.attention.layerTypes), the others only for full_attention layers;
//                kLocal rope ops only for sliding layers of a model with ropeLocalTheta, whose
//                sliding layers must not run the other rope ops; k rotated (kRotatesK) exactly
//                once and appended (kAppendsKv) exactly once per layer, a separate rotation
//                before the append (SPEC 9.3 key path); each layer's output added to hidden
//                exactly once (kAddsOwnOutput / the next layer's kAddsPrevOutput)     kValidation
//   companions:  every companion (kernels/kernel_choice.h) of every kernel in the map is in the map  kValidation
//   digests:     (check_digests) every kernel's digest equals the one compiled into this build; the
//                message names the first step using it, both digests and the fix
//                (`rdrr-digests repin <pack>`)                                           kIntegrity
#pragma once

#include "quant/status.h"
#include "rdrr/manifest.h"

namespace rdrr::graph {

struct GraphCheckOptions {
  // Compare every pinned digest with pinned_kernel_digest() (kernels/digest_table.h). `rdrr-digests repin`
  // turns this off to check that a pack stays runnable once re-pinned.
  bool check_digests = true;
};

Status check_execution_graph(const Manifest& m, const GraphCheckOptions& o = {});

}  // namespace rdrr::graph
