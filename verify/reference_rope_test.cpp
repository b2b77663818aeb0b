// make_rope_tables for LongRoPE and llama.cpp's freq_factors, and apply_rope's choice of LongRoPE's table
// by the last position of a pass (transformers' longrope_frequency_update), against the formulas written out.
#include "verify/reference_rope.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rdrr::verify {
namespace {

constexpr uint64_t kHeadDim = 8;  // 4 pairs
constexpr double kTheta = 10000.0;

double plain(size_t i) { return 1.0 / std::pow(kTheta, 2.0 * static_cast<double>(i) / kHeadDim); }

rdrr::RopeConfig longrope() {
  rdrr::RopeConfig r;
  r.theta = kTheta;
  r.scaling_type = rdrr::RopeScalingType::kLongRope;
  r.original_max_positions = 16;
  r.attention_factor = 1.25;
  r.short_factors = {1.0, 1.5, 2.0, 2.5};
  r.long_factors = {1.0, 4.0, 16.0, 64.0};
  return r;
}

// One row of one head, all ones, rotated at `pos` as a pass of `rows` rows starting at pos (its first row).
std::vector<double> rotated(const RopeTables& t, size_t pos, size_t rows) {
  Matrix x(rows, kHeadDim);
  for (double& v : x.data) v = 1.0;
  apply_rope(x, kHeadDim, t, pos);
  return std::vector<double>(x.row(0).begin(), x.row(0).end());
}

std::vector<double> expected(const std::vector<double>& factors, double mscale, size_t pos) {
  std::vector<double> out(kHeadDim);
  for (size_t i = 0; i < kHeadDim / 2; ++i) {
    const double a = static_cast<double>(pos) * plain(i) / factors[i];
    const double c = std::cos(a) * mscale, s = std::sin(a) * mscale;
    out[i] = c - s;                  // x_a c - x_b s with x = 1
    out[i + kHeadDim / 2] = c + s;  // x_b c + x_a s
  }
  return out;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "element " << i;
}

TEST(ReferenceRope, LongRopeTableFollowsThePassEnd) {
  const rdrr::RopeConfig r = longrope();
  Result<RopeTables> t = make_rope_tables(r, kHeadDim, rdrr::LayerType::kFullAttention);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  // A pass ending at position 15 (16 positions) stays within the original context: short factors.
  expect_near(rotated(*t, 5, 11), expected(r.short_factors, 1.25, 5));
  // The same row in a pass ending at position 16 uses the long factors, as transformers re-runs it.
  expect_near(rotated(*t, 5, 12), expected(r.long_factors, 1.25, 5));
  expect_near(rotated(*t, 20, 1), expected(r.long_factors, 1.25, 20));
}

TEST(ReferenceRope, FreqFactorsDivideThePlainFrequencies) {
  rdrr::RopeConfig r;
  r.theta = kTheta;
  r.scaling_type = rdrr::RopeScalingType::kFreqFactors;
  r.freq_factors = {1.0, 2.0, 8.0, 8.0};
  Result<RopeTables> t = make_rope_tables(r, kHeadDim, rdrr::LayerType::kFullAttention);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  expect_near(rotated(*t, 7, 1), expected(r.freq_factors, 1.0, 7));
  r.freq_factors.pop_back();
  EXPECT_EQ(make_rope_tables(r, kHeadDim, rdrr::LayerType::kFullAttention).status().code(), StatusCode::kValidation);
}

TEST(ReferenceRope, LongRopeNeedsItsFields) {
  rdrr::RopeConfig r = longrope();
  r.attention_factor.reset();
  EXPECT_EQ(make_rope_tables(r, kHeadDim, rdrr::LayerType::kFullAttention).status().code(), StatusCode::kValidation);
  r = longrope();
  r.long_factors.pop_back();
  const Status s = make_rope_tables(r, kHeadDim, rdrr::LayerType::kFullAttention).status();
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("ropeLongFactors has 3 entries, expected 4"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace rdrr::verify
