// The executor: records one whole forward pass per submit from the compiled plan (executor_plan.h).
#include "runtime/executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/executor_plan.h"
#include "runtime/kv_cache.h"
#include "runtime/ops.h"
#include "runtime/pack.h"
#include "runtime/rope_freqs.h"

namespace rdrr::runtime {

using exec_detail::Buf;
using exec_detail::Dispatch;
using exec_detail::Plan;
using exec_detail::Step;
using quant::DType;
using quant::Layout;

namespace {

constexpr uint32_t kDefaultMaxContext = 4096;
constexpr uint32_t kDefaultBatch = 512;
constexpr uint32_t kAttentionSplits = 64;  // decode split-K chunks at most (scratch size)
// Split-K GEMV scratch lanes (Q4_K column_wise), taken in turn by the matmuls that use one: the q / k / v
// projections of a layer read the same input and get different lanes, so they share a barrier level instead
// of being ordered by their scratch writes.
constexpr uint32_t kGemvScratchLanes = 3;
// Sampled tokens: a ring of host-visible slots (one binding-aligned int32 each). A decode step embeds the
// token in one slot and samples into the next; the host reads a slot after its step's fence. Two steps in
// flight use three slots; four leave one spare.
constexpr uint32_t kTokenSlots = 4;

RopeScaling rope_scaling(const RopeConfig& r) {
  RopeScaling s;
  switch (r.scaling_type) {
    case rdrr::RopeScalingType::kNone: s.type = RopeScalingType::kNone; break;
    case rdrr::RopeScalingType::kLinear: s.type = RopeScalingType::kLinear; break;
    case rdrr::RopeScalingType::kLlama3: s.type = RopeScalingType::kLlama3; break;
    case rdrr::RopeScalingType::kYarn: s.type = RopeScalingType::kYarn; break;
    case rdrr::RopeScalingType::kLongRope: s.type = RopeScalingType::kLongRope; break;
    case rdrr::RopeScalingType::kFreqFactors: s.type = RopeScalingType::kFreqFactors; break;
  }
  s.factor = r.scaling_factor.value_or(1.0);
  s.original_max_position_embeddings = static_cast<uint32_t>(r.original_max_positions.value_or(0));
  s.low_freq_factor = r.low_freq_factor.value_or(s.low_freq_factor);
  s.high_freq_factor = r.high_freq_factor.value_or(s.high_freq_factor);
  s.beta_fast = r.yarn_beta_fast.value_or(s.beta_fast);
  s.beta_slow = r.yarn_beta_slow.value_or(s.beta_slow);
  s.attention_factor = r.yarn_attention_factor.value_or(r.attention_factor.value_or(0.0));
  s.short_factor = r.short_factors;
  s.long_factor = r.long_factors;
  s.freq_factors = r.freq_factors;
  return s;
}

}  // namespace

struct Executor::Impl {
  Device& dev;
  const Pack& pack;
  ExecutorOptions opts;
  Plan plan;
  uint32_t ctx = 0;
  uint32_t batch = 0;
  uint32_t n_rot = 0;
  float rope_freq_scale = 1.0f;
  float rope_mscale = 1.0f;
  std::unique_ptr<Recorder> recs[2];  // decode steps alternate between them (one may run while the other records)
  Recorder* rec = nullptr;            // the one being recorded into
  KvCache kv;
  Buffer act[graph::kActivationCount];
  Buffer ids, pos, pos_table, tokens, gemv_scratch, attn_scratch, sample_scratch, inv_freq;
  Buffer inv_freq_long;  // LongRoPE's long-factor table (rotation(): passes ending past the original context)
  // The last position of the prefill() / decode call being recorded: LongRoPE picks its table per call, as
  // transformers does per forward pass (a prefill's chunks all use the table of its last position).
  uint32_t call_last_position = 0;
  uint64_t pos_stride = 0;
  // q, k and v of a one-row pass (decode) live in the qkv buffer's row 0 at their column offsets, so a fused
  // qkv_proj writes them where the next steps read them and qkv_split records nothing. Needs the offsets of k
  // and v binding-aligned; pass_rows is the row count of the pass being recorded.
  bool qkv_in_place = false;
  uint32_t pass_rows = 0;
  uint64_t token_stride = 0;
  uint32_t slot = 0;       // ring slot of the last sampled token (the next decode step's input)
  uint64_t gemv_lane_bytes = 0;  // one split-K scratch lane (binding-aligned)
  uint32_t gemv_lane = 0;        // the lane of the next matmul that uses one
  BufferRange sample_out;  // where the sample step writes (a ring slot)

  BufferRange gemv_lane_range(uint32_t l) const {
    return gemv_scratch.range().sub(uint64_t{l} * gemv_lane_bytes, gemv_lane_bytes);
  }
  BufferRange token_slot(uint32_t s) const { return tokens.range().sub(uint64_t{s % kTokenSlots} * token_stride, 4); }
  uint32_t read_slot(uint32_t s) const {
    uint32_t t = 0;
    std::memcpy(&t, tokens.mapped() + uint64_t{s % kTokenSlots} * token_stride, 4);
    return t;
  }
  // The other recorder: the next recording goes there.
  void flip() { rec = rec == recs[0].get() ? recs[1].get() : recs[0].get(); }
  Recorder* other() const { return rec == recs[0].get() ? recs[1].get() : recs[0].get(); }

  Impl(Device& d, const Pack& p, const ExecutorOptions& o, Plan pl, KvCache cache)
      : dev(d), pack(p), opts(o), plan(std::move(pl)), kv(std::move(cache)) {}

  BufferRange buf(Buf b) const { return act[static_cast<size_t>(b)].range(); }
  uint32_t width(Buf b) const { return graph::buffer_width(plan.dims, b); }
  bool qkv_aliased() const { return qkv_in_place && pass_rows == 1; }
  BufferRange rows(Buf b, uint32_t first, uint32_t n) const {
    const uint64_t w = uint64_t{width(b)} * 4;
    if (qkv_aliased() && (b == Buf::kQ || b == Buf::kK || b == Buf::kV)) {
      const uint64_t q_bytes = uint64_t{width(Buf::kQ)} * 4, kv_bytes = uint64_t{width(Buf::kK)} * 4;
      return buf(Buf::kQkv).sub(b == Buf::kQ ? 0 : b == Buf::kK ? q_bytes : q_bytes + kv_bytes, w).sub(first * w, n * w);
    }
    return buf(b).sub(first * w, n * w);
  }

  Status allocate();
  // One pass: M rows at position p0; ids_range holds the M token ids. post_rows: 0 = no post phase,
  // else the last post_rows rows go through final_norm .. lm_head (and sample when `sample`).
  Status record_pass(const BufferRange& ids_range, const BufferRange& pos_range, uint32_t m, uint32_t p0,
                     bool decode, uint32_t post_rows, const SampleOptions* sample);
  Status record_step(const Step& s, uint32_t m, uint32_t p0, uint32_t layer, const BufferRange& ids_range,
                     const BufferRange& pos_range, const SampleOptions* sample);
  Status record_matmul(const Step& s, const BufferRange& x, const BufferRange& y, uint32_t m);
  KvRope rotation(const Step& s, const BufferRange& pos_range) const;
  Status submit_decode(const SampleOptions& sample, uint32_t position, uint32_t slot_in);
};

Status Executor::Impl::allocate() {
  const graph::Dims& d = plan.dims;
  for (size_t i = 0; i < graph::kActivationCount; ++i) {
    const bool unused = static_cast<Buf>(i) == Buf::kQkv && !plan.fused_qkv;
    const uint64_t bytes = unused ? 4 : uint64_t{batch} * width(static_cast<Buf>(i)) * 4;
    RDRR_ASSIGN_OR_RETURN(act[i], dev.allocate(std::max<uint64_t>(bytes, 4), "activations"));
  }
  RDRR_ASSIGN_OR_RETURN(ids, dev.allocate(uint64_t{batch} * 4, "token ids"));
  RDRR_ASSIGN_OR_RETURN(pos, dev.allocate(uint64_t{batch} * 4, "positions"));
  const uint64_t q_bytes = uint64_t{width(Buf::kQ)} * 4, kv_bytes = uint64_t{width(Buf::kK)} * 4;
  qkv_in_place = plan.fused_qkv && q_bytes % dev.binding_alignment() == 0 && kv_bytes % dev.binding_alignment() == 0;
  token_stride = dev.binding_alignment();
  RDRR_ASSIGN_OR_RETURN(tokens, dev.host_memory().allocate(kTokenSlots * token_stride, token_stride, "sampled tokens"));
  // Decode positions: one int32 per binding-aligned slot, so step p binds its own slot.
  pos_stride = dev.binding_alignment();
  std::vector<int32_t> table(uint64_t{ctx} * pos_stride / 4, 0);
  for (uint32_t p = 0; p < ctx; ++p) table[uint64_t{p} * pos_stride / 4] = static_cast<int32_t>(p);
  RDRR_ASSIGN_OR_RETURN(pos_table, dev.allocate(table.size() * 4, "position table"));
  RDRR_RETURN_IF_ERROR(dev.upload(pos_table.range(), std::as_bytes(std::span(table))));
  const uint64_t align = std::max<uint64_t>(dev.binding_alignment(), 256);
  gemv_lane_bytes = (std::max<uint64_t>(plan.gemv_scratch_bytes, 256) + align - 1) / align * align;
  RDRR_ASSIGN_OR_RETURN(gemv_scratch, dev.allocate(gemv_lane_bytes * kGemvScratchLanes, "gemv scratch"));
  RDRR_ASSIGN_OR_RETURN(attn_scratch,
                        dev.allocate(attention_scratch_bytes(1, d.heads, d.head_dim, kAttentionSplits), "attn scratch"));
  RDRR_ASSIGN_OR_RETURN(sample_scratch, dev.allocate(sample_scratch_bytes(d.vocab), "sample scratch"));
  // RoPE: rotated dims from partialRotaryFactor; scaled frequencies as a table when the graph runs rope_freqs.
  const RopeConfig& r = pack.manifest().inference.rope;
  n_rot = static_cast<uint32_t>(std::lround(double(d.head_dim) * r.partial_rotary_factor)) & ~1u;
  if (r.scaling_type == rdrr::RopeScalingType::kLinear) rope_freq_scale = float(1.0 / r.scaling_factor.value_or(1.0));
  if (!plan.needs_rope_table) return Status::Ok();
  const RopeScaling rope = rope_scaling(r);
  // The table for sequences of seq_len positions (rope_frequencies picks LongRoPE's set by it) into `out`.
  auto upload_table = [&](uint64_t seq_len, const char* name, Buffer& out) -> Status {
    RDRR_ASSIGN_OR_RETURN(RopeFrequencies f, rope_frequencies(rope, r.theta, n_rot, seq_len));
    rope_mscale = f.mscale;
    RDRR_ASSIGN_OR_RETURN(out, dev.allocate(f.inv_freq.size() * 4, name));
    return dev.upload(out.range(), std::as_bytes(std::span(f.inv_freq)));
  };
  if (rope.type != RopeScalingType::kLongRope) return upload_table(ctx, "rope inv_freq", inv_freq);
  RDRR_RETURN_IF_ERROR(upload_table(rope.original_max_position_embeddings, "rope inv_freq", inv_freq));
  return upload_table(uint64_t{rope.original_max_position_embeddings} + 1, "rope inv_freq long", inv_freq_long);
}

Status Executor::Impl::record_matmul(const Step& s, const BufferRange& x, const BufferRange& y, uint32_t m) {
  const TensorEntry& w = *s.weight->entry;
  const Layout layout = w.layout.value_or(Layout::kRowWise);
  // The GEMV kernel for these rows: the step's own, or for a short prefill's GEMM step the decode phase's
  // GEMV kernel for the same weight (Step::row_kernel); none: the pinned GEMM.
  const kernels::KernelInfo* gemv = s.kernel->op == kernels::Op::kGemv ? s.kernel
                                    : m <= opts.gemv_prefill_rows     ? s.row_kernel
                                                                      : nullptr;
  if (gemv == nullptr) {
    GemmArgs g;
    g.w = s.weight->range;
    g.dtype = w.dtype;
    g.layout = layout;
    g.n_rows = s.n;
    g.k = s.k;
    g.m_rows = m;
    g.x = x;
    g.y = y;
    g.kernel = s.kernel->name;
    g.cooperative_matrix = opts.cooperative_matrix;
    return record_gemm(*rec, g, s.label);
  }
  // One GEMV dispatch per row. The rows are independent: barriers between them only where a split-K scratch
  // lane comes round again.
  const bool uses_scratch = gemv_scratch_bytes(w.dtype, layout, s.n, s.k) != 0;
  for (uint32_t r = 0; r < m; ++r) {
    GemvArgs g;
    g.w = s.weight->range;
    g.dtype = w.dtype;
    g.layout = layout;
    g.n_rows = s.n;
    g.k = s.k;
    g.x = x.sub(uint64_t{r} * s.k * 4, uint64_t{s.k} * 4);
    g.y = y.sub(uint64_t{r} * s.n * 4, uint64_t{s.n} * 4);
    g.scratch = gemv_lane_range(gemv_lane);
    if (uses_scratch) gemv_lane = (gemv_lane + 1) % kGemvScratchLanes;
    g.kernel = gemv->name;
    RDRR_RETURN_IF_ERROR(record_gemv(*rec, g, s.label));
  }
  return Status::Ok();
}

Status Executor::Impl::record_step(const Step& s, uint32_t m, uint32_t p0, uint32_t layer, const BufferRange& ids_range,
                                   const BufferRange& pos_range, const SampleOptions* sample) {
  const Manifest& mf = pack.manifest();
  const Inference& inf = mf.inference;
  const graph::Dims& d = plan.dims;
  const float eps = static_cast<float>(inf.normalization.rms_norm_eps);
  const float offset = static_cast<float>(inf.normalization.weight_offset);
  const uint32_t w_in = width(s.in()), w_out = width(s.out());
  switch (s.kind()) {
    case Dispatch::kEmbed: {
      const TensorEntry& w = *s.weight->entry;
      EmbedArgs e;
      e.table = s.weight->range;
      e.dtype = w.dtype;
      e.layout = w.layout.value_or(Layout::kRowWise);
      e.vocab = static_cast<uint32_t>(w.shape[0]);
      e.dim = d.d;
      e.ids = ids_range;
      e.out = rows(Buf::kHidden, 0, m);
      e.n_tokens = m;
      e.scale = static_cast<float>(inf.output.embedding_scale);
      e.kernel = s.kernel->name;
      return record_embed(*rec, e, s.label);
    }
    case Dispatch::kNorm:
      return record_rms_norm(*rec, {rows(s.in(), 0, m), s.weight->range, rows(s.out(), 0, m), w_in, m, eps, offset}, s.label);
    case Dispatch::kAddNorm:
      return record_add_rms_norm(*rec, {rows(Buf::kHidden, 0, m), rows(Buf::kProj, 0, m), s.weight->range,
                                        rows(Buf::kNormed, 0, m), d.d, m, eps, offset},
                                 s.label);
    case Dispatch::kMatmul: return record_matmul(s, rows(s.in(), 0, m), rows(s.out(), 0, m), m);
    case Dispatch::kBias:
      if (s.kernel->name == "add_bias") {
        return record_add_bias(*rec, rows(s.out(), 0, m), s.weight->range, rows(s.out(), 0, m), s.n, m, s.label);
      }
      for (uint32_t r = 0; r < m; ++r) {  // plain add: one row per dispatch
        RDRR_RETURN_IF_ERROR(record_add(*rec, rows(s.out(), r, 1), s.weight->range, rows(s.out(), r, 1), s.n, s.label));
      }
      return Status::Ok();
    case Dispatch::kHeadNorm:
      return record_head_norm(*rec, {rows(s.out(), 0, m), s.weight->range, rows(s.out(), 0, m), m, s.n, d.head_dim, eps, offset},
                              s.label);
    case Dispatch::kRope: {
      const KvRope rot = rotation(s, pos_range);
      RopeArgs a;
      a.x = rows(s.out(), 0, m);
      a.pos = rot.pos;
      a.y = a.x;
      a.n_tokens = m;
      a.n_heads = s.n;
      a.head_dim = d.head_dim;
      a.n_rot = rot.n_rot;
      a.mode = rot.interleaved ? RopeMode::kInterleaved : RopeMode::kNeox;
      a.theta_base = rot.theta_base;
      a.freq_scale = rot.freq_scale;
      a.inv_freq = rot.inv_freq;
      a.mscale = rot.mscale;
      if (s.weight != nullptr) a.norm = HeadNormWeight{s.weight->range, eps, offset};
      return record_rope(*rec, a, s.label);
    }
    case Dispatch::kKvAppend:
      return record_kv_append(*rec, {kv.layer(layer), rows(Buf::kK, 0, m), rows(Buf::kV, 0, m), m, p0, std::nullopt}, s.label);
    case Dispatch::kKvAppendRope: {
      KvRope rot = rotation(s, pos_range);
      if (s.weight != nullptr) rot.k_norm = HeadNormWeight{s.weight->range, eps, offset};
      return record_kv_append(*rec, {kv.layer(layer), rows(Buf::kK, 0, m), rows(Buf::kV, 0, m), m, p0, rot}, s.label);
    }
    case Dispatch::kAttention: {
      const AttentionConfig& at = inf.attention;
      AttentionArgs a;
      a.q = rows(Buf::kQ, 0, m);
      a.kv = kv.layer(layer);
      a.out = rows(Buf::kAttn, 0, m);
      if (m == 1) a.scratch = attn_scratch.range();
      a.n_q = m;
      a.n_heads = d.heads;
      a.p0 = p0;
      const double s2 = at.query_pre_attn_scalar.value_or(double(d.head_dim));
      a.scale = static_cast<float>(1.0 / std::sqrt(s2));
      a.window = s.local() ? static_cast<uint32_t>(at.sliding_window.value_or(0)) : 0;
      a.softcap = static_cast<float>(at.attn_logit_softcapping.value_or(0.0));
      return record_attention(*rec, a, s.label);
    }
    case Dispatch::kGlu:
      return record_glu(*rec, inf.ffn.activation == rdrr::Activation::kGeluTanh ? Activation::kGeluTanh : Activation::kSilu,
                        rows(s.op->reads[0], 0, m), rows(s.op->reads[1], 0, m), rows(s.out(), 0, m), m * w_out, s.label);
    case Dispatch::kGluSplit: {  // the expert buffers hold T rows of [gate | up] per token
      const uint32_t slots = s.out() == Buf::kExpertAct ? d.top_k : 1;
      return record_glu_split(*rec,
                              inf.ffn.activation == rdrr::Activation::kGeluTanh ? Activation::kGeluTanh : Activation::kSilu,
                              rows(s.in(), 0, m), rows(s.out(), 0, m), w_out / slots, m * slots, s.label);
    }
    case Dispatch::kMoeRoute:
      return record_moe_route(*rec, {.logits = rows(Buf::kRouter, 0, m), .ids = rows(Buf::kExpertIds, 0, m),
                                     .weights = rows(Buf::kExpertWeights, 0, m), .m_rows = m, .n_experts = d.experts,
                                     .top_k = d.top_k, .normalize = mf.architecture.moe.normalize_top_k},
                              s.label);
    case Dispatch::kMoeGemv:
    case Dispatch::kMoeCombine: {
      const bool combine = s.kind() == Dispatch::kMoeCombine;
      const TensorEntry& w = *s.weight->entry;
      MoeGemvArgs a;
      a.w = s.weight->range;
      a.dtype = w.dtype;
      a.layout = w.layout.value_or(Layout::kRowWise);
      a.n_experts = d.experts;
      a.n_rows = static_cast<uint32_t>(w.shape[0] / d.experts);
      a.k = static_cast<uint32_t>(w.shape[1]);
      a.m_rows = m;
      a.top_k = d.top_k;
      a.x = rows(s.in(), 0, m);
      a.ids = rows(Buf::kExpertIds, 0, m);
      if (combine) a.weights = rows(Buf::kExpertWeights, 0, m);
      a.y = rows(s.out(), 0, m);
      a.combine = combine;
      a.kernel = s.kernel->name;
      return record_moe_gemv(*rec, a, s.label);
    }
    case Dispatch::kMoeRouteGlu: {
      const TensorEntry& w = *s.weight->entry;
      MoeRouteGluArgs a;
      a.w = s.weight->range;
      a.dtype = w.dtype;
      a.layout = w.layout.value_or(Layout::kRowWise);
      a.n_experts = d.experts;
      a.ff = d.expert_ff;
      a.k = d.d;
      a.m_rows = m;
      a.top_k = d.top_k;
      a.normalize = mf.architecture.moe.normalize_top_k;
      a.act = inf.ffn.activation == rdrr::Activation::kGeluTanh ? Activation::kGeluTanh : Activation::kSilu;
      a.x = rows(Buf::kNormed, 0, m);
      a.logits = rows(Buf::kRouter, 0, m);
      a.ids = rows(Buf::kExpertIds, 0, m);
      a.weights = rows(Buf::kExpertWeights, 0, m);
      a.act_out = rows(Buf::kExpertAct, 0, m);
      return record_moe_route_glu(*rec, a, s.label);
    }
    case Dispatch::kGatedAdd:
      return record_gated_add(*rec, {.g = rows(Buf::kSharedScale, 0, m), .s = rows(Buf::kSharedOut, 0, m),
                                     .y = rows(s.out(), 0, m), .m_rows = m, .d = d.d},
                              s.label);
    case Dispatch::kSplitQkv:
      if (qkv_aliased()) return Status::Ok();  // q, k, v already are qkv's row 0
      return record_split_qkv(*rec, rows(Buf::kQkv, 0, m), rows(Buf::kQ, 0, m), rows(Buf::kK, 0, m), rows(Buf::kV, 0, m),
                              width(Buf::kQ), width(Buf::kK), m, s.label);
    case Dispatch::kResidual:
      return record_add(*rec, rows(Buf::kHidden, 0, m), rows(Buf::kProj, 0, m), rows(Buf::kHidden, 0, m), m * d.d, s.label);
    case Dispatch::kUnary:
      return record_unary(*rec, s.kernel->name, rows(s.in(), 0, m), rows(s.out(), 0, m), m * w_out, s.param, s.label);
    case Dispatch::kSample: {
      SampleArgs a;
      a.logits = rows(Buf::kLogits, m - 1, 1);
      a.scratch = sample_scratch.range();
      a.token = sample_out;
      a.n = d.vocab;
      a.temperature = sample->temperature;
      a.top_k = sample->top_k;
      a.seed = sample->seed + p0;
      return record_sample(*rec, a, s.label);
    }
  }
  return error(StatusCode::kInternal, "step " + s.where + ": unhandled kind");
}

// The rotation of a rope_* / kv_append_rope* step: ropeLocalTheta, unscaled, on sliding-layer (local) steps; else
// the CPU frequency table with its mscale (Step::freq_table; LongRoPE's long table when the pass ends past the
// original context), or ropeTheta with linear scaling's freq_scale.
KvRope Executor::Impl::rotation(const Step& s, const BufferRange& pos_range) const {
  const RopeConfig& r = pack.manifest().inference.rope;
  KvRope rot;
  rot.pos = pos_range;
  rot.n_rot = n_rot;
  rot.interleaved = r.convention == RopeConvention::kInterleaved;
  if (s.local()) {
    rot.theta_base = static_cast<float>(r.local_theta.value_or(r.theta));
  } else if (s.freq_table) {
    const bool long_table = r.scaling_type == rdrr::RopeScalingType::kLongRope &&
                            longrope_uses_long(r.original_max_positions.value_or(0), call_last_position);
    rot.inv_freq = long_table ? inv_freq_long.range() : inv_freq.range();
    rot.mscale = rope_mscale;
  } else {
    rot.theta_base = static_cast<float>(r.theta);
    rot.freq_scale = rope_freq_scale;
  }
  return rot;
}

Status Executor::Impl::record_pass(const BufferRange& ids_range, const BufferRange& pos_range, uint32_t m, uint32_t p0,
                                   bool decode, uint32_t post_rows, const SampleOptions* sample) {
  // Every lane's tickets zeroed up front, beside the first steps: a lane's first matmul then needs no
  // barrier of its own.
  gemv_lane = 0;
  pass_rows = m;
  for (uint32_t l = 0; plan.gemv_scratch_bytes != 0 && l < kGemvScratchLanes; ++l) {
    RDRR_RETURN_IF_ERROR(record_gemv_scratch_init(*rec, gemv_lane_range(l)));
  }
  for (const Step& s : plan.pre) RDRR_RETURN_IF_ERROR(record_step(s, m, p0, 0, ids_range, pos_range, sample));
  const auto& layers = decode ? plan.decode : plan.prefill;
  for (uint32_t l = 0; l < layers.size(); ++l) {
    for (const Step& s : layers[l]) RDRR_RETURN_IF_ERROR(record_step(s, m, p0, l, ids_range, pos_range, sample));
  }
  if (post_rows == 0) return Status::Ok();
  const graph::Dims& d = plan.dims;
  for (const Step& s : plan.post) {
    if (s.kind() == Dispatch::kSample && sample == nullptr) continue;
    if (s.kind() == Dispatch::kNorm && s.in() == Buf::kHidden) {
      // final_norm of the last post_rows rows of hidden into rows 0.. of normed.
      const float eps = static_cast<float>(pack.manifest().inference.normalization.rms_norm_eps);
      const float offset = static_cast<float>(pack.manifest().inference.normalization.weight_offset);
      RDRR_RETURN_IF_ERROR(record_rms_norm(*rec, {rows(Buf::kHidden, m - post_rows, post_rows), s.weight->range,
                                                  rows(Buf::kNormed, 0, post_rows), d.d, post_rows, eps, offset},
                                           s.label));
      continue;
    }
    RDRR_RETURN_IF_ERROR(record_step(s, post_rows, p0 + m - post_rows, 0, ids_range, pos_range, sample));
  }
  return Status::Ok();
}

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() {
  if (impl_) (void)drop_ahead();  // before the buffers the step uses are freed
}

Result<std::unique_ptr<Executor>> Executor::create(Device& device, const Pack& pack, const ExecutorOptions& options) {
  const std::string where = "executor for pack " + pack.dir().string();
  Result<Plan> plan = exec_detail::compile_plan(pack);
  if (!plan.ok()) return plan.status().context(where);
  const Architecture& a = pack.manifest().architecture;
  const uint32_t max_ctx = static_cast<uint32_t>(std::min<uint64_t>(a.max_seq_len, 1u << 30));
  uint32_t ctx = options.context_length != 0 ? options.context_length : std::min(max_ctx, kDefaultMaxContext);
  if (ctx == 0) return error(StatusCode::kInvalidArgument, where + ": context length is 0");
  if (options.context_length > max_ctx) {
    return error(StatusCode::kInvalidArgument, where + ": context length " + std::to_string(ctx) +
                                                   " > architecture.maxSeqLen " + std::to_string(max_ctx));
  }
  const KvCacheShape shape{plan->dims.layers, plan->dims.kv_heads, plan->dims.head_dim, ctx, plan->kv_dtype};
  Result<KvCache> cache = KvCache::create(device, shape, "kv_cache");
  if (!cache.ok()) return cache.status().context(where);
  auto impl = std::make_unique<Impl>(device, pack, options, std::move(plan).value(), std::move(cache).value());
  impl->ctx = ctx;
  impl->batch = std::min(ctx, options.max_batch_tokens != 0 ? options.max_batch_tokens : kDefaultBatch);
  if (Status s = impl->allocate(); !s.ok()) return s.context(where);
  RecorderOptions ropts;
  if (options.profile && options.gpu_span) {
    return error(StatusCode::kInvalidArgument, where + ": profile and gpu_span are exclusive");
  }
  ropts.timestamps = options.profile;
  ropts.span_timestamps = options.gpu_span;
  ropts.max_timed_dispatches = 16384;
  ropts.allowed_kernels = impl->plan.pinned;
  for (auto& r : impl->recs) {
    Result<std::unique_ptr<Recorder>> rec = Recorder::create(device, ropts);
    if (!rec.ok()) return rec.status().context(where);
    r = std::move(rec).value();
  }
  impl->rec = impl->recs[0].get();
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

uint32_t Executor::context_length() const { return impl_->ctx; }
quant::DType Executor::kv_dtype() const { return impl_->plan.kv_dtype; }
uint64_t Executor::vocab_size() const { return impl_->plan.dims.vocab; }

void Executor::reset() {
  (void)drop_ahead();  // a failed wait leaves the device lost; the next submit reports it
  position_ = 0;
  has_token_ = false;
}

Result<PrefillResult> Executor::prefill(std::span<const uint32_t> tokens, LogitsMode logits, const SampleOptions& sample) {
  Impl& im = *impl_;
  RDRR_RETURN_IF_ERROR(drop_ahead());
  if (tokens.empty()) return error(StatusCode::kInvalidArgument, "prefill: no tokens");
  if (uint64_t{position_} + tokens.size() > im.ctx) {
    return error(StatusCode::kInvalidArgument, "prefill: positions " + std::to_string(position_) + " + " +
                                                   std::to_string(tokens.size()) + " tokens exceed the context length " +
                                                   std::to_string(im.ctx));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= im.plan.dims.vocab) {
      return error(StatusCode::kInvalidArgument, "prefill: token " + std::to_string(i) + " id " +
                                                     std::to_string(tokens[i]) + " >= vocab " +
                                                     std::to_string(im.plan.dims.vocab));
    }
  }
  PrefillResult out;
  const uint64_t vocab = im.plan.dims.vocab;
  im.call_last_position = static_cast<uint32_t>(position_ + tokens.size() - 1);
  for (size_t at = 0; at < tokens.size(); at += im.batch) {
    const uint32_t m = static_cast<uint32_t>(std::min<size_t>(im.batch, tokens.size() - at));
    const bool last = at + m == tokens.size();
    const uint32_t p0 = position_;
    std::vector<int32_t> pos(m);
    for (uint32_t i = 0; i < m; ++i) pos[i] = static_cast<int32_t>(p0 + i);
    RDRR_RETURN_IF_ERROR(im.dev.upload(im.ids.range().sub(0, uint64_t{m} * 4), std::as_bytes(tokens.subspan(at, m))));
    RDRR_RETURN_IF_ERROR(im.dev.upload(im.pos.range().sub(0, uint64_t{m} * 4), std::as_bytes(std::span(pos))));
    const uint32_t post_rows = logits == LogitsMode::kAll ? m : last ? 1 : 0;
    im.sample_out = im.token_slot(im.slot + 1);
    const Status st = im.record_pass(im.ids.range().sub(0, uint64_t{m} * 4), im.pos.range().sub(0, uint64_t{m} * 4), m,
                                     p0, false, post_rows, last ? &sample : nullptr);
    if (!st.ok()) {
      (void)im.rec->submit_and_wait();  // drop what was recorded
      return st.context("prefill");
    }
    RDRR_ASSIGN_OR_RETURN(SubmitResult sub, im.rec->submit_and_wait());
    timings_.insert(timings_.end(), sub.timings.begin(), sub.timings.end());
    gpu_span_ms_ += sub.span_ms;
    last_counts_ = {sub.dispatches, sub.barriers};
    position_ += m;
    const bool want = logits == LogitsMode::kAll || (logits == LogitsMode::kLast && last);
    if (want) {
      const uint32_t r = logits == LogitsMode::kAll ? m : 1;
      const size_t old = out.logits.size();
      out.logits.resize(old + r * vocab);
      RDRR_RETURN_IF_ERROR(im.dev.download(im.rows(Buf::kLogits, 0, r),
                                           std::as_writable_bytes(std::span(out.logits).subspan(old))));
      out.logits_rows += r;
    }
  }
  im.slot = (im.slot + 1) % kTokenSlots;
  out.next_token = im.read_slot(im.slot);
  has_token_ = true;
  return out;
}

// Records decode step `position` (embedding the token in slot slot_in, sampling into slot_in + 1) into the
// free recorder and submits it without waiting; the recorder then holds it until wait().
Status Executor::Impl::submit_decode(const SampleOptions& sample, uint32_t position, uint32_t slot_in) {
  const BufferRange p = pos_table.range().sub(uint64_t{position} * pos_stride, 4);
  sample_out = token_slot(slot_in + 1);
  call_last_position = position;
  const Status st = record_pass(token_slot(slot_in), p, 1, position, true, 1, &sample);
  if (!st.ok()) {
    (void)rec->submit_and_wait();  // drop what was recorded
    return st;
  }
  RDRR_RETURN_IF_ERROR(rec->submit());
  flip();
  return Status::Ok();
}

// Waits for a step submitted ahead and forgets it (its KV entry is rewritten when that position runs again).
Status Executor::drop_ahead() {
  if (!ahead_) return Status::Ok();
  ahead_.reset();
  Result<SubmitResult> r = impl_->other()->wait();
  return r.ok() ? Status::Ok() : r.status().context("decode (step run ahead)");
}

Result<uint32_t> Executor::decode(const SampleOptions& sample) {
  Impl& im = *impl_;
  if (!has_token_) return error(StatusCode::kInvalidArgument, "decode: no sampled token yet (prefill first)");
  if (position_ + 1 > im.ctx) {
    return error(StatusCode::kInvalidArgument, "decode: position " + std::to_string(position_) +
                                                   " is past the context length " + std::to_string(im.ctx));
  }
  // Step position_ may already run (submitted by the previous call with the same sampling options).
  if (ahead_ && *ahead_ != sample) {
    RDRR_RETURN_IF_ERROR(drop_ahead());
  }
  if (!ahead_) {
    if (Status st = im.submit_decode(sample, position_, im.slot); !st.ok()) return st.context("decode");
  }
  Recorder* running = im.other();  // holds step position_
  // Step position_ + 1 runs ahead on the GPU's sampled token while the host waits for this one, so the device
  // never idles between steps; a caller that stops (or changes the options) drops it.
  ahead_.reset();
  if (position_ + 2 <= im.ctx) {
    if (Status st = im.submit_decode(sample, position_ + 1, im.slot + 1); !st.ok()) {
      (void)running->wait();
      return st.context("decode");
    }
    ahead_ = sample;
  }
  Result<SubmitResult> sub = running->wait();
  if (!sub.ok()) {
    (void)drop_ahead();
    return sub.status().context("decode");
  }
  timings_.insert(timings_.end(), sub->timings.begin(), sub->timings.end());
  gpu_span_ms_ += sub->span_ms;
  last_counts_ = {sub->dispatches, sub->barriers};
  ++position_;
  im.slot = (im.slot + 1) % kTokenSlots;
  return im.read_slot(im.slot);
}

Result<std::vector<uint32_t>> Executor::generate(std::span<const uint32_t> prompt, uint32_t n_new,
                                                 const SampleOptions& sample) {
  reset();
  RDRR_ASSIGN_OR_RETURN(PrefillResult first, prefill(prompt, LogitsMode::kNone, sample));
  std::vector<uint32_t> out;
  if (n_new == 0) return out;
  out.push_back(first.next_token);
  while (out.size() < n_new) {
    RDRR_ASSIGN_OR_RETURN(uint32_t t, decode(sample));
    out.push_back(t);
  }
  return out;
}

std::vector<OpTiming> Executor::op_timings() const {
  std::vector<OpTiming> out;
  for (const DispatchTiming& t : timings_) {
    auto it = std::find_if(out.begin(), out.end(), [&](const OpTiming& o) { return o.op == t.label; });
    if (it == out.end()) {
      out.push_back({t.label, t.gpu_ms, 1});
    } else {
      it->gpu_ms += t.gpu_ms;
      ++it->dispatches;
    }
  }
  return out;
}

}  // namespace rdrr::runtime
