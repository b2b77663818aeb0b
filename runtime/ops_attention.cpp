// record_kv_append, record_attention (kernels/kv_append.comp, attention.comp, attention_decode.comp,
// attention_prefill.comp, attn_merge.comp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "rdrr/manifest.h"
#include "runtime/ops.h"
#include "runtime/ops_util.h"

namespace rdrr::runtime {
namespace {

using namespace ops_detail;

constexpr uint32_t kMaxHeadDim = 512;        // attention.comp MAX_HEAD_DIM
constexpr uint32_t kTargetWorkgroups = 256;  // automatic split-K aims for about this many workgroups
// attention_decode.comp: its workgroups are latency-bound streams, so more of them keep more loads in flight,
// up to a point: the target comes from a split-count sweep on an H100 (bench/README.md, attention decode).
constexpr uint32_t kDecodeTargetWorkgroups = 512;
constexpr uint32_t kMaxSplits = 64;
// Split scratch layout: a ticket per head (attention_decode.comp's in-dispatch merge) at the start, then the
// partials. Heads past kTicketWords merge in a separate attn_merge dispatch.
constexpr uint32_t kTicketWords = 256;
constexpr uint64_t kTicketBytes = uint64_t{kTicketWords} * 4;

Status check_kv(const KvLayer& kv, const std::string& ctx) {
  if (kv.dtype != quant::DType::kF16 && kv.dtype != quant::DType::kF32) {
    return error(StatusCode::kUnsupported,
                 ctx + ": kv dtype " + std::string(quant::dtype_name(kv.dtype)) + " is not F16 or F32");
  }
  RDRR_RETURN_IF_ERROR(need_nonzero(kv.n_kv_heads, "kv n_kv_heads", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(kv.head_dim, "kv head_dim", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(kv.capacity, "kv capacity", ctx));
  if (kv.head_dim % 2 != 0 || kv.head_dim > kMaxHeadDim) {
    return error(StatusCode::kInvalidArgument, ctx + ": head_dim " + std::to_string(kv.head_dim) +
                                                   " must be even and <= " + std::to_string(kMaxHeadDim));
  }
  const uint64_t bytes = kv_layer_bytes(kv.dtype, kv.n_kv_heads, kv.head_dim, kv.capacity);
  RDRR_RETURN_IF_ERROR(need_bytes(kv.k, bytes, "k cache", ctx));
  return need_bytes(kv.v, bytes, "v cache", ctx);
}

// Zeroes the in-dispatch merge tickets of a split scratch before its first use in this recording (attn_merge
// with no splits writes zeros); the calls themselves leave them at zero.
Status zero_tickets(Recorder& rec, const BufferRange& scratch, const std::string& ctx) {
  if (rec.used_before(scratch.buffer, scratch.offset)) return Status::Ok();
  RDRR_ASSIGN_OR_RETURN(const Pipeline* merge, get_pipeline(rec, "attn_merge", {}, ctx));
  const struct {
    uint32_t n_rows, head_dim, n_splits, n_groups;
  } push{1, kTicketWords, 0, 1};
  const BufferRange tickets = scratch.sub(0, kTicketBytes);
  const BufferRange bindings[] = {tickets, tickets};
  RDRR_RETURN_IF_ERROR(rec.dispatch(*merge, bindings, push, {1, 1, 1}, "attention split tickets"));
  rec.note_use(scratch.buffer, scratch.offset);
  return Status::Ok();
}

// Partial bytes of one split: (m, l, o[head_dim]) per (query, head).
uint64_t split_partial_bytes(uint32_t n_q, uint32_t n_heads, uint32_t head_dim) {
  return uint64_t{n_q} * n_heads * (uint64_t{head_dim} + 2) * 4;
}

// The kernel-name suffix of the cache type ("f16" / "f32": rdrr::kv_dtype_name).
std::string kv_name(const KvLayer& kv) {
  return std::string(kv_dtype_name(kv_dtype_of(kv.dtype).value_or(KvDtype::kF16)));
}

// Split count for an attention call: explicit, or automatic when scratch allows (decode-like calls whose
// n_q * n_heads workgroups leave the device idle and whose context spans several tiles).
Result<uint32_t> choose_splits(const AttentionArgs& a, uint32_t tile, uint32_t max_len, uint64_t target,
                               const std::string& ctx) {
  const uint64_t per_split = split_partial_bytes(a.n_q, a.n_heads, a.kv.head_dim);
  const uint64_t room = a.scratch.size > kTicketBytes ? a.scratch.size - kTicketBytes : 0;
  const uint64_t fit = a.scratch.buffer == VK_NULL_HANDLE ? 1 : std::max<uint64_t>(1, room / per_split);
  const uint32_t max_useful = static_cast<uint32_t>(ceil_div(max_len, tile));
  if (a.tuning.n_splits != 0) {
    if (a.tuning.n_splits > 1 && a.tuning.n_splits > fit) {
      return error(StatusCode::kValidation, ctx + ": scratch range of " + std::to_string(a.scratch.size) +
                                                " bytes < required " +
                                                std::to_string(per_split * a.tuning.n_splits) + " for " +
                                                std::to_string(a.tuning.n_splits) + " splits");
    }
    return std::min(a.tuning.n_splits, std::max<uint32_t>(1, max_useful));
  }
  const uint64_t rows = uint64_t{a.n_q} * a.n_heads;
  uint64_t want = rows >= target ? 1 : ceil_div(target, rows);
  want = std::min<uint64_t>({want, max_useful, kMaxSplits, fit});
  return static_cast<uint32_t>(std::max<uint64_t>(1, want));
}

// Whether a call runs attention_decode.comp: one query, head_dim a multiple of 8 (F16) / 4 (F32) up to 256,
// a K binding at a 16-byte offset (read as vectors), subgroups of 8 .. 128 invocations with arithmetic and
// shuffle operations, at most 16 of them per workgroup (its shared combine buffer). AttentionTuning::decode
// forces either kernel (forcing the decode kernel where it cannot run is an error naming the condition).
Result<bool> use_decode_kernel(const DeviceCaps& caps, const AttentionArgs& a, const std::string& ctx) {
  if (a.tuning.decode == 1) return false;
  const uint32_t sg_min = smallest_subgroup(caps);
  const VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  const uint32_t multiple = a.kv.dtype == quant::DType::kF16 ? 8 : 4;
  const uint32_t local_size = a.tuning.local_size_x != 0 ? a.tuning.local_size_x : 128;
  std::string why;
  if (a.n_q != 1) {
    why = "n_q " + std::to_string(a.n_q) + " != 1";
  } else if (a.kv.head_dim % multiple != 0 || a.kv.head_dim > 256) {
    why = "head_dim " + std::to_string(a.kv.head_dim) + " is not a multiple of " + std::to_string(multiple) +
          " up to 256";
  } else if (a.kv.k.offset % 16 != 0) {
    why = "K offset " + std::to_string(a.kv.k.offset) + " is not a multiple of 16";
  } else if (sg_min < 8 || largest_subgroup(caps) > 128 || !caps.subgroup_in_compute ||
             (caps.subgroup_ops & need) != need) {
    why = "subgroups unsuitable";
  } else if (local_size > 16 * sg_min) {
    why = "more than 16 subgroups per workgroup (local_size_x " + std::to_string(a.tuning.local_size_x) + ")";
  }
  if (why.empty()) return true;
  if (a.tuning.decode == 2) return error(StatusCode::kUnsupported, ctx + ": attention_decode cannot run: " + why);
  return false;
}

// The push constants of attention.comp, attention_decode.comp (before SPLIT's extra words) and
// attention_prefill.comp.
struct AttentionPush {
  uint32_t n_q, n_heads, n_kv_heads, head_dim, capacity, p0, window, n_splits, chunk_len;
  float scale, softcap;
  uint32_t n_groups;
};
AttentionPush attention_push(const AttentionArgs& a, uint32_t n_splits, uint32_t chunk_len, uint64_t groups) {
  return {a.n_q,     a.n_heads, a.kv.n_kv_heads, a.kv.head_dim, a.kv.capacity,
          a.p0,      a.window,  n_splits,        chunk_len,     a.scale,
          a.softcap, static_cast<uint32_t>(groups)};
}

// attention_prefill.comp's workgroup size and positions per tile; its shared memory (the kernel's header).
struct PrefillTile {
  uint32_t threads = 0;
  uint32_t positions = 0;
};
uint64_t prefill_shared_bytes(PrefillTile t, uint32_t head_dim) {
  const uint64_t rows = t.threads / 4, hd = head_dim;
  return 4 * (rows * (hd + 4) + uint64_t{t.positions} * (2 * hd + 4) + rows * (t.positions + 1) + 2 * t.threads);
}
// Largest first: more rows share each staged tile, longer tiles fewer barriers.
constexpr PrefillTile kPrefillTiles[] = {{128, 32}, {128, 16}, {64, 16}, {128, 8}, {64, 8}, {32, 8}, {32, 4}};

// Whether a call runs attention_prefill.comp, and its tile: several queries, the recorder allowing it (a pack
// pins it as attention_f16 / _f32's optional variant), no explicit split, head_dim a
// multiple of 4 up to 256, q and out at 16-byte offsets (read and written as vectors), a tile that fits the
// device's shared memory and workgroup size. AttentionTuning::prefill forces either kernel (forcing the prefill
// kernel where it cannot run is an error naming the condition); local_size_x / prefill_positions fix the tile.
Result<std::optional<PrefillTile>> prefill_tile(Recorder& rec, const AttentionArgs& a, const std::string& ctx) {
  if (a.n_q == 1 || a.tuning.prefill == 1 || (a.tuning.prefill == 0 && a.tuning.decode == 2)) {
    return std::optional<PrefillTile>();  // (the decode kernel forced: its own error below)
  }
  const DeviceCaps& caps = rec.device().caps();
  const uint32_t hd = a.kv.head_dim;
  std::string why;
  std::optional<PrefillTile> pick;
  if (!rec.allows("attention_prefill_" + kv_name(a.kv))) {
    why = "the graph does not pin attention_prefill_" + kv_name(a.kv) + " (an optional variant)";
  } else if (a.tuning.n_splits > 1) {
    why = "an explicit split (" + std::to_string(a.tuning.n_splits) + ")";
  } else if (hd % 4 != 0 || hd > 256) {
    why = "head_dim " + std::to_string(hd) + " is not a multiple of 4 up to 256";
  } else if (a.q.offset % 16 != 0 || a.out.offset % 16 != 0) {
    why = "q or out offset is not a multiple of 16";
  } else if (a.tuning.local_size_x % 4 != 0 || a.tuning.prefill_positions % 4 != 0) {
    why = "local_size_x / prefill_positions not multiples of 4";
  } else {
    for (PrefillTile t : kPrefillTiles) {
      if (a.tuning.local_size_x != 0) t.threads = a.tuning.local_size_x;
      if (a.tuning.prefill_positions != 0) t.positions = a.tuning.prefill_positions;
      if (t.threads <= caps.max_workgroup_invocations &&
          prefill_shared_bytes(t, hd) <= caps.max_compute_shared_memory_bytes) {
        pick = t;
        break;
      }
    }
    if (!pick) why = "no tile fits the shared memory (" + std::to_string(caps.max_compute_shared_memory_bytes) + " bytes)";
  }
  if (pick) return pick;
  if (a.tuning.prefill == 2) return error(StatusCode::kUnsupported, ctx + ": attention_prefill cannot run: " + why);
  return std::optional<PrefillTile>();
}

Status record_prefill(Recorder& rec, const AttentionArgs& a, PrefillTile tile, const std::string& ctx,
                      std::string_view label) {
  const std::vector<SpecValue> spec = {{0, tile.threads}, {1, a.kv.head_dim}, {2, tile.positions}};
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "attention_prefill_" + kv_name(a.kv), spec, ctx));
  const uint64_t rows = uint64_t{a.n_q} * (a.n_heads / a.kv.n_kv_heads);
  const uint64_t groups = uint64_t{a.kv.n_kv_heads} * ceil_div(rows, tile.threads / 4);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const AttentionPush push = attention_push(a, 1, a.kv.capacity, groups);
  const BufferRange bindings[] = {a.q, a.kv.k, a.kv.v, a.out};
  return rec.dispatch(*p, bindings, push, grid, label);
}

// kv_append.comp ROPE: record_rope's checks (n_rot, check_rope_freqs, pos), then one dispatch.
Status record_kv_append_rope(Recorder& rec, const KvAppendArgs& a, uint64_t src_bytes, const std::string& ctx,
                             std::string_view label) {
  const KvRope& r = *a.rope;
  const uint32_t n_rot = r.n_rot == 0 ? a.kv.head_dim : r.n_rot;
  const std::string rctx = ctx + " rope n_rot=" + std::to_string(n_rot);
  if (n_rot % 2 != 0 || n_rot > a.kv.head_dim) {
    return error(StatusCode::kInvalidArgument, rctx + ": n_rot must be even and <= head_dim " +
                                                   std::to_string(a.kv.head_dim));
  }
  RDRR_RETURN_IF_ERROR(check_rope_freqs(r.inv_freq, r.theta_base, r.mscale, n_rot, rctx));
  const bool table = r.inv_freq.buffer != VK_NULL_HANDLE;
  RDRR_RETURN_IF_ERROR(need_bytes(r.pos, uint64_t{a.n_tokens} * 4, "pos", rctx));
  // With k_norm: one workgroup of head_dim / 2 invocations per (token, head) row.
  std::vector<SpecValue> spec;
  if (r.k_norm) {
    RDRR_ASSIGN_OR_RETURN(const uint32_t local, check_head_norm(*r.k_norm, a.kv.head_dim, rec.device().caps(), rctx));
    spec.push_back({0, local});
  }
  const std::string kernel = std::string(r.k_norm ? "kv_append_norm_rope_" : "kv_append_rope_") + kv_name(a.kv);
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, kernel, spec, rctx));
  const uint64_t groups = ceil_div(src_bytes / 8, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, rctx));
  const struct {
    uint32_t n_tokens, n_kv_heads, head_dim, capacity, p0, n_groups, n_rot, mode;
    float theta_base, freq_scale, mscale;
    uint32_t use_table;
    float eps, weight_offset;
  } push{a.n_tokens,
         a.kv.n_kv_heads,
         a.kv.head_dim,
         a.kv.capacity,
         a.p0,
         static_cast<uint32_t>(groups),
         n_rot,
         r.interleaved ? 0u : 1u,
         r.theta_base,
         r.freq_scale,
         r.mscale,
         table ? 1u : 0u,
         r.k_norm ? r.k_norm->eps : 0.0f,
         r.k_norm ? r.k_norm->weight_offset : 0.0f};
  const uint32_t push_bytes = r.k_norm ? sizeof(push) : sizeof(push) - 8;
  // Without a table the freqs binding is never read: the positions stand in for it.
  const BufferRange freqs = table ? r.inv_freq.sub(0, uint64_t{n_rot} / 2 * 4) : r.pos;
  if (r.k_norm) {
    const BufferRange bindings[] = {a.k_src, a.v_src, a.kv.k, a.kv.v, r.pos, freqs,
                                    r.k_norm->w.sub(0, uint64_t{a.kv.head_dim} * 4)};
    return rec.dispatch(*p, bindings, std::span(reinterpret_cast<const std::byte*>(&push), push_bytes), grid, label);
  }
  const BufferRange bindings[] = {a.k_src, a.v_src, a.kv.k, a.kv.v, r.pos, freqs};
  return rec.dispatch(*p, bindings, std::span(reinterpret_cast<const std::byte*>(&push), push_bytes), grid, label);
}

}  // namespace

uint64_t attention_scratch_bytes(uint32_t n_q, uint32_t n_heads, uint32_t head_dim, uint32_t n_splits) {
  if (n_splits <= 1) return 0;
  return kTicketBytes + n_splits * split_partial_bytes(n_q, n_heads, head_dim);
}

Status record_kv_append(Recorder& rec, const KvAppendArgs& a, std::string_view label) {
  const std::string ctx = "kv_append " + std::string(label) + " [tokens=" + std::to_string(a.n_tokens) +
                          " p0=" + std::to_string(a.p0) + " capacity=" + std::to_string(a.kv.capacity) + "]";
  RDRR_RETURN_IF_ERROR(need_nonzero(a.n_tokens, "n_tokens", ctx));
  RDRR_RETURN_IF_ERROR(check_kv(a.kv, ctx));
  if (uint64_t{a.p0} + a.n_tokens > a.kv.capacity) {
    return error(StatusCode::kInvalidArgument, ctx + ": positions up to " + std::to_string(uint64_t{a.p0} + a.n_tokens) +
                                                   " exceed the cache capacity " + std::to_string(a.kv.capacity));
  }
  const uint64_t src_bytes = uint64_t{a.n_tokens} * a.kv.n_kv_heads * a.kv.head_dim * 4;
  RDRR_RETURN_IF_ERROR(need_bytes(a.k_src, src_bytes, "k_src", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.v_src, src_bytes, "v_src", ctx));
  if (a.rope) return record_kv_append_rope(rec, a, src_bytes, ctx, label);
  RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "kv_append_" + kv_name(a.kv), {}, ctx));
  const uint64_t groups = ceil_div(src_bytes / 8, p->local_size()[0]);
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const struct {
    uint32_t n_tokens, n_kv_heads, head_dim, capacity, p0, n_groups;
  } push{a.n_tokens, a.kv.n_kv_heads, a.kv.head_dim, a.kv.capacity, a.p0, static_cast<uint32_t>(groups)};
  const BufferRange bindings[] = {a.k_src, a.v_src, a.kv.k, a.kv.v};
  return rec.dispatch(*p, bindings, push, grid, label);
}

Status record_attention(Recorder& rec, const AttentionArgs& a, std::string_view label) {
  const std::string ctx = "attention " + std::string(label) + " [q=" + std::to_string(a.n_q) +
                          " heads=" + std::to_string(a.n_heads) + "/" + std::to_string(a.kv.n_kv_heads) +
                          " head_dim=" + std::to_string(a.kv.head_dim) + " p0=" + std::to_string(a.p0) + "]";
  RDRR_RETURN_IF_ERROR(need_nonzero(a.n_q, "n_q", ctx));
  RDRR_RETURN_IF_ERROR(need_nonzero(a.n_heads, "n_heads", ctx));
  RDRR_RETURN_IF_ERROR(check_kv(a.kv, ctx));
  if (a.n_heads % a.kv.n_kv_heads != 0) {
    return error(StatusCode::kInvalidArgument, ctx + ": n_heads " + std::to_string(a.n_heads) +
                                                   " is not a multiple of n_kv_heads " +
                                                   std::to_string(a.kv.n_kv_heads));
  }
  if (uint64_t{a.p0} + a.n_q > a.kv.capacity) {
    return error(StatusCode::kInvalidArgument, ctx + ": positions up to " + std::to_string(uint64_t{a.p0} + a.n_q) +
                                                   " exceed the cache capacity " + std::to_string(a.kv.capacity));
  }
  if (!(a.scale > 0.0f) || !std::isfinite(a.scale)) {
    return error(StatusCode::kInvalidArgument, ctx + ": scale " + std::to_string(a.scale) + " must be finite and > 0");
  }
  if (!(a.softcap >= 0.0f) || !std::isfinite(a.softcap)) {
    return error(StatusCode::kInvalidArgument, ctx + ": softcap " + std::to_string(a.softcap) + " must be >= 0");
  }
  const uint64_t qo_bytes = uint64_t{a.n_q} * a.n_heads * a.kv.head_dim * 4;
  RDRR_RETURN_IF_ERROR(need_bytes(a.q, qo_bytes, "q", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.out, qo_bytes, "out", ctx));
  if (overlaps(a.q, a.out)) return error(StatusCode::kInvalidArgument, ctx + ": out overlaps q");

  RDRR_ASSIGN_OR_RETURN(const std::optional<PrefillTile> prefill, prefill_tile(rec, a, ctx));
  if (prefill) return record_prefill(rec, a, *prefill, ctx, label);
  std::vector<SpecValue> spec;
  if (a.tuning.local_size_x != 0) spec.push_back({0, a.tuning.local_size_x});
  const Result<bool> decode = use_decode_kernel(rec.device().caps(), a, ctx);
  if (!decode.ok()) return decode.status();
  const std::string family = *decode ? "attention_decode_" : "attention_";
  if (*decode) {  // HEAD_DIM, and PAIRS_PER_LANE enough for the smallest subgroup the pipeline may get
    spec.push_back({1, a.kv.head_dim});
    spec.push_back({2, static_cast<uint32_t>(ceil_div(a.kv.head_dim / 2, smallest_subgroup(rec.device().caps())))});
  }
  RDRR_ASSIGN_OR_RETURN(const Pipeline* probe, get_pipeline(rec, family + kv_name(a.kv), spec, ctx));
  const uint32_t tile = probe->local_size()[0];
  const uint32_t last_pos = a.p0 + a.n_q - 1;
  const uint32_t max_len = a.window != 0 ? std::min(a.window, last_pos + 1) : last_pos + 1;
  RDRR_ASSIGN_OR_RETURN(const uint32_t n_splits,
                        choose_splits(a, tile, max_len, *decode ? kDecodeTargetWorkgroups : kTargetWorkgroups, ctx));
  const uint32_t chunk_len =
      n_splits == 1 ? a.kv.capacity : static_cast<uint32_t>(ceil_div(ceil_div(max_len, n_splits), tile) * tile);
  const Pipeline* p = probe;
  if (n_splits > 1) {
    RDRR_ASSIGN_OR_RETURN(p, get_pipeline(rec, family + "split_" + kv_name(a.kv), spec, ctx));
  }
  const uint64_t rows = uint64_t{a.n_q} * a.n_heads;
  const uint64_t groups = rows * n_splits;
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, groups, ctx));
  const AttentionPush push = attention_push(a, n_splits, chunk_len, groups);
  if (n_splits == 1) {
    const BufferRange bindings[] = {a.q, a.kv.k, a.kv.v, a.out};
    return rec.dispatch(*p, bindings, push, grid, label);
  }
  const uint64_t scratch_bytes = attention_scratch_bytes(a.n_q, a.n_heads, a.kv.head_dim, n_splits);
  const BufferRange partials = a.scratch.sub(kTicketBytes, scratch_bytes - kTicketBytes);
  if (*decode) {
    // attention_decode.comp merges in its last workgroup per head (tickets at the scratch's start).
    const bool merge_here = a.n_heads <= kTicketWords;
    if (merge_here) RDRR_RETURN_IF_ERROR(zero_tickets(rec, a.scratch, ctx));
    const struct {
      AttentionPush base;
      uint32_t ticket_base, part_base, pad0, pad1;
    } split_push{push, merge_here ? 0u : ~0u, kTicketWords, 0, 0};
    const BufferRange bindings[] = {a.q, a.kv.k, a.kv.v, a.scratch.sub(0, scratch_bytes), a.out};
    RDRR_RETURN_IF_ERROR(rec.dispatch(*p, bindings, split_push, grid, label));
    if (merge_here) return Status::Ok();
  } else {
    const BufferRange bindings[] = {a.q, a.kv.k, a.kv.v, partials};
    RDRR_RETURN_IF_ERROR(rec.dispatch(*p, bindings, push, grid, label));
  }
  RDRR_ASSIGN_OR_RETURN(const Pipeline* merge, get_pipeline(rec, "attn_merge", {}, ctx));
  RDRR_ASSIGN_OR_RETURN(auto merge_grid, fold_groups(rec, rows, ctx));
  const struct {
    uint32_t n_rows, head_dim, n_splits, n_groups;
  } merge_push{static_cast<uint32_t>(rows), a.kv.head_dim, n_splits, static_cast<uint32_t>(rows)};
  const BufferRange merge_bindings[] = {partials, a.out};
  return rec.dispatch(*merge, merge_bindings, merge_push, merge_grid, label);
}

}  // namespace rdrr::runtime
