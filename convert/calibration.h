// Calibrated (GPTQ) Q4_K encoding in the converter: which matrices read which layer input, and attaching the
// factors of quant/gptq.h to their pipeline jobs. The hessians come from ConvertOptions::calibrator.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "convert/pipeline.h"
#include "quant/status.h"

namespace rdrr::convert {

// The (layer, input) a planned matrix reads ([0] q/k/v/qkv, [1] o_proj, [2] gate/up/gate_up, [3] down), or
// nullopt for any other tensor.
std::optional<std::pair<int, int>> calibration_input(const PlanEntry& plan);

// Values of the Q4_K matrices that calibration would change (not copied from Q4_K source blocks); 0: none.
uint64_t calibratable_weights(const std::vector<TensorJob>& jobs);

// Factors the hessians each Q4_K job needs (once per layer input, shared) and sets TensorJob::gptq.
// Errors: kValidation (a hessian's size differs from the matrix's input count, naming tensor and sizes),
// gptq_factor's.
Status attach_gptq(const CalibrationOutput& calibration, std::vector<TensorJob>& jobs);

// The converter's step: decides from options.calibration (kAuto: calibratable_weights <=
// kAutoCalibrationMaxWeights, else a warning) whether to call options.calibrator (never in a dry run), attaches
// the factors, and records report.calibration (the calibrator's description, or "none") and its warnings.
// Errors: the calibrator's (prefixed "calibration"), attach_gptq's.
Status calibrate_jobs(const ConvertOptions& options, SourceFormat format, std::vector<TensorJob>& jobs,
                      ConvertReport& report);

}  // namespace rdrr::convert
