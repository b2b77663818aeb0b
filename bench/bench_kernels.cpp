// Kernel throughput on the Vulkan device RDRR_DEVICE selects (default: first discrete GPU, else lavapipe).
//
// Prints one table (and, with --json PATH, the same rows as JSON):
//   - copy: a large device-to-device vkCmdCopyBuffer, bytes read + written per second: the device's
//     measured memory bandwidth that every other row is compared with (%copy);
//   - gemv: every dtype / layout at the decode shapes N x K (outputs x inputs); bytes = packed weight bytes
//     (x and y are negligible), GB/s = bytes / median time;
//   - moe: expert GEMVs of one decode token (gather: gate_up of the T selected experts; combine: down_proj and the
//     weighted sum; moe_route_glu: the router's top-k, the gate_up gather and the activation in one dispatch) over a
//     stacked weight of E experts, shape "E x N x K / T"; bytes = the T experts' rows; and the router's softmax +
//     top-k (moe_route, shape "E/T");
//   - attention: decode (one query) at several KV lengths, bytes = K + V cache bytes read; prefill (shape Pn: n
//     tokens from position 0, causal) with attention_prefill.comp and the tiled attention.comp.
// Times are GPU timestamps (runtime/recorder.h): each batch records R calls, each on its own copy of the
// weights (rotating through a pool larger than the L2 cache, so every call streams from device memory),
// all writing the same output, so consecutive calls are serialized by barriers like dependent decode ops;
// a call's time is the batch's GPU time / R and the row reports the median over --iters batches. batch_us is
// the same batch recorded without per-dispatch timestamps, timed by two GPU timestamps around the whole
// submission (no host latency): the cost of a call inside a recorded forward pass.
// Examples:
//   build/bench/bench_kernels                      # full table
//   build/bench/bench_kernels --filter Q4_K --json out.json
//   build/bench/bench_kernels --quick              # small shapes, small pool (lavapipe smoke run)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_cases.h"
#include "bench/bench_vk.h"
#include "kernels/registry.h"
#include "quant/f16.h"
#include "runtime/device.h"
#include "runtime/ops.h"
#include "runtime/ops_moe.h"
#include "runtime/recorder.h"

namespace rdrr::bench {
namespace {

using quant::DType;
using quant::Layout;
using runtime::Device;
using runtime::GemvArgs;
using runtime::GemmArgs;
using runtime::Recorder;

struct Options {
  std::string filter;
  std::string json_path;
  uint64_t pool_bytes = 512ull << 20;
  int iters = 15;
  bool quick = false;
  bool tune = false;
  bool stats = false;  // print the driver's compiler statistics (registers, ...) of every pipeline used
  std::vector<uint32_t> gemm_rows;  // --gemm-m: the GEMM rows (tokens) to run; empty = the default list
};

std::optional<Options> parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--filter" && has_value) {
      o.filter = argv[++i];
    } else if (a == "--json" && has_value) {
      o.json_path = argv[++i];
    } else if (a == "--pool-mib" && has_value) {
      o.pool_bytes = std::stoull(argv[++i]) << 20;
    } else if (a == "--iters" && has_value) {
      o.iters = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--tune") {
      o.tune = true;
    } else if (a == "--stats") {
      o.stats = true;
    } else if (a == "--gemm-m" && has_value) {
      const std::string list = argv[++i];
      for (size_t p = 0; p < list.size();) {
        const size_t q = std::min(list.find(',', p), list.size());
        o.gemm_rows.push_back(static_cast<uint32_t>(std::stoul(list.substr(p, q - p))));
        p = q + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: bench_kernels [--filter SUBSTR] [--json PATH] [--pool-mib N] [--iters N] [--quick] "
                   "[--tune] [--stats] [--gemm-m M1,M2,...]\n");
      return std::nullopt;
    }
  }
  if (o.quick) o.pool_bytes = std::min<uint64_t>(o.pool_bytes, 32ull << 20);
  return o;
}

// The rotation pool: random f16 values in (-1, 1) (valid scales for every block type, finite F16 / F32
// weights, random quant codes), never zeros.
Result<runtime::Buffer> make_pool(Device& dev, uint64_t bytes) {
  std::mt19937 rng(7);
  std::vector<uint16_t> unique(1u << 21);  // 4 MiB of distinct values, tiled over the pool
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (uint16_t& h : unique) h = quant::f32_to_f16(u(rng));
  std::vector<std::byte> host(bytes);
  const size_t chunk = unique.size() * 2;
  for (uint64_t off = 0; off < bytes; off += chunk) {
    std::memcpy(host.data() + off, unique.data(), std::min<uint64_t>(chunk, bytes - off));
  }
  RDRR_ASSIGN_OR_RETURN(runtime::Buffer b, dev.allocate(bytes, "bench pool"));
  RDRR_RETURN_IF_ERROR(dev.upload(b.range(), host));
  return b;
}

// Per-call time of `record_one(recorder, copy_index)` over rotating copies, median over `iters` batches (after
// two warm-up batches): GPU timestamps around every dispatch (rec), and the GPU span of a batch recorded
// without per-dispatch timestamps (plain, span_timestamps) / copies.
// `prepare(recorder)` records setup ahead of the calls (e.g. split-K scratch tickets).
template <typename RecordOne, typename Prepare>
Result<Timing> time_rotating(Recorder& rec, Recorder& plain, uint32_t copies, int iters, RecordOne record_one,
                             Prepare prepare) {
  std::vector<double> gpu_us;
  std::vector<double> batch_us;
  // The GPU's clocks drop while it idles (pipeline compiles, host work between rows) and rise only after some
  // busy time: short batches right after a pause read several times high. Untimed batches for kWarmMs first.
  constexpr auto kWarmMs = std::chrono::milliseconds(200);
  const auto warm_end = std::chrono::steady_clock::now() + kWarmMs;
  while (std::chrono::steady_clock::now() < warm_end) {
    RDRR_RETURN_IF_ERROR(prepare(plain));
    for (uint32_t c = 0; c < copies; ++c) RDRR_RETURN_IF_ERROR(record_one(plain, c));
    RDRR_RETURN_IF_ERROR(plain.submit_and_wait().status());
  }
  for (int it = -2; it < iters; ++it) {
    RDRR_RETURN_IF_ERROR(prepare(rec));
    for (uint32_t c = 0; c < copies; ++c) RDRR_RETURN_IF_ERROR(record_one(rec, c));
    RDRR_ASSIGN_OR_RETURN(runtime::SubmitResult res, rec.submit_and_wait());
    double ms = 0.0;
    for (const runtime::DispatchTiming& t : res.timings) ms += t.gpu_ms;
    RDRR_RETURN_IF_ERROR(prepare(plain));
    for (uint32_t c = 0; c < copies; ++c) RDRR_RETURN_IF_ERROR(record_one(plain, c));
    RDRR_ASSIGN_OR_RETURN(runtime::SubmitResult span, plain.submit_and_wait());
    if (it >= 0) {
      gpu_us.push_back(ms * 1e3 / copies);
      batch_us.push_back(span.span_ms * 1e3 / copies);
    }
  }
  std::sort(gpu_us.begin(), gpu_us.end());
  std::sort(batch_us.begin(), batch_us.end());
  return Timing{gpu_us[gpu_us.size() / 2], batch_us[batch_us.size() / 2]};
}
template <typename RecordOne>
Result<Timing> time_rotating(Recorder& rec, Recorder& plain, uint32_t copies, int iters, RecordOne record_one) {
  return time_rotating(rec, plain, copies, iters, record_one, [](Recorder&) { return Status::Ok(); });
}

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct Bench {
  Device& dev;
  Recorder& rec;    // GPU timestamps per dispatch
  Recorder& plain;  // no timestamps (host-timed batches)
  const Options& opt;
  const runtime::Buffer& pool;
  Table& table;

  uint32_t copies_for(uint64_t stride) const {
    return static_cast<uint32_t>(std::clamp<uint64_t>(pool.range().size / stride, 1, 256));
  }

  // A case streaming an N x K weight from the rotation pool: its row (bytes = the packed weight) and the pool
  // stride per copy; nothing when the filter skips it or the pool cannot hold one copy (a failed row).
  struct WeightRow {
    Row row;
    uint64_t w_bytes;
    uint64_t stride;
  };
  std::optional<WeightRow> weight_row(const char* op, DType dtype, Layout layout, const Shape& s, std::string variant) {
    Row row;
    row.op = op;
    row.dtype = quant::dtype_name(dtype);
    row.layout = quant::layout_name(layout);
    row.shape = std::to_string(s.n) + "x" + std::to_string(s.k);
    row.variant = std::move(variant);
    if (!table.selected(row, opt.filter)) return std::nullopt;
    const uint64_t w_bytes = runtime::packed_weight_bytes(dtype, layout, s.n, s.k);
    row.bytes = w_bytes;
    const uint64_t stride = round_up(w_bytes, 256);
    if (stride > pool.range().size) {
      table.fail(row, "weights larger than the pool (--pool-mib)");
      return std::nullopt;
    }
    return WeightRow{std::move(row), w_bytes, stride};
  }

  void gemv(const Shape& s, const GemvCase& c) {
    std::optional<WeightRow> wr = weight_row("gemv", c.dtype, c.layout, s, c.variant);
    if (!wr) return;
    Row& row = wr->row;
    const uint64_t w_bytes = wr->w_bytes;
    const uint64_t stride = wr->stride;
    Result<runtime::Buffer> xb = dev.allocate(uint64_t{s.k} * 4, "x");
    const uint32_t copies = copies_for(stride);
    const uint64_t y_stride = round_up(uint64_t{s.n} * 4, 256);
    Result<runtime::Buffer> yb = dev.allocate(y_stride * (c.independent ? copies : 1), "y");
    const uint64_t scratch_bytes = runtime::gemv_scratch_bytes(c.dtype, c.layout, s.n, s.k);
    const uint64_t scratch_stride = round_up(scratch_bytes, 256);
    Result<runtime::Buffer> sb =
        dev.allocate(std::max<uint64_t>(scratch_stride * (c.independent ? copies : 1), 4), "scratch");
    if (!xb.ok() || !yb.ok() || !sb.ok()) return table.fail(row, "allocation failed");
    const std::vector<float> x = random_floats(s.k);
    Status st = dev.upload(xb->range(), std::as_bytes(std::span(x)));
    if (!st.ok()) return table.fail(row, st.to_string());
    Result<Timing> us = time_rotating(rec, plain, copies, opt.iters, [&](Recorder& r, uint32_t i) {
      const uint32_t slot = c.independent ? i : 0;
      GemvArgs a;
      a.w = pool.range().sub(i * stride, w_bytes);
      a.dtype = c.dtype;
      a.layout = c.layout;
      a.n_rows = s.n;
      a.k = s.k;
      a.x = xb->range();
      a.y = yb->range().sub(slot * y_stride, uint64_t{s.n} * 4);
      a.tuning = c.tuning;
      if (scratch_bytes != 0) a.scratch = sb->range().sub(slot * scratch_stride, scratch_bytes);
      return runtime::record_gemv(r, a);
    }, [&](Recorder& r) {
      // Every scratch's tickets zeroed ahead of the calls: independent calls stay free of barriers.
      for (uint32_t i = 0; scratch_bytes != 0 && i < (c.independent ? copies : 1); ++i) {
        RDRR_RETURN_IF_ERROR(runtime::record_gemv_scratch_init(r, sb->range().sub(i * scratch_stride, scratch_bytes)));
      }
      return Status::Ok();
    });
    if (!us.ok()) return table.fail(row, us.status().to_string());
    row.copies = copies;
    table.add(row, *us);
  }

  // Prefill matmul: M tokens through an N x K weight (rotated through the pool like gemv), serialized calls.
  // row.bytes is the weight's size; TFLOP/s = 2 M N K / us.
  void gemm(const Shape& s, uint32_t m, const GemmCase& c) {
    if (c.coopmat && !dev.caps().coopmat_f16_16x16) return;
    const std::string variant = "M" + std::to_string(m) + (c.variant.empty() ? "" : " " + c.variant);
    const kernels::KernelInfo* base = kernels::find_kernel(kernels::Op::kGemm, c.dtype, c.layout);
    const std::string cm_kernel = base != nullptr ? std::string(base->name) + "_cm" : "";
    std::optional<WeightRow> wr = weight_row("gemm", c.dtype, c.layout, s, variant);
    if (!wr) return;
    Row& row = wr->row;
    const uint64_t w_bytes = wr->w_bytes;
    const uint64_t stride = wr->stride;
    Result<runtime::Buffer> xb = dev.allocate(uint64_t{m} * s.k * 4, "x");
    Result<runtime::Buffer> yb = dev.allocate(uint64_t{m} * s.n * 4, "y");
    if (!xb.ok() || !yb.ok()) return table.fail(row, "allocation failed");
    const std::vector<float> x = random_floats(uint64_t{m} * s.k);
    Status st = dev.upload(xb->range(), std::as_bytes(std::span(x)));
    if (!st.ok()) return table.fail(row, st.to_string());
    const uint32_t copies = std::min<uint32_t>(copies_for(stride), 32);
    Result<Timing> us = time_rotating(rec, plain, copies, opt.iters, [&](Recorder& r, uint32_t i) {
      GemmArgs a;
      a.w = pool.range().sub(i * stride, w_bytes);
      a.dtype = c.dtype;
      a.layout = c.layout;
      a.n_rows = s.n;
      a.k = s.k;
      a.m_rows = m;
      a.x = xb->range();
      a.y = yb->range();
      a.tuning = c.tuning;
      if (c.coopmat) a.kernel = cm_kernel;
      return runtime::record_gemm(r, a);
    });
    if (!us.ok()) return table.fail(row, us.status().to_string());
    row.copies = copies;
    table.add(row, *us);
  }

  // Prefill attention of n_q tokens from position 0 (causal), Llama-3-8B heads; prefill = AttentionTuning::prefill
  // (0: attention_prefill.comp, 1: the tiled attention.comp). bytes = the K + V cache bytes of the n_q positions.
  void attention_prefill(uint32_t n_q, uint32_t prefill) {
    constexpr uint32_t kHeads = 32, kKvHeads = 8, kHeadDim = 128;
    Row row;
    row.op = "attention";
    row.dtype = "F16";
    row.layout = "kv";
    row.shape = "P" + std::to_string(n_q);
    row.variant = prefill == 1 ? "h32/kv8/d128 tiled" : "h32/kv8/d128 prefill";
    if (!table.selected(row, opt.filter)) return;
    const uint64_t kv_bytes = runtime::kv_layer_bytes(DType::kF16, kKvHeads, kHeadDim, n_q);
    row.bytes = 2 * kv_bytes;
    const uint64_t qo_bytes = uint64_t{n_q} * kHeads * kHeadDim * 4;
    Result<runtime::Buffer> qb = dev.allocate(qo_bytes, "q");
    Result<runtime::Buffer> ob = dev.allocate(qo_bytes, "out");
    if (!qb.ok() || !ob.ok() || 2 * kv_bytes > pool.range().size) return table.fail(row, "allocation failed");
    const std::vector<float> q = random_floats(static_cast<uint32_t>(qo_bytes / 4));
    Status st = dev.upload(qb->range(), std::as_bytes(std::span(q)));
    if (!st.ok()) return table.fail(row, st.to_string());
    Result<Timing> us = time_rotating(rec, plain, 4, opt.iters, [&](Recorder& r, uint32_t) {
      runtime::AttentionArgs a;
      a.q = qb->range();
      a.kv = {pool.range().sub(0, kv_bytes), pool.range().sub(kv_bytes, kv_bytes), DType::kF16, kKvHeads, kHeadDim,
              n_q};
      a.out = ob->range();
      a.n_q = n_q;
      a.n_heads = kHeads;
      a.p0 = 0;
      a.scale = 1.0f / std::sqrt(float{kHeadDim});
      a.tuning.prefill = prefill;
      return runtime::record_attention(r, a);
    });
    if (!us.ok()) return table.fail(row, us.status().to_string());
    row.copies = 4;
    table.add(row, *us);
  }

  void attention(uint32_t len, uint32_t decode = 0, uint32_t splits = 0) {
    constexpr uint32_t kHeads = 32, kKvHeads = 8, kHeadDim = 128;  // Llama-3-8B-like decode
    Row row;
    row.op = "attention";
    row.dtype = "F16";
    row.layout = "kv";
    row.shape = std::to_string(len);
    row.shape.insert(0, 1, 'L');
    row.variant = decode == 1 ? "h32/kv8/d128 tiled" : "h32/kv8/d128";
    if (splits != 0) row.variant += " s" + std::to_string(splits);
    if (!table.selected(row, opt.filter)) return;
    const uint64_t kv_bytes = runtime::kv_layer_bytes(DType::kF16, kKvHeads, kHeadDim, len);
    const uint64_t stride = round_up(2 * kv_bytes, 256);
    row.bytes = 2 * kv_bytes;
    if (stride > pool.range().size) return table.fail(row, "KV cache larger than the pool (--pool-mib)");
    const uint64_t scratch_bytes = runtime::attention_scratch_bytes(1, kHeads, kHeadDim, 64);
    Result<runtime::Buffer> qb = dev.allocate(kHeads * kHeadDim * 4ull, "q");
    Result<runtime::Buffer> ob = dev.allocate(kHeads * kHeadDim * 4ull, "out");
    Result<runtime::Buffer> sb = dev.allocate(scratch_bytes, "scratch");
    if (!qb.ok() || !ob.ok() || !sb.ok()) return table.fail(row, "allocation failed");
    const std::vector<float> q = random_floats(kHeads * kHeadDim);
    Status st = dev.upload(qb->range(), std::as_bytes(std::span(q)));
    if (!st.ok()) return table.fail(row, st.to_string());
    const uint32_t copies = copies_for(stride);
    Result<Timing> us = time_rotating(rec, plain, copies, opt.iters, [&](Recorder& r, uint32_t i) {
      runtime::AttentionArgs a;
      a.q = qb->range();
      a.kv = {pool.range().sub(i * stride, kv_bytes), pool.range().sub(i * stride + kv_bytes, kv_bytes),
              DType::kF16, kKvHeads, kHeadDim, len};
      a.out = ob->range();
      a.scratch = sb->range();
      a.n_q = 1;
      a.n_heads = kHeads;
      a.p0 = len - 1;
      a.scale = 1.0f / std::sqrt(float{kHeadDim});
      a.tuning.decode = decode;
      a.tuning.n_splits = splits;
      return runtime::record_attention(r, a);
    });
    if (!us.ok()) return table.fail(row, us.status().to_string());
    row.copies = copies;
    table.add(row, *us);
  }

  // One decode token's expert GEMV (M = 1) over a stacked row_wise weight in the pool. Call i selects experts
  // ((i mod sets) * T + j) mod E, so consecutive calls read different experts (nothing cached from the last call
  // when the stack is larger than the L2 cache). bytes = the T selected experts' rows.
  void moe_gemv(const MoeShape& s, const MoeCase& c) {
    Row row;
    row.op = c.combine ? "moe_combine" : c.route_glu ? "moe_route_glu" : "moe_gather";
    row.dtype = quant::dtype_name(c.dtype);
    row.layout = "row_wise";
    row.shape = std::to_string(s.e) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + "/" + std::to_string(s.t);
    row.variant = c.variant;
    if (!table.selected(row, opt.filter)) return;
    const uint64_t w_bytes = runtime::packed_weight_bytes(c.dtype, Layout::kRowWise, uint64_t{s.e} * s.n, s.k);
    row.bytes = runtime::packed_weight_bytes(c.dtype, Layout::kRowWise, uint64_t{s.t} * s.n, s.k);
    if (w_bytes > pool.range().size) return table.fail(row, "weights larger than the pool (--pool-mib)");
    // `sets` disjoint expert selections, cycled over 64 calls per batch.
    const uint32_t sets = std::max<uint32_t>(1, std::min<uint32_t>(64, s.e / s.t));
    const uint32_t copies = 64;
    const uint64_t x_elems = uint64_t{c.combine ? s.t : 1u} * s.k;
    const uint64_t y_elems = uint64_t{c.combine ? 1u : s.t} * s.n;
    Result<runtime::Buffer> xb = dev.allocate(x_elems * 4, "x");
    Result<runtime::Buffer> yb = dev.allocate(y_elems * 4, "y");
    const uint64_t ids_stride = round_up(uint64_t{s.t} * 4, 256);  // binding offsets stay aligned
    Result<runtime::Buffer> ib = dev.allocate(sets * ids_stride, "ids");
    Result<runtime::Buffer> wb = dev.allocate(uint64_t{s.t} * 4, "router weights");
    if (!xb.ok() || !yb.ok() || !ib.ok() || !wb.ok()) return table.fail(row, "allocation failed");
    std::vector<uint32_t> ids(sets * ids_stride / 4);
    // route_glu: router logits [sets][E] ranking the same experts first (and the rest low).
    const uint64_t logits_stride = round_up(uint64_t{s.e} * 4, 256);
    std::vector<float> logits(sets * logits_stride / 4, -4.0f);
    for (uint32_t i = 0; i < sets; ++i) {
      for (uint32_t j = 0; j < s.t; ++j) {
        ids[i * ids_stride / 4 + j] = (i * s.t + j) % s.e;
        logits[i * logits_stride / 4 + (i * s.t + j) % s.e] = 4.0f - 0.25f * static_cast<float>(j);
      }
    }
    Result<runtime::Buffer> lb = dev.allocate(logits.size() * 4, "logits");
    if (!lb.ok()) return table.fail(row, "allocation failed");
    Status lst = dev.upload(lb->range(), std::as_bytes(std::span(logits)));
    if (!lst.ok()) return table.fail(row, lst.to_string());
    const std::vector<float> x = random_floats(static_cast<uint32_t>(x_elems));
    const std::vector<float> wts(s.t, 1.0f / static_cast<float>(s.t));
    for (const Status& st : {dev.upload(xb->range(), std::as_bytes(std::span(x))),
                             dev.upload(ib->range(), std::as_bytes(std::span(ids))),
                             dev.upload(wb->range(), std::as_bytes(std::span(wts)))}) {
      if (!st.ok()) return table.fail(row, st.to_string());
    }
    Result<Timing> us = time_rotating(rec, plain, copies, opt.iters, [&](Recorder& r, uint32_t i) {
      if (c.route_glu) {
        runtime::MoeRouteGluArgs a;
        a.w = pool.range().sub(0, w_bytes);
        a.dtype = c.dtype;
        a.n_experts = s.e;
        a.ff = s.n / 2;
        a.k = s.k;
        a.m_rows = 1;
        a.top_k = s.t;
        a.normalize = true;
        a.x = xb->range();
        a.logits = lb->range().sub((i % sets) * logits_stride, uint64_t{s.e} * 4);
        a.ids = ib->range().sub((i % sets) * ids_stride, uint64_t{s.t} * 4);
        a.weights = wb->range();
        a.act_out = yb->range().sub(0, uint64_t{s.t} * (s.n / 2) * 4);
        a.tuning = c.tuning;
        return runtime::record_moe_route_glu(r, a);
      }
      runtime::MoeGemvArgs a;
      a.w = pool.range().sub(0, w_bytes);
      a.dtype = c.dtype;
      a.layout = Layout::kRowWise;
      a.n_experts = s.e;
      a.n_rows = s.n;
      a.k = s.k;
      a.m_rows = 1;
      a.top_k = s.t;
      a.x = xb->range();
      a.ids = ib->range().sub((i % sets) * ids_stride, uint64_t{s.t} * 4);
      if (c.combine) a.weights = wb->range();
      a.y = yb->range();
      a.combine = c.combine;
      a.tuning = c.tuning;
      a.kernel = c.kernel;
      return runtime::record_moe_gemv(r, a);
    });
    if (!us.ok()) return table.fail(row, us.status().to_string());
    row.copies = copies;
    table.add(row, *us);
  }

  // The router's softmax + top-k of one decode token over E experts (moe_route), serialized like the GEMVs.
  void moe_route(uint32_t e, uint32_t t) {
    Row row;
    row.op = "moe_route";
    row.dtype = "F32";
    row.layout = "-";
    row.shape = std::to_string(e) + "/" + std::to_string(t);
    row.bytes = uint64_t{e} * 4;
    if (!table.selected(row, opt.filter)) return;
    Result<runtime::Buffer> lb = dev.allocate(uint64_t{e} * 4, "logits");
    Result<runtime::Buffer> ib = dev.allocate(uint64_t{t} * 4, "ids");
    Result<runtime::Buffer> wb = dev.allocate(uint64_t{t} * 4, "weights");
    if (!lb.ok() || !ib.ok() || !wb.ok()) return table.fail(row, "allocation failed");
    const std::vector<float> l = random_floats(e);
    Status st = dev.upload(lb->range(), std::as_bytes(std::span(l)));
    if (!st.ok()) return table.fail(row, st.to_string());
    Result<Timing> us = time_rotating(rec, plain, 64, opt.iters, [&](Recorder& r, uint32_t) {
      runtime::MoeRouteArgs a;
      a.logits = lb->range();
      a.ids = ib->range();
      a.weights = wb->range();
      a.m_rows = 1;
      a.n_experts = e;
      a.top_k = t;
      a.normalize = true;
      return runtime::record_moe_route(r, a);
    });
    if (!us.ok()) return table.fail(row, us.status().to_string());
    row.copies = 64;
    table.add(row, *us);
  }

  // Per-call floor: a tiny dispatch (add of 256 values) serialized like the GEMV rows.
  void floor() {
    Row row;
    row.op = "floor";
    row.dtype = "F32";
    row.layout = "-";
    row.shape = "add256";
    row.variant = "tiny dispatch";
    row.bytes = 256 * 12;
    if (!table.selected(row, opt.filter)) return;
    Result<runtime::Buffer> b = dev.allocate(256 * 4, "floor");
    if (!b.ok()) return table.fail(row, "allocation failed");
    Result<Timing> us = time_rotating(rec, plain, 64, opt.iters, [&](Recorder& r, uint32_t) {
      return runtime::record_add(r, pool.range().sub(0, 1024), pool.range().sub(1024, 1024), b->range(), 256);
    });
    if (!us.ok()) return table.fail(row, us.status().to_string());
    row.copies = 64;
    table.add(row, *us);
  }

  // Bandwidth probes: vkCmdCopyBuffer, a streaming kernel (add: 2 reads + 1 write), and a pure-read F32 GEMV
  // over a weight larger than any cache.
  // The GPU leaves its idle clocks only after some busy time: probe rounds are repeated for at least 2 s
  // before the reported one.
  std::vector<Probe> probes() {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(opt.quick ? 0 : 2)) (void)probe_round();
    return probe_round();
  }

  std::vector<Probe> probe_round() {
    std::vector<Probe> out;
    const uint64_t copy_bytes = opt.quick ? (16ull << 20) : (1ull << 30);
    Result<double> copy = measure_copy_gbps(dev, copy_bytes, opt.iters);
    if (copy.ok()) out.push_back({"vkCmdCopyBuffer (read + write)", 2 * copy_bytes, *copy});
    const uint64_t half = pool.range().size / 2 / 256 * 256;
    const auto n = static_cast<uint32_t>(std::min<uint64_t>(half / 4 / 2, uint64_t{1} << 28));  // f32 per input
    Result<runtime::Buffer> ob = dev.allocate(uint64_t{n} * 4, "probe out");
    if (ob.ok()) {
      Result<Timing> us = time_rotating(rec, plain, 1, opt.iters, [&](Recorder& r, uint32_t) {
        return runtime::record_add(r, pool.range().sub(0, uint64_t{n} * 4), pool.range().sub(half, uint64_t{n} * 4),
                                   ob->range(), n);
      });
      if (us.ok()) out.push_back({"add kernel (2 reads + 1 write)", 12ull * n, 12.0 * n / (us->gpu_us * 1e3)});
    }
    const uint32_t k = 4096;
    const auto rows = static_cast<uint32_t>(std::min<uint64_t>(pool.range().size / (uint64_t{k} * 4), 1u << 16));
    Result<runtime::Buffer> xb = dev.allocate(k * 4, "probe x");
    Result<runtime::Buffer> yb = dev.allocate(uint64_t{rows} * 4, "probe y");
    if (xb.ok() && yb.ok() && dev.fill(xb->range(), 0x3f800000u).ok()) {
      Result<Timing> us = time_rotating(rec, plain, 1, opt.iters, [&](Recorder& r, uint32_t) {
        GemvArgs a;
        a.w = pool.range().sub(0, uint64_t{rows} * k * 4);
        a.n_rows = rows;
        a.k = k;
        a.x = xb->range();
        a.y = yb->range();
        return runtime::record_gemv(r, a);
      });
      if (us.ok()) out.push_back({"F32 gemv " + std::to_string(rows) + "x4096 (read)", uint64_t{rows} * k * 4,
                                  static_cast<double>(uint64_t{rows} * k * 4) / (us->gpu_us * 1e3)});
    }
    return out;
  }

  static std::vector<float> random_floats(uint32_t n) {
    std::mt19937 rng(n);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  }
};

int run(const Options& opt) {
  runtime::DeviceOptions dopt = runtime::device_options_from_env();
  dopt.capture_pipeline_statistics = opt.stats;
  Result<std::unique_ptr<Device>> dev = Device::create(dopt);
  if (!dev.ok()) {
    std::fprintf(stderr, "no Vulkan device: %s\n", dev.status().to_string().c_str());
    return 1;
  }
  std::fprintf(stderr, "%s\n", runtime::describe_caps((*dev)->caps()).c_str());
  runtime::RecorderOptions timed;
  timed.timestamps = true;
  Result<std::unique_ptr<Recorder>> rec = Recorder::create(**dev, timed);
  runtime::RecorderOptions span;
  span.span_timestamps = true;
  Result<std::unique_ptr<Recorder>> plain = Recorder::create(**dev, span);
  Result<runtime::Buffer> pool = make_pool(**dev, opt.pool_bytes);
  if (!rec.ok() || !plain.ok() || !pool.ok()) {
    const Status s = !rec.ok() ? rec.status() : !plain.ok() ? plain.status() : pool.status();
    std::fprintf(stderr, "setup failed: %s\n", s.to_string().c_str());
    return 1;
  }
  Table table((*dev)->caps().desc.name);
  Bench b{**dev, **rec, **plain, opt, *pool, table};
  table.set_probes(b.probes());
  b.floor();
  const std::vector<Shape> shapes =
      opt.quick ? std::vector<Shape>{{512, 512}, {256, 1024}}
                : std::vector<Shape>{{2048, 2048},  {2048, 8192}, {8192, 2048}, {4096, 14336},
                                     {14336, 4096}, {4096, 4096}, {28672, 4096}, {512, 2048},
                                     {4096, 2048},  {2048, 4096}, {1024, 4096}, {6144, 4096},
                                     {128, 2048},   {8, 4096}};  // MoE routers (F32 in GGUFs)
  for (const GemvCase& c : gemv_cases(opt.tune)) {
    for (const Shape& s : shapes) b.gemv(s, c);
  }
  // Qwen3-30B-A3B (128 experts, 8 per token, hidden 2048, expert FFN 768) and Mixtral-8x7B (8 / 2, 4096, 14336):
  // gate_up gathers (N = 2 x FFN) and down combines.
  const std::vector<std::pair<MoeShape, bool>> moe_shapes =
      opt.quick ? std::vector<std::pair<MoeShape, bool>>{{{8, 64, 256, 2}, false}, {{8, 256, 64, 2}, true}}
                : std::vector<std::pair<MoeShape, bool>>{{{128, 1536, 2048, 8}, false}, {{128, 2048, 768, 8}, true},
                                                         {{8, 28672, 4096, 2}, false}, {{8, 4096, 14336, 2}, true}};
  for (const MoeCase& c : moe_cases(opt.tune)) {
    for (const auto& [s, combine] : moe_shapes) {
      if (combine == c.combine) b.moe_gemv(s, c);
    }
  }
  for (const auto& [e, t] : opt.quick ? std::vector<std::pair<uint32_t, uint32_t>>{{8, 2}}
                                      : std::vector<std::pair<uint32_t, uint32_t>>{{8, 2}, {64, 8}, {128, 8}}) {
    b.moe_route(e, t);
  }
  const std::vector<Shape> gemm_shapes =
      opt.quick ? std::vector<Shape>{{256, 512}} : std::vector<Shape>{{4096, 4096}, {14336, 4096}, {4096, 14336}};
  for (const GemmCase& c : gemm_cases(opt.tune)) {
    for (const Shape& s : gemm_shapes) {
      const std::vector<uint32_t> rows = !opt.gemm_rows.empty() ? opt.gemm_rows
                                         : opt.quick              ? std::vector<uint32_t>{1, 16}
                                                                  : std::vector<uint32_t>{1, 16, 32, 64, 128, 256, 512};
      for (uint32_t m : rows) b.gemm(s, m, c);
    }
  }
  const std::vector<uint32_t> lens =
      opt.quick ? std::vector<uint32_t>{256, 1024} : std::vector<uint32_t>{512, 2048, 8192, 32768};
  for (uint32_t len : lens) b.attention(len);
  for (uint32_t n_q : opt.quick ? std::vector<uint32_t>{64} : std::vector<uint32_t>{512, 2048}) {
    b.attention_prefill(n_q, 0);
    b.attention_prefill(n_q, 1);
  }
  if (opt.tune) {
    for (uint32_t len : lens) b.attention(len, 1);  // the tiled (prefill) kernel on one query
    for (uint32_t splits : {8u, 16u, 64u}) {
      for (uint32_t len : lens) b.attention(len, 0, splits);
    }
  }
  table.print();
  if (opt.stats) {
    for (const auto& [key, p] : (*dev)->pipelines().list()) {
      Result<std::string> st = runtime::pipeline_statistics(**dev, *p);
      std::printf("stats %s: %s\n", key.c_str(), st.ok() ? st->c_str() : st.status().to_string().c_str());
    }
  }
  if (!opt.json_path.empty()) {
    const Status s = table.write_json(opt.json_path);
    if (!s.ok()) std::fprintf(stderr, "%s\n", s.to_string().c_str());
  }
  return table.failures() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace rdrr::bench

int main(int argc, char** argv) {
  const std::optional<rdrr::bench::Options> o = rdrr::bench::parse_args(argc, argv);
  if (!o) return 2;
  return rdrr::bench::run(*o);
}
