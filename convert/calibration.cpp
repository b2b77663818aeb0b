#include "convert/calibration.h"

#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <atomic>
#include <string>

namespace rdrr::convert {

std::optional<std::pair<int, int>> calibration_input(const PlanEntry& plan) {
  const int layer = layer_index(plan.name);
  if (layer < 0) return std::nullopt;
  switch (plan.role) {
    case TensorRole::kAttnQ:
    case TensorRole::kAttnK:
    case TensorRole::kAttnV:
    case TensorRole::kAttnQkv: return std::make_pair(layer, 0);
    case TensorRole::kAttnOut: return std::make_pair(layer, 1);
    case TensorRole::kFfnGate:
    case TensorRole::kFfnUp:
    case TensorRole::kFfnGateUp:
    // A mixture's shared expert reads the FFN input itself (its routed experts read it for their own tokens
    // only: the all-token hessian made tiny-mixtral worse, KLD 0.155 -> 0.163; they stay plainly rounded).
    case TensorRole::kFfnSharedGate:
    case TensorRole::kFfnSharedUp: return std::make_pair(layer, 2);
    case TensorRole::kFfnDown: return std::make_pair(layer, 3);
    default: return std::nullopt;
  }
}

namespace {
// Damping 0.1 * mean(diag H) and act order: chosen on held-out text sampled from the fixture models (mean KLD
// of the pack vs its source); GPTQ's usual 0.01 without act order gained less (bench/README.md, calibration).
constexpr double kGptqDamp = 0.1;

bool calibratable(const TensorJob& j) {
  if (j.plan.dtype != quant::DType::kQ4_K || !j.plan.layout || j.plan.shape.size() != 2) return false;
  for (bool raw : j.raw_parts) {
    if (raw) return false;  // Q4_K blocks copied from the source stay as they are
  }
  return calibration_input(j.plan).has_value();
}
}  // namespace

uint64_t calibratable_weights(const std::vector<TensorJob>& jobs) {
  uint64_t n = 0;
  for (const TensorJob& j : jobs) {
    if (calibratable(j)) n += static_cast<uint64_t>(j.plan.shape[0]) * static_cast<uint64_t>(j.plan.shape[1]);
  }
  return n;
}

GptqFactors::GptqFactors(std::unique_ptr<LayerCalibration> session, const std::vector<TensorJob>& jobs)
    : session_(std::move(session)), jobs_(jobs) {
  for (const TensorJob& j : jobs) {
    std::optional<std::pair<int, int>> key;
    if (calibratable(j)) key = calibration_input(j.plan);
    keys_.push_back(key);
    if (!key) continue;
    ++uses_left_[*key];
    wanted_[key->first][static_cast<size_t>(key->second)] = true;
  }
}

struct GptqFactors::Next {
  size_t first = 0;                  // its first calibrated job
  std::atomic<bool> claimed{false};  // make_layer(first) started, by the task or by factor_for
  tbb::task_group group;
  LayerFactors made;
};

GptqFactors::~GptqFactors() {
  if (next_) next_->group.wait();
}

// The next layer's factors: made by its task, or here if no thread has started it yet (with one thread
// none will). Waiting (not isolated) lets this thread run other tasks meanwhile: the pipeline's encoding.
GptqFactors::LayerFactors GptqFactors::take_next() {
  Next& n = *next_;
  if (!n.claimed.exchange(true)) n.made = make_layer(n.first);
  n.group.wait();
  LayerFactors made = std::move(n.made);
  next_.reset();
  return made;
}

GptqFactors::LayerFactors GptqFactors::make_layer(size_t first) {
  LayerFactors out;
  const std::pair<int, int> key = *keys_.at(first);
  const auto layer = static_cast<uint32_t>(key.first);
  Result<LayerCalibration::Hessians> h = session_->layer_hessians(layer, wanted_.at(key.first));
  if (!h.ok()) {
    out.status = h.status().context("calibration: layer " + std::to_string(layer));
    return out;
  }
  for (size_t i = 0; i < h->size(); ++i) {
    quant::UninitVector<float>& hi = (*h)[i];
    if (hi.empty()) continue;
    const std::pair<int, int> k{key.first, static_cast<int>(i)};
    size_t reader = first;  // the first matrix reading this input: its input count
    while (reader < jobs_.size() && keys_[reader] != k) ++reader;
    const int64_t cols = reader < jobs_.size() ? jobs_[reader].plan.shape[1] : 0;
    if (hi.size() != static_cast<size_t>(cols) * static_cast<size_t>(cols)) {
      out.status = error(StatusCode::kValidation, "calibration: layer " + std::to_string(layer) + " input " +
                                                      std::to_string(i) + ": hessian has " + std::to_string(hi.size()) +
                                                      " values, expected " + std::to_string(cols) +
                                                      "^2 (the matrices' input count)");
      return out;
    }
    Result<quant::GptqFactor> made = quant::gptq_factor(std::move(hi), cols, kGptqDamp, /*act_order=*/true);
    if (made.ok()) {
      out.by_input[static_cast<int>(i)] = std::make_shared<const quant::GptqFactor>(std::move(*made));
    } else if (made.status().code() == StatusCode::kNonFinite) {  // NaN/Inf weights upstream
      out.by_input[static_cast<int>(i)] = nullptr;
      out.warnings.push_back("calibration: layer " + std::to_string(layer) + " input " + std::to_string(i) +
                             ": activations not finite; its matrices are rounded plainly");
    } else {
      out.status = made.status().context("calibration: tensor " + jobs_[reader].plan.name);
      return out;
    }
  }
  return out;
}

Result<std::shared_ptr<const quant::GptqFactor>> GptqFactors::factor_for(size_t index) {
  const std::optional<std::pair<int, int>> key = keys_.at(index);
  if (!key) return std::shared_ptr<const quant::GptqFactor>();
  const TensorJob& job = jobs_[index];
  if (key->first > layer_done_) {  // the first job of a new layer: its factors, then the next layer's begin
    // The layer begun after the previous one (jobs are in layer order, so it is this one), else here.
    LayerFactors made = next_ ? take_next() : make_layer(index);
    RDRR_RETURN_IF_ERROR(made.status);
    layer_done_ = key->first;
    for (auto& [input, f] : made.by_input) ready_[{key->first, input}] = std::move(f);
    for (std::string& w : made.warnings) warnings_.push_back(std::move(w));
    size_t first = index;
    while (first < jobs_.size() && (!keys_[first] || keys_[first]->first <= layer_done_)) ++first;
    if (first < jobs_.size()) {
      next_ = std::make_unique<Next>();
      next_->first = first;
      Next* n = next_.get();
      // Isolated: while make_layer waits inside (its parallel loops), this thread must not pick up the
      // pipeline's input stage, whose factor_for would then wait in take_next for the make_layer suspended
      // below it on the same thread: a cycle that can hang a conversion (a 16-thread default conversion on the
      // H200 machine once stopped progressing; rerun, it finished in 32 s).
      n->group.run([this, n] {
        tbb::this_task_arena::isolate([this, n] {
          if (!n->claimed.exchange(true)) n->made = make_layer(n->first);
        });
      });
    }
  }
  auto it = ready_.find(*key);
  if (it == ready_.end()) {
    return error(StatusCode::kInternal, "calibration: tensor " + job.plan.name + ": layer " +
                                            std::to_string(key->first) + " asked for out of layer order");
  }
  std::shared_ptr<const quant::GptqFactor> f = it->second;
  if (--uses_left_[*key] == 0) ready_.erase(it);
  return f;
}

Result<std::unique_ptr<GptqFactors>> calibrate_jobs(const ConvertOptions& o, SourceFormat format,
                                                    const std::vector<TensorJob>& jobs, ConvertReport& report) {
  const uint64_t weights = calibratable_weights(jobs);
  if (!o.calibrator || o.calibration == CalibrationMode::kOff || weights == 0) return std::unique_ptr<GptqFactors>();
  if (o.dry_run) return std::unique_ptr<GptqFactors>();
  Result<CalibrationOutput> c = o.calibrator({o.src, format});
  if (!c.ok()) return c.status().context("calibration");
  for (std::string& w : c->warnings) report.warnings.push_back(std::move(w));
  if (!c->session) return std::unique_ptr<GptqFactors>();
  report.calibration = c->description;
  return std::make_unique<GptqFactors>(std::move(c->session), jobs);
}

}  // namespace rdrr::convert
