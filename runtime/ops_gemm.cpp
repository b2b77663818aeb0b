// record_gemm: prefill matmul Y[M, N] = X[M, K] W^T over packed weights (kernels/gemm.comp). Row layouts
// (flat / row_wise / plain float) split large weights into ranges of whole outputs; Q4_K column_wise into
// ranges of inputs, later ranges adding into Y.
#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/kernel_choice.h"
#include "kernels/registry.h"
#include "quant/blocks.h"
#include "runtime/binding_split.h"
#include "runtime/device.h"
#include "runtime/ops.h"
#include "runtime/ops_util.h"
#include "runtime/pipeline.h"

namespace rdrr::runtime {
namespace {

using quant::DType;
using quant::Layout;
using namespace ops_detail;

struct GemmPush {
  uint32_t m, n_total, n_rows, row_begin, k, k_begin, k_total, row_stride;
  uint32_t w_base, block_begin, blocks_per_n, accumulate, tiles_n, n_groups, fast_tiles, flags;
};
static_assert(sizeof(GemmPush) == 64);

constexpr uint64_t kIndexLimit = uint64_t{1} << 32;
// From this many rows (tokens) on, the automatic tile is TM 32 x TN 128 (256 invocations) instead of the
// registry's 16 x 64: twice the products per decoded weight and per staged x value; faster for long prompts,
// slower for short ones (bench/README.md, GEMM).
constexpr uint32_t kWideTileFromRows = 64;
constexpr GemmTuning kWideTile{32, 8, 4, 4, 0};

std::vector<SpecValue> gemm_spec(const GemmTuning& t) {
  std::vector<SpecValue> s;
  if (t.local_size_x != 0) s.push_back({0, t.local_size_x});
  if (t.local_size_y != 0) s.push_back({1, t.local_size_y});
  if (t.rm != 0) s.push_back({2, t.rm});
  if (t.rn != 0) s.push_back({3, t.rn});
  if (t.tk != 0) s.push_back({4, t.tk});
  if (t.dbuf != 0) s.push_back({5, t.dbuf - 1});
  if (t.wn != 0) s.push_back({6, t.wn});
  return s;
}

// The tuning's tile with the registry's defaults filled in: {local_size_x, local_size_y, RM, RN, TK, DBUF, WN}
// (the last two: *_cm kernels only).
using TileSpec = std::array<uint64_t, 7>;
TileSpec resolved_tile(const kernels::KernelInfo& kernel, const GemmTuning& t) {
  TileSpec v{};
  for (const kernels::SpecInfo& si : kernel.spec) {
    if (si.id < v.size()) v[si.id] = si.default_value;
  }
  for (const SpecValue& sv : gemm_spec(t)) v[sv.id] = sv.value;
  return v;
}

// Shared memory of a resolved tile: X[TM][TK + 1] and W[TN][TK + 1] floats (rows padded by one value); the
// cooperative-matrix variant: 1 or 2 (DBUF) stages of X[TM][TK + 8] and W[TN][TK + 8] halves (column_wise
// W[TK][TN + 8]) plus a 1 KiB output stage per subgroup (gemm.comp).
uint64_t tile_shared_bytes(const TileSpec& v, bool coopmat = false, bool column = false) {
  const uint64_t tm = v[1] * v[2], tn = v[0] * v[3], tk = v[4];
  if (coopmat) {
    const uint64_t w = column ? tk * (tn + 8) : tn * (tk + 8);
    return (v[5] != 0 ? 2 : 1) * (tm * (tk + 8) + w) * 2 + v[1] * 1024;
  }
  return (tm + tn) * (tk + 1) * 4;
}

// Pipeline with the tuning's tile (0 = registry default), checked against the device's shared memory first.
Result<const Pipeline*> gemm_pipeline(Recorder& rec, const kernels::KernelInfo& kernel, const GemmTuning& t,
                                      Layout layout, const std::string& ctx) {
  const std::vector<SpecValue> spec = gemm_spec(t);
  const TileSpec v = resolved_tile(kernel, t);
  if (v[0] * v[1] * v[2] * v[3] * v[4] == 0) return error(StatusCode::kInvalidArgument, ctx + ": tile size is 0");
  const uint64_t shared_bytes =
      tile_shared_bytes(v, kernels::is_coopmat_kernel(kernel.name), layout == Layout::kColumnWise);
  const uint64_t limit = rec.device().caps().max_compute_shared_memory_bytes;
  if (shared_bytes > limit) {
    return error(StatusCode::kUnsupported, ctx + ": tile needs " + std::to_string(shared_bytes) +
                                               " bytes of shared memory > device limit " + std::to_string(limit));
  }
  Result<const Pipeline*> pipe = rec.device().pipelines().get(kernel, spec);
  if (!pipe.ok()) return pipe.status().context(ctx);
  return pipe;
}

struct Tile {
  uint64_t tm, tn;
};
Tile tile_of(const Pipeline& p) {
  return {uint64_t{p.local_size()[1]} * p.spec(2), uint64_t{p.local_size()[0]} * p.spec(3)};
}

Status dispatch_gemm(Recorder& rec, const Pipeline& pipe, const GemmArgs& a, GemmPush push, const BufferRange& w,
                     const std::string& ctx, std::string_view label) {
  const Tile t = tile_of(pipe);
  const uint64_t tiles_n = ceil_div(push.n_rows, t.tn);
  const uint64_t groups = ceil_div(a.m_rows, t.tm) * tiles_n;
  RDRR_ASSIGN_OR_RETURN(const auto grid, fold_groups(rec, groups, ctx));
  push.tiles_n = static_cast<uint32_t>(tiles_n);
  push.n_groups = static_cast<uint32_t>(groups);
  const BufferRange bindings[] = {w, a.x, a.y};
  return rec.dispatch(pipe, bindings, push, grid, label);
}

// gemm.comp flags bit 0: X rows start 16-byte aligned (the cooperative-matrix kernels stage X from vec4 loads).
uint32_t x_vec4_flag(const GemmArgs& a, uint64_t k_begin) {
  return a.x.offset % 16 == 0 && a.k % 4 == 0 && k_begin % 4 == 0 ? 1u : 0u;
}

// Q4_K column_wise: one dispatch per binding range of whole inputs (granule = one input's blocks).
Status record_gemm_column(Recorder& rec, const GemmArgs& a, const Pipeline& pipe, uint64_t w_bytes,
                          const std::string& ctx, std::string_view label) {
  Device& dev = rec.device();
  const uint64_t blocks_per_n = ceil_div(a.n_rows, quant::kQK_K);
  if (uint64_t{a.k} * blocks_per_n * (sizeof(quant::BlockQ4K) / 4) >= kIndexLimit) {
    return error(StatusCode::kUnsupported, ctx + ": weight exceeds the kernel's 32-bit word indexing");
  }
  Result<std::vector<BindingRange>> ranges = split_binding(
      {a.w.offset, w_bytes, blocks_per_n * sizeof(quant::BlockQ4K), dev.binding_limit_bytes(), dev.binding_alignment()});
  if (!ranges.ok()) return ranges.status().context(ctx);
  for (size_t i = 0; i < ranges->size(); ++i) {
    const BindingRange& r = (*ranges)[i];
    const GemmPush push{a.m_rows, a.n_rows, a.n_rows, 0, static_cast<uint32_t>(r.granule_count),
                        static_cast<uint32_t>(r.first_granule), a.k, 0, static_cast<uint32_t>(r.skip_bytes / 4), 0,
                        static_cast<uint32_t>(blocks_per_n), i > 0 ? 1u : 0u, 0, 0,
                        r.skip_bytes % kQ4KVecBytes == 0 ? 1u : 0u, x_vec4_flag(a, r.first_granule)};
    RDRR_RETURN_IF_ERROR(
        dispatch_gemm(rec, pipe, a, push, {a.w.buffer, r.bind_offset_bytes, r.bind_size_bytes}, ctx, label));
  }
  return Status::Ok();
}

// Row layouts: one dispatch per binding range of whole outputs (same granules as record_gemv's row path).
Status record_gemm_rows(Recorder& rec, const GemmArgs& a, const Pipeline& pipe, uint64_t w_bytes, uint64_t unit_bytes,
                        const std::string& ctx, std::string_view label) {
  Device& dev = rec.device();
  const bool quantized = quant::is_block_quantized(a.dtype);
  const uint64_t be = quantized ? static_cast<uint64_t>(quant::block_elems(a.dtype)) : 1;
  const uint64_t bb = static_cast<uint64_t>(quant::block_bytes(a.dtype));
  const uint64_t row_stride = (quantized && a.layout == Layout::kRowWise) ? ceil_div(a.k, be) * be : a.k;
  if (uint64_t{a.n_rows} * row_stride >= kIndexLimit) {
    return error(StatusCode::kUnsupported, ctx + ": " + std::to_string(uint64_t{a.n_rows} * row_stride) +
                                               " elements exceed the kernel's 32-bit element indexing");
  }
  const uint64_t rows_per_granule = quantized ? be / std::gcd(row_stride, be) : 1;
  const uint64_t granule_bytes = rows_per_granule * row_stride / be * bb;
  Result<std::vector<BindingRange>> ranges =
      split_binding({a.w.offset, w_bytes, granule_bytes, dev.binding_limit_bytes(), dev.binding_alignment()});
  if (!ranges.ok()) return ranges.status().context(ctx);
  for (const BindingRange& r : *ranges) {
    const uint64_t row_begin = r.first_granule * rows_per_granule;
    const uint64_t row_end = std::min<uint64_t>(a.n_rows, (r.first_granule + r.granule_count) * rows_per_granule);
    if (row_begin >= row_end) continue;
    // Rows of whole blocks (Q4_K: starting 16-byte aligned): gemm.comp stages W tiles from vector loads; F16
    // rows of whole 16-byte vectors (the cooperative-matrix kernels).
    const bool aligned = a.dtype == DType::kQ6_K || (a.dtype == DType::kQ4_K && r.skip_bytes % kQ4KVecBytes == 0) ||
                         (a.dtype == DType::kF16 && a.k % 8 == 0 && r.skip_bytes % 16 == 0);
    const uint32_t fast_tiles = row_stride % be == 0 && aligned ? 1 : 0;
    const GemmPush push{a.m_rows, a.n_rows, static_cast<uint32_t>(row_end - row_begin),
                        static_cast<uint32_t>(row_begin), a.k, 0, a.k, static_cast<uint32_t>(row_stride),
                        static_cast<uint32_t>(r.skip_bytes / unit_bytes), static_cast<uint32_t>(row_begin * row_stride / be),
                        0, 0, 0, 0, fast_tiles, x_vec4_flag(a, 0)};
    RDRR_RETURN_IF_ERROR(
        dispatch_gemm(rec, pipe, a, push, {a.w.buffer, r.bind_offset_bytes, r.bind_size_bytes}, ctx, label));
  }
  return Status::Ok();
}

// The kernel to run: `kernel`'s cooperative-matrix variant (gemm.comp COOPMAT) for more than
// kCoopmatAboveRows rows where the device has the f16 16x16x16 shape, the recorder allows the variant and the
// tuning is automatic; else `kernel` itself. A forced *_cm kernel needs the device support; its tile may be
// tuned within check_cm_tile's rules.
Result<const kernels::KernelInfo*> coopmat_choice(Recorder& rec, const kernels::KernelInfo& kernel,
                                                  const GemmArgs& a, bool automatic, const std::string& ctx) {
  const bool supported = rec.device().caps().coopmat_f16_16x16;
  if (kernels::is_coopmat_kernel(kernel.name)) {
    if (!supported) {
      return error(StatusCode::kUnsupported, ctx + ": kernel " + std::string(kernel.name) +
                                                 " needs VK_NV_cooperative_matrix (f16 16x16x16, subgroups of 32, "
                                                 "shaderFloat16), which this device does not provide");
    }
    const GemmTuning& t = a.tuning;
    if ((t.local_size_x != 0 && t.local_size_x != 32) || t.tk % 16 != 0) {
      return error(StatusCode::kInvalidArgument,
                   ctx + ": kernel " + std::string(kernel.name) +
                       " runs subgroups of 32 (tuning: local_size_x 32) and K tiles of a multiple of 16 (tk)");
    }
    if (t.dbuf > 2) return error(StatusCode::kInvalidArgument, ctx + ": tuning dbuf " + std::to_string(t.dbuf) + " > 2");
    return &kernel;
  }
  if (a.tuning.dbuf != 0 || a.tuning.wn != 0) {
    return error(StatusCode::kInvalidArgument, ctx + ": tuning dbuf / wn applies to the *_cm kernels only");
  }
  return kernels::device_gemm_kernel(kernel, a.m_rows, device_facts(rec.device().caps()),
                                     automatic && a.cooperative_matrix, [&](std::string_view v) { return rec.allows(v); });
}

// A cooperative-matrix tile (resolved): local_size_y subgroups, wn of them across N, each owning whole 16x16
// fragments of the TM x TN tile; at most the device's workgroup invocations.
Status check_cm_tile(const TileSpec& v, const DeviceCaps& caps, const std::string& ctx) {
  const uint64_t ly = v[1], tm = v[1] * v[2], tn = v[0] * v[3], wn = v[6];
  if (wn == 0 || ly % wn != 0 || tm % (16 * (ly / wn)) != 0 || tn % (16 * wn) != 0) {
    return error(StatusCode::kInvalidArgument,
                 ctx + ": cooperative-matrix tile TM " + std::to_string(tm) + " x TN " + std::to_string(tn) + " over " +
                     std::to_string(ly) + " subgroups, " + std::to_string(wn) +
                     " across N: each subgroup needs whole 16x16 fragments (wn divides local_size_y)");
  }
  if (32 * ly > caps.max_workgroup_invocations) {
    return error(StatusCode::kUnsupported, ctx + ": " + std::to_string(32 * ly) + " invocations > device limit " +
                                               std::to_string(caps.max_workgroup_invocations));
  }
  return Status::Ok();
}

// The automatic cooperative-matrix tile (bench/README.md, GEMM): the registry's (8 subgroups, TM 128 x TN 128,
// TK 64, one shared stage) by default; up to kCmSmallTileUpToRows rows TM 64 x TN 64 (4 subgroups of 32 x 32,
// TK 32, two stages: four times the workgroups, fewer padded rows); from kCmWideGridGroups 128 x 128
// workgroups on 4 subgroups of 64 x 64 (TK 32, two stages: two workgroups fit an SM where the registry's
// 8-subgroup tile fits one, so a grid of several waves runs with more workgroups in flight).
constexpr uint32_t kCmSmallTileUpToRows = 64;
constexpr GemmTuning kCmSmallTile{0, 4, 16, 2, 32, 2, 2};
constexpr uint64_t kCmWideGridGroups = 200;
constexpr GemmTuning kCmWideGridTile{0, 4, 32, 4, 32, 2, 2};
GemmTuning cm_auto_tile(uint32_t m_rows, uint32_t n_rows) {
  if (m_rows <= kCmSmallTileUpToRows) return kCmSmallTile;
  if (ceil_div(m_rows, 128) * ceil_div(n_rows, 128) >= kCmWideGridGroups) return kCmWideGridTile;
  return {};
}

}  // namespace

Status record_gemm(Recorder& rec, const GemmArgs& a, std::string_view label) {
  const std::string ctx = "gemm " + std::string(label) + " [" + std::string(quant::dtype_name(a.dtype)) + " " +
                          std::string(quant::layout_name(a.layout)) + " M=" + std::to_string(a.m_rows) +
                          " N=" + std::to_string(a.n_rows) + " K=" + std::to_string(a.k) + "]";
  if (a.m_rows == 0 || a.n_rows == 0 || a.k == 0) return error(StatusCode::kInvalidArgument, ctx + ": empty shape");
  const kernels::KernelInfo* kernel =
      kernels::pinned_matmul_kernel(kernels::MatmulPass::kPrefill, a.dtype, a.layout, a.k);
  if (kernel == nullptr) return error(StatusCode::kUnsupported, ctx + ": no gemm kernel for this dtype and layout");
  if (!a.kernel.empty()) {
    RDRR_ASSIGN_OR_RETURN(kernel, forced_kernel(a.kernel, kernels::Op::kGemm, a.dtype, a.layout, ctx));
  }
  const uint64_t w_bytes = packed_weight_bytes(a.dtype, a.layout, a.n_rows, a.k);
  const uint64_t x_bytes = uint64_t{a.m_rows} * a.k * 4;
  const uint64_t y_bytes = uint64_t{a.m_rows} * a.n_rows * 4;
  RDRR_RETURN_IF_ERROR(need_bytes(a.w, w_bytes, "w", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.x, x_bytes, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.y, y_bytes, "y", ctx));
  if (x_bytes / 4 >= kIndexLimit || y_bytes / 4 >= kIndexLimit) {
    return error(StatusCode::kUnsupported, ctx + ": x or y exceeds the kernel's 32-bit element indexing");
  }
  // x and y are bound whole: they must fit one binding (only w is split).
  for (const auto& [r, field] : {std::pair{a.x.sub(0, x_bytes), "x"}, std::pair{a.y.sub(0, y_bytes), "y"}}) {
    if (r.size > rec.device().binding_limit_bytes()) {
      return error(StatusCode::kUnsupported, ctx + ": " + field + " range of " + std::to_string(r.size) +
                                                 " bytes > binding limit " +
                                                 std::to_string(rec.device().binding_limit_bytes()));
    }
  }
  const uint64_t unit_bytes = weight_unit_bytes(a.dtype);
  if (a.w.offset % unit_bytes != 0) {
    return error(StatusCode::kValidation, ctx + ": w offset " + std::to_string(a.w.offset) + " is not a multiple of " +
                                              std::to_string(unit_bytes));
  }
  if (overlaps(a.y.sub(0, y_bytes), a.w) || overlaps(a.y.sub(0, y_bytes), a.x.sub(0, x_bytes))) {
    return error(StatusCode::kValidation, ctx + ": y overlaps w or x");
  }
  const GemmTuning& t = a.tuning;
  const bool automatic = t.local_size_x == 0 && t.local_size_y == 0 && t.rm == 0 && t.rn == 0 && t.tk == 0 &&
                         t.dbuf == 0 && t.wn == 0;
  const DeviceCaps& caps = rec.device().caps();
  RDRR_ASSIGN_OR_RETURN(kernel, coopmat_choice(rec, *kernel, a, automatic, ctx));
  GemmTuning tile = t;
  if (kernels::is_coopmat_kernel(kernel->name)) {
    if (automatic) {
      // A device with less shared memory or fewer invocations than the larger tiles take runs the small one.
      tile = cm_auto_tile(a.m_rows, a.n_rows);
      const TileSpec v = resolved_tile(*kernel, tile);
      if (32 * v[1] > caps.max_workgroup_invocations ||
          tile_shared_bytes(v, true, a.layout == Layout::kColumnWise) > caps.max_compute_shared_memory_bytes) {
        tile = kCmSmallTile;
      }
    }
    RDRR_RETURN_IF_ERROR(check_cm_tile(resolved_tile(*kernel, tile), caps, ctx));
  } else if (automatic && a.m_rows >= kWideTileFromRows &&
             caps.max_workgroup_invocations >= kWideTile.local_size_x * kWideTile.local_size_y &&
             caps.max_compute_shared_memory_bytes >= tile_shared_bytes(resolved_tile(*kernel, kWideTile))) {
    tile = kWideTile;
  }
  RDRR_ASSIGN_OR_RETURN(const Pipeline* pipe, gemm_pipeline(rec, *kernel, tile, a.layout, ctx));
  GemmArgs bound = a;
  bound.x = a.x.sub(0, x_bytes);
  bound.y = a.y.sub(0, y_bytes);
  if (a.layout == Layout::kColumnWise) return record_gemm_column(rec, bound, *pipe, w_bytes, ctx, label);
  return record_gemm_rows(rec, bound, *pipe, w_bytes, unit_bytes, ctx, label);
}

}  // namespace rdrr::runtime
