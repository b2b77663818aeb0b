// bench_kernels helpers: the result table (text + JSON) and the device-to-device copy bandwidth probe.
// %bw compares a row's bytes / time with the best measured probe (copy, streaming kernel, F32 GEMV read).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quant/status.h"
#include "runtime/device.h"

namespace rdrr::bench {

struct Row {
  std::string op;       // "gemv", "attention", "copy"
  std::string dtype;    // "Q4_K", ...
  std::string layout;   // "row_wise", ...
  std::string shape;    // "4096x14336" (N x K) or "L8192"
  std::string variant;  // tuning label; "" = defaults
  uint64_t bytes = 0;   // device-memory bytes one call must move
  uint32_t copies = 0;  // rotation depth
  double us = 0.0;        // median GPU time per call (timestamps around each dispatch)
  double batch_us = 0.0;  // median GPU span per call of a batch recorded without per-dispatch timestamps
  std::string error;
};

struct Timing {
  double gpu_us = 0.0;
  double batch_us = 0.0;  // GPU span per call of a batch recorded without per-dispatch timestamps
};

// A bandwidth probe: a large memory-bound operation timed like the other rows.
struct Probe {
  std::string name;
  uint64_t bytes = 0;  // bytes read + written
  double gbps = 0.0;
};

class Table {
 public:
  explicit Table(std::string device) : device_(std::move(device)) {}
  // The measured bandwidth every row is compared with (%bw): the best probe.
  void set_probes(std::vector<Probe> probes);
  bool selected(const Row& r, const std::string& filter) const;
  void add(Row r, const Timing& t);
  void fail(Row r, std::string error);
  void print() const;
  Status write_json(const std::string& path) const;
  size_t failures() const { return failures_; }

 private:
  std::string device_;
  std::vector<Probe> probes_;
  double ref_gbps_ = 0.0;
  std::vector<Row> rows_;
  size_t failures_ = 0;
};

// Median bandwidth of vkCmdCopyBuffer between two device-local buffers of `bytes` each, counting bytes read
// plus bytes written, timed with GPU timestamps around each copy (after one warm-up copy).
Result<double> measure_copy_gbps(runtime::Device& dev, uint64_t bytes, int iters);

}  // namespace rdrr::bench
