// record_sample / record_argmax (kernels/sample.comp): optional top-k threshold, per-chunk best, final best.
#include <cmath>
#include <string>

#include "runtime/ops.h"
#include "runtime/ops_util.h"

namespace rdrr::runtime {
namespace {

using namespace ops_detail;

constexpr uint32_t kChunk = 4096;        // logits per sample_partial workgroup
constexpr uint64_t kHeaderBytes = 16;    // scratch[0] = top-k threshold, then (score, index) pairs

}  // namespace

uint64_t sample_scratch_bytes(uint32_t n) { return kHeaderBytes + 8 * ceil_div(n, kChunk); }

Status record_sample(Recorder& rec, const SampleArgs& a, std::string_view label) {
  const std::string ctx = "sample " + std::string(label) + " [n=" + std::to_string(a.n) +
                          " top_k=" + std::to_string(a.top_k) + " T=" + std::to_string(a.temperature) + "]";
  RDRR_RETURN_IF_ERROR(need_nonzero(a.n, "n", ctx));
  if (!std::isfinite(a.temperature)) return error(StatusCode::kInvalidArgument, ctx + ": temperature is not finite");
  RDRR_RETURN_IF_ERROR(need_bytes(a.logits, uint64_t{a.n} * 4, "logits", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.scratch, sample_scratch_bytes(a.n), "scratch", ctx));
  RDRR_RETURN_IF_ERROR(need_bytes(a.token, 4, "token", ctx));
  if (overlaps(a.scratch, a.token) || overlaps(a.scratch, a.logits)) {
    return error(StatusCode::kInvalidArgument, ctx + ": scratch overlaps logits or token");
  }
  const bool greedy = a.temperature <= 0.0f;
  const bool use_threshold = !greedy && a.top_k != 0 && a.top_k < a.n;
  const BufferRange scratch = a.scratch.sub(0, sample_scratch_bytes(a.n));
  if (use_threshold) {
    RDRR_ASSIGN_OR_RETURN(const Pipeline* p, get_pipeline(rec, "sample_threshold", {}, ctx));
    const struct {
      uint32_t n, k, pad0, pad1;
    } push{a.n, a.top_k, 0, 0};
    const BufferRange bindings[] = {a.logits, scratch};
    RDRR_RETURN_IF_ERROR(rec.dispatch(*p, bindings, push, {1, 1, 1}, label));
  }
  const uint32_t n_partials = static_cast<uint32_t>(ceil_div(a.n, kChunk));
  RDRR_ASSIGN_OR_RETURN(const Pipeline* partial, get_pipeline(rec, "sample_partial", {}, ctx));
  RDRR_ASSIGN_OR_RETURN(auto grid, fold_groups(rec, n_partials, ctx));
  const struct {
    uint32_t n, chunk, use_threshold;
    float inv_temp;
    uint32_t seed_lo, seed_hi, n_groups, pad0;
  } push{a.n,
         kChunk,
         use_threshold ? 1u : 0u,
         greedy ? 0.0f : 1.0f / a.temperature,
         static_cast<uint32_t>(a.seed),
         static_cast<uint32_t>(a.seed >> 32),
         n_partials,
         0};
  const BufferRange bindings[] = {a.logits, scratch};
  RDRR_RETURN_IF_ERROR(rec.dispatch(*partial, bindings, push, grid, label));
  RDRR_ASSIGN_OR_RETURN(const Pipeline* fin, get_pipeline(rec, "sample_final", {}, ctx));
  const struct {
    uint32_t n_partials, pad0, pad1, pad2;
  } final_push{n_partials, 0, 0, 0};
  const BufferRange final_bindings[] = {scratch, a.token.sub(0, 4)};
  return rec.dispatch(*fin, final_bindings, final_push, {1, 1, 1}, label);
}

Status record_argmax(Recorder& rec, const BufferRange& logits, const BufferRange& scratch, const BufferRange& token,
                     uint32_t n, std::string_view label) {
  SampleArgs a;
  a.logits = logits;
  a.scratch = scratch;
  a.token = token;
  a.n = n;
  return record_sample(rec, a, label);
}

}  // namespace rdrr::runtime
