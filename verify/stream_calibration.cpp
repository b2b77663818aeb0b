// make_calibrator (verify/calibration.h): calibration on the streaming engine, one layer per request.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <array>
#include <utility>

#include "quant/blas.h"
#include "quant/uninitialized.h"
#include "verify/calibration.h"
#include "verify/stream_reference.h"

namespace rdrr::verify {
namespace {

constexpr size_t kGramTile = 256;  // H tiles (rows and columns), one sgemm each

// Lower triangle of h += x^T x (k x k float; h empty: h = x^T x, the upper triangle left unset), x [rows, k]
// (double, rounded to float): one sgemm over all rows per tile of a fixed grid, so the sums do not depend on
// the thread count.
void accumulate_gram(quant::UninitVector<float>& h, const Matrix& x, quant::UninitVector<float>& xf) {
  const size_t k = x.cols, rows = x.rows;
  const float beta = h.empty() ? 0.0f : 1.0f;
  if (h.empty()) h.resize(k * k);
  xf.resize(x.data.size());
  tbb::parallel_for(tbb::blocked_range<size_t>(0, xf.size(), size_t{1} << 16), [&](const tbb::blocked_range<size_t>& r) {
    for (size_t i = r.begin(); i < r.end(); ++i) xf[i] = static_cast<float>(x.data[i]);
  });
  const size_t tiles = (k + kGramTile - 1) / kGramTile;
  tbb::parallel_for(size_t{0}, tiles * (tiles + 1) / 2, [&](size_t p) {
    size_t ti = 0;
    while ((ti + 1) * (ti + 2) / 2 <= p) ++ti;
    const size_t tj = p - ti * (ti + 1) / 2;
    const size_t i0 = ti * kGramTile, j0 = tj * kGramTile;
    const size_t ib = std::min(kGramTile, k - i0), jb = std::min(kGramTile, k - j0);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(ib), static_cast<int>(jb),
                static_cast<int>(rows), 1.0f, xf.data() + i0, static_cast<int>(k), xf.data() + j0, static_cast<int>(k),
                beta, h.data() + i0 * k + j0, static_cast<int>(k));
  });
}

class StreamingCalibration final : public convert::LayerCalibration {
 public:
  StreamingCalibration(StreamingReference engine, StreamingReference::LayerPass pass, uint64_t tokens)
      : engine_(std::move(engine)), pass_(std::move(pass)), tokens_(tokens) {}

  Result<Hessians> layer_hessians(uint32_t layer, std::array<bool, 4> wanted) override {
    Hessians h;
    std::array<size_t, 4> cols{};
    if (layer < pass_.next_layer()) {
      return error(StatusCode::kInvalidArgument, "calibration: layer " + std::to_string(layer) +
                                                     " asked for after layer " + std::to_string(pass_.next_layer()));
    }
    while (pass_.next_layer() < layer) RDRR_RETURN_IF_ERROR(pass_.run_layer({}));
    RDRR_RETURN_IF_ERROR(pass_.run_layer([&](LinearInput which, const Matrix& x) {
      const auto i = static_cast<size_t>(which);
      if (!wanted[i]) return;
      accumulate_gram(h[i], x, xf_);
      cols[i] = x.cols;
    }));
    const float inv = 1.0f / static_cast<float>(tokens_);
    for (size_t input = 0; input < h.size(); ++input) {
      quant::UninitVector<float>& m = h[input];
      const size_t k = cols[input];
      tbb::parallel_for(tbb::blocked_range<size_t>(0, k, 64), [&](const tbb::blocked_range<size_t>& r) {
        for (size_t i = r.begin(); i < r.end(); ++i) {
          for (size_t j = 0; j <= i; ++j) m[i * k + j] *= inv;
        }
      });
    }
    return h;
  }

 private:
  StreamingReference engine_;  // the pass reads its state
  StreamingReference::LayerPass pass_;
  uint64_t tokens_ = 0;
  quant::UninitVector<float> xf_;  // accumulate_gram's f32 copy of the activations, reused
};

}  // namespace

Result<convert::CalibrationOutput> calibrate(const convert::CalibrationContext& ctx, const CalibrationOptions& options) {
  quant::use_single_threaded_blas();
  convert::CalibrationOutput out;
  // Each layer's weights are read once per group of a layer pass: no point keeping them mapped in the RSS.
  StreamOptions so;
  so.resident_bytes = 256ull << 20;
  RDRR_ASSIGN_OR_RETURN(StreamingReference engine, StreamingReference::open_source(ctx.src, so));
  RDRR_ASSIGN_OR_RETURN(std::optional<CalibrationSet> set,
                        calibration_set(ctx, engine.config(), engine.vocab_size(), options, out));
  if (!set) return out;
  std::vector<std::vector<int32_t>>& seqs = set->sequences;
  const std::vector<int32_t> starts(options.samples, set->start);
  RDRR_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> samples,
                        engine.sample(starts, options.sample_tokens, options.seed));
  uint64_t total = set->text_tokens;
  for (std::vector<int32_t>& s : samples) {
    total += s.size();
    seqs.push_back(std::move(s));
  }
  if (total == 0) {
    out.warnings.push_back("calibration skipped: no calibration tokens (Q4_K rounded without calibration)");
    return out;
  }
  RDRR_ASSIGN_OR_RETURN(StreamingReference::LayerPass pass, engine.start_layer_pass(seqs, options.max_group_rows));
  out.session = std::make_unique<StreamingCalibration>(std::move(engine), std::move(pass), total);
  out.tokens = total;
  out.description = calibration_description(set->text_tokens, options);
  return out;
}

convert::Calibrator make_calibrator(CalibrationOptions options) {
  return [options](const convert::CalibrationContext& ctx) { return calibrate(ctx, options); };
}

}  // namespace rdrr::verify
