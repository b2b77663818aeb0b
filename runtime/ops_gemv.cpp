// record_gemv: row path (flat / row_wise / plain float; kernels/gemv.comp, vectorized Q4_K in gemv_q4k.comp ROWS)
// and Q4_K column_wise path (gemv.comp, or split-K gemv_q4k.comp COLUMN_SPLIT with a scratch).
#include <algorithm>
#include <atomic>
#include <numeric>
#include <string>

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

struct RowPush {
  uint32_t n_rows, k, row_stride, row_begin, w_base, block_begin, n_groups, pad0;
};
struct ColPush {
  uint32_t n_out, k, k_begin, blocks_per_k, w_base, accumulate, n_groups, pad0;
};
static_assert(sizeof(RowPush) == 32 && sizeof(ColPush) == 32);

using namespace ops_detail;

struct SplitPush {
  uint32_t n_out, k, k_begin, blocks_per_k, w_base, k_chunk, split_begin, n_item_groups, n_groups;
  uint32_t mode, n_splits, counter_base, part_base, pad0, pad1, pad2;
};
struct ReducePush {
  uint32_t n_out, n_splits, n_groups, pad0;
};
static_assert(sizeof(SplitPush) == 64 && sizeof(ReducePush) == 16);

constexpr uint32_t kMinAutoKChunk = 64;     // automatic split size floor (2 inputs per slice, 32 slices)
// Automatic split: about one workgroup per SM of an H100 in all (the software-pipelined kernel keeps a slice's
// loads in flight while it decodes), the inputs cut into that many equal splits (a whole number of inputs per
// slice). Fewer workgroups leave SMs idle; more (two on some SMs) or unequal splits leave the call waiting on
// its slowest SMs (bench/README.md, Q4_K GEMV).
constexpr uint64_t kTargetSplitGroups = 128;
constexpr uint64_t kMaxSplits = 4095;         // splits per call at most
// The scratch starts with one ticket per item group (uint, zero at rest), then the partials. More item groups
// than tickets: partials and gemv_reduce.
constexpr uint64_t kTicketWords = 1024;
constexpr uint64_t kTicketBytes = kTicketWords * 4;
constexpr uint64_t kMaxMergeSplits = 32;      // the merging workgroup reads this many partials per output
// Vectorized rows path: a decode GEMV is one short wave, so with few workgroups (few rows) the registry's 64
// invocations per workgroup leave the device under-occupied; below this many workgroups use 128 (from 1024
// workgroups on the wider groups are slower; bench/README.md, Q4_K GEMV).
constexpr uint64_t kVecWideBelowGroups = 768;
constexpr uint32_t kVecWideLocalSize = 128;
// ... and from this many workgroups on, 32 invocations (one NVIDIA subgroup) per workgroup: more workgroups in
// flight and no cross-subgroup step (bench/README.md, Q4_K GEMV).
constexpr uint64_t kVecNarrowFromGroups = 2048;
constexpr uint32_t kVecNarrowLocalSize = 32;
enum SplitMode : uint32_t { kPartialsOnly = 0, kDirect = 1, kMergeLast = 2 };
// gemv_q4k_dot.comp: x values staged per shared-memory pass at most (2.5 bytes each).
constexpr uint32_t kDotMaxChunk = 16384;
// gemv_q6k.comp: rows of at most this many 64-value items (K <= 2048) run 32 invocations per workgroup, not
// 64 that would leave half idle (bench/README.md, Q6_K GEMV).
constexpr uint64_t kQ6NarrowItems = 32;
constexpr uint32_t kQ6NarrowLocalSize = 32;
// Generic row path (gemv.comp, one row per workgroup by default): a GEMV of few rows is a few short workgroups
// walking long rows, latency-bound; more invocations per row shorten each walk. Below kGenericWidestBelowRows
// rows 256 invocations, below kGenericWideBelowRows 128, else the registry's 64 (H200, F32 / F16 / Q8_0 at
// 8 .. 28672 rows: bench/README.md, generic GEMV workgroups).
constexpr uint64_t kGenericWidestBelowRows = 1536;
constexpr uint64_t kGenericWideBelowRows = 4096;

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

// Splits of k_chunk inputs over the binding ranges (each range's inputs split on their own).
uint64_t count_splits(const std::vector<BindingRange>& ranges, uint64_t k_chunk) {
  uint64_t n = 0;
  for (const BindingRange& r : ranges) n += ceil_div(r.granule_count, k_chunk);
  return n;
}

// Whether a column split call merges in its own last workgroups (one binding range, a ticket per item group).
bool merges(const std::vector<BindingRange>& ranges, uint64_t item_groups) {
  return ranges.size() == 1 && item_groups <= kTicketWords;
}

// Split size for the column split path: the tuning's, or the automatic one (kTargetSplitGroups); then doubled
// until the partials fit the scratch (and, merging, at most kMaxMergeSplits splits). 0 = no fit.
uint64_t choose_k_chunk(const GemvArgs& a, const std::vector<BindingRange>& ranges, uint64_t item_groups,
                        uint32_t slices) {
  uint64_t k_chunk = a.tuning.k_chunk;
  if (k_chunk == 0) {
    // kTargetSplitGroups / item_groups splits, rounded to the nearest (at least one, at most kMaxMergeSplits),
    // then equal splits of a whole number of inputs per slice.
    const uint64_t splits = std::clamp<uint64_t>((2 * kTargetSplitGroups + item_groups) / (2 * item_groups), 1,
                                                 kMaxMergeSplits);
    k_chunk = std::max<uint64_t>(ceil_div(ceil_div(a.k, splits), slices) * slices, kMinAutoKChunk);
  }
  // Room for the partials after the tickets.
  if (a.scratch.size <= kTicketBytes) return 0;
  const uint64_t capacity = std::min(kMaxSplits, (a.scratch.size - kTicketBytes) / (uint64_t{a.n_rows} * 4));
  // The single-range merge happens at the tail of the dispatch: keep it short.
  const uint64_t limit = merges(ranges, item_groups) ? std::min(capacity, kMaxMergeSplits) : capacity;
  while (count_splits(ranges, k_chunk) > limit) {
    if (k_chunk >= a.k) return 0;
    k_chunk *= 2;
  }
  return k_chunk;
}

// Zeroes the tickets of a split-K scratch before its first use in this recording (gemv_reduce with no splits
// writes zeros); the calls themselves leave them at zero.
Status zero_tickets(Recorder& rec, const BufferRange& scratch, const std::string& ctx) {
  if (rec.used_before(scratch.buffer, scratch.offset)) return Status::Ok();
  RDRR_ASSIGN_OR_RETURN(const Pipeline* reduce, get_pipeline(rec, "gemv_reduce", {}, ctx));
  const uint64_t groups = ceil_div(kTicketWords, reduce->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(const auto grid, fold_groups(rec, groups, ctx));
  const ReducePush push{static_cast<uint32_t>(kTicketWords), 0, static_cast<uint32_t>(groups), 0};
  const BufferRange tickets = scratch.sub(0, kTicketBytes);
  const BufferRange bindings[] = {tickets, tickets};
  RDRR_RETURN_IF_ERROR(rec.dispatch(*reduce, bindings, push, grid, "gemv split tickets"));
  rec.note_use(scratch.buffer, scratch.offset);
  return Status::Ok();
}

// The column split pipeline (gemv_q4k.comp COLUMN_SPLIT) for the tuning.
Result<const Pipeline*> column_pipeline(Recorder& rec, const GemvTuning& t, const std::string& ctx) {
  const uint32_t lx = t.local_size_x != 0 ? t.local_size_x : 8;
  if (lx % 8 != 0) {
    // Item groups of whole blocks (what the slice sums and the merge assume).
    return error(StatusCode::kInvalidArgument,
                 ctx + ": column split local_size_x " + std::to_string(lx) + " is not a multiple of 8 (whole blocks)");
  }
  std::vector<SpecValue> spec;
  if (t.local_size_x != 0) spec.push_back({0, t.local_size_x});
  if (t.k_split != 0) spec.push_back({1, t.k_split});
  if (t.diag != 0) spec.push_back({2, t.diag});
  if (t.unroll != 0) spec.push_back({3, t.unroll});
  return get_pipeline(rec, "gemv_q4_k_col_split", spec, ctx);
}

// Q4_K column_wise, split-K (gemv_q4k.comp COLUMN_SPLIT): one dispatch (one split: y directly; several: the
// last workgroup per item group merges), or, over several binding ranges, one dispatch per range writing
// partials and gemv_reduce.comp. Returns false (nothing recorded) when the scratch, the block alignment or
// the device's subgroup operations do not allow it.
Result<bool> record_column_split(Recorder& rec, const GemvArgs& a, const std::vector<BindingRange>& ranges,
                                 const std::string& ctx, std::string_view label) {
  if (a.scratch.buffer == VK_NULL_HANDLE) return false;
  for (const BindingRange& r : ranges) {
    if (r.skip_bytes % kQ4KVecBytes != 0) return false;
  }
  const DeviceCaps& caps = rec.device().caps();
  const VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  if (!caps.subgroup_in_compute || (caps.subgroup_ops & need) != need) return false;
  if (overlaps(a.scratch, a.w) || overlaps(a.scratch, a.x) || overlaps(a.scratch, a.y)) {
    return error(StatusCode::kValidation, ctx + ": scratch overlaps w, x or y");
  }
  RDRR_ASSIGN_OR_RETURN(const Pipeline* pipe, column_pipeline(rec, a.tuning, ctx));
  const uint64_t blocks_per_k = ceil_div(a.n_rows, quant::kQK_K);
  const uint64_t item_groups = ceil_div(blocks_per_k * 8, pipe->local_size()[0]);
  const uint64_t k_chunk = choose_k_chunk(a, ranges, item_groups, pipe->local_size()[1]);
  if (k_chunk == 0) return false;
  const uint64_t n_splits = count_splits(ranges, k_chunk);
  const uint64_t out_bytes = uint64_t{a.n_rows} * 4;
  const uint32_t mode = n_splits == 1 ? kDirect : merges(ranges, item_groups) ? kMergeLast : kPartialsOnly;
  if (mode == kMergeLast) RDRR_RETURN_IF_ERROR(zero_tickets(rec, a.scratch, ctx));
  const BufferRange y = a.y.sub(0, out_bytes);
  uint64_t split_begin = 0;
  for (const BindingRange& r : ranges) {
    const uint64_t splits = ceil_div(r.granule_count, k_chunk);
    const uint64_t groups = item_groups * splits;
    RDRR_ASSIGN_OR_RETURN(const auto grid, fold_groups(rec, groups, ctx));
    const SplitPush push{a.n_rows,
                         static_cast<uint32_t>(r.granule_count),
                         static_cast<uint32_t>(r.first_granule),
                         static_cast<uint32_t>(blocks_per_k),
                         static_cast<uint32_t>(r.skip_bytes / kQ4KVecBytes),
                         static_cast<uint32_t>(k_chunk),
                         static_cast<uint32_t>(split_begin),
                         static_cast<uint32_t>(item_groups),
                         static_cast<uint32_t>(groups),
                         mode,
                         static_cast<uint32_t>(n_splits),
                         0,
                         static_cast<uint32_t>(kTicketWords),
                         0,
                         0,
                         0};
    const BufferRange bindings[] = {{a.w.buffer, r.bind_offset_bytes, r.bind_size_bytes}, a.x, a.scratch, y};
    RDRR_RETURN_IF_ERROR(rec.dispatch(*pipe, bindings, push, grid, label));
    split_begin += splits;
  }
  if (mode != kPartialsOnly) return true;
  RDRR_ASSIGN_OR_RETURN(const Pipeline* reduce, get_pipeline(rec, "gemv_reduce", {}, ctx));
  const uint64_t groups = ceil_div(a.n_rows, reduce->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(const auto grid, fold_groups(rec, groups, ctx));
  const ReducePush push{a.n_rows, static_cast<uint32_t>(n_splits), static_cast<uint32_t>(groups), 0};
  const BufferRange bindings[] = {a.scratch.sub(kTicketBytes, n_splits * out_bytes), y};
  RDRR_RETURN_IF_ERROR(rec.dispatch(*reduce, bindings, push, grid, label));
  return true;
}

Status record_column(Recorder& rec, const GemvArgs& a, const kernels::KernelInfo& kernel, uint64_t w_bytes,
                     const std::string& ctx, std::string_view label) {
  Device& dev = rec.device();
  const uint64_t blocks_per_k = ceil_div(a.n_rows, quant::kQK_K);
  const uint64_t granule = blocks_per_k * sizeof(quant::BlockQ4K);
  Result<std::vector<BindingRange>> ranges =
      split_binding({a.w.offset, w_bytes, granule, dev.binding_limit_bytes(), dev.binding_alignment()});
  if (!ranges.ok()) return ranges.status().context(ctx);
  // gemv_q4_k_col_split (pinned, or the automatic choice) runs its split path where the args allow it; a forced
  // one must. gemv_q4_k_col never splits.
  if (kernel.name == "gemv_q4_k_col_split") {
    RDRR_ASSIGN_OR_RETURN(const bool split_done, record_column_split(rec, a, *ranges, ctx, label));
    if (split_done) return Status::Ok();
    if (!a.kernel.empty()) {
      return error(StatusCode::kUnsupported, ctx + ": forced kernel " + std::string(a.kernel) + " cannot run these args "
                                                   "(no scratch, scratch too small, blocks not 16-byte aligned or no subgroup "
                                                   "arithmetic and shuffle in compute)");
    }
  }
  const kernels::KernelInfo* generic = kernels::find_kernel(kernels::Op::kGemv, a.dtype, a.layout);
  if (generic == nullptr) return error(StatusCode::kInternal, ctx + ": no generic column_wise gemv kernel");
  const std::vector<SpecValue> spec = gemv_spec(a.tuning, true, *generic, dev.caps());
  Result<const Pipeline*> pipe = dev.pipelines().get(*generic, spec);
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

// gemv_q4_k_dot's specialization: tuning overrides, and XCHUNK = the largest x chunk (a multiple of 256 values,
// 2.5 shared bytes each) that fits the device's shared memory beside the row sums.
Result<std::vector<SpecValue>> dot_spec(const GemvTuning& t, const kernels::KernelInfo& kernel, const DeviceCaps& caps,
                                        const std::string& ctx) {
  std::vector<SpecValue> spec;
  if (t.local_size_x != 0) spec.push_back({0, t.local_size_x});
  if (t.row_groups != 0) spec.push_back({1, t.row_groups});
  if (t.num_rows != 0) spec.push_back({2, t.num_rows});
  const uint32_t threads = (t.local_size_x ? t.local_size_x : spec_default(kernel, 0)) *
                           (t.row_groups ? t.row_groups : spec_default(kernel, 1));
  const uint32_t rows = t.num_rows ? t.num_rows : spec_default(kernel, 2);
  const uint64_t scratch = uint64_t{4} * rows * threads;  // row_scratch: NUM_ROWS floats per invocation
  const uint64_t room = caps.max_compute_shared_memory_bytes > scratch ? caps.max_compute_shared_memory_bytes - scratch : 0;
  const uint32_t chunk = static_cast<uint32_t>(std::min<uint64_t>(kDotMaxChunk, room * 2 / 5 / 256 * 256));
  if (chunk == 0) return error(StatusCode::kUnsupported, ctx + ": too little shared memory for gemv_q4_k_dot");
  spec.push_back({3, chunk});
  return spec;
}

// gemv_q6_k_vec's specialization: tuning overrides, and 32 invocations for rows of at most kQ6NarrowItems items.
std::vector<SpecValue> q6_spec(const GemvTuning& t, uint32_t k, const DeviceCaps& caps) {
  std::vector<SpecValue> spec;
  if (t.local_size_x != 0) {
    spec.push_back({0, t.local_size_x});
  } else {
    spec = vec_rows_local_size(true, k, 0, caps);
  }
  if (t.num_rows != 0) spec.push_back({1, t.num_rows});
  return spec;
}

// Row path (flat / row_wise / plain float): one dispatch per binding range of whole rows.
Status record_rows(Recorder& rec, const GemvArgs& a, const kernels::KernelInfo* kernel, uint64_t w_bytes,
                   uint64_t unit_bytes, const std::string& ctx, std::string_view label) {
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
  // The vectorized Q4_K / Q5_K kernels (gemv_q4k.comp ROWS, gemv_q4k_dot.comp) read 16-byte aligned blocks: an
  // automatic choice falls back to the generic kernel where a binding range starts elsewhere.
  bool aligned = true;
  for (const BindingRange& r : *ranges) aligned = aligned && r.skip_bytes % kQ4KVecBytes == 0;
  const auto is_vec = [](const kernels::KernelInfo* k) {
    return k->name == "gemv_q4_k_vec" || k->name == "gemv_q4_k_dot" || k->name == "gemv_q5_k_vec";
  };
  if (is_vec(kernel) && !aligned) {
    if (!a.kernel.empty()) {
      return error(StatusCode::kUnsupported, ctx + ": forced kernel " + std::string(a.kernel) +
                                                 " cannot run these args (blocks not 16-byte aligned)");
    }
    kernel = kernels::find_kernel(kernels::Op::kGemv, a.dtype, a.layout);
  }
  // The device's choice for the pinned kernel (kernels/kernel_choice.h: gemv_q4_k_vec -> gemv_q4_k_dot).
  const DeviceCaps& caps = dev.caps();
  Result<const kernels::KernelInfo*> run =
      kernels::device_gemv_kernel(*kernel, a.k, device_facts(caps), static_cast<kernels::Q4KDecode>(a.tuning.decode));
  if (!run.ok()) return run.status().context(ctx);
  kernel = *run;
  const bool vec = is_vec(kernel);
  const bool dot = kernel->name == "gemv_q4_k_dot";
  const bool vec6 = kernel->name == "gemv_q6_k_vec";
  if (vec) unit_bytes = kQ4KVecBytes;
  std::vector<SpecValue> spec;
  if (dot) {
    RDRR_ASSIGN_OR_RETURN(spec, dot_spec(a.tuning, *kernel, caps, ctx));
  } else if (vec6) {
    spec = q6_spec(a.tuning, a.k, caps);
  } else {
    spec = gemv_spec(a.tuning, false, *kernel, caps);
    if (a.tuning.local_size_x == 0 && a.tuning.num_rows == 0) {
      if (vec) {
        spec = vec_rows_local_size(false, a.k, ceil_div(a.n_rows, spec_default(*kernel, 1)), caps);
      } else if (a.n_rows < kGenericWideBelowRows) {
        const uint32_t wide = a.n_rows < kGenericWidestBelowRows ? 256 : 128;
        spec = {{0, std::min(wide, std::max<uint32_t>(caps.max_workgroup_invocations, 64))}};
      }
    }
    if (vec && a.tuning.diag != 0) spec.push_back({2, a.tuning.diag});
    if (vec && a.tuning.unroll != 0) spec.push_back({3, a.tuning.unroll});
  }
  Result<const Pipeline*> pipe = dev.pipelines().get(*kernel, spec);
  if (!pipe.ok()) return pipe.status().context(ctx);
  const uint32_t num_rows = dot ? (*pipe)->local_size()[1] * (*pipe)->spec(2) : (*pipe)->spec(1);
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

}  // namespace

namespace ops_detail {

std::vector<SpecValue> vec_rows_local_size(bool q6_k, uint32_t k, uint64_t groups, const DeviceCaps& caps) {
  if (q6_k) {
    if (ceil_div(k, quant::kQK_K) * 4 <= kQ6NarrowItems) return {{0, kQ6NarrowLocalSize}};
    return {};
  }
  if (groups < kVecWideBelowGroups) return {{0, kVecWideLocalSize}};
  if (groups >= kVecNarrowFromGroups && caps.subgroup_size != 0 && caps.subgroup_size <= kVecNarrowLocalSize) {
    return {{0, kVecNarrowLocalSize}};
  }
  return {};
}

}  // namespace ops_detail

Status record_gemv_scratch_init(Recorder& rec, const BufferRange& scratch) {
  if (scratch.size < kTicketBytes) {
    return error(StatusCode::kInvalidArgument, "gemv scratch init: " + std::to_string(scratch.size) +
                                                   " bytes < the " + std::to_string(kTicketBytes) + " ticket bytes");
  }
  return zero_tickets(rec, scratch, "gemv scratch init");
}

uint64_t gemv_scratch_bytes(DType dtype, Layout layout, uint32_t n_rows, uint32_t k) {
  if (dtype != DType::kQ4_K || layout != Layout::kColumnWise) return 0;
  // The tickets, then the partials (+ 1 split per extra binding range).
  return kTicketBytes + (ceil_div(k, kMinAutoKChunk) + 1) * n_rows * 4;
}

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
  // The pinned (forced) kernel, or the one a graph would pin (kernels/kernel_choice.h).
  const kernels::KernelInfo* kernel =
      kernels::pinned_matmul_kernel(kernels::MatmulPass::kDecode, a.dtype, a.layout, a.k);
  if (kernel == nullptr) return error(StatusCode::kUnsupported, ctx + ": no gemv kernel for this dtype and layout");
  if (!a.kernel.empty()) {
    RDRR_ASSIGN_OR_RETURN(kernel, forced_kernel(a.kernel, kernels::Op::kGemv, a.dtype, a.layout, ctx));
    std::string_view why;
    if (!kernels::matmul_kernel_fits(*kernel, a.layout, a.k, &why)) {
      return error(StatusCode::kUnsupported,
                   ctx + ": forced kernel " + std::string(a.kernel) + " cannot run these args (" + std::string(why) + ")");
    }
  }
  const uint64_t w_bytes = packed_weight_bytes(a.dtype, a.layout, a.n_rows, a.k);
  RDRR_RETURN_IF_ERROR(need_bytes(a.w, w_bytes, "w", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.x, uint64_t{a.k} * 4, "x", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.y, uint64_t{a.n_rows} * 4, "y", ctx));
  const uint64_t unit_bytes = weight_unit_bytes(a.dtype);
  if (a.w.offset % unit_bytes != 0) {
    return error(StatusCode::kValidation, ctx + ": w offset " + std::to_string(a.w.offset) + " is not a multiple of " +
                                              std::to_string(unit_bytes));
  }
  if (a.layout == Layout::kColumnWise) return record_column(rec, a, *kernel, w_bytes, ctx, label);

  return record_rows(rec, a, kernel, w_bytes, unit_bytes, ctx, label);
}

}  // namespace rdrr::runtime
