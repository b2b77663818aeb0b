// Quantizer quality against llama.cpp (used by rdrr-quant-report and tests/quant_quality_test.cpp).
//
// For every 2-D tensor that llama.cpp stored as Q4_K or Q6_K in a GGUF, the F32 weights of the same tensor
// are read from the Hugging Face SafeTensors, and both llama.cpp's blocks and our encoder's blocks (same
// block type) are decoded and compared with them. Errors are relative: rmse(decoded - f32) / rms(f32).
// GGUF rows follow llama.cpp's converter: llama's attn_q/attn_k rows are permuted (reshape(n_head, 2,
// rows/n_head/2, cols).swapaxes(1, 2)) and the F32 rows are permuted the same way before comparing; an
// embedding the GGUF truncated to fewer rows is compared on the rows the GGUF kept.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "quant/dtype.h"
#include "quant/status.h"

namespace rdrr::tools {

struct TensorQuality {
  std::string gguf_name;
  std::string hf_name;
  std::vector<int64_t> shape;        // compared tensor, row-major (rows, row length)
  quant::DType dtype = quant::DType::kQ4_K;  // what llama.cpp stored (Q4_K or Q6_K); ours uses the same
  double rms = 0;                    // of the F32 weights
  double llama_rel_rmse = 0;
  double ours_rel_rmse = 0;
  bool rows_permuted = false;        // llama attn_q / attn_k
  int64_t rows_dropped = 0;          // HF rows the GGUF does not have (token_embd truncated to the vocabulary)
  int64_t blocks = 0;
  // Blocks of our bit-exact replica of llama.cpp's reference quantizer (quantize_q4_k_reference /
  // quantize_q6_k_reference) that equal the GGUF's bytes: all of them when the GGUF was made without an
  // importance matrix.
  int64_t reference_identical_blocks = 0;
  double ratio() const { return ours_rel_rmse / llama_rel_rmse; }
};

struct QualityReport {
  std::string hf_path;
  std::string gguf_path;
  std::string arch;  // general.architecture
  std::vector<TensorQuality> tensors;  // GGUF order
};

struct QualityInputs {
  std::filesystem::path hf;    // SafeTensors file or HF folder
  std::filesystem::path gguf;  // llama.cpp's quantized GGUF
};

// MODEL_DIR/hf and the single *.gguf file in MODEL_DIR/gguf (kNotFound / kInvalidArgument otherwise).
Result<QualityInputs> find_quality_inputs(const std::filesystem::path& model_dir);

// Errors: reader errors (with the file), kNotFound (a GGUF tensor without an HF counterpart), kValidation
// (shapes disagree; only token_embd may have fewer GGUF rows than HF rows), kSchema (head counts missing
// for a permuted llama tensor).
Result<QualityReport> measure_quant_quality(const QualityInputs& inputs);

// Fixed-width table, one line per tensor plus a summary line per block type.
std::string format_quality_table(const QualityReport& report);
// {"hf": ..., "gguf": ..., "arch": ..., "tensors": [{"name", "hf_name", "shape", "type", "rms",
//  "llama_rel_rmse", "ours_rel_rmse", "ratio", "rows_permuted", "rows_dropped", "blocks",
//  "reference_identical_blocks"}], "summary": {TYPE: {"tensors", "mean_ratio", "worst_ratio"}}}
std::string format_quality_json(const QualityReport& report);

}  // namespace rdrr::tools
