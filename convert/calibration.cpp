#include "convert/calibration.h"

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
    case TensorRole::kFfnGateUp: return std::make_pair(layer, 2);
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

Result<std::shared_ptr<const quant::GptqFactor>> GptqFactors::factor_for(size_t index) {
  const std::optional<std::pair<int, int>> key = keys_.at(index);
  if (!key) return std::shared_ptr<const quant::GptqFactor>();
  const TensorJob& job = jobs_[index];
  if (key->first > layer_done_) {  // the first job of a new layer: its hessians, then its factors
    const auto layer = static_cast<uint32_t>(key->first);
    Result<std::array<std::vector<float>, 4>> h = session_->layer_hessians(layer, wanted_[key->first]);
    if (!h.ok()) return h.status().context("calibration: layer " + std::to_string(layer));
    layer_done_ = key->first;
    for (size_t i = 0; i < h->size(); ++i) {
      std::vector<float>& hi = (*h)[i];
      if (hi.empty()) continue;
      const std::pair<int, int> k{key->first, static_cast<int>(i)};
      const int64_t cols = [&] {  // the input count of the first matrix reading it
        for (size_t j = index; j < jobs_.size(); ++j) {
          if (keys_[j] == k) return jobs_[j].plan.shape[1];
        }
        return int64_t{0};
      }();
      if (hi.size() != static_cast<size_t>(cols) * static_cast<size_t>(cols)) {
        return error(StatusCode::kValidation, "calibration: layer " + std::to_string(layer) + " input " +
                                                  std::to_string(i) + ": hessian has " + std::to_string(hi.size()) +
                                                  " values, expected " + std::to_string(cols) +
                                                  "^2 (the matrices' input count)");
      }
      Result<quant::GptqFactor> made = quant::gptq_factor(std::move(hi), cols, kGptqDamp, /*act_order=*/true);
      if (made.ok()) {
        ready_[k] = std::make_shared<const quant::GptqFactor>(std::move(*made));
      } else if (made.status().code() == StatusCode::kNonFinite) {  // NaN/Inf weights upstream
        ready_[k] = nullptr;
        warnings_.push_back("calibration: layer " + std::to_string(layer) + " input " + std::to_string(i) +
                            ": activations not finite; its matrices are rounded plainly");
      } else {
        return made.status().context("calibration: tensor " + job.plan.name);
      }
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
  if (o.calibration == CalibrationMode::kAuto && weights > o.auto_calibration_max_weights) {
    report.warnings.push_back("calibration skipped (--calibration auto): " + std::to_string(weights) +
                              " Q4_K weights > " + std::to_string(o.auto_calibration_max_weights) +
                              "; --calibration on runs it (many minutes of CPU at this size: README, Known limits)");
    return std::unique_ptr<GptqFactors>();
  }
  if (o.dry_run) return std::unique_ptr<GptqFactors>();
  Result<CalibrationOutput> c = o.calibrator({o.src, format});
  if (!c.ok()) return c.status().context("calibration");
  for (std::string& w : c->warnings) report.warnings.push_back(std::move(w));
  if (!c->session) return std::unique_ptr<GptqFactors>();
  report.calibration = c->description;
  return std::make_unique<GptqFactors>(std::move(c->session), jobs);
}

}  // namespace rdrr::convert
