// Calibrated (GPTQ) Q4_K encoding in the converter: which matrices read which layer input, and the factors of
// quant/gptq.h made one layer at a time from the hessians of ConvertOptions::calibrator's session, as the
// pipeline reaches each layer (at most two layers' factors are held at a time: GptqFactors).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convert/converter.h"
#include "convert/pipeline.h"
#include "quant/gptq.h"
#include "quant/status.h"

namespace rdrr::convert {

// The (layer, input) a planned matrix reads ([0] q/k/v/qkv, [1] o_proj, [2] gate/up/gate_up, [3] down), or
// nullopt for any other tensor.
std::optional<std::pair<int, int>> calibration_input(const PlanEntry& plan);

// Values of the Q4_K matrices that calibration would change (not copied from Q4_K source blocks); 0: none.
uint64_t calibratable_weights(const std::vector<TensorJob>& jobs);

// The factors of the calibrated jobs, for the pipeline (PipelineOptions::gptq_factor). factor_for(job) is
// called in job order (jobs are in layer order): the first job of a layer takes that layer's factors (the
// session's hessians of the inputs some job of the layer reads, factored) and keeps each factor until the last
// job reading it has taken it. Once a layer's factors are taken, the next calibrated layer's are made in a
// oneTBB task beside the pipeline (the session is asked for one layer at a time, in order), so the layer pass
// and the factoring overlap the previous layer's encoding: at most two layers' factors are held at a time.
class GptqFactors {
 public:
  GptqFactors(std::unique_ptr<LayerCalibration> session, const std::vector<TensorJob>& jobs);
  ~GptqFactors();  // waits for a layer still being made
  GptqFactors(const GptqFactors&) = delete;
  GptqFactors& operator=(const GptqFactors&) = delete;
  // Null: job `index` is rounded plainly (not calibratable, or its input's activations were not finite: a
  // warning). Errors: the session's (prefixed "calibration: layer N"), kValidation (a hessian's size differs
  // from the matrix's input count, naming tensor and sizes), gptq_factor's (naming the tensor).
  Result<std::shared_ptr<const quant::GptqFactor>> factor_for(size_t index);
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  struct LayerFactors {
    Status status = Status::Ok();
    std::map<int, std::shared_ptr<const quant::GptqFactor>> by_input;  // null: rounded plainly
    std::vector<std::string> warnings;
  };
  // The hessians and factors of the layer whose first calibrated job is `first`.
  LayerFactors make_layer(size_t first);
  LayerFactors take_next();

  std::unique_ptr<LayerCalibration> session_;
  const std::vector<TensorJob>& jobs_;
  std::vector<std::optional<std::pair<int, int>>> keys_;  // per job
  std::map<std::pair<int, int>, size_t> uses_left_;
  std::map<int, std::array<bool, 4>> wanted_;             // per layer
  std::map<std::pair<int, int>, std::shared_ptr<const quant::GptqFactor>> ready_;
  int layer_done_ = -1;
  std::vector<std::string> warnings_;
  struct Next;                   // the layer being made in the background
  std::unique_ptr<Next> next_;
};

// The converter's step: decides from options.calibration whether to call options.calibrator (never in a
// dry run) and records report.calibration (the calibrator's description, or "none") and its warnings.
// Returns the factors for the pipeline, or null (plain rounding). Errors: the calibrator's (prefixed
// "calibration").
Result<std::unique_ptr<GptqFactors>> calibrate_jobs(const ConvertOptions& options, SourceFormat format,
                                                    const std::vector<TensorJob>& jobs, ConvertReport& report);

}  // namespace rdrr::convert
