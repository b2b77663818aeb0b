// bench_kernels' cases: the shapes and, per op, the dtypes / layouts / tunings each table row runs
// (bench_kernels.cpp runs them; --tune adds the specialization sweeps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quant/dtype.h"
#include "runtime/ops.h"
#include "runtime/ops_moe.h"

namespace rdrr::bench {

struct Shape {
  uint32_t n;
  uint32_t k;
};

struct GemmCase {
  quant::DType dtype;
  quant::Layout layout;
  runtime::GemmTuning tuning;
  std::string variant;
  bool coopmat = false;  // the *_cm kernel (cooperative matrices, f16 products); rows skipped where absent
};

struct GemvCase {
  quant::DType dtype;
  quant::Layout layout;
  runtime::GemvTuning tuning;
  std::string variant;       // tuning label, "" = defaults
  bool independent = false;  // each call writes its own y: no barriers, calls may overlap ("indep")
};

// An expert GEMV shape: E experts of N outputs x K inputs, T selected per token.
struct MoeShape {
  uint32_t e, n, k, t;
};

struct MoeCase {
  quant::DType dtype;
  bool combine;
  runtime::MoeGemvTuning tuning;
  std::string variant;  // tuning label, "" = defaults
  std::string kernel;   // forced kernel ("" = the automatic choice)
  bool route_glu = false;  // the decode step moe_route_gate_up_glu (router top-k + gather + activation) in place of the gather
};

// Prefill matmuls: the automatic tile (f32 products, and the cooperative-matrix kernels where the device has
// them) and, with tune, other tiles.
std::vector<GemmCase> gemm_cases(bool tune);
// Decode GEMVs: every dtype / layout, independent calls, and with tune the specialization sweeps.
std::vector<GemvCase> gemv_cases(bool tune);
// Expert GEMVs: the automatic kernel of each mode and dtype, the generic one beside the vectorized one, and
// with tune {local_size_x, NUM_ROWS} sweeps.
std::vector<MoeCase> moe_cases(bool tune);

}  // namespace rdrr::bench
