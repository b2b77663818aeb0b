// The kernel registry: one entry per compiled SPIR-V module, describing how to bind and dispatch it.
// The runtime builds pipelines from these entries (runtime/pipeline.h); registry_test checks every entry
// against its SPIR-V (bindings and specialization ids present in the module, file and defines as built).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/spirv.h"
#include "quant/dtype.h"

namespace rdrr::kernels {

enum class Op : uint8_t {
  kDequant,
  kGemv,
  kRmsNorm,
  kAdd,
  kGatedAct,
  kRope,
  kAddRmsNorm,
  kUnary,       // elementwise y = f(x, param) over f32 (softcap.comp, ...): the graph's unary ops
  kEmbed,
  kKvAppend,
  kAttention,
  kAttentionMerge,
  kSample,
  kGemvReduce,  // split-K merge of the column_wise GEMV partials
  kGemm,        // prefill matmul Y[M, N] = X[M, K] W^T (gemm.comp)
  kKvAppendRope,  // KV cache append with K rotated on the way in (kv_append.comp ROPE)
  kSplit,         // row split of a fused projection's output (split.comp: qkv -> q, k, v)
  kMoeRoute,      // MoE router: softmax, top-k, optional renormalisation (moe_route.comp)
  kMoeGemv,       // MoE GEMV gathering the selected experts' outputs (moe_gemv.comp)
  kMoeGemvCombine,  // MoE GEMV summing the selected experts' outputs with router weights (moe_gemv.comp COMBINE)
  kGatedAdd,      // y += sigmoid(g) * s per row (gated_add.comp: Qwen2-MoE's shared expert)
  kMoeGemvRouteGlu,  // the router's top-k, the selected experts' gate / up GEMV and the gated activation in one
                     // dispatch (gemv_q4k.comp ROWS MOE ROUTE_GLU)
};
// "dequant", "gemv", "rms_norm", "add", "gated_act", "rope", "add_rms_norm", "unary", "embed", "kv_append",
// "attention", "attention_merge", "sample", "gemv_reduce", "gemm", "kv_append_rope", "split", "moe_route",
// "moe_gemv", "moe_gemv_combine", "gated_add", "moe_gemv_route_glu"
std::string_view op_name(Op op);

enum class Access : uint8_t { kRead, kWrite, kReadWrite };

struct BindingInfo {
  uint32_t binding;  // descriptor set 0
  std::string_view name;
  Access access;
};

enum class SpecRole : uint8_t { kLocalSizeX, kLocalSizeY, kLocalSizeZ, kTuning };

struct SpecInfo {
  uint32_t id;
  std::string_view name;
  uint32_t default_value;
  SpecRole role;
};

struct KernelInfo {
  std::string_view name;     // unique; also the SPIR-V module name
  std::string_view file;     // GLSL source under kernels/
  std::string_view entry;    // entry point
  std::string_view defines;  // glslc -D defines, space-separated
  Op op;
  std::span<const quant::DType> dtypes;    // weight / input element types accepted
  std::span<const quant::Layout> layouts;  // block orders accepted (gemv); {} when not applicable
  std::span<const BindingInfo> bindings;   // in binding order, 0..n-1
  std::span<const SpecInfo> spec;
  uint32_t push_constant_bytes;
  std::string_view grid;     // dispatch grid, in words
};

std::span<const KernelInfo> all_kernels();
const KernelInfo* find_kernel(std::string_view name);
// First kernel of `op` that accepts dtype and layout; nullptr when none does.
const KernelInfo* find_kernel(Op op, quant::DType dtype, quant::Layout layout);
// The kernel's SPIR-V module; nullptr when the build did not embed it (a registry/CMake mismatch).
const SpirvBlob* kernel_spirv(const KernelInfo& k);

}  // namespace rdrr::kernels
