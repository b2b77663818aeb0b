// rdrr-convert's output: the plan table (--dry-run), the machine-readable JSON report (--json), the human
// summary, and the progress bar (stderr, when it is a terminal).
#pragma once

#include <cstdio>
#include <string>

#include "convert/converter.h"
#include "quant/status.h"

namespace rdrr::convert {

// One line per tensor: name, source dtype, target dtype, layout, bytes, pass-through, reason.
std::string plan_table(const ConvertReport& r);

// The report as JSON (one object, 2-space indent, trailing newline):
//  {"tool", "version", "source": {path, format, family}, "out", "modelId", "quantization", "dryRun",
//   "threads", "tensors": [{name, shape, sourceDtype, dtype, layout?, bytes, passthrough, reason, shard,
//   offset, rmse?, sourceRms?, sampledValues?, nonfiniteValues?, seconds?}], "shards": [{file, bytes,
//   sha256}], "warnings": [...], "totals": {tensors, bytesIn, bytesOut, wallSeconds, gbPerSecond}}
// rmse/sourceRms are over the sampled values (sampledValues; see ConvertOptions::rmse_every_chunks).
std::string report_json(const ConvertReport& r);

// {"error": {"code": "NON_FINITE", "exitCode": 10, "message": "..."}}
std::string error_json(const Status& s, int exit_code);

// "converted 147 tensors (Q4_K_M): 2.47 GB -> 0.81 GB in 6.20 s (0.40 GB/s); pack: OUT"
std::string summary_text(const ConvertReport& r);

// A one-line progress bar redrawn in place on a terminal: tensors done/total, bytes, MB/s, ETA.
class ProgressBar {
 public:
  // Draws only when `stream` is a terminal and `enabled`.
  ProgressBar(std::FILE* stream, bool enabled);
  ~ProgressBar();  // finish()
  void update(const ConvertProgress& p);
  void finish();   // ends the line (once)
  bool active() const { return active_; }

 private:
  std::FILE* stream_;
  bool active_ = false;
  bool drawn_ = false;
};

}  // namespace rdrr::convert
