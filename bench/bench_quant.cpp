// Quantizer and conversion throughput: weights/s (items_per_second) for Q4_K / Q6_K / Q8_0 encode and decode
// through the layout functions, llama.cpp's reference quantizers (the anchors), and bulk f16/bf16 conversion,
// at 1 thread and at all threads (tbb::task_arena), over random normal(0, 0.02) f32 matrices.
//
//   build/bench/bench_quant --benchmark_format=json
//   build/bench/bench_quant --benchmark_filter='Encode/Q4_K'     (a subset)
//   RDRR_NO_SIMD=1 build/bench/bench_quant ...                  (scalar paths only)
#include <benchmark/benchmark.h>
#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "quant/blocks.h"
#include "quant/cpu.h"
#include "quant/f16.h"
#include "quant/layout.h"
#include "quant/q4_k.h"
#include "quant/q6_k.h"

namespace rdrr::quant {
namespace {

const std::vector<float>& matrix(int64_t n) {
  static std::map<int64_t, std::vector<float>> cache;
  auto it = cache.find(n);
  if (it == cache.end()) {
    std::vector<float> w(static_cast<size_t>(n * n));
    std::mt19937 rng(42);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    for (float& v : w) v = dist(rng);
    it = cache.emplace(n, std::move(w)).first;
  }
  return it->second;
}

void report(benchmark::State& state, int64_t weights, int64_t bytes) {
  state.SetItemsProcessed(state.iterations() * weights);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["threads"] = static_cast<double>(state.range(1));
  state.counters["simd"] = simd_enabled() ? 1 : 0;
}

// range(0) = n (an n x n matrix), range(1) = threads.
void BM_Encode(benchmark::State& state, DType dtype, Layout layout) {
  const int64_t n = state.range(0);
  const std::vector<float>& w = matrix(n);
  std::vector<uint8_t> q(quantized_size_bytes(dtype, layout, n, n));
  tbb::task_arena arena(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    Status s;
    arena.execute([&] { s = quantize_matrix({dtype, layout, w, n, n, {}, q}); });
    if (!s.ok()) state.SkipWithError(s.to_string().c_str());
    benchmark::DoNotOptimize(q.data());
  }
  report(state, n * n, n * n * 4);
}

void BM_Decode(benchmark::State& state, DType dtype, Layout layout) {
  const int64_t n = state.range(0);
  const std::vector<float>& w = matrix(n);
  std::vector<uint8_t> q(quantized_size_bytes(dtype, layout, n, n));
  if (Status s = quantize_matrix({dtype, layout, w, n, n, {}, q}); !s.ok()) state.SkipWithError(s.message().c_str());
  std::vector<float> y(w.size());
  tbb::task_arena arena(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    Status s;
    arena.execute([&] { s = dequantize_matrix({dtype, layout, q, n, n, y}); });
    if (!s.ok()) state.SkipWithError(s.to_string().c_str());
    benchmark::DoNotOptimize(y.data());
  }
  report(state, n * n, static_cast<int64_t>(q.size()));
}

// llama.cpp's reference quantizers (bit-exact replicas), split over rows like the layout code.
template <typename Block, auto kQuantize>
void BM_EncodeReference(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<float>& w = matrix(n);
  std::vector<Block> q(static_cast<size_t>(n * n / kQK_K));
  const int64_t per_row = n / kQK_K;
  tbb::task_arena arena(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, n), [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t row = r.begin(); row != r.end(); ++row) {
          kQuantize(std::span<const float>(w.data() + row * n, static_cast<size_t>(n)),
                    std::span<Block>(q.data() + row * per_row, static_cast<size_t>(per_row)));
        }
      });
    });
    benchmark::DoNotOptimize(q.data());
  }
  report(state, n * n, n * n * 4);
}
void q4k_ref(std::span<const float> x, std::span<BlockQ4K> b) { quantize_q4_k_reference(x, b); }
void q6k_ref(std::span<const float> x, std::span<BlockQ6K> b) { quantize_q6_k_reference(x, b); }

// Bulk conversions over the matrix, split into 64 Ki-value chunks across the arena.
template <typename From, typename To, auto kConvert>
void BM_Convert(benchmark::State& state, bool simd) {
  const int64_t n = state.range(0);
  const std::vector<float>& w = matrix(n);
  std::vector<From> src(w.size());
  if constexpr (std::is_same_v<From, float>) {
    src = w;
  } else {
    f32_to_bf16(w, src);  // any 16-bit patterns of normal values do
  }
  std::vector<To> dst(w.size());
  const bool simd_before = simd_enabled();
  set_simd_enabled(simd);
  if (simd && !simd_enabled()) state.SkipWithError("no AVX2/F16C on this CPU");
  constexpr int64_t kChunk = 1 << 16;
  tbb::task_arena arena(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, (n * n + kChunk - 1) / kChunk), [&](const auto& r) {
        for (int64_t c = r.begin(); c != r.end(); ++c) {
          const int64_t b = c * kChunk;
          const auto len = static_cast<size_t>(std::min(kChunk, n * n - b));
          kConvert(std::span<const From>(src.data() + b, len), std::span<To>(dst.data() + b, len));
        }
      });
    });
    benchmark::DoNotOptimize(dst.data());
  }
  report(state, n * n, n * n * static_cast<int64_t>(sizeof(From) + sizeof(To)));
  set_simd_enabled(simd_before);
}
void f32_f16(std::span<const float> s, std::span<uint16_t> d) { f32_to_f16(s, d); }
void f16_f32(std::span<const uint16_t> s, std::span<float> d) { f16_to_f32(s, d); }
void f32_bf16(std::span<const float> s, std::span<uint16_t> d) { f32_to_bf16(s, d); }
void bf16_f32(std::span<const uint16_t> s, std::span<float> d) { bf16_to_f32(s, d); }

void apply_args(benchmark::internal::Benchmark* b) {
  const int all = tbb::info::default_concurrency();
  for (int64_t n : {2048, 4096}) {
    b->Args({n, 1});
    if (all > 1) b->Args({n, all});
  }
  b->ArgNames({"n", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
}

void register_all() {
  struct Case {
    DType dtype;
    Layout layout;
  };
  for (const Case c : {Case{DType::kQ4_K, Layout::kRowWise}, Case{DType::kQ4_K, Layout::kColumnWise},
                       Case{DType::kQ6_K, Layout::kRowWise}, Case{DType::kQ6_K, Layout::kColumnWise},
                       Case{DType::kQ8_0, Layout::kRowWise}, Case{DType::kQ8_0, Layout::kColumnWise}}) {
    const std::string tag = std::string(dtype_name(c.dtype)) + "/" + std::string(layout_name(c.layout));
    apply_args(benchmark::RegisterBenchmark(("Encode/" + tag).c_str(), BM_Encode, c.dtype, c.layout));
    apply_args(benchmark::RegisterBenchmark(("Decode/" + tag).c_str(), BM_Decode, c.dtype, c.layout));
  }
  apply_args(benchmark::RegisterBenchmark("EncodeReference/Q4_K", BM_EncodeReference<BlockQ4K, q4k_ref>));
  apply_args(benchmark::RegisterBenchmark("EncodeReference/Q6_K", BM_EncodeReference<BlockQ6K, q6k_ref>));
  for (bool simd : {true, false}) {
    const std::string s = simd ? "/simd" : "/scalar";
    apply_args(benchmark::RegisterBenchmark(("Convert/f32_to_f16" + s).c_str(),
                                            BM_Convert<float, uint16_t, f32_f16>, simd));
    apply_args(benchmark::RegisterBenchmark(("Convert/f16_to_f32" + s).c_str(),
                                            BM_Convert<uint16_t, float, f16_f32>, simd));
    apply_args(benchmark::RegisterBenchmark(("Convert/f32_to_bf16" + s).c_str(),
                                            BM_Convert<float, uint16_t, f32_bf16>, simd));
    apply_args(benchmark::RegisterBenchmark(("Convert/bf16_to_f32" + s).c_str(),
                                            BM_Convert<uint16_t, float, bf16_f32>, simd));
  }
}

}  // namespace
}  // namespace rdrr::quant

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  rdrr::quant::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
