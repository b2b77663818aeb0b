// The streaming core of rdrr-convert: every planned tensor, in order, read in 256-row chunks from the
// memory-mapped input, converted or quantized, and appended to the shard writer (which hashes as it writes).
//
// oneTBB parallel_pipeline with three stages and a few tokens in flight:
//   1. serial in order: cut the next chunk (tensor, rows [r0, r1));
//   2. parallel: decode the input rows to float32, check them for NaN/Inf, encode them (quant/layout.h
//      quantize_rows, itself parallel over blocks), sample the quantization error, release the input pages;
//   3. serial in order: write the chunk's bytes (a column_wise tensor's bytes when its last chunk is done).
// So tensor i+1 is quantized while tensor i is written. Memory: a fixed pool of chunk buffers (one per
// token) plus, per column_wise tensor in flight, its whole quantized buffer (the 256-row chunks give one
// block column for every input; the bytes are ordered input by input, so they can only be written once
// the tensor is complete).
//
// Determinism: every chunk's bytes depend only on its rows; error sums are per chunk, serial, and added in
// chunk order; errors are reported for the first failing chunk in order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "convert/plan.h"
#include "convert/source.h"
#include "quant/gptq.h"
#include "quant/status.h"
#include "rdrr/shard_writer.h"

namespace rdrr::convert {

struct TensorJob {
  const SourceTensor* source = nullptr;
  PlanEntry plan;
  TensorPlacement placement;   // planned placement (the writer must reproduce it)
  std::vector<bool> raw_parts;  // per source part: copy the stored blocks bit-exactly
};

struct PipelineOptions {
  int max_tokens = 4;
  bool allow_nonfinite = false;
  int rmse_every_chunks = 16;
  std::function<void(const ConvertProgress&)> on_progress;
  // Calibrated Q4_K (quant/gptq.h): called once per job, in job order, from the serial input stage before the
  // job's first chunk; a non-null factor makes its Q4_K chunks error-compensated. May block (a calibration
  // layer pass). Unset: plain rounding everywhere.
  std::function<Result<std::shared_ptr<const quant::GptqFactor>>(size_t job)> gptq_factor;
};

struct TensorStats {
  bool passthrough = false;
  double sq_err = 0;   // sum of squared errors over the sampled values
  double sq_ref = 0;   // sum of squared source values over the same values
  uint64_t sampled_values = 0;
  uint64_t nonfinite_values = 0;
  double seconds = 0;
  std::string sha256_hex;  // of the tensor's bytes as written (manifest tensors.<name>.hash)
};

// The raw-copy decision for every part of a planned tensor.
std::vector<bool> raw_parts_for(const SourceTensor& t, const PlanEntry& plan);

// Runs the pipeline in the current oneTBB arena. On error the writer is left mid-tensor (the caller drops
// the pack). Errors: kNonFinite (naming tensor, row and column, unless allow_nonfinite), the encoders' and
// the writer's errors (kNoSpace, kIo), kInternal when a placement differs from the plan.
Result<std::vector<TensorStats>> run_pipeline(const std::vector<TensorJob>& jobs, ShardWriter& writer,
                                              const PipelineOptions& options);

}  // namespace rdrr::convert
