#include "quant/q8_0.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/f16.h"

namespace rdrr::quant {
namespace {

std::vector<float> normal_values(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

BlockQ8_0 encode_one(const std::vector<float>& x) {
  BlockQ8_0 b{};
  quantize_q8_0(x, std::span<BlockQ8_0>(&b, 1));
  return b;
}

std::vector<float> decode_one(const BlockQ8_0& b) {
  std::vector<float> y(kQK8_0);
  dequantize_q8_0(std::span<const BlockQ8_0>(&b, 1), y);
  return y;
}

TEST(Q8_0, HandBuiltBlockDecodesToScaleTimesQuant) {
  BlockQ8_0 b{};
  b.d = 0x3800;  // 0.5
  for (int j = 0; j < kQK8_0; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 127);
  const std::vector<float> y = decode_one(b);
  for (int j = 0; j < kQK8_0; ++j) EXPECT_EQ(y[j], 0.5f * static_cast<float>(j * 8 - 127)) << j;
  // Byte layout: d little-endian first, then the 32 int8 values.
  uint8_t raw[sizeof(BlockQ8_0)];
  std::memcpy(raw, &b, sizeof raw);
  EXPECT_EQ(raw[0], 0x00);
  EXPECT_EQ(raw[1], 0x38);
  EXPECT_EQ(static_cast<int8_t>(raw[2]), -127);
}

TEST(Q8_0, ScaleIsMaxAbsOver127AndLargestValueMapsTo127) {
  std::vector<float> x = normal_values(kQK8_0, 1);
  x[7] = -4.0f;  // the largest magnitude, negative
  const BlockQ8_0 b = encode_one(x);
  EXPECT_EQ(b.d, f32_to_f16(4.0f / 127.0f));
  EXPECT_EQ(b.qs[7], -127);
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kQK8_0; ++j) {
    EXPECT_EQ(b.qs[j], static_cast<int8_t>(std::nearbyint(x[j] / d))) << j;  // default mode: ties to even
  }
}

TEST(Q8_0, RoundsHalfToEven) {
  std::vector<float> x(kQK8_0, 0.0f);
  x[0] = 127.0f;  // d = 1 exactly
  x[1] = 2.5f;
  x[2] = 3.5f;
  x[3] = -2.5f;
  x[4] = 0.5f;
  const BlockQ8_0 b = encode_one(x);
  EXPECT_EQ(b.d, 0x3c00);
  EXPECT_EQ(b.qs[1], 2);
  EXPECT_EQ(b.qs[2], 4);
  EXPECT_EQ(b.qs[3], -2);
  EXPECT_EQ(b.qs[4], 0);
}

TEST(Q8_0, RoundTripErrorIsAtMostHalfAStep) {
  const std::vector<float> x = normal_values(64 * kQK8_0, 2, 0.05f);
  std::vector<BlockQ8_0> b(64);
  quantize_q8_0(x, b);
  std::vector<float> y(x.size());
  dequantize_q8_0(b, y);
  double se = 0, s2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = f16_to_f32(b[i / kQK8_0].d);
    EXPECT_LE(std::fabs(x[i] - y[i]), 0.5f * d * 1.0001f) << i;
    se += (x[i] - y[i]) * static_cast<double>(x[i] - y[i]);
    s2 += x[i] * static_cast<double>(x[i]);
  }
  EXPECT_LT(std::sqrt(se / s2), 0.01);
}

TEST(Q8_0, ZeroBlockIsAllZero) {
  const BlockQ8_0 b = encode_one(std::vector<float>(kQK8_0, 0.0f));
  EXPECT_EQ(b.d, 0);
  for (int j = 0; j < kQK8_0; ++j) EXPECT_EQ(b.qs[j], 0);
  for (float v : decode_one(b)) EXPECT_EQ(v, 0.0f);
}

TEST(Q8_0, AllEqualAndAllPositiveBlocks) {
  const BlockQ8_0 eq = encode_one(std::vector<float>(kQK8_0, -0.3f));
  for (int j = 0; j < kQK8_0; ++j) EXPECT_EQ(eq.qs[j], -127);
  for (float v : decode_one(eq)) EXPECT_NEAR(v, -0.3f, 0.3f * 1e-3f);

  std::vector<float> pos(kQK8_0);
  for (int j = 0; j < kQK8_0; ++j) pos[j] = 1.0f + 0.03f * static_cast<float>(j);
  const std::vector<float> y = decode_one(encode_one(pos));
  for (int j = 0; j < kQK8_0; ++j) EXPECT_NEAR(y[j], pos[j], 0.5f * 1.93f / 127.0f * 1.001f) << j;
}

TEST(Q8_0, HugeValuesSaturateTheScaleAndStayFinite) {
  std::vector<float> x(kQK8_0, 1e10f);
  x[3] = -1e10f;
  const BlockQ8_0 b = encode_one(x);
  EXPECT_EQ(b.d, 0x7bff);  // largest finite f16
  for (float v : decode_one(b)) EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(b.qs[3], -127);
}

TEST(Q8_0, EncodingIsDeterministic) {
  const std::vector<float> x = normal_values(32 * kQK8_0, 3);
  std::vector<BlockQ8_0> a(32), b(32);
  quantize_q8_0(x, a);
  quantize_q8_0(x, b);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(BlockQ8_0)), 0);
}

}  // namespace
}  // namespace rdrr::quant
