#include "convert/pipeline.h"

#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>

#include "quant/f16.h"
#include "rdrr/sha256.h"
#include "quant/layout.h"

namespace rdrr::convert {
namespace {

using Clock = std::chrono::steady_clock;
using quant::DType;
using quant::Layout;

// Grows (never shrinks) a buffer and returns a span of exactly n elements.
template <typename T>
std::span<T> sized(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return std::span<T>(v.data(), n);
}

// Large uninitialised byte buffers (column_wise tensors), kept for reuse so their pages stay mapped.
class BigBufferPool {
 public:
  static constexpr size_t kMaxKeptBytes = 128u << 20;
  struct Buffer {
    std::unique_ptr<uint8_t[]> data;
    size_t capacity = 0;
  };
  Buffer take(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->capacity >= n && (best == free_.end() || it->capacity < best->capacity)) best = it;
    }
    if (best != free_.end()) {
      Buffer b = std::move(*best);
      free_.erase(best);
      return b;
    }
    if (free_.size() >= 2) free_.erase(free_.begin());  // keep memory bounded: drop a too-small spare
    return Buffer{std::unique_ptr<uint8_t[]>(new uint8_t[n]), n};
  }
  void give(Buffer b) {
    if (b.capacity > kMaxKeptBytes) return;  // an embedding-sized buffer is freed, not kept for the layers
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(b));
    if (free_.size() > 2) {
      std::sort(free_.begin(), free_.end(), [](const Buffer& x, const Buffer& y) { return x.capacity > y.capacity; });
      free_.resize(2);
    }
  }

 private:
  std::mutex mu_;
  std::vector<Buffer> free_;
};

struct Token {
  size_t seq = 0;
  size_t job = 0;
  int64_t r0 = 0;
  int64_t r1 = 0;
  bool first = false;
  bool last = false;
  std::vector<float> f32, dec, scratch;
  std::vector<uint8_t> out, gather;
  std::vector<uint16_t> half;
  std::span<const uint8_t> bytes;  // what the writer appends for this chunk
  TensorStats stats;
  Status status;
  std::shared_ptr<const quant::GptqFactor> gptq;  // the job's calibration factor (null: plain rounding)
};

// Squared error and squared source values over the finite source values.
void accumulate_error(std::span<const float> src, std::span<const float> dec, TensorStats& s) {
  double err = 0;
  double ref = 0;
  uint64_t n = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    const double x = src[i];
    if (!std::isfinite(src[i])) continue;
    const double d = x - static_cast<double>(dec[i]);
    err += d * d;
    ref += x * x;
    ++n;
  }
  s.sq_err += err;
  s.sq_ref += ref;
  s.sampled_values += n;
}

// Index of the first NaN/Inf, or -1. Integer test on the exponent bits (vectorises).
int64_t first_nonfinite(std::span<const float> x) {
  constexpr size_t kBlock = 4096;
  for (size_t b = 0; b < x.size(); b += kBlock) {
    const size_t e = std::min(x.size(), b + kBlock);
    uint32_t bad = 0;
    for (size_t i = b; i < e; ++i) bad |= static_cast<uint32_t>((std::bit_cast<uint32_t>(x[i]) & 0x7f800000u) == 0x7f800000u);
    if (bad == 0) continue;
    for (size_t i = b; i < e; ++i) {
      if (!std::isfinite(x[i])) return static_cast<int64_t>(i);
    }
  }
  return -1;
}

class Pipeline {
 public:
  Pipeline(const std::vector<TensorJob>& jobs, ShardWriter& writer, const PipelineOptions& options)
      : jobs_(jobs), writer_(writer), options_(options), stats_(jobs.size()), col_(jobs.size()) {
    for (const TensorJob& j : jobs_) bytes_in_total_ += j.source->stored_bytes();
  }

  Result<std::vector<TensorStats>> run();

 private:
  Token* next_chunk(tbb::flow_control& fc);
  Status transform(Token& t);
  Status transform_plain(Token& t, const TensorJob& job, bool sample);
  Status transform_rows(Token& t, const TensorJob& job, bool sample);
  Status transform_column(Token& t, const TensorJob& job, bool sample);
  Status check_values(Token& t, const TensorJob& job, int64_t row0, std::span<float> x, bool zero_out);
  Status encode(Token& t, const TensorJob& job, int64_t row0, std::span<float> x, const quant::QuantizeRowsParams& q);
  Status write(Token& t);
  void recycle(Token* t);

  const std::vector<TensorJob>& jobs_;
  ShardWriter& writer_;
  const PipelineOptions& options_;
  std::vector<TensorStats> stats_;
  std::vector<BigBufferPool::Buffer> col_;  // per column_wise job in flight
  BigBufferPool pool_;

  std::mutex free_mu_;
  std::vector<std::unique_ptr<Token>> tokens_;
  std::vector<Token*> free_;

  // Input cursor (stage 1 only).
  size_t next_job_ = 0;
  int64_t next_row_ = 0;
  size_t next_seq_ = 0;
  std::shared_ptr<const quant::GptqFactor> gptq_;  // of the job being cut
  std::atomic<bool> stop_{false};

  // Writer state (stage 3 only).
  Status failed_;
  std::optional<Sha256> tensor_hash_;  // of the tensor being written (manifest tensors.<name>.hash)
  ConvertProgress progress_;
  uint64_t bytes_in_total_ = 0;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_report_{};
};

Token* Pipeline::next_chunk(tbb::flow_control& fc) {
  while (next_job_ < jobs_.size() && jobs_[next_job_].source->rows() == 0) ++next_job_;
  if (stop_.load() || next_job_ >= jobs_.size()) {
    fc.stop();
    return nullptr;
  }
  Token* t = nullptr;
  {
    std::lock_guard<std::mutex> lock(free_mu_);
    if (free_.empty()) {  // never expected (one Token per pipeline token), but stay safe
      tokens_.push_back(std::make_unique<Token>());
      free_.push_back(tokens_.back().get());
    }
    t = free_.back();
    free_.pop_back();
  }
  const TensorJob& job = jobs_[next_job_];
  const int64_t rows = job.source->rows();
  t->seq = next_seq_++;
  t->job = next_job_;
  t->r0 = next_row_;
  t->r1 = std::min(rows, next_row_ + kChunkRows);
  t->first = t->r0 == 0;
  t->last = t->r1 == rows;
  t->stats = TensorStats{};
  t->status = Status::Ok();
  t->bytes = {};
  if (t->first) {
    gptq_ = nullptr;
    if (options_.gptq_factor) {
      Result<std::shared_ptr<const quant::GptqFactor>> f = options_.gptq_factor(next_job_);
      if (f.ok()) {
        gptq_ = std::move(*f);
      } else {
        t->status = f.status();
        stop_.store(true);
      }
    }
  }
  t->gptq = gptq_;
  if (t->first && job.plan.layout == Layout::kColumnWise) col_[next_job_] = pool_.take(job.plan.size_bytes);
  next_row_ = t->r1;
  if (t->last) {
    ++next_job_;
    next_row_ = 0;
  }
  return t;
}

Status Pipeline::check_values(Token& t, const TensorJob& job, int64_t row0, std::span<float> x, bool zero_out) {
  int64_t i = first_nonfinite(x);
  if (i < 0) return Status::Ok();
  const int64_t k = job.source->cols();
  if (!options_.allow_nonfinite) {
    const int64_t row = row0 + i / k;
    std::string input;
    for (const SourcePart& p : job.source->parts) {
      if (row >= p.row_begin && row < p.row_begin + p.stored.rows && p.stored.name != job.plan.name) {
        input = " (input tensor " + p.stored.name + ")";
      }
    }
    return error(StatusCode::kNonFinite, "tensor " + job.plan.name + input + ": value [" + std::to_string(row) + ", " +
                                             std::to_string(i % k) + "] is " + (std::isnan(x[i]) ? "NaN" : "infinite") +
                                             " (use --allow-nonfinite to convert anyway)");
  }
  for (; i < static_cast<int64_t>(x.size()); ++i) {
    if (std::isfinite(x[i])) continue;
    ++t.stats.nonfinite_values;
    if (zero_out) x[i] = 0.0f;
  }
  return Status::Ok();
}

// The block encoders check every value for NaN/Inf themselves (so without --allow-nonfinite no separate pass
// is needed); on such an error the rows are scanned again for the message naming tensor, input and index.
Status Pipeline::encode(Token& t, const TensorJob& job, int64_t row0, std::span<float> x,
                        const quant::QuantizeRowsParams& q) {
  Status s = Status::Ok();
  if (t.gptq && q.dtype == DType::kQ4_K) {
    s = quant::quantize_rows_gptq({q.layout, q.n_rows, q.k_cols, q.row_begin, q.rows, t.gptq.get(), q.dst});
  } else {
    s = quant::quantize_rows(q);
  }
  if (s.ok()) return s;
  if (s.code() == StatusCode::kNonFinite) RDRR_RETURN_IF_ERROR(check_values(t, job, row0, x, false));
  return s.context("tensor " + job.plan.name);
}

Status Pipeline::transform_plain(Token& t, const TensorJob& job, bool sample) {
  const auto n = static_cast<size_t>((t.r1 - t.r0) * job.source->cols());
  const std::span<float> x = sized(t.f32, n);
  RDRR_RETURN_IF_ERROR(read_rows(*job.source, t.r0, t.r1, x, t.scratch));
  RDRR_RETURN_IF_ERROR(check_values(t, job, t.r0, x, false));
  if (job.plan.dtype == DType::kF32) {
    t.bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(x.data()), n * sizeof(float));
    if (sample) accumulate_error(x, x, t.stats);
    return Status::Ok();
  }
  const std::span<uint16_t> h = sized(t.half, n);
  const bool bf16 = job.plan.dtype == DType::kBF16;
  if (bf16) {
    quant::f32_to_bf16(x, h);
  } else {
    quant::f32_to_f16(x, h);
  }
  t.bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(h.data()), n * sizeof(uint16_t));
  if (sample) {
    const std::span<float> d = sized(t.dec, n);
    if (bf16) {
      quant::bf16_to_f32(h, d);
    } else {
      quant::f16_to_f32(h, d);
    }
    accumulate_error(x, d, t.stats);
  }
  return Status::Ok();
}

// row_wise / flat: the chunk is encoded as a matrix of its own (identical blocks for these layouts).
// Parts that allow it are copied from the input's blocks instead (row_wise only).
Status Pipeline::transform_rows(Token& t, const TensorJob& job, bool sample) {
  const SourceTensor& src = *job.source;
  const DType dtype = job.plan.dtype;
  const Layout layout = *job.plan.layout;
  const int64_t k = src.cols();
  const int64_t n = t.r1 - t.r0;
  const std::span<uint8_t> out = sized(t.out, quant::quantized_size_bytes(dtype, layout, n, k));
  const std::span<float> x = sized(t.f32, static_cast<size_t>(n * k));
  const auto row_bytes = static_cast<size_t>(quant::quantized_size_bytes(dtype, Layout::kRowWise, 1, k));
  // Segments: one per part when any part is copied raw, else the whole chunk.
  const bool any_raw = std::find(job.raw_parts.begin(), job.raw_parts.end(), true) != job.raw_parts.end();
  for (size_t pi = 0; pi < (any_raw ? src.parts.size() : 1); ++pi) {
    int64_t a = t.r0;
    int64_t b = t.r1;
    if (any_raw) {
      const SourcePart& p = src.parts[pi];
      a = std::max(a, p.row_begin);
      b = std::min(b, p.row_begin + p.stored.rows);
      if (a >= b) continue;
    }
    const std::span<float> xs = x.subspan(static_cast<size_t>((a - t.r0) * k), static_cast<size_t>((b - a) * k));
    const bool raw = any_raw && job.raw_parts[pi];
    if (any_raw) {
      RDRR_RETURN_IF_ERROR(read_part_rows(src.parts[pi], a - src.parts[pi].row_begin, b - src.parts[pi].row_begin, xs,
                                          t.scratch));
    } else {
      RDRR_RETURN_IF_ERROR(read_rows(src, a, b, xs, t.scratch));
    }
    if (raw || options_.allow_nonfinite) RDRR_RETURN_IF_ERROR(check_values(t, job, a, xs, !raw));
    std::span<uint8_t> seg = out;
    if (any_raw) seg = out.subspan(static_cast<size_t>(a - t.r0) * row_bytes, static_cast<size_t>(b - a) * row_bytes);
    if (raw) {
      RDRR_RETURN_IF_ERROR(copy_raw_rows(src.parts[pi], a - src.parts[pi].row_begin, b - src.parts[pi].row_begin,
                                         std::as_writable_bytes(seg)));
      if (sample) accumulate_error(xs, xs, t.stats);
      continue;
    }
    quant::QuantizeRowsParams q;
    q.dtype = dtype;
    q.layout = layout;
    q.n_rows = b - a;
    q.k_cols = k;
    q.row_begin = 0;
    q.rows = xs;
    q.dst = seg;
    RDRR_RETURN_IF_ERROR(encode(t, job, a, xs, q));
    if (sample) {
      const std::span<float> d = sized(t.dec, xs.size());
      RDRR_RETURN_IF_ERROR(quant::dequantize_matrix({dtype, layout, seg, b - a, k, d}));
      accumulate_error(xs, d, t.stats);
    }
  }
  t.bytes = out;
  return Status::Ok();
}

Status Pipeline::transform_column(Token& t, const TensorJob& job, bool sample) {
  const SourceTensor& src = *job.source;
  const DType dtype = job.plan.dtype;
  const int64_t k = src.cols();
  const int64_t n = t.r1 - t.r0;
  const std::span<float> x = sized(t.f32, static_cast<size_t>(n * k));
  RDRR_RETURN_IF_ERROR(read_rows(src, t.r0, t.r1, x, t.scratch));
  if (options_.allow_nonfinite) RDRR_RETURN_IF_ERROR(check_values(t, job, t.r0, x, true));
  const std::span<uint8_t> whole(col_[t.job].data.get(), job.plan.size_bytes);
  quant::QuantizeRowsParams q;
  q.dtype = dtype;
  q.layout = Layout::kColumnWise;
  q.n_rows = src.rows();
  q.k_cols = k;
  q.row_begin = t.r0;
  q.rows = x;
  q.dst = whole;
  RDRR_RETURN_IF_ERROR(encode(t, job, t.r0, x, q));
  if (sample) {  // gather this chunk's block column(s) of every input into a standalone column_wise matrix
    const int64_t be = quant::block_elems(dtype);
    const auto bb = static_cast<size_t>(quant::block_bytes(dtype));
    const int64_t bpr = (src.rows() + be - 1) / be;
    const int64_t b0 = t.r0 / be;
    const auto nb = static_cast<size_t>((t.r1 + be - 1) / be - b0);
    const std::span<uint8_t> g = sized(t.gather, static_cast<size_t>(k) * nb * bb);
    for (int64_t c = 0; c < k; ++c) {
      std::memcpy(g.data() + static_cast<size_t>(c) * nb * bb, whole.data() + static_cast<size_t>(c * bpr + b0) * bb,
                  nb * bb);
    }
    const std::span<float> d = sized(t.dec, x.size());
    RDRR_RETURN_IF_ERROR(quant::dequantize_matrix({dtype, Layout::kColumnWise, g, n, k, d}));
    accumulate_error(x, d, t.stats);
  }
  return Status::Ok();
}

Status Pipeline::transform(Token& t) {
  const TensorJob& job = jobs_[t.job];
  const auto start = Clock::now();
  const int every = std::max(1, options_.rmse_every_chunks);
  const bool sample = (t.r0 / kChunkRows) % every == 0;
  Status s;
  if (!quant::is_block_quantized(job.plan.dtype)) {
    s = transform_plain(t, job, sample);
  } else if (job.plan.layout == Layout::kColumnWise) {
    s = transform_column(t, job, sample);
  } else {
    s = transform_rows(t, job, sample);
  }
  release_rows(*job.source, t.r0, t.r1, t.last);
  t.stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return s;
}

Status Pipeline::write(Token& t) {
  const TensorJob& job = jobs_[t.job];
  if (t.first) {
    RDRR_RETURN_IF_ERROR(writer_.begin_tensor(job.plan.size_bytes));
    tensor_hash_.emplace();
  }
  if (job.plan.layout != Layout::kColumnWise) {
    RDRR_RETURN_IF_ERROR(writer_.append(std::as_bytes(t.bytes)));
    tensor_hash_->update(std::as_bytes(t.bytes));
  }
  TensorStats& s = stats_[t.job];
  s.sq_err += t.stats.sq_err;
  s.sq_ref += t.stats.sq_ref;
  s.sampled_values += t.stats.sampled_values;
  s.nonfinite_values += t.stats.nonfinite_values;
  s.seconds += t.stats.seconds;
  const int64_t rows = job.source->rows();
  progress_.bytes_in_done +=
      job.source->stored_bytes() * static_cast<uint64_t>(t.r1 - t.r0) / static_cast<uint64_t>(rows);
  if (t.last) {
    if (job.plan.layout == Layout::kColumnWise) {
      const auto whole = std::as_bytes(std::span<const uint8_t>(col_[t.job].data.get(), job.plan.size_bytes));
      RDRR_RETURN_IF_ERROR(writer_.append(whole));
      tensor_hash_->update(whole);
      pool_.give(std::move(col_[t.job]));
    }
    RDRR_ASSIGN_OR_RETURN(TensorPlacement placed, writer_.end_tensor());
    if (placed != job.placement) {
      return error(StatusCode::kInternal, "tensor " + job.plan.name + ": written placement differs from the plan");
    }
    s.sha256_hex = tensor_hash_->finish_hex();
    tensor_hash_.reset();
    s.passthrough = std::all_of(job.raw_parts.begin(), job.raw_parts.end(), [](bool b) { return b; });
    ++progress_.tensors_done;
  }
  progress_.bytes_out_done = writer_.bytes_written();
  const auto now = Clock::now();
  if (options_.on_progress && (now - last_report_ > std::chrono::milliseconds(100) || progress_.tensors_done == jobs_.size())) {
    last_report_ = now;
    progress_.elapsed_seconds = std::chrono::duration<double>(now - start_).count();
    options_.on_progress(progress_);
  }
  return Status::Ok();
}

void Pipeline::recycle(Token* t) {
  t->gptq = nullptr;
  std::lock_guard<std::mutex> lock(free_mu_);
  free_.push_back(t);
}

Result<std::vector<TensorStats>> Pipeline::run() {
  const int max_tokens = std::max(1, options_.max_tokens);
  for (int i = 0; i < max_tokens; ++i) {
    tokens_.push_back(std::make_unique<Token>());
    free_.push_back(tokens_.back().get());
  }
  progress_.tensors_total = jobs_.size();
  progress_.bytes_in_total = bytes_in_total_;
  try {
    tbb::parallel_pipeline(
        static_cast<size_t>(max_tokens),
        tbb::make_filter<void, Token*>(tbb::filter_mode::serial_in_order,
                                       [&](tbb::flow_control& fc) { return next_chunk(fc); }) &
            tbb::make_filter<Token*, Token*>(tbb::filter_mode::parallel,
                                             [&](Token* t) {
                                               if (t->status.ok()) t->status = transform(*t);
                                               if (!t->status.ok()) stop_.store(true);
                                               return t;
                                             }) &
            tbb::make_filter<Token*, void>(tbb::filter_mode::serial_in_order, [&](Token* t) {
              if (failed_.ok()) {
                failed_ = t->status.ok() ? write(*t) : t->status;
                if (!failed_.ok()) stop_.store(true);
              }
              recycle(t);
            }));
  } catch (const std::bad_alloc&) {
    return error(StatusCode::kInternal, "out of memory while converting");
  } catch (const std::exception& e) {
    return error(StatusCode::kInternal, std::string("conversion pipeline: ") + e.what());
  }
  if (!failed_.ok()) return failed_;
  return std::move(stats_);
}

}  // namespace

std::vector<bool> raw_parts_for(const SourceTensor& t, const PlanEntry& plan) {
  std::vector<bool> raw;
  for (const SourcePart& p : t.parts) raw.push_back(raw_copy_possible(p.stored, plan.dtype, plan.layout));
  return raw;
}

Result<std::vector<TensorStats>> run_pipeline(const std::vector<TensorJob>& jobs, ShardWriter& writer,
                                              const PipelineOptions& options) {
  Pipeline p(jobs, writer, options);
  return p.run();
}

}  // namespace rdrr::convert
