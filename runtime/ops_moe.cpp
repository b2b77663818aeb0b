// record_moe_route, record_moe_gemv, record_gated_add (kernels/moe_route.comp, moe_gemv.comp, gated_add.comp).
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/kernel_choice.h"
#include "kernels/registry.h"
#include "quant/blocks.h"
#include "runtime/device.h"
#include "runtime/ops.h"
#include "runtime/ops_util.h"
#include "runtime/pipeline.h"

namespace rdrr::runtime {
namespace {

using namespace ops_detail;
using quant::DType;
using quant::Layout;

struct RoutePush {
  uint32_t m_rows, n_experts, top_k, normalize, n_groups, pad0, pad1, pad2;
};
struct MoeGemvPush {
  uint32_t n_rows, k, row_stride, w_base, n_experts, top_k, n_row_groups, n_groups;
};
struct MoeRouteGluPush {
  MoeGemvPush gemv;
  uint32_t normalize, pad0, pad1, pad2;
};
struct GatedAddPush {
  uint32_t m_rows, d, n_groups, pad0;
};
static_assert(sizeof(RoutePush) == 32 && sizeof(MoeGemvPush) == 32 && sizeof(MoeRouteGluPush) == 48 &&
              sizeof(GatedAddPush) == 16);

constexpr uint64_t k32Bit = uint64_t{1} << 32;
// Workgroup of the vectorized COMBINE kernels for one decode token (Vulkan guarantees 128 invocations).
constexpr uint32_t kDecodeCombineLocalSize = 128;
constexpr uint32_t kDecodeCombineRows = 4;     // Q4_K / Q5_K
constexpr uint32_t kDecodeCombineRowsQ6K = 2;  // Q6_K (gemv_q6k.comp MOE COMBINE)
// Workgroup of the fused route + gather + activation (with the registry's 4 row pairs): bench/README.md.
constexpr uint32_t kRouteGluLocalSize = 32;

// kInvalidArgument "<ctx>: <a> overlaps <b>" when two ranges share a byte.
Status need_apart(const BufferRange& a, std::string_view a_name, const BufferRange& b, std::string_view b_name,
                  const std::string& ctx) {
  if (!overlaps(a, b)) return Status::Ok();
  return error(StatusCode::kInvalidArgument, ctx + ": " + std::string(a_name) + " overlaps " + std::string(b_name));
}

// The sizes of an expert GEMV: none 0 (the per-expert rows named `rows_field`), top_k <= n_experts.
Status check_expert_dims(uint32_t n_experts, uint32_t rows, std::string_view rows_field, uint32_t k, uint32_t m_rows,
                         uint32_t top_k, const std::string& ctx) {
  RDRR_RETURN_IF_ERROR(need_nonzero(n_experts, "n_experts", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(rows, rows_field, ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(k, "k", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(m_rows, "m_rows", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(top_k, "top_k", ctx));
  if (top_k > n_experts) {
    return error(StatusCode::kInvalidArgument,
                 ctx + ": top_k " + std::to_string(top_k) + " > n_experts " + std::to_string(n_experts));
  }
  return Status::Ok();
}

// record_moe_route_glu's activation ranges, each cut to its shape: long enough, the outputs apart from the inputs and
// from each other.
struct RouteGluRanges {
  BufferRange x, logits, ids, weights, act;
};
Result<RouteGluRanges> route_glu_ranges(const MoeRouteGluArgs& a, uint64_t w_bytes, const std::string& ctx) {
  const uint64_t slots = uint64_t{a.m_rows} * a.top_k;
  RDRR_RETURN_IF_ERROR(need_bytes(a.w, w_bytes, "w", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.x, uint64_t{a.m_rows} * a.k * 4, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.logits, uint64_t{a.m_rows} * a.n_experts * 4, "logits", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.ids, slots * 4, "ids", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.weights, slots * 4, "weights", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.act_out, slots * a.ff * 4, "act", ctx));
  const RouteGluRanges r{a.x.sub(0, uint64_t{a.m_rows} * a.k * 4), a.logits.sub(0, uint64_t{a.m_rows} * a.n_experts * 4),
                         a.ids.sub(0, slots * 4), a.weights.sub(0, slots * 4), a.act_out.sub(0, slots * a.ff * 4)};
  const std::pair<BufferRange, std::string_view> outs[] = {{r.ids, "ids"}, {r.weights, "weights"}, {r.act, "act"}};
  const std::pair<BufferRange, std::string_view> ins[] = {{a.w.sub(0, w_bytes), "w"}, {r.x, "x"}, {r.logits, "logits"}};
  for (size_t i = 0; i < std::size(outs); ++i) {
    for (const auto& [in, in_name] : ins) RDRR_RETURN_IF_ERROR(need_apart(outs[i].first, outs[i].second, in, in_name, ctx));
    for (size_t j = i + 1; j < std::size(outs); ++j) {
      RDRR_RETURN_IF_ERROR(need_apart(outs[i].first, outs[i].second, outs[j].first, outs[j].second, ctx));
    }
  }
  return r;
}

// record_moe_route_glu's specialization: kRouteGluLocalSize invocations (or tuning's), rounded up to whole subgroups
// (every subgroup runs the top-k on its own), tuning's rows (gate / up pairs: even) and unroll, the activation.
Result<std::vector<SpecValue>> route_glu_spec(const MoeRouteGluArgs& a, uint32_t sg_max, const std::string& ctx) {
  const uint32_t want = a.tuning.local_size_x != 0 ? a.tuning.local_size_x : kRouteGluLocalSize;
  std::vector<SpecValue> spec = {{0, static_cast<uint32_t>(ceil_div(want, sg_max) * sg_max)}};
  if (a.tuning.num_rows != 0) {
    if (a.tuning.num_rows % 2 != 0) {
      return error(StatusCode::kInvalidArgument, ctx + ": num_rows " + std::to_string(a.tuning.num_rows) +
                                                     " is odd (gate / up row pairs)");
    }
    spec.push_back({1, a.tuning.num_rows});
  }
  if (a.tuning.unroll != 0) spec.push_back({3, a.tuning.unroll});
  spec.push_back({4, static_cast<uint32_t>(a.act)});
  return spec;
}

}  // namespace

Status record_moe_route(Recorder& rec, const MoeRouteArgs& a, std::string_view label) {
  const std::string ctx = "moe_route " + std::string(label) + " [rows=" + std::to_string(a.m_rows) +
                          " E=" + std::to_string(a.n_experts) + " K=" + std::to_string(a.top_k) + "]";
  RDRR_RETURN_IF_ERROR(need_nonzero(a.m_rows, "m_rows", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(a.n_experts, "n_experts", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(a.top_k, "top_k", ctx));
  if (a.n_experts > kMoeMaxExperts) {
    return error(StatusCode::kUnsupported, ctx + ": n_experts " + std::to_string(a.n_experts) + " > " +
                                               std::to_string(kMoeMaxExperts) + " (the router kernel's limit)");
  }
  if (a.top_k > a.n_experts) {
    return error(StatusCode::kInvalidArgument,
                 ctx + ": top_k " + std::to_string(a.top_k) + " > n_experts " + std::to_string(a.n_experts));
  }
  if (a.top_k > kMoeMaxTopK) {
    return error(StatusCode::kUnsupported, ctx + ": top_k " + std::to_string(a.top_k) + " > " +
                                               std::to_string(kMoeMaxTopK) + " (the router kernel's limit)");
  }
  const uint64_t picks = uint64_t{a.m_rows} * a.top_k;
  RDRR_RETURN_IF_ERROR(need_bytes(a.logits, uint64_t{a.m_rows} * a.n_experts * 4, "logits", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.ids, picks * 4, "ids", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.weights, picks * 4, "weights", ctx));
  if (uint64_t{a.m_rows} * a.n_experts >= k32Bit) {
    return error(StatusCode::kUnsupported, ctx + ": m_rows * n_experts exceeds the kernel's 32-bit indexing");
  }
  const BufferRange logits = a.logits.sub(0, uint64_t{a.m_rows} * a.n_experts * 4);
  const BufferRange ids = a.ids.sub(0, picks * 4);
  const BufferRange weights = a.weights.sub(0, picks * 4);
  RDRR_RETURN_IF_ERROR(need_apart(ids, "ids", logits, "logits", ctx));
  RDRR_RETURN_IF_ERROR(need_apart(weights, "weights", logits, "logits", ctx));
  RDRR_RETURN_IF_ERROR(need_apart(ids, "ids", weights, "weights", ctx));
  // One subgroup per row where the device's subgroup is 8 .. 64 invocations wide: the top-k rounds then run
  // without workgroup barriers (kernels/moe_route.comp).
  std::vector<SpecValue> spec;
  const uint32_t sg = rec.device().caps().subgroup_size;
  if (a.local_size_x != 0) {
    spec.push_back({0, a.local_size_x});
  } else if (sg >= 8 && sg <= 64) {
    spec.push_back({0, sg});
  }
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "moe_route", spec, ctx));
  RDRR_ASSIGN_OR_RETURN(const auto grid, fold_groups(rec, a.m_rows, ctx));
  const RoutePush push{a.m_rows, a.n_experts, a.top_k, a.normalize ? 1u : 0u, a.m_rows, 0, 0, 0};
  const BufferRange bindings[] = {logits, ids, weights};
  return rec.dispatch(*p, bindings, push, grid, label);
}

Status record_moe_gemv(Recorder& rec, const MoeGemvArgs& a, std::string_view label) {
  const std::string mode = a.combine ? "combine" : "gather";
  const std::string ctx = "moe_gemv " + std::string(label) + " [" + mode + " " +
                          std::string(quant::dtype_name(a.dtype)) + " " + std::string(quant::layout_name(a.layout)) +
                          " E=" + std::to_string(a.n_experts) + " N=" + std::to_string(a.n_rows) +
                          " K=" + std::to_string(a.k) + " M=" + std::to_string(a.m_rows) +
                          " T=" + std::to_string(a.top_k) + "]";
  RDRR_RETURN_IF_ERROR(check_expert_dims(a.n_experts, a.n_rows, "n_rows", a.k, a.m_rows, a.top_k, ctx));
  const bool has_weights = a.weights.buffer != VK_NULL_HANDLE;
  if (a.combine && !has_weights) return error(StatusCode::kInvalidArgument, ctx + ": weights missing (combine)");
  if (!a.combine && has_weights) {
    return error(StatusCode::kInvalidArgument, ctx + ": weights given to a gather call (combine = false)");
  }
  const kernels::Op op = a.combine ? kernels::Op::kMoeGemvCombine : kernels::Op::kMoeGemv;
  const kernels::KernelInfo* kernel = kernels::find_kernel(op, a.dtype, a.layout);
  if (kernel == nullptr) {
    return error(StatusCode::kUnsupported, ctx + ": no " + std::string(kernels::op_name(op)) +
                                               " kernel for this dtype and layout");
  }
  const bool quantized = quant::is_block_quantized(a.dtype);
  const uint64_t be = quantized ? static_cast<uint64_t>(quant::block_elems(a.dtype)) : 1;
  if (a.layout == Layout::kFlat && a.k % be != 0) {
    return error(StatusCode::kUnsupported, ctx + ": flat layout needs k % " + std::to_string(be) +
                                               " == 0 (rows starting on a block boundary); k % " + std::to_string(be) +
                                               " = " + std::to_string(a.k % be) + " (store it row_wise)");
  }
  if (!a.kernel.empty()) {
    RDRR_ASSIGN_OR_RETURN(kernel, forced_kernel(a.kernel, op, a.dtype, a.layout, ctx));
    std::string_view why;
    if (!kernels::matmul_kernel_fits(*kernel, a.layout, a.k, &why)) {
      return error(StatusCode::kUnsupported, ctx + ": forced kernel " + std::string(a.kernel) +
                                                 " cannot read this weight (" + std::string(why) + ")");
    }
  } else {
    kernel = kernels::pinned_moe_kernel(op, a.dtype, a.layout, a.k);
  }
  // The vectorized kernels (gemv_q4k.comp ROWS MOE [Q5K], gemv_q6k.comp MOE) address W in their own units: Q4_K
  // and Q5_K as 16-byte vectors, so the stacked weight's blocks must start 16-byte aligned (an automatic choice
  // falls back to the generic kernel).
  bool vec = kernel->name.ends_with("_vec");
  const bool k_quant_vectors = a.dtype == DType::kQ4_K || a.dtype == DType::kQ5_K;  // gemv_q4k.comp's blocks
  uint64_t unit_bytes = weight_unit_bytes(a.dtype);
  if (vec && k_quant_vectors) unit_bytes = kQ4KVecBytes;
  const uint64_t rows = uint64_t{a.n_experts} * a.n_rows;
  const uint64_t slots = uint64_t{a.m_rows} * a.top_k;
  const uint64_t row_stride = ceil_div(a.k, be) * be;
  const uint64_t x_rows = a.combine ? slots : a.m_rows;
  const uint64_t y_rows = a.combine ? a.m_rows : slots;
  if (rows * row_stride + x_rows * a.k + be >= k32Bit) {
    return error(StatusCode::kUnsupported, ctx + ": " + std::to_string(rows * row_stride) + " weight elements and " +
                                               std::to_string(x_rows * a.k) +
                                               " x elements exceed the kernel's 32-bit element indexing");
  }
  const uint64_t w_bytes = packed_weight_bytes(a.dtype, a.layout, rows, a.k);
  RDRR_RETURN_IF_ERROR(need_bytes(a.w, w_bytes, "w", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.x, x_rows * a.k * 4, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.ids, slots * 4, "ids", ctx));
  if (a.combine) RDRR_RETURN_IF_ERROR(need_bytes(a.weights, slots * 4, "weights", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.y, y_rows * a.n_rows * 4, "y", ctx));
  if (a.w.offset % weight_unit_bytes(a.dtype) != 0) {
    return error(StatusCode::kValidation, ctx + ": w offset " + std::to_string(a.w.offset) + " is not a multiple of " +
                                              std::to_string(weight_unit_bytes(a.dtype)));
  }
  const BufferRange y = a.y.sub(0, y_rows * a.n_rows * 4);
  RDRR_RETURN_IF_ERROR(need_apart(y, "y", a.w.sub(0, w_bytes), "w", ctx));
  RDRR_RETURN_IF_ERROR(need_apart(y, "y", a.x.sub(0, x_rows * a.k * 4), "x", ctx));
  RDRR_RETURN_IF_ERROR(need_apart(y, "y", a.ids.sub(0, slots * 4), "ids", ctx));
  if (a.combine) RDRR_RETURN_IF_ERROR(need_apart(y, "y", a.weights.sub(0, slots * 4), "weights", ctx));
  // The whole stacked weight in one binding, from the aligned offset below it.
  Device& dev = rec.device();
  const uint64_t skip = a.w.offset % dev.binding_alignment();
  const uint64_t bind_bytes = skip + w_bytes;
  if (bind_bytes > dev.binding_limit_bytes()) {
    return error(StatusCode::kUnsupported,
                 ctx + ": w, the stacked expert weight of " + std::to_string(w_bytes) + " bytes (binding " +
                     std::to_string(bind_bytes) + " bytes), exceeds the device's storage-buffer binding limit of " +
                     std::to_string(dev.binding_limit_bytes()) + " bytes (MoE weights are not split over bindings)");
  }
  if (vec && skip % unit_bytes != 0) {
    if (!a.kernel.empty()) {
      return error(StatusCode::kUnsupported, ctx + ": forced kernel " + std::string(a.kernel) +
                                                 " cannot run these args (blocks not 16-byte aligned)");
    }
    kernel = kernels::find_kernel(op, a.dtype, a.layout);
    unit_bytes = weight_unit_bytes(a.dtype);
    vec = false;
  }
  std::vector<SpecValue> spec;
  if (a.tuning.local_size_x != 0) spec.push_back({0, a.tuning.local_size_x});
  if (a.tuning.num_rows != 0) spec.push_back({1, a.tuning.num_rows});
  if (a.tuning.unroll != 0) {
    if (!vec || !k_quant_vectors) {
      return error(StatusCode::kInvalidArgument, ctx + ": unroll is a knob of the vectorized Q4_K / Q5_K kernels");
    }
    spec.push_back({3, a.tuning.unroll});
  }
  if (vec && spec.empty() && a.combine && a.m_rows == 1) {
    // A decode token's combine spreads the items of its T experts over the workgroup: wide workgroups of a few rows
    // (bench/README.md, expert GEMV workgroups).
    spec = {{0, kDecodeCombineLocalSize}, {1, a.dtype == DType::kQ6_K ? kDecodeCombineRowsQ6K : kDecodeCombineRows}};
  } else if (vec && spec.empty()) {
    // The dense rows GEMV's workgroup sizes for this many workgroups; rows of at most 32 Q4_K / Q5_K items (K <= 1024)
    // one 32-invocation group (64 would leave half of them idle).
    const DeviceCaps& caps = dev.caps();
    const uint64_t default_groups = ceil_div(a.n_rows, spec_default(*kernel, 1)) * y_rows;
    spec = vec_rows_local_size(a.dtype == DType::kQ6_K, a.k, default_groups, caps);
    if (k_quant_vectors && ceil_div(a.k, quant::kQK_K) * 8 <= 32 && caps.subgroup_size != 0 &&
        caps.subgroup_size <= 32) {
      spec = {{0, 32}};
    }
  }
  Result<const Pipeline*> pipe = dev.pipelines().get(*kernel, spec);
  if (!pipe.ok()) return pipe.status().context(ctx);
  const uint64_t row_groups = ceil_div(a.n_rows, (*pipe)->spec(1));
  const uint64_t groups = row_groups * y_rows;
  if (groups >= k32Bit) return error(StatusCode::kUnsupported, ctx + ": " + std::to_string(groups) + " workgroups");
  RDRR_ASSIGN_OR_RETURN(const auto grid, fold_groups(rec, groups, ctx));
  const MoeGemvPush push{a.n_rows,
                         a.k,
                         static_cast<uint32_t>(row_stride),
                         static_cast<uint32_t>(skip / unit_bytes),
                         a.n_experts,
                         a.top_k,
                         static_cast<uint32_t>(row_groups),
                         static_cast<uint32_t>(groups)};
  const BufferRange w_binding{a.w.buffer, a.w.offset - skip, bind_bytes};
  const BufferRange x = a.x.sub(0, x_rows * a.k * 4);
  const BufferRange ids = a.ids.sub(0, slots * 4);
  if (a.combine) {
    const BufferRange bindings[] = {w_binding, x, ids, a.weights.sub(0, slots * 4), y};
    return rec.dispatch(**pipe, bindings, push, grid, label);
  }
  const BufferRange bindings[] = {w_binding, x, ids, y};
  return rec.dispatch(**pipe, bindings, push, grid, label);
}

Status record_moe_route_glu(Recorder& rec, const MoeRouteGluArgs& a, std::string_view label) {
  const std::string ctx = "moe_route_glu " + std::string(label) + " [" + std::string(quant::dtype_name(a.dtype)) + " " +
                          std::string(quant::layout_name(a.layout)) + " E=" + std::to_string(a.n_experts) +
                          " F=" + std::to_string(a.ff) + " K=" + std::to_string(a.k) + " M=" + std::to_string(a.m_rows) +
                          " T=" + std::to_string(a.top_k) + "]";
  RDRR_RETURN_IF_ERROR(check_expert_dims(a.n_experts, a.ff, "ff", a.k, a.m_rows, a.top_k, ctx));
  Device& dev = rec.device();
  const DeviceCaps& caps = dev.caps();
  const uint32_t sg_max = std::max<uint32_t>(largest_subgroup(caps), 1);
  if (a.n_experts > kMoeMaxExperts || a.top_k > kMoeMaxTopK) {
    return error(StatusCode::kUnsupported, ctx + ": the fused router takes at most " + std::to_string(kMoeMaxExperts) +
                                               " experts and top_k <= " + std::to_string(kMoeMaxTopK));
  }
  const kernels::KernelInfo* kernel = kernels::pinned_moe_route_glu_kernel(a.dtype, a.layout, a.k);
  if (kernel == nullptr) {
    return error(StatusCode::kUnsupported, ctx + ": no moe_gemv_route_glu kernel reads this dtype / layout / K (Q4_K "
                                               "or Q5_K rows of whole blocks)");
  }
  const uint64_t rows = uint64_t{a.n_experts} * a.ff * 2;
  const uint64_t slots = uint64_t{a.m_rows} * a.top_k;
  const uint64_t row_stride = ceil_div(a.k, quant::kQK_K) * quant::kQK_K;
  if (rows * row_stride + uint64_t{a.m_rows} * a.k + quant::kQK_K >= k32Bit ||
      uint64_t{a.m_rows} * a.n_experts >= k32Bit || slots * a.ff >= k32Bit) {
    return error(StatusCode::kUnsupported, ctx + ": the sizes exceed the kernel's 32-bit element indexing");
  }
  const uint64_t w_bytes = packed_weight_bytes(a.dtype, a.layout, rows, a.k);
  RDRR_ASSIGN_OR_RETURN(const RouteGluRanges r, route_glu_ranges(a, w_bytes, ctx));
  const uint64_t skip = a.w.offset % dev.binding_alignment();
  if (skip % kQ4KVecBytes != 0) {
    return error(StatusCode::kUnsupported, ctx + ": w at offset " + std::to_string(a.w.offset) +
                                               ": the kernel reads 16-byte aligned blocks");
  }
  if (skip + w_bytes > dev.binding_limit_bytes()) {
    return error(StatusCode::kUnsupported, ctx + ": w, the stacked expert weight of " + std::to_string(w_bytes) +
                                               " bytes, exceeds the device's storage-buffer binding limit of " +
                                               std::to_string(dev.binding_limit_bytes()) + " bytes");
  }
  RDRR_ASSIGN_OR_RETURN(const std::vector<SpecValue> spec, route_glu_spec(a, sg_max, ctx));
  Result<const Pipeline*> pipe = dev.pipelines().get(*kernel, spec);
  if (!pipe.ok()) return pipe.status().context(ctx);
  const uint64_t row_groups = ceil_div(a.ff, (*pipe)->spec(1) / 2);
  const uint64_t groups = row_groups * slots;
  if (groups >= k32Bit) return error(StatusCode::kUnsupported, ctx + ": " + std::to_string(groups) + " workgroups");
  RDRR_ASSIGN_OR_RETURN(const auto grid, fold_groups(rec, groups, ctx));
  const uint64_t unit = kQ4KVecBytes;
  const MoeRouteGluPush push{{2 * a.ff, a.k, static_cast<uint32_t>(row_stride), static_cast<uint32_t>(skip / unit),
                              a.n_experts, a.top_k, static_cast<uint32_t>(row_groups), static_cast<uint32_t>(groups)},
                             a.normalize ? 1u : 0u,
                             0,
                             0,
                             0};
  const BufferRange bindings[] = {{a.w.buffer, a.w.offset - skip, skip + w_bytes}, r.x, r.logits, r.ids, r.weights, r.act};
  return rec.dispatch(**pipe, bindings, push, grid, label);
}

Status record_gated_add(Recorder& rec, const GatedAddArgs& a, std::string_view label) {
  const std::string ctx = "gated_add " + std::string(label) + " [rows=" + std::to_string(a.m_rows) +
                          " d=" + std::to_string(a.d) + "]";
  RDRR_RETURN_IF_ERROR(need_nonzero(a.m_rows, "m_rows", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(a.d, "d", ctx));
  const uint64_t n = uint64_t{a.m_rows} * a.d;
  if (n >= k32Bit) {
    return error(StatusCode::kUnsupported, ctx + ": " + std::to_string(n) + " elements exceed 32-bit indexing");
  }
  RDRR_RETURN_IF_ERROR(need_bytes(a.g, uint64_t{a.m_rows} * 4, "g", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.s, n * 4, "s", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.y, n * 4, "y", ctx));
  const BufferRange g = a.g.sub(0, uint64_t{a.m_rows} * 4);
  const BufferRange s = a.s.sub(0, n * 4);
  const BufferRange y = a.y.sub(0, n * 4);
  RDRR_RETURN_IF_ERROR(need_apart(y, "y", g, "g", ctx));
  RDRR_RETURN_IF_ERROR(need_apart(y, "y", s, "s", ctx));
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "gated_add", {}, ctx));
  const uint64_t groups = ceil_div(n, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(const auto grid, fold_groups(rec, groups, ctx));
  const GatedAddPush push{a.m_rows, a.d, static_cast<uint32_t>(groups), 0};
  const BufferRange bindings[] = {g, s, y};
  return rec.dispatch(*p, bindings, push, grid, label);
}

}  // namespace rdrr::runtime
