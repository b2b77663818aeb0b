// The AVX2 build of the Q6_K reference steps (q6_k_ref_avx2.cpp) gives the scalar replica's bytes, on data
// chosen to hit every branch: all-zero and tiny groups, ties of the largest magnitude, constant groups,
// single spikes, huge ranges, weighted and unweighted.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/cpu.h"
#include "quant/q6_k.h"

namespace rdrr::quant {
namespace {

std::vector<float> adversarial_blocks(int n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 7);
  std::vector<float> x(static_cast<size_t>(n_blocks) * kQK_K);
  for (size_t g = 0; g < x.size() / 16; ++g) {
    float* v = x.data() + g * 16;
    const int k = kind(rng);
    for (int i = 0; i < 16; ++i) {
      switch (k) {
        case 0: v[i] = 0.0f; break;                               // zero group
        case 1: v[i] = 1e-16f * normal(rng); break;               // below the reference's epsilon
        case 2: v[i] = 0.25f; break;                              // constant
        case 3: v[i] = i == 5 ? 3.0f : 0.01f * normal(rng); break;  // one spike
        case 4: v[i] = (i % 2 ? 1.0f : -1.0f) * 2.0f; break;      // magnitude ties, both signs
        case 5: v[i] = 1e4f * normal(rng); break;                 // large
        case 6: v[i] = std::ldexp(normal(rng), (i % 7) - 3); break;  // wide dynamic range
        default: v[i] = 0.02f * normal(rng); break;               // weight-like
      }
    }
  }
  return x;
}

TEST(Q6KReferenceAvx2, BitIdenticalToScalar) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2/F16C";
  constexpr int kBlocks = 512;
  const std::vector<float> x = adversarial_blocks(kBlocks, 7);
  std::vector<float> w(x.size());
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.0f, 2.0f);
  for (float& v : w) v = u(rng);
  for (bool weighted : {false, true}) {
    const std::span<const float> ws = weighted ? std::span<const float>(w) : std::span<const float>();
    std::vector<BlockQ6K> simd(kBlocks), scalar(kBlocks), simd_ref(kBlocks), scalar_ref(kBlocks);
    set_simd_enabled(true);
    quantize_q6_k_reference(x, simd_ref, ws);
    quantize_q6_k(x, simd, ws);
    set_simd_enabled(false);
    quantize_q6_k_reference(x, scalar_ref, ws);
    quantize_q6_k(x, scalar, ws);
    set_simd_enabled(true);
    EXPECT_EQ(std::memcmp(simd_ref.data(), scalar_ref.data(), kBlocks * sizeof(BlockQ6K)), 0) << weighted;
    EXPECT_EQ(std::memcmp(simd.data(), scalar.data(), kBlocks * sizeof(BlockQ6K)), 0) << weighted;
  }
}

}  // namespace
}  // namespace rdrr::quant
