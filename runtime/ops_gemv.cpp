// record_gemv: row path (flat / row_wise / plain float) and Q4_K column_wise path; see kernels/gemv.comp.
#include <algorithm>
#include <numeric>
#include <string>

#include "kernels/registry.h"
#include "quant/blocks.h"
#include "runtime/binding_split.h"
#include "runtime/device.h"
#include "runtime/ops.h"
#include "runtime/pipeline.h"

namespace rdrr::runtime {
namespace {

using quant::DType;
using quant::Layout;

struct RowPush {
  uint32_t n_rows, k, row_stride, row_begin, w_base, block_begin, n_groups, pad0;
};
struct ColPush {
  uint32_t n_out, k, k_begin, blocks_per_k, w_base, accumulate, n_groups, pad0;
};
static_assert(sizeof(RowPush) == 32 && sizeof(ColPush) == 32);

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

Status need_bytes(const BufferRange& r, uint64_t need, std::string_view field, const std::string& ctx) {
  if (r.size >= need) return Status::Ok();
  return error(StatusCode::kValidation, ctx + ": " + std::string(field) + " range of " + std::to_string(r.size) +
                                            " bytes < required " + std::to_string(need));
}

std::vector<SpecValue> gemv_spec(const GemvTuning& t, bool column, const kernels::KernelInfo& kernel,
                                 const DeviceCaps& caps) {
  std::vector<SpecValue> s;
  if (t.local_size_x != 0) s.push_back({0, t.local_size_x});
  if (!column && t.num_rows != 0) s.push_back({1, t.num_rows});
  if (column) {
    // Column path: parallelism over inputs comes from local_size_y alone, so default to the largest
    // workgroup the device allows (up to 32 input slices).
    uint32_t k_split = t.k_split;
    if (k_split == 0) {
      uint32_t lx = t.local_size_x;
      for (const kernels::SpecInfo& si : kernel.spec) {
        if (lx == 0 && si.role == kernels::SpecRole::kLocalSizeX) lx = si.default_value;
      }
      k_split = std::clamp<uint32_t>(caps.max_workgroup_invocations / std::max<uint32_t>(lx, 1), 1,
                                     std::min<uint32_t>(32, caps.max_workgroup_size[1]));
    }
    s.push_back({1, k_split});
  }
  return s;
}

Status record_column(Recorder& rec, const GemvArgs& a, const kernels::KernelInfo& kernel, uint64_t w_bytes,
                     const std::string& ctx, std::string_view label) {
  Device& dev = rec.device();
  const uint64_t blocks_per_k = ceil_div(a.n_rows, quant::kQK_K);
  const uint64_t granule = blocks_per_k * sizeof(quant::BlockQ4K);
  Result<std::vector<BindingRange>> ranges =
      split_binding({a.w.offset, w_bytes, granule, dev.binding_limit_bytes(), dev.binding_alignment()});
  if (!ranges.ok()) return ranges.status().context(ctx);
  const std::vector<SpecValue> spec = gemv_spec(a.tuning, true, kernel, dev.caps());
  Result<const Pipeline*> pipe = dev.pipelines().get(kernel, spec);
  if (!pipe.ok()) return pipe.status().context(ctx);
  const uint64_t groups = ceil_div(a.n_rows, (*pipe)->local_size()[0]);
  Result<std::array<uint32_t, 3>> grid = fold_groups(rec, groups, ctx);
  if (!grid.ok()) return grid.status();
  for (size_t i = 0; i < ranges->size(); ++i) {
    const BindingRange& r = (*ranges)[i];
    const ColPush push{a.n_rows,
                       static_cast<uint32_t>(r.granule_count),
                       static_cast<uint32_t>(r.first_granule),
                       static_cast<uint32_t>(blocks_per_k),
                       static_cast<uint32_t>(r.skip_bytes / 4),
                       i > 0 ? 1u : 0u,
                       static_cast<uint32_t>(groups),
                       0};
    const BufferRange bindings[] = {{a.w.buffer, r.bind_offset_bytes, r.bind_size_bytes}, a.x, a.y};
    RDRR_RETURN_IF_ERROR(rec.dispatch(**pipe, bindings, push, *grid, label));
  }
  return Status::Ok();
}

}  // namespace

uint64_t packed_weight_bytes(DType dtype, Layout layout, uint64_t n_rows, uint64_t k) {
  const uint64_t bb = static_cast<uint64_t>(quant::block_bytes(dtype));
  if (!quant::is_block_quantized(dtype)) return n_rows * k * bb;
  const uint64_t be = static_cast<uint64_t>(quant::block_elems(dtype));
  switch (layout) {
    case Layout::kFlat: return ceil_div(n_rows * k, be) * bb;
    case Layout::kRowWise: return n_rows * ceil_div(k, be) * bb;
    case Layout::kColumnWise: return k * ceil_div(n_rows, be) * bb;
  }
  return 0;
}

Result<std::array<uint32_t, 3>> fold_groups(Recorder& rec, uint64_t groups, std::string_view what) {
  const auto& max = rec.device().caps().max_workgroup_count;
  const uint64_t x = groups < max[0] ? groups : max[0];
  const uint64_t y = ceil_div(groups, x == 0 ? 1 : x);
  if (groups == 0 || y > max[1]) {
    return error(StatusCode::kUnsupported, std::string(what) + ": " + std::to_string(groups) +
                                               " workgroups do not fit maxComputeWorkGroupCount");
  }
  return std::array<uint32_t, 3>{static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1};
}

Status record_gemv(Recorder& rec, const GemvArgs& a, std::string_view label) {
  const std::string ctx = "gemv " + std::string(label) + " [" + std::string(quant::dtype_name(a.dtype)) + " " +
                          std::string(quant::layout_name(a.layout)) + " N=" + std::to_string(a.n_rows) +
                          " K=" + std::to_string(a.k) + "]";
  if (a.n_rows == 0 || a.k == 0) return error(StatusCode::kInvalidArgument, ctx + ": empty shape");
  const kernels::KernelInfo* kernel = kernels::find_kernel(kernels::Op::kGemv, a.dtype, a.layout);
  if (kernel == nullptr) return error(StatusCode::kUnsupported, ctx + ": no gemv kernel for this dtype and layout");
  const uint64_t w_bytes = packed_weight_bytes(a.dtype, a.layout, a.n_rows, a.k);
  RDRR_RETURN_IF_ERROR(need_bytes(a.w, w_bytes, "w", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.x, uint64_t{a.k} * 4, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.y, uint64_t{a.n_rows} * 4, "y", ctx));
  const uint64_t unit_bytes = (a.dtype == DType::kQ4_K || a.dtype == DType::kF32) ? 4 : 2;
  if (a.w.offset % unit_bytes != 0) {
    return error(StatusCode::kValidation, ctx + ": w offset " + std::to_string(a.w.offset) + " is not a multiple of " +
                                              std::to_string(unit_bytes));
  }
  if (a.layout == Layout::kColumnWise) return record_column(rec, a, *kernel, w_bytes, ctx, label);

  Device& dev = rec.device();
  const bool quantized = quant::is_block_quantized(a.dtype);
  const uint64_t be = quantized ? static_cast<uint64_t>(quant::block_elems(a.dtype)) : 1;
  const uint64_t bb = static_cast<uint64_t>(quant::block_bytes(a.dtype));
  const uint64_t row_stride = (quantized && a.layout == Layout::kRowWise) ? ceil_div(a.k, be) * be : a.k;
  if (uint64_t{a.n_rows} * row_stride >= (uint64_t{1} << 32)) {
    return error(StatusCode::kUnsupported, ctx + ": " + std::to_string(uint64_t{a.n_rows} * row_stride) +
                                               " elements exceed the kernel's 32-bit element indexing");
  }
  // Granule: the fewest whole rows that end on a block boundary.
  const uint64_t rows_per_granule = quantized ? be / std::gcd(row_stride, be) : 1;
  const uint64_t granule_bytes = rows_per_granule * row_stride / be * bb;
  Result<std::vector<BindingRange>> ranges =
      split_binding({a.w.offset, w_bytes, granule_bytes, dev.binding_limit_bytes(), dev.binding_alignment()});
  if (!ranges.ok()) return ranges.status().context(ctx);
  Result<const Pipeline*> pipe = dev.pipelines().get(*kernel, gemv_spec(a.tuning, false, *kernel, dev.caps()));
  if (!pipe.ok()) return pipe.status().context(ctx);
  const uint32_t num_rows = (*pipe)->spec(1);
  for (const BindingRange& r : *ranges) {
    const uint64_t row_begin = r.first_granule * rows_per_granule;
    const uint64_t row_end = std::min<uint64_t>(a.n_rows, (r.first_granule + r.granule_count) * rows_per_granule);
    if (row_begin >= row_end) continue;
    const uint64_t groups = ceil_div(row_end - row_begin, num_rows);
    Result<std::array<uint32_t, 3>> grid = fold_groups(rec, groups, ctx);
    if (!grid.ok()) return grid.status();
    const RowPush push{static_cast<uint32_t>(row_end - row_begin),
                       a.k,
                       static_cast<uint32_t>(row_stride),
                       static_cast<uint32_t>(row_begin),
                       static_cast<uint32_t>(r.skip_bytes / unit_bytes),
                       static_cast<uint32_t>(row_begin * row_stride / be),
                       static_cast<uint32_t>(groups),
                       0};
    const BufferRange bindings[] = {{a.w.buffer, r.bind_offset_bytes, r.bind_size_bytes}, a.x, a.y};
    RDRR_RETURN_IF_ERROR(rec.dispatch(**pipe, bindings, push, *grid, label));
  }
  return Status::Ok();
}

}  // namespace rdrr::runtime
