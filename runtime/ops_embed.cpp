// record_embed (kernels/embed.comp): row ranges for F32 / F16 / flat / row_wise tables, column ranges for
// Q4_K column_wise, one dispatch per binding range.
#include <cmath>
#include <numeric>
#include <string>

#include "kernels/registry.h"
#include "quant/blocks.h"
#include "runtime/binding_split.h"
#include "runtime/ops.h"
#include "runtime/ops_util.h"

namespace rdrr::runtime {
namespace {

using namespace ops_detail;
using quant::DType;
using quant::Layout;

struct EmbedPush {
  uint32_t n_tokens, dim, vocab, row_stride, range_begin, range_end, w_base, block_begin, blocks_per_col;
  float scale;
  uint32_t n_groups, pad0;
};
static_assert(sizeof(EmbedPush) == 48);

// Granule (bytes, rows or columns per granule) of the table's binding split.
struct Granule {
  uint64_t bytes;
  uint64_t units;  // rows (row path) or columns (column path) per granule
};

Granule embed_granule(const EmbedArgs& a, uint64_t row_stride) {
  const uint64_t bb = static_cast<uint64_t>(quant::block_bytes(a.dtype));
  if (a.layout == Layout::kColumnWise && a.dtype == DType::kQ4_K) return {ceil_div(a.vocab, quant::kQK_K) * bb, 1};
  if (!quant::is_block_quantized(a.dtype)) return {uint64_t{a.dim} * bb, 1};
  const uint64_t be = static_cast<uint64_t>(quant::block_elems(a.dtype));
  const uint64_t rows = be / std::gcd(row_stride, be);  // fewest whole rows ending on a block boundary
  return {rows * row_stride / be * bb, rows};
}

}  // namespace

Status record_embed(Recorder& rec, const EmbedArgs& a, std::string_view label) {
  const std::string ctx = "embed " + std::string(label) + " [" + std::string(quant::dtype_name(a.dtype)) + " " +
                          std::string(quant::layout_name(a.layout)) + " vocab=" + std::to_string(a.vocab) +
                          " dim=" + std::to_string(a.dim) + " tokens=" + std::to_string(a.n_tokens) + "]";
  RDRR_RETURN_IF_ERROR(need_nonzero(a.vocab, "vocab", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(a.dim, "dim", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(a.n_tokens, "n_tokens", ctx));
  if (!std::isfinite(a.scale)) return error(StatusCode::kInvalidArgument, ctx + ": scale is not finite");
  const kernels::KernelInfo* kernel = kernels::find_kernel(kernels::Op::kEmbed, a.dtype, a.layout);
  if (kernel == nullptr) return error(StatusCode::kUnsupported, ctx + ": no embed kernel for this dtype and layout");
  if (!a.kernel.empty()) {
    RDRR_ASSIGN_OR_RETURN(kernel, forced_kernel(a.kernel, kernels::Op::kEmbed, a.dtype, a.layout, ctx));
  }
  const bool column = a.layout == Layout::kColumnWise && a.dtype == DType::kQ4_K;
  const bool quantized = quant::is_block_quantized(a.dtype);
  const uint64_t be = quantized ? static_cast<uint64_t>(quant::block_elems(a.dtype)) : 1;
  const uint64_t row_stride = (quantized && a.layout == Layout::kRowWise) ? ceil_div(a.dim, be) * be : a.dim;
  if (uint64_t{a.n_tokens} * a.dim >= (uint64_t{1} << 32) || (!column && uint64_t{a.vocab} * row_stride >= (uint64_t{1} << 32))) {
    return error(StatusCode::kUnsupported, ctx + ": shape exceeds the kernel's 32-bit element indexing");
  }
  const uint64_t table_bytes = packed_weight_bytes(a.dtype, a.layout, a.vocab, a.dim);
  RDRR_RETURN_IF_ERROR(need_bytes(a.table, table_bytes, "table", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.ids, uint64_t{a.n_tokens} * 4, "ids", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.out, uint64_t{a.n_tokens} * a.dim * 4, "out", ctx));
  const uint64_t unit_bytes = weight_unit_bytes(a.dtype);
  if (a.table.offset % unit_bytes != 0) {
    return error(StatusCode::kValidation, ctx + ": table offset " + std::to_string(a.table.offset) +
                                              " is not a multiple of " + std::to_string(unit_bytes));
  }
  Device& dev = rec.device();
  const Granule gr = embed_granule(a, row_stride);
  Result<std::vector<BindingRange>> ranges =
      split_binding({a.table.offset, table_bytes, gr.bytes, dev.binding_limit_bytes(), dev.binding_alignment()});
  if (!ranges.ok()) return ranges.status().context(ctx);
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, kernel->name, {}, ctx));
  const uint64_t groups = ceil_div(uint64_t{a.n_tokens} * a.dim, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const uint32_t limit = column ? a.dim : a.vocab;
  for (const BindingRange& r : *ranges) {
    const uint64_t begin = r.first_granule * gr.units;
    const uint64_t end = std::min<uint64_t>(limit, (r.first_granule + r.granule_count) * gr.units);
    if (begin >= end) continue;
    EmbedPush push{};
    push.n_tokens = a.n_tokens;
    push.dim = a.dim;
    push.vocab = a.vocab;
    push.row_stride = static_cast<uint32_t>(row_stride);
    push.range_begin = static_cast<uint32_t>(begin);
    push.range_end = static_cast<uint32_t>(end);
    push.w_base = static_cast<uint32_t>(r.skip_bytes / unit_bytes);
    push.block_begin = column ? 0 : static_cast<uint32_t>(begin * row_stride / be);
    push.blocks_per_col = column ? static_cast<uint32_t>(ceil_div(a.vocab, quant::kQK_K)) : 0;
    push.scale = a.scale;
    push.n_groups = static_cast<uint32_t>(groups);
    const BufferRange bindings[] = {{a.table.buffer, r.bind_offset_bytes, r.bind_size_bytes}, a.ids, a.out};
    RDRR_RETURN_IF_ERROR(rec.dispatch(*p, bindings, push, grid, label));
  }
  return Status::Ok();
}

}  // namespace rdrr::runtime
