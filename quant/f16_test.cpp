#include "quant/f16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace rdrr::quant {
namespace {

// Exhaustive: every f16 bit pattern decodes and re-encodes to itself (nan payloads quieted only).
TEST(F16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const uint16_t back = f32_to_f16(f);
    const bool is_nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    if (is_nan) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_EQ(back, static_cast<uint16_t>(h | 0x200u)) << h;
    } else {
      EXPECT_EQ(back, h) << "half 0x" << std::hex << h;
    }
  }
}

TEST(F16, RoundsToNearestEvenIncludingSubnormalsAndOverflow) {
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3c00);             // tie -> even (down)
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);         // tie -> even (up)
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);                    // smallest subnormal
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);                    // tie to even -> 0
  EXPECT_EQ(f32_to_f16(0x1.8p-25f), 0x0001);                  // above the tie -> rounds up
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);                    // max finite
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);                    // rounds down to max
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                    // rounds to inf
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f16_to_f32(0x0001), 0x1p-24f);
  EXPECT_EQ(f16_to_f32(0x03ff), 1023 * 0x1p-24f);
}

TEST(BF16, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie -> even (down)
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max float rounds to inf
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    const bool is_nan = (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
    if (!is_nan) {
      EXPECT_EQ(f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(b))), b);
    }
  }
}

}  // namespace
}  // namespace rdrr::quant
