// Calibration for error-compensated Q4_K encoding (quant/gptq.h): runs the source model (the CPU reference)
// on built-in calibration text and returns the second moment of every linear input, the
// convert::Calibrator that tools/rdrr_convert.cpp hands to the converter.
//
// The text (calibration_text()) is separate from the golden prompts (golden_prompt_texts()), so the quality
// gate never scores the pack on the text it was calibrated on. It mixes English prose, dialogue, a legal
// notice, Python and C code, a list of numbers and French. It is cut into sequences of at most
// `sequence_tokens` tokens (each encoded with the tokenizer's BOS), up to `max_tokens` tokens in all.
// H = sum over tokens of x x^T / tokens, accumulated sequence by sequence in order: the same bits at any
// thread count.
#pragma once

#include <cstdint>
#include <string_view>

#include "convert/converter.h"
#include "quant/status.h"

namespace rdrr::verify {

struct CalibrationOptions {
  size_t max_tokens = 1024;       // of the built-in text
  size_t sequence_tokens = 128;
  size_t samples = 32;            // sequences sampled from the model itself
  size_t sample_tokens = 64;
};

std::string_view calibration_text();

// Loads the source's reference model (ReferenceModel::load_source) and tokenizer (the HF folder's files),
// runs the text and returns the hessians. A source without a tokenizer this build reads (e.g. a GGUF file)
// returns no hessians and a warning (the converter then rounds plainly); so does a model whose activations are
// not finite (NaN/Inf weights, which the converter then names or, with --allow-nonfinite, keeps). Errors: the
// loaders'.
Result<convert::CalibrationOutput> calibrate(const convert::CalibrationContext& ctx, const CalibrationOptions& options);

convert::Calibrator make_calibrator(CalibrationOptions options = {});

}  // namespace rdrr::verify
