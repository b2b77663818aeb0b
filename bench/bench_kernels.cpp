// Kernel throughput on the Vulkan device RDRR_DEVICE selects (default: first discrete GPU, else lavapipe).
// GPU time comes from timestamps around each dispatch (manual time); bytes/s counts the packed weight bytes
// each GEMV reads, the number to compare with the device's memory bandwidth. Example:
//   build/bench/bench_kernels --benchmark_format=json --benchmark_filter=Gemv
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "runtime/device.h"
#include "runtime/ops.h"
#include "runtime/recorder.h"

namespace rdrr::runtime {
namespace {

Device* bench_device() {
  static std::unique_ptr<Device> dev;
  static bool tried = false;
  if (!tried) {
    tried = true;
    Result<std::unique_ptr<Device>> d = Device::create(device_options_from_env());
    if (d.ok()) {
      dev = std::move(d).value();
      std::fprintf(stderr, "%s\n", describe_caps(dev->caps()).c_str());
    } else {
      std::fprintf(stderr, "no Vulkan device: %s\n", d.status().to_string().c_str());
    }
  }
  return dev.get();
}

constexpr int kRepsPerBatch = 8;

void BM_Gemv(benchmark::State& state, quant::DType dtype, quant::Layout layout, GemvTuning tuning = {}) {
  Device* dev = bench_device();
  if (dev == nullptr) {
    state.SkipWithError("no Vulkan device");
    return;
  }
  const auto n = static_cast<uint32_t>(state.range(0));
  const auto k = static_cast<uint32_t>(state.range(1));
  const uint64_t w_bytes = packed_weight_bytes(dtype, layout, n, k);
  // 0x11 bytes: every f16 scale is a small normal number, every code valid; the values do not matter here.
  std::vector<std::byte> w(w_bytes, std::byte{0x11});
  std::vector<float> x(k);
  std::mt19937 rng(1);
  for (float& v : x) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  Result<Buffer> wb = dev->allocate(w_bytes, "w");
  Result<Buffer> xb = dev->allocate(k * 4ull, "x");
  Result<Buffer> yb = dev->allocate(n * 4ull, "y");
  Result<std::unique_ptr<Recorder>> rec = Recorder::create(*dev, RecorderOptions{true});
  if (!wb.ok() || !xb.ok() || !yb.ok() || !rec.ok() || !dev->upload(wb->range(), w).ok() ||
      !dev->upload(xb->range(), std::as_bytes(std::span(x))).ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  GemvArgs a;
  a.w = wb->range();
  a.dtype = dtype;
  a.layout = layout;
  a.n_rows = n;
  a.k = k;
  a.x = xb->range();
  a.y = yb->range();
  a.tuning = tuning;
  for (auto _ : state) {
    for (int r = 0; r < kRepsPerBatch; ++r) {
      const Status s = record_gemv(**rec, a);
      if (!s.ok()) {
        state.SkipWithError(s.to_string().c_str());
        return;
      }
    }
    Result<SubmitResult> res = (*rec)->submit_and_wait();
    if (!res.ok()) {
      state.SkipWithError(res.status().to_string().c_str());
      return;
    }
    double ms = 0.0;
    for (const DispatchTiming& t : res->timings) ms += t.gpu_ms;
    state.SetIterationTime(ms / 1e3 / kRepsPerBatch);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(w_bytes));
  state.counters["weight_MiB"] = static_cast<double>(w_bytes) / (1 << 20);
}

using quant::DType;
using quant::Layout;
#define RDRR_GEMV_BENCH(name, dtype, layout)                                                          \
  BENCHMARK_CAPTURE(BM_Gemv, name, dtype, layout)->Args({4096, 4096})->Args({14336, 4096})->UseManualTime() \
      ->Unit(benchmark::kMicrosecond)
RDRR_GEMV_BENCH(F32, DType::kF32, Layout::kRowWise);
RDRR_GEMV_BENCH(F16, DType::kF16, Layout::kRowWise);
RDRR_GEMV_BENCH(Q8_0, DType::kQ8_0, Layout::kRowWise);
RDRR_GEMV_BENCH(Q6_K, DType::kQ6_K, Layout::kRowWise);
RDRR_GEMV_BENCH(Q4_K_row_wise, DType::kQ4_K, Layout::kRowWise);
RDRR_GEMV_BENCH(Q4_K_column_wise, DType::kQ4_K, Layout::kColumnWise);

// Tuning sweeps (specialization constants): rows per workgroup / workgroup size, and the column path's
// input split.
#define RDRR_GEMV_TUNE(name, dtype, layout, ...)                                                      \
  BENCHMARK_CAPTURE(BM_Gemv, name, dtype, layout, GemvTuning{__VA_ARGS__})->Args({4096, 4096})->UseManualTime() \
      ->Unit(benchmark::kMicrosecond)
RDRR_GEMV_TUNE(Q4_K_row_wise_wg32_rows1, DType::kQ4_K, Layout::kRowWise, 32, 1, 0);
RDRR_GEMV_TUNE(Q4_K_row_wise_wg64_rows1, DType::kQ4_K, Layout::kRowWise, 64, 1, 0);
RDRR_GEMV_TUNE(Q4_K_row_wise_wg128_rows1, DType::kQ4_K, Layout::kRowWise, 128, 1, 0);
RDRR_GEMV_TUNE(Q4_K_row_wise_wg64_rows4, DType::kQ4_K, Layout::kRowWise, 64, 4, 0);
RDRR_GEMV_TUNE(Q4_K_row_wise_wg128_rows4, DType::kQ4_K, Layout::kRowWise, 128, 4, 0);
RDRR_GEMV_TUNE(Q6_K_wg64_rows1, DType::kQ6_K, Layout::kRowWise, 64, 1, 0);
RDRR_GEMV_TUNE(Q6_K_wg128_rows4, DType::kQ6_K, Layout::kRowWise, 128, 4, 0);
RDRR_GEMV_TUNE(Q8_0_wg64_rows1, DType::kQ8_0, Layout::kRowWise, 64, 1, 0);
RDRR_GEMV_TUNE(Q8_0_wg128_rows4, DType::kQ8_0, Layout::kRowWise, 128, 4, 0);
RDRR_GEMV_TUNE(Q4_K_column_wise_x64_ks16, DType::kQ4_K, Layout::kColumnWise, 64, 0, 16);
RDRR_GEMV_TUNE(Q4_K_column_wise_x32_ks32, DType::kQ4_K, Layout::kColumnWise, 32, 0, 32);
RDRR_GEMV_TUNE(Q4_K_column_wise_x128_ks8, DType::kQ4_K, Layout::kColumnWise, 128, 0, 8);
RDRR_GEMV_TUNE(Q4_K_column_wise_x256_ks4, DType::kQ4_K, Layout::kColumnWise, 256, 0, 4);

}  // namespace
}  // namespace rdrr::runtime

BENCHMARK_MAIN();
