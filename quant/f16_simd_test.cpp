// The bulk f16/bf16 conversions (AVX2 + F16C when available) against the scalar reference functions.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "quant/cpu.h"
#include "quant/f16.h"

namespace rdrr::quant {
namespace {

// Restores the SIMD switch after each test.
class F16Bulk : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam() && !cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2/F16C";
    set_simd_enabled(GetParam());
    ASSERT_EQ(simd_enabled(), GetParam());
  }
  void TearDown() override { set_simd_enabled(true); }
};

// Floats covering every sign/exponent with mantissas around the f16 and bf16 rounding points (ties, just below,
// just above, subnormal f16 results, overflow) plus random patterns, NaNs and infinities.
std::vector<float> float_sweep() {
  std::vector<uint32_t> bits;
  const uint32_t low_patterns[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x7fff, 0x8000, 0x8001, 0xffff};
  for (uint32_t se = 0; se < 512; ++se) {
    for (uint32_t hi = 0; hi < 128; ++hi) {  // mantissa bits 16..22
      for (uint32_t lo : low_patterns) bits.push_back((se << 23) | (hi << 16) | lo);
      for (uint32_t mid = 0; mid < 8; ++mid) bits.push_back((se << 23) | (hi << 16) | (mid << 13) | 0x1000);
    }
  }
  std::mt19937 rng(1);
  for (int i = 0; i < (1 << 20); ++i) bits.push_back(static_cast<uint32_t>(rng()));
  std::vector<float> f(bits.size());
  std::memcpy(f.data(), bits.data(), bits.size() * sizeof(float));
  return f;
}

std::vector<uint16_t> every_half() {
  std::vector<uint16_t> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
  return h;
}

TEST_P(F16Bulk, F16ToF32MatchesScalarForEveryHalf) {
  const std::vector<uint16_t> h = every_half();
  std::vector<float> out(h.size());
  f16_to_f32(h, out);
  for (size_t i = 0; i < h.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(f16_to_f32(h[i]))) << std::hex << h[i];
  }
}

TEST_P(F16Bulk, Bf16ToF32MatchesScalarForEveryBf16) {
  const std::vector<uint16_t> h = every_half();
  std::vector<float> out(h.size());
  bf16_to_f32(h, out);
  for (size_t i = 0; i < h.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(bf16_to_f32(h[i]))) << std::hex << h[i];
  }
}

TEST_P(F16Bulk, F32ToF16AndBf16MatchScalarOverTheSweep) {
  const std::vector<float> f = float_sweep();
  std::vector<uint16_t> h(f.size()), b(f.size());
  f32_to_f16(f, h);
  f32_to_bf16(f, b);
  for (size_t i = 0; i < f.size(); ++i) {
    ASSERT_EQ(h[i], f32_to_f16(f[i])) << std::hex << std::bit_cast<uint32_t>(f[i]);
    ASSERT_EQ(b[i], f32_to_bf16(f[i])) << std::hex << std::bit_cast<uint32_t>(f[i]);
  }
}

// Every length 0..40 at unaligned offsets exercises the vector body and the scalar tail.
TEST_P(F16Bulk, OddLengthsAndUnalignedSpans) {
  const std::vector<float> f = float_sweep();
  for (size_t off = 0; off < 3; ++off) {
    for (size_t n = 0; n <= 40; ++n) {
      const std::span<const float> src(f.data() + 1000 + off, n);
      std::vector<uint16_t> h(n + 1, 0xabcd), b(n + 1, 0xabcd);
      f32_to_f16(src, std::span<uint16_t>(h.data(), n));
      f32_to_bf16(src, std::span<uint16_t>(b.data(), n));
      EXPECT_EQ(h[n], 0xabcd);  // nothing written past the end
      EXPECT_EQ(b[n], 0xabcd);
      std::vector<float> back(n + 1, -7.0f);
      f16_to_f32(std::span<const uint16_t>(h.data(), n), std::span<float>(back.data(), n));
      EXPECT_EQ(back[n], -7.0f);
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(h[i], f32_to_f16(src[i]));
        EXPECT_EQ(b[i], f32_to_bf16(src[i]));
        EXPECT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(f16_to_f32(h[i])));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SimdAndScalar, F16Bulk, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "simd" : "scalar"; });

TEST(SimdSwitch, SetSimdEnabledOverridesAndRestores) {
  set_simd_enabled(false);
  EXPECT_FALSE(simd_enabled());
  set_simd_enabled(true);
  EXPECT_EQ(simd_enabled(), cpu_has_avx2());
}

}  // namespace
}  // namespace rdrr::quant
