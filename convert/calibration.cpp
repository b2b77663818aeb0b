#include "convert/calibration.h"

#include <map>
#include <memory>

#include "quant/gptq.h"

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

Status attach_gptq(const CalibrationOutput& calibration, std::vector<TensorJob>& jobs) {
  std::map<std::pair<int, int>, std::shared_ptr<const quant::GptqFactor>> factors;
  for (TensorJob& j : jobs) {
    if (!calibratable(j)) continue;
    const auto [layer, input] = *calibration_input(j.plan);
    if (static_cast<size_t>(layer) >= calibration.hessians.size()) continue;
    const std::vector<double>& h = calibration.hessians[static_cast<size_t>(layer)][static_cast<size_t>(input)];
    if (h.empty()) continue;
    const int64_t k = j.plan.shape[1];
    if (h.size() != static_cast<size_t>(k) * static_cast<size_t>(k)) {
      return error(StatusCode::kValidation, "calibration: tensor " + j.plan.name + ": hessian has " +
                                                std::to_string(h.size()) + " values, expected " +
                                                std::to_string(k) + "^2 (the matrix's input count)");
    }
    auto& f = factors[{layer, input}];
    if (!f) {
      Result<quant::GptqFactor> made = quant::gptq_factor(h, k, kGptqDamp, /*act_order=*/true);
      if (!made.ok()) return made.status().context("calibration: tensor " + j.plan.name);
      f = std::make_shared<const quant::GptqFactor>(std::move(*made));
    }
    j.gptq = f;
  }
  return Status::Ok();
}

Status calibrate_jobs(const ConvertOptions& o, SourceFormat format, std::vector<TensorJob>& jobs,
                      ConvertReport& report) {
  const uint64_t weights = calibratable_weights(jobs);
  if (!o.calibrator || o.calibration == CalibrationMode::kOff || weights == 0) return Status::Ok();
  if (o.calibration == CalibrationMode::kAuto && weights > kAutoCalibrationMaxWeights) {
    report.warnings.push_back("calibration skipped (--calibration auto): " + std::to_string(weights) +
                              " Q4_K weights > " + std::to_string(kAutoCalibrationMaxWeights) +
                              "; --calibration on runs it (CPU reference forward passes: slow for large models)");
    return Status::Ok();
  }
  if (o.dry_run) return Status::Ok();
  Result<CalibrationOutput> c = o.calibrator({o.src, format});
  if (!c.ok()) return c.status().context("calibration");
  RDRR_RETURN_IF_ERROR(attach_gptq(*c, jobs));
  for (std::string& w : c->warnings) report.warnings.push_back(std::move(w));
  if (!c->hessians.empty()) report.calibration = c->description;
  return Status::Ok();
}

}  // namespace rdrr::convert
