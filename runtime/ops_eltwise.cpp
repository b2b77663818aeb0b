// record_rms_norm, record_head_norm, record_add_rms_norm, record_add, record_softcap, record_glu,
// record_glu_split, record_rope, record_dequant (kernels/*.comp headers say the rest).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/registry.h"
#include "runtime/device.h"
#include "runtime/ops.h"
#include "runtime/ops_util.h"
#include "runtime/pipeline.h"

namespace rdrr::runtime {
namespace {

using namespace ops_detail;

struct CountPush {
  uint32_t n, n_groups;
};

// One thread per element: add and glu.
Status record_elementwise(Recorder& rec, std::string_view kernel, std::span<const SpecValue> spec,
                          std::span<const BufferRange> bindings, uint32_t n, const std::string& ctx,
                          std::string_view label) {
  if (n == 0) return error(StatusCode::kInvalidArgument, ctx + ": n is 0");
  static constexpr std::string_view kNames[] = {"first input", "second input", "out"};
  for (size_t i = 0; i < bindings.size(); ++i) RDRR_RETURN_IF_ERROR(need_bytes(bindings[i], uint64_t{n} * 4, kNames[i], ctx));
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, kernel, spec, ctx));
  const uint64_t groups = ceil_div(n, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const CountPush push{n, static_cast<uint32_t>(groups)};
  return rec.dispatch(*p, bindings, push, grid, label);
}

// Workgroup size of the norm kernels (one workgroup per row): about 4 values per invocation, so a decode row
// (one workgroup, latency-bound) issues all its loads at once and keeps them in registers for the second pass;
// a power of two in [32, min(1024, device limit)]. H100, d = 4096: 128 -> 1024 invocations.
std::vector<SpecValue> norm_spec(Recorder& rec, uint32_t d) {
  constexpr uint32_t kValuesPerInvocation = 4;
  const uint32_t limit = std::max<uint32_t>(32, std::min<uint32_t>(1024, rec.device().caps().max_workgroup_invocations));
  uint32_t local = 32;
  while (local < limit && uint64_t{local} * kValuesPerInvocation < d) local *= 2;
  return {{0, std::min(local, limit)}};
}

// rms_norm kernel over n_rows rows of d, after the caller's op-specific checks.
Status dispatch_rms_norm(Recorder& rec, const RmsNormArgs& a, const std::string& ctx, std::string_view label) {
  if (a.d == 0 || a.n_rows == 0) return error(StatusCode::kInvalidArgument, ctx + ": empty shape");
  if (!(a.eps >= 0.0f)) return error(StatusCode::kInvalidArgument, ctx + ": eps " + std::to_string(a.eps) + " < 0");
  const uint64_t elems = uint64_t{a.d} * a.n_rows;
  RDRR_RETURN_IF_ERROR(need_bytes(a.x, elems * 4, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.w, uint64_t{a.d} * 4, "w", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.y, elems * 4, "y", ctx));
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "rms_norm", norm_spec(rec, a.d), ctx));
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, a.n_rows, ctx));
  struct {
    uint32_t d, n_rows;
    float eps, weight_offset;
    uint32_t n_groups;
  } push{a.d, a.n_rows, a.eps, a.weight_offset, a.n_rows};
  const BufferRange bindings[] = {a.x, a.w, a.y};
  return rec.dispatch(*p, bindings, push, grid, label);
}

}  // namespace

Status record_rms_norm(Recorder& rec, const RmsNormArgs& a, std::string_view label) {
  const std::string ctx = "rms_norm " + std::string(label) + " [rows=" + std::to_string(a.n_rows) +
                          " d=" + std::to_string(a.d) + "]";
  return dispatch_rms_norm(rec, a, ctx, label);
}

Status record_head_norm(Recorder& rec, const HeadNormArgs& a, std::string_view label) {
  const std::string ctx = "head_norm " + std::string(label) + " [tokens=" + std::to_string(a.n_tokens) +
                          " heads=" + std::to_string(a.n_heads) + " head_dim=" + std::to_string(a.head_dim) + "]";
  const uint64_t rows = uint64_t{a.n_tokens} * a.n_heads;
  if (rows >= (uint64_t{1} << 32)) return error(StatusCode::kUnsupported, ctx + ": too many rows");
  RmsNormArgs r;
  r.x = a.x;
  r.w = a.w;
  r.y = a.y;
  r.d = a.head_dim;
  r.n_rows = static_cast<uint32_t>(rows);
  r.eps = a.eps;
  r.weight_offset = a.weight_offset;
  return dispatch_rms_norm(rec, r, ctx, label);
}

Status record_add_rms_norm(Recorder& rec, const AddRmsNormArgs& a, std::string_view label) {
  const std::string ctx = "add_rms_norm " + std::string(label) + " [rows=" + std::to_string(a.n_rows) +
                          " d=" + std::to_string(a.d) + "]";
  if (a.d == 0 || a.n_rows == 0) return error(StatusCode::kInvalidArgument, ctx + ": empty shape");
  if (!(a.eps >= 0.0f)) return error(StatusCode::kInvalidArgument, ctx + ": eps " + std::to_string(a.eps) + " < 0");
  const uint64_t elems = uint64_t{a.d} * a.n_rows;
  RDRR_RETURN_IF_ERROR(need_bytes(a.x, elems * 4, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.res, elems * 4, "res", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.w, uint64_t{a.d} * 4, "w", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.y, elems * 4, "y", ctx));
  if (overlaps(a.y, a.x) || overlaps(a.y, a.res)) {
    return error(StatusCode::kInvalidArgument, ctx + ": y overlaps x or res (x is updated in place; y is separate)");
  }
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "add_rms_norm", norm_spec(rec, a.d), ctx));
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, a.n_rows, ctx));
  struct {
    uint32_t d, n_rows;
    float eps, weight_offset;
    uint32_t n_groups;
  } push{a.d, a.n_rows, a.eps, a.weight_offset, a.n_rows};
  const BufferRange bindings[] = {a.x, a.res, a.w, a.y};
  return rec.dispatch(*p, bindings, push, grid, label);
}

Status record_add(Recorder& rec, const BufferRange& a, const BufferRange& b, const BufferRange& out, uint32_t n,
                  std::string_view label) {
  const BufferRange bindings[] = {a, b, out};
  return record_elementwise(rec, "add", {}, bindings, n, "add " + std::string(label) + " [n=" + std::to_string(n) + "]",
                            label);
}

Status record_add_bias(Recorder& rec, const BufferRange& x, const BufferRange& bias, const BufferRange& out, uint32_t n_b,
                       uint32_t n_rows, std::string_view label) {
  const std::string ctx = "add_bias " + std::string(label) + " [n_b=" + std::to_string(n_b) +
                          " rows=" + std::to_string(n_rows) + "]";
  RDRR_RETURN_IF_ERROR(need_nonzero(n_b, "n_b", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(n_rows, "n_rows", ctx));
  const uint64_t n = uint64_t{n_b} * n_rows;
  if (n >= (uint64_t{1} << 32)) return error(StatusCode::kUnsupported, ctx + ": too many elements");
  RDRR_RETURN_IF_ERROR(need_bytes(x, n * 4, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(bias, uint64_t{n_b} * 4, "bias", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(out, n * 4, "out", ctx));
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "add_bias", {}, ctx));
  const uint64_t groups = ceil_div(n, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  struct {
    uint32_t n, n_groups, n_b, pad0;
  } push{static_cast<uint32_t>(n), static_cast<uint32_t>(groups), n_b, 0};
  const BufferRange bindings[] = {x.sub(0, n * 4), bias.sub(0, uint64_t{n_b} * 4), out.sub(0, n * 4)};
  return rec.dispatch(*p, bindings, push, grid, label);
}

Status record_glu(Recorder& rec, Activation act, const BufferRange& gate, const BufferRange& up, const BufferRange& out,
                  uint32_t n, std::string_view label) {
  const BufferRange bindings[] = {gate, up, out};
  const SpecValue spec[] = {{1, static_cast<uint32_t>(act)}};
  return record_elementwise(rec, "glu", spec, bindings, n, "glu " + std::string(label) + " [n=" + std::to_string(n) + "]",
                            label);
}

Status record_glu_split(Recorder& rec, Activation act, const BufferRange& gate_up, const BufferRange& out, uint32_t n_ff,
                        uint32_t n_tokens, std::string_view label) {
  const std::string ctx = "glu_split " + std::string(label) + " [n_ff=" + std::to_string(n_ff) +
                          " tokens=" + std::to_string(n_tokens) + "]";
  RDRR_RETURN_IF_ERROR(need_nonzero(n_ff, "n_ff", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(n_tokens, "n_tokens", ctx));
  const uint64_t n = uint64_t{n_ff} * n_tokens;
  if (2 * n >= (uint64_t{1} << 32)) return error(StatusCode::kUnsupported, ctx + ": too many elements");
  RDRR_RETURN_IF_ERROR(need_bytes(gate_up, 2 * n * 4, "gate_up", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(out, n * 4, "out", ctx));
  if (overlaps(gate_up, out)) return error(StatusCode::kInvalidArgument, ctx + ": out overlaps gate_up");
  const SpecValue spec[] = {{1, static_cast<uint32_t>(act)}};
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "glu_split", spec, ctx));
  const uint64_t groups = ceil_div(n, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const struct {
    uint32_t n, n_groups, n_ff;
  } push{static_cast<uint32_t>(n), static_cast<uint32_t>(groups), n_ff};
  const BufferRange bindings[] = {gate_up, out};
  return rec.dispatch(*p, bindings, push, grid, label);
}

Status record_split_qkv(Recorder& rec, const BufferRange& qkv, const BufferRange& q, const BufferRange& k,
                        const BufferRange& v, uint32_t n_q, uint32_t n_kv, uint32_t n_tokens, std::string_view label) {
  const std::string ctx = "split_qkv " + std::string(label) + " [n_q=" + std::to_string(n_q) +
                          " n_kv=" + std::to_string(n_kv) + " tokens=" + std::to_string(n_tokens) + "]";
  RDRR_RETURN_IF_ERROR(need_nonzero(n_q, "n_q", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(n_kv, "n_kv", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(n_tokens, "n_tokens", ctx));
  const uint64_t n = (uint64_t{n_q} + 2 * uint64_t{n_kv}) * n_tokens;
  if (n >= (uint64_t{1} << 32)) return error(StatusCode::kUnsupported, ctx + ": too many elements");
  RDRR_RETURN_IF_ERROR(need_bytes(qkv, n * 4, "qkv", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(q, uint64_t{n_q} * n_tokens * 4, "q", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(k, uint64_t{n_kv} * n_tokens * 4, "k", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(v, uint64_t{n_kv} * n_tokens * 4, "v", ctx));
  for (const auto& [out, name] : {std::pair{q, "q"}, {k, "k"}, {v, "v"}}) {
    if (overlaps(qkv, out)) return error(StatusCode::kInvalidArgument, ctx + ": " + name + " overlaps qkv");
  }
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "split_qkv", {}, ctx));
  const uint64_t groups = ceil_div(n, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const struct {
    uint32_t n, n_groups, n_q, n_kv;
  } push{static_cast<uint32_t>(n), static_cast<uint32_t>(groups), n_q, n_kv};
  const BufferRange bindings[] = {qkv, q, k, v};
  return rec.dispatch(*p, bindings, push, grid, label);
}

Status record_unary(Recorder& rec, std::string_view kernel, const BufferRange& x, const BufferRange& y, uint32_t n,
                    float param, std::string_view label) {
  const std::string ctx = std::string(kernel) + " " + std::string(label) + " [n=" + std::to_string(n) + "]";
  const kernels::KernelInfo* info = kernels::find_kernel(kernel);
  if (info == nullptr || info->op != kernels::Op::kUnary) {
    return error(StatusCode::kInvalidArgument, ctx + ": not a unary kernel of the registry");
  }
  RDRR_RETURN_IF_ERROR(need_nonzero(n, "n", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(x, uint64_t{n} * 4, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(y, uint64_t{n} * 4, "y", ctx));
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, kernel, {}, ctx));
  const uint64_t groups = ceil_div(n, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const struct {
    uint32_t n;
    float param;
    uint32_t n_groups;
  } push{n, param, static_cast<uint32_t>(groups)};
  const BufferRange bindings[] = {x, y};
  return rec.dispatch(*p, bindings, push, grid, label);
}

Status record_softcap(Recorder& rec, const BufferRange& x, const BufferRange& y, uint32_t n, float cap,
                      std::string_view label) {
  if (!(cap > 0.0f) || !std::isfinite(cap)) {
    return error(StatusCode::kInvalidArgument, "softcap " + std::string(label) + " [n=" + std::to_string(n) +
                                                   "]: cap " + std::to_string(cap) + " must be finite and > 0");
  }
  return record_unary(rec, "softcap", x, y, n, cap, label);
}

namespace {

struct RopePush {
  uint32_t n_tokens, n_heads, head_dim, n_rot;
  float theta_base, freq_scale;
  uint32_t mode, n_groups;
  float mscale;
};

// rope.comp NORM: one workgroup of head_dim / 2 invocations per (token, head) row.
Status record_rope_norm(Recorder& rec, const RopeArgs& a, uint32_t n_rot, bool table, const std::string& ctx,
                        std::string_view label) {
  RDRR_ASSIGN_OR_RETURN(const uint32_t local, check_head_norm(*a.norm, a.head_dim, rec.device().caps(), ctx));
  const SpecValue spec[] = {{0, local}};
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, table ? "rope_freqs_norm" : "rope_norm", spec, ctx));
  const uint64_t groups = uint64_t{a.n_tokens} * a.n_heads;
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const struct {
    RopePush rope;
    float eps, weight_offset;
    uint32_t pad0;
  } push{{a.n_tokens, a.n_heads, a.head_dim, n_rot, a.theta_base, a.freq_scale, static_cast<uint32_t>(a.mode),
          static_cast<uint32_t>(groups), a.mscale},
         a.norm->eps,
         a.norm->weight_offset,
         0};
  const BufferRange w = a.norm->w.sub(0, uint64_t{a.head_dim} * 4);
  if (table) {
    const BufferRange bindings[] = {a.x, a.pos, a.y, a.inv_freq.sub(0, uint64_t{n_rot} / 2 * 4), w};
    return rec.dispatch(*p, bindings, push, grid, label);
  }
  const BufferRange bindings[] = {a.x, a.pos, a.y, w};
  return rec.dispatch(*p, bindings, push, grid, label);
}

}  // namespace

Status record_rope(Recorder& rec, const RopeArgs& a, std::string_view label) {
  const uint32_t n_rot = a.n_rot == 0 ? a.head_dim : a.n_rot;
  const std::string ctx = "rope " + std::string(label) + " [tokens=" + std::to_string(a.n_tokens) +
                          " heads=" + std::to_string(a.n_heads) + " head_dim=" + std::to_string(a.head_dim) +
                          " n_rot=" + std::to_string(n_rot) + "]";
  if (a.n_tokens == 0 || a.n_heads == 0 || a.head_dim == 0) return error(StatusCode::kInvalidArgument, ctx + ": empty shape");
  if (a.head_dim % 2 != 0 || n_rot % 2 != 0 || n_rot > a.head_dim) {
    return error(StatusCode::kInvalidArgument, ctx + ": head_dim and n_rot must be even with n_rot <= head_dim");
  }
  RDRR_RETURN_IF_ERROR(check_rope_freqs(a.inv_freq, a.theta_base, a.mscale, n_rot, ctx));
  const bool table = a.inv_freq.buffer != VK_NULL_HANDLE;
  const uint64_t elems = uint64_t{a.n_tokens} * a.n_heads * a.head_dim;
  RDRR_RETURN_IF_ERROR(need_bytes(a.x, elems * 4, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.pos, uint64_t{a.n_tokens} * 4, "pos", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.y, elems * 4, "y", ctx));
  if (a.norm) return record_rope_norm(rec, a, n_rot, table, ctx, label);
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, table ? "rope_freqs" : "rope", {}, ctx));
  const uint64_t groups = ceil_div(elems / 2, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const RopePush push{a.n_tokens,   a.n_heads, a.head_dim, n_rot, a.theta_base, a.freq_scale, static_cast<uint32_t>(a.mode),
                      static_cast<uint32_t>(groups), a.mscale};
  if (table) {
    const BufferRange bindings[] = {a.x, a.pos, a.y, a.inv_freq.sub(0, uint64_t{n_rot} / 2 * 4)};
    return rec.dispatch(*p, bindings, push, grid, label);
  }
  const BufferRange bindings[] = {a.x, a.pos, a.y};
  return rec.dispatch(*p, bindings, push, grid, label);
}

Status record_dequant(Recorder& rec, quant::DType dtype, const BufferRange& src, const BufferRange& dst,
                      uint32_t n_blocks, std::string_view label) {
  const std::string ctx = "dequant " + std::string(label) + " [" + std::string(quant::dtype_name(dtype)) +
                          " blocks=" + std::to_string(n_blocks) + "]";
  const kernels::KernelInfo* k = kernels::find_kernel(kernels::Op::kDequant, dtype, quant::Layout::kFlat);
  if (k == nullptr) return error(StatusCode::kUnsupported, ctx + ": no dequant kernel for this dtype");
  if (n_blocks == 0) return error(StatusCode::kInvalidArgument, ctx + ": n_blocks is 0");
  const uint64_t be = static_cast<uint64_t>(quant::block_elems(dtype));
  const uint64_t elems = uint64_t{n_blocks} * be;
  if (elems >= (uint64_t{1} << 32)) return error(StatusCode::kUnsupported, ctx + ": too many elements for one dispatch");
  RDRR_RETURN_IF_ERROR(need_bytes(src, n_blocks * static_cast<uint64_t>(quant::block_bytes(dtype)), "src", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(dst, elems * 4, "dst", ctx));
  const uint64_t unit = weight_unit_bytes(dtype);
  if (src.offset % unit != 0) {
    return error(StatusCode::kValidation, ctx + ": src offset " + std::to_string(src.offset) + " not a multiple of " +
                                              std::to_string(unit));
  }
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, k->name, {}, ctx));
  const uint64_t groups = ceil_div(elems, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const struct {
    uint32_t n_elems, src_base;
  } push{static_cast<uint32_t>(elems), 0};
  const BufferRange bindings[] = {src, dst};
  return rec.dispatch(*p, bindings, push, grid, label);
}

Result<const kernels::KernelInfo*> forced_kernel(std::string_view forced, kernels::Op op, quant::DType dtype,
                                                 quant::Layout layout, const std::string& ctx) {
  const kernels::KernelInfo* k = kernels::find_kernel(forced);
  if (k == nullptr) {
    return error(StatusCode::kNotFound, ctx + ": forced kernel " + std::string(forced) + " is not a registry kernel");
  }
  const bool dtype_ok = std::find(k->dtypes.begin(), k->dtypes.end(), dtype) != k->dtypes.end();
  const bool layout_ok = k->layouts.empty() || std::find(k->layouts.begin(), k->layouts.end(), layout) != k->layouts.end();
  if (k->op != op || !dtype_ok || !layout_ok) {
    return error(StatusCode::kUnsupported, ctx + ": forced kernel " + std::string(forced) + " (op " +
                                               std::string(kernels::op_name(k->op)) + ") cannot run op " +
                                               std::string(kernels::op_name(op)) + " on " +
                                               std::string(quant::dtype_name(dtype)) + " " +
                                               std::string(quant::layout_name(layout)));
  }
  return k;
}

}  // namespace rdrr::runtime
