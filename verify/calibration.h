// Calibration for error-compensated Q4_K encoding (quant/gptq.h): runs the source model on built-in calibration
// text plus sequences the model samples itself, and gives the second moment of every linear input, one layer
// at a time (convert::LayerCalibration): the convert::Calibrator that tools/rdrr_convert.cpp hands to the
// converter.
//
// The text (calibration_text()) is separate from the golden prompts (golden_prompt_texts()), so the quality
// gate never scores the pack on the text it was calibrated on. It mixes English prose, dialogue, a legal
// notice, Python and C code, a list of numbers and French. It is cut into sequences of at most
// `sequence_tokens` tokens (each encoded with the tokenizer's BOS), up to `max_tokens` tokens in all. The
// samples start at BOS; sample i draws from SplitMix64 state `seed` + i at temperature 1.
// H = sum over tokens of x x^T / tokens.
//
// Two engines give it. make_calibrator(): the streaming engine (verify/stream_reference.h), for every size:
// samples batched (sample_tokens - 1 passes over the weights), then all sequences through one layer per
// request, each layer's H accumulated in float by BLAS tiles (memory: the residual stream of the calibration
// rows, one layer's activations and the asked layer's H). make_reference_calibrator(): the double-precision
// ReferenceModel holding every weight and every H (the oracle of the tests; small models only). Both give the
// same bits at any thread count.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/converter.h"
#include "convert/model_config.h"
#include "quant/status.h"
#include "tokenizer/tokenizer.h"

namespace rdrr::verify {

struct CalibrationOptions {
  size_t max_tokens = 1024;       // of the built-in text
  size_t sequence_tokens = 128;
  // Sequences sampled from the model itself: many short ones (each sampling pass streams every weight once,
  // so the cost is sample_tokens - 1 passes; the text supplies the long contexts).
  size_t samples = 128;
  size_t sample_tokens = 8;       // each, BOS included
  uint64_t seed = 0x9E3779B97F4A7C15ull;  // sample i draws from SplitMix64 state seed + i
  size_t max_group_rows = 1024;   // streaming engine: rows per layer-pass group (activation memory)
};

std::string_view calibration_text();

// The tokenizer calibration reads: an HF folder's files, or a GGUF file's tokenizer metadata. Null (no
// error) when the source carries none this build reads; `why` then says so.
Result<std::unique_ptr<tok::Tokenizer>> source_tokenizer(const convert::CalibrationContext& ctx,
                                                         const convert::ModelConfig& config, std::string& why);

// The text's sequences (token ids < vocab).
Result<std::vector<std::vector<int32_t>>> calibration_sequences(const tok::Tokenizer& tk, size_t vocab,
                                                                const CalibrationOptions& options);

// What both engines calibrate on besides their samples: the text's sequences, their token count and the
// samples' start token (BOS, else the text's first token).
struct CalibrationSet {
  std::vector<std::vector<int32_t>> sequences;
  size_t text_tokens = 0;
  int32_t start = 0;
};
// The source's set, or nullopt with the "calibration skipped" warning added to `out` when it carries no
// tokenizer. Errors: the tokenizer's.
Result<std::optional<CalibrationSet>> calibration_set(const convert::CalibrationContext& ctx,
                                                      const convert::ModelConfig& config, size_t vocab,
                                                      const CalibrationOptions& options,
                                                      convert::CalibrationOutput& out);

// "N text tokens + S samples x T tokens" (the converter flag "calibration").
std::string calibration_description(size_t text_tokens, const CalibrationOptions& options);

// The streaming engine's session. A source without a tokenizer returns no session and a warning (the
// converter then rounds plainly). Errors: the engine's and the tokenizer's.
Result<convert::CalibrationOutput> calibrate(const convert::CalibrationContext& ctx, const CalibrationOptions& options);
convert::Calibrator make_calibrator(CalibrationOptions options = {});

// The double-precision oracle (ReferenceModel): every H computed up front in double.
Result<convert::CalibrationOutput> calibrate_reference(const convert::CalibrationContext& ctx,
                                                       const CalibrationOptions& options);
convert::Calibrator make_reference_calibrator(CalibrationOptions options = {});

}  // namespace rdrr::verify
