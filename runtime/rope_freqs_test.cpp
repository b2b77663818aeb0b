// rope_frequencies vs HF transformers' rope_init_fns, re-derived here in their vectorized (torch.where)
// form, plus the band properties each scaling promises and the validation errors.
#include "runtime/rope_freqs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace rdrr::runtime {
namespace {

std::vector<double> plain(double base, uint32_t n_rot) {
  std::vector<double> f;
  for (uint32_t i = 0; i < n_rot; i += 2) f.push_back(1.0 / std::pow(base, double(i) / n_rot));
  return f;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-7 * want[i]) << "dim pair " << i;
}

TEST(RopeFreqs, NoneAndLinear) {
  auto r = rope_frequencies({}, 10000.0, 64);
  ASSERT_TRUE(r.ok());
  expect_close(r->inv_freq, plain(10000.0, 64));
  EXPECT_EQ(r->mscale, 1.0f);
  RopeScaling lin;
  lin.type = RopeScalingType::kLinear;
  lin.factor = 4.0;
  r = rope_frequencies(lin, 10000.0, 64);
  ASSERT_TRUE(r.ok());
  std::vector<double> want = plain(10000.0, 64);
  for (double& f : want) f /= 4.0;
  expect_close(r->inv_freq, want);
}

TEST(RopeFreqs, Llama3MatchesHfFormulaAndBands) {
  RopeScaling s;
  s.type = RopeScalingType::kLlama3;
  s.factor = 8.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position_embeddings = 8192;
  auto r = rope_frequencies(s, 500000.0, 128);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const std::vector<double> base = plain(500000.0, 128);
  std::vector<double> want(base.size());
  int low = 0, mid = 0, high = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double wavelen = 2 * std::numbers::pi / base[i];
    const double scaled = wavelen > 8192.0 ? base[i] / 8.0 : base[i];  // inv_freq_llama
    const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
    const bool medium = !(wavelen < 8192.0 / 4.0) && !(wavelen > 8192.0 / 1.0);
    want[i] = medium ? (1 - smooth) * scaled / 8.0 + smooth * scaled : scaled;
    if (wavelen < 2048.0) {
      ++high;
      EXPECT_EQ(r->inv_freq[i], static_cast<float>(base[i]));
    } else if (wavelen > 8192.0) {
      ++low;
      EXPECT_NEAR(r->inv_freq[i], base[i] / 8.0, 1e-7 * base[i]);
    } else {
      ++mid;
      EXPECT_LT(r->inv_freq[i], base[i]);
      EXPECT_GT(r->inv_freq[i], base[i] / 8.0 * (1 - 1e-7));
    }
  }
  expect_close(r->inv_freq, want);
  EXPECT_GT(low, 0);
  EXPECT_GT(mid, 0);
  EXPECT_GT(high, 0);
  for (size_t i = 1; i < r->inv_freq.size(); ++i) EXPECT_LT(r->inv_freq[i], r->inv_freq[i - 1]);
}

TEST(RopeFreqs, YarnRampsBetweenExtrapolationAndInterpolation) {
  RopeScaling s;
  s.type = RopeScalingType::kYarn;
  s.factor = 4.0;
  s.original_max_position_embeddings = 4096;
  auto r = rope_frequencies(s, 10000.0, 128);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const std::vector<double> base = plain(10000.0, 128);
  auto corr = [](double rot) { return 128.0 * std::log(4096.0 / (rot * 2 * std::numbers::pi)) / (2 * std::log(10000.0)); };
  const double lo = std::max(std::floor(corr(32.0)), 0.0);
  const double hi = std::min(std::ceil(corr(1.0)), 127.0);
  std::vector<double> want(base.size());
  for (size_t i = 0; i < base.size(); ++i) {
    const double ramp = std::clamp((double(i) - lo) / (hi - lo), 0.0, 1.0);
    const double extra = 1.0 - ramp;  // inv_freq_extrapolation_factor
    want[i] = base[i] / 4.0 * (1 - extra) + base[i] * extra;
  }
  expect_close(r->inv_freq, want);
  EXPECT_EQ(r->inv_freq[0], static_cast<float>(base[0]));  // highest frequency: extrapolated (unchanged)
  EXPECT_NEAR(r->inv_freq.back(), base.back() / 4.0, 1e-7 * base.back());
  EXPECT_NEAR(r->mscale, 0.1 * std::log(4.0) + 1.0, 1e-6);
  s.attention_factor = 1.25;
  r = rope_frequencies(s, 10000.0, 128);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mscale, 1.25f);
}

TEST(RopeFreqs, LongRopePicksFactorsBySequenceLength) {
  RopeScaling s;
  s.type = RopeScalingType::kLongRope;
  s.factor = 32.0;  // max_position_embeddings / original_max_position_embeddings
  s.original_max_position_embeddings = 4096;
  for (uint32_t i = 0; i < 16; ++i) {
    s.short_factor.push_back(1.0 + 0.01 * i);
    s.long_factor.push_back(1.0 + 2.0 * i);
  }
  const std::vector<double> base = plain(10000.0, 32);
  for (uint64_t seq : {uint64_t{100}, uint64_t{5000}}) {
    auto r = rope_frequencies(s, 10000.0, 32, seq);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const std::vector<double>& ext = seq > 4096 ? s.long_factor : s.short_factor;
    std::vector<double> want(base.size());
    for (size_t i = 0; i < base.size(); ++i) want[i] = base[i] / ext[i];
    expect_close(r->inv_freq, want);
    EXPECT_NEAR(r->mscale, std::sqrt(1.0 + std::log(32.0) / std::log(4096.0)), 1e-6);
  }
}

// llama.cpp's rope_freqs tensor (convert_hf_to_gguf's llama3 factors, stored as f32) divides the plain
// frequencies; it reproduces transformers' llama3 scaling to the f32 rounding of the factors.
TEST(RopeFreqs, FreqFactorsReproduceLlama3) {
  RopeScaling l3;
  l3.type = RopeScalingType::kLlama3;
  l3.factor = 8.0;
  l3.low_freq_factor = 1.0;
  l3.high_freq_factor = 4.0;
  l3.original_max_position_embeddings = 64;
  RopeScaling ff;
  ff.type = RopeScalingType::kFreqFactors;
  for (double f : plain(500000.0, 64)) {
    const double wavelen = 2.0 * std::numbers::pi / f, low = 64.0 / 1.0, high = 64.0 / 4.0;
    double factor = 1.0;
    if (wavelen > low) {
      factor = 8.0;
    } else if (wavelen >= high) {
      const double smooth = (64.0 / wavelen - 1.0) / (4.0 - 1.0);
      factor = 1.0 / ((1.0 - smooth) / 8.0 + smooth);
    }
    ff.freq_factors.push_back(static_cast<float>(factor));
  }
  auto a = rope_frequencies(l3, 500000.0, 64);
  auto b = rope_frequencies(ff, 500000.0, 64);
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().to_string();
  std::vector<double> want(a->inv_freq.begin(), a->inv_freq.end());
  expect_close(b->inv_freq, want);
  EXPECT_EQ(b->mscale, 1.0f);
  size_t scaled = 0;
  for (double f : ff.freq_factors) scaled += f != 1.0;
  EXPECT_GT(scaled, 4u);  // the case exercises the scaled bands
  ff.freq_factors[3] = -1.0;
  EXPECT_NE(rope_frequencies(ff, 500000.0, 64).status().message().find("freq_factors 3 must be finite and > 0"),
            std::string::npos);
  ff.freq_factors.pop_back();
  EXPECT_EQ(rope_frequencies(ff, 500000.0, 64).status().code(), StatusCode::kInvalidArgument);
}

TEST(RopeFreqs, ErrorsNameTheField) {
  RopeScaling s;
  s.type = RopeScalingType::kLlama3;
  s.factor = 8.0;
  auto r = rope_frequencies(s, 500000.0, 128);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("original_max_position_embeddings is 0"), std::string::npos);
  s.type = RopeScalingType::kLongRope;
  s.original_max_position_embeddings = 4096;
  s.short_factor = {1.0, 2.0};
  r = rope_frequencies(s, 10000.0, 32, 10);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("short_factor has 2 entries, expected n_rot / 2 = 16"), std::string::npos)
      << r.status().message();
  s.type = RopeScalingType::kLinear;
  s.factor = 0.0;
  r = rope_frequencies(s, 10000.0, 32);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("factor"), std::string::npos);
  r = rope_frequencies({}, 10000.0, 33);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("n_rot 33 must be even"), std::string::npos);
}

}  // namespace
}  // namespace rdrr::runtime
