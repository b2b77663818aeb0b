// RoPE inverse frequencies as transformers computes them (default, linear, llama3, yarn, longrope; llama.cpp's
// freq_factors), per layer.
#pragma once

#include "quant/status.h"
#include "rdrr/manifest.h"
#include "verify/reference_ops.h"

namespace rdrr::verify {

// Tables for one layer: sliding layers with a local theta use it unscaled (Gemma 3), others use theta with
// the configured scaling. Errors: kValidation (rotary dimension 0 or odd, missing scaling fields).
Result<RopeTables> make_rope_tables(const rdrr::RopeConfig& rope, uint64_t head_dim, rdrr::LayerType layer_type);

}  // namespace rdrr::verify
