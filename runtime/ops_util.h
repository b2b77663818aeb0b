// Internal helpers shared by the op recorders (runtime/ops_*.cpp); not part of the public API.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/kernel_choice.h"
#include "quant/dtype.h"
#include "quant/status.h"
#include "runtime/caps.h"
#include "runtime/device.h"
#include "runtime/memory.h"
#include "runtime/ops_attention.h"
#include "runtime/pipeline.h"
#include "runtime/recorder.h"

namespace rdrr::runtime::ops_detail {

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Bytes per element of the array a kernel reads packed weights of `dtype` through (the kernels' W bindings:
// uint32 words for F32, Q4_K and Q5_K, whose blocks are 4-byte multiples; uint16 for the others). Offsets
// (w_base) are in these units, so a weight range must start at a multiple of them.
inline uint64_t weight_unit_bytes(quant::DType dtype) {
  return dtype == quant::DType::kF32 || dtype == quant::DType::kQ4_K || dtype == quant::DType::kQ5_K ? 4 : 2;
}

// Q4_K kernels that read blocks as uvec4 (gemv_q4k*.comp, gemm.comp's fast tiles) need blocks starting at
// this alignment in the binding.
constexpr uint64_t kQ4KVecBytes = 16;

// The registry default of specialization constant `id` (1 when the kernel has none).
inline uint32_t spec_default(const kernels::KernelInfo& kernel, uint32_t id) {
  for (const kernels::SpecInfo& si : kernel.spec) {
    if (si.id == id) return si.default_value > 1 ? si.default_value : 1;
  }
  return 1;
}

// The workgroup size of a vectorized rows GEMV (gemv_q4k.comp ROWS, gemv_q6k.comp; dense or expert rows) with
// no tuning override, for `groups` workgroups over rows of k inputs: {0, size} specialization entries, empty for
// the registry default (runtime/ops_gemv.cpp; bench/README.md, Q4_K / Q6_K GEMV).
std::vector<SpecValue> vec_rows_local_size(bool q6_k, uint32_t k, uint64_t groups, const DeviceCaps& caps);

// gemv_q4_k_dot's row group: the device's largest subgroup must divide it.
constexpr uint32_t kDotGroupInvocations = 64;

// What the device offers the kernel choice (kernels/kernel_choice.h).
inline kernels::DeviceFacts device_facts(const DeviceCaps& caps) {
  kernels::DeviceFacts f;
  f.int_dot_usable = caps.integer_dot_product && caps.subgroup_size != 0 &&
                     kDotGroupInvocations % largest_subgroup(caps) == 0;
  f.int_dot_fast = caps.integer_dot_4x8_accelerated;
  f.coopmat_f16 = caps.coopmat_f16_16x16;
  return f;
}

// kValidation "<ctx>: <field> range of N bytes < required M" when r is too short.
inline Status need_bytes(const BufferRange& r, uint64_t need, std::string_view field, const std::string& ctx) {
  if (r.size >= need) return Status::Ok();
  return error(StatusCode::kValidation, ctx + ": " + std::string(field) + " range of " + std::to_string(r.size) +
                                            " bytes < required " + std::to_string(need));
}

// kInvalidArgument "<ctx>: <field> is 0".
inline Status need_nonzero(uint64_t v, std::string_view field, const std::string& ctx) {
  if (v != 0) return Status::Ok();
  return error(StatusCode::kInvalidArgument, ctx + ": " + std::string(field) + " is 0");
}

// The frequency arguments of a rotary embedding (record_rope, record_kv_append with rope): theta_base > 0
// unless a table of n_rot / 2 inverse frequencies is bound, mscale finite.
inline Status check_rope_freqs(const BufferRange& inv_freq, float theta_base, float mscale, uint32_t n_rot,
                               const std::string& ctx) {
  const bool table = inv_freq.buffer != VK_NULL_HANDLE;
  if (!table && !(theta_base > 0.0f)) return error(StatusCode::kInvalidArgument, ctx + ": theta_base must be > 0");
  if (!std::isfinite(mscale)) return error(StatusCode::kInvalidArgument, ctx + ": mscale is not finite");
  return table ? need_bytes(inv_freq, uint64_t{n_rot} / 2 * 4, "inv_freq", ctx) : Status::Ok();
}

// A per-head RMSNorm fused before a rotation (record_rope, record_kv_append): w holds head_dim floats, eps > 0 and
// finite, and one workgroup of head_dim / 2 invocations fits the device. The workgroup size (spec 0).
inline Result<uint32_t> check_head_norm(const HeadNormWeight& n, uint32_t head_dim, const DeviceCaps& caps,
                                        const std::string& ctx) {
  RDRR_RETURN_IF_ERROR(need_bytes(n.w, uint64_t{head_dim} * 4, "norm w", ctx));
  if (!(n.eps > 0.0f) || !std::isfinite(n.eps) || !std::isfinite(n.weight_offset)) {
    return error(StatusCode::kInvalidArgument, ctx + ": norm eps must be finite and > 0, weight_offset finite");
  }
  if (head_dim / 2 > caps.max_workgroup_invocations) {
    return error(StatusCode::kUnsupported, ctx + ": the fused head norm runs head_dim / 2 = " +
                                               std::to_string(head_dim / 2) + " invocations per workgroup, the device " +
                                               std::to_string(caps.max_workgroup_invocations));
  }
  return head_dim / 2;
}

// True when [a.offset, a.offset + a.size) and b's range share a byte of the same buffer.
inline bool overlaps(const BufferRange& a, const BufferRange& b) {
  return a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

inline Result<const Pipeline*> get_pipeline(Recorder& rec, std::string_view name, std::span<const SpecValue> spec,
                                            const std::string& ctx) {
  Result<const Pipeline*> p = rec.device().pipelines().get(name, spec);
  if (!p.ok()) return p.status().context(ctx);
  return p;
}

}  // namespace rdrr::runtime::ops_detail
