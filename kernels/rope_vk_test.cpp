// RoPE (interleaved GGUF-llama order and neox rotate-half, full and partial rotary; computed frequencies and
// CPU frequency tables for llama3 / YaRN / LongRoPE / linear scaling with mscale) vs a double reference.
#include <cmath>

#include "runtime/ops.h"
#include "runtime/rope_freqs.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using runtime::Buffer;
using runtime::testing::VulkanTest;

// theta = pos * base^(-2i/n_rot) is formed in f32 (as every GPU RoPE does): at position ~1000 its absolute
// error is ~1e-4 rad, and Vulkan's sin/cos are a few ulp; measured NMSE ~1e-10 on lavapipe.
constexpr double kRopeNmse = 1e-7;

struct RopeCase {
  uint32_t tokens, heads, head_dim, n_rot;
  runtime::RopeMode mode;
  float base, freq_scale;
  bool in_place;
};

class RopeTest : public VulkanTest, public ::testing::WithParamInterface<RopeCase> {};

TEST_P(RopeTest, MatchesDoubleReference) {
  const RopeCase c = GetParam();
  std::mt19937 rng(c.head_dim * 7 + c.n_rot);
  const uint64_t n = uint64_t{c.tokens} * c.heads * c.head_dim;
  const std::vector<float> x = runtime::testing::random_f32(rng, n);
  std::vector<int32_t> pos(c.tokens);
  for (uint32_t t = 0; t < c.tokens; ++t) pos[t] = static_cast<int32_t>(t == 0 ? 0 : (t * 997) % 1500 + 1);
  Buffer xb = upload(x, "x");
  Buffer pb = upload(pos, "pos");
  Buffer yb = c.in_place ? Buffer{} : poisoned_f32(n, "y");
  runtime::RopeArgs a;
  a.x = xb.range();
  a.pos = pb.range();
  a.y = c.in_place ? xb.range() : yb.range();
  a.n_tokens = c.tokens;
  a.n_heads = c.heads;
  a.head_dim = c.head_dim;
  a.n_rot = c.n_rot;
  a.theta_base = c.base;
  a.freq_scale = c.freq_scale;
  a.mode = c.mode;
  const Status s = runtime::record_rope(rec(), a);
  ASSERT_TRUE(s.ok()) << s.to_string();
  run();
  const std::vector<float> y = download_f32(a.y);
  std::vector<double> ref(x.begin(), x.end());
  const uint32_t half = c.n_rot / 2;
  for (uint32_t t = 0; t < c.tokens; ++t) {
    for (uint32_t h = 0; h < c.heads; ++h) {
      const uint64_t base = (uint64_t{t} * c.heads + h) * c.head_dim;
      for (uint32_t i = 0; i < half; ++i) {
        const double theta = pos[t] * double(c.freq_scale) * std::pow(double(c.base), -2.0 * i / c.n_rot);
        const uint32_t d0 = c.mode == runtime::RopeMode::kInterleaved ? 2 * i : i;
        const uint32_t d1 = c.mode == runtime::RopeMode::kInterleaved ? 2 * i + 1 : i + half;
        const double p = x[base + d0], q = x[base + d1];
        ref[base + d0] = p * std::cos(theta) - q * std::sin(theta);
        ref[base + d1] = p * std::sin(theta) + q * std::cos(theta);
      }
    }
  }
  EXPECT_EQ(runtime::testing::count_non_finite(y), 0u);
  const double e = runtime::testing::nmse(y, ref);
  std::printf("  NMSE %.3e\n", e);
  EXPECT_LT(e, kRopeNmse);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RopeTest,
    ::testing::Values(RopeCase{3, 4, 64, 64, runtime::RopeMode::kNeox, 10000.0f, 1.0f, false},
                      RopeCase{5, 3, 64, 64, runtime::RopeMode::kInterleaved, 500000.0f, 1.0f, false},
                      RopeCase{2, 3, 80, 32, runtime::RopeMode::kNeox, 10000.0f, 0.25f, false},    // partial rotary
                      RopeCase{4, 2, 96, 64, runtime::RopeMode::kInterleaved, 10000.0f, 1.0f, true}  // in place
                      ));

// Frequency-table path: the table comes from rope_frequencies (unit-tested against HF in
// runtime/rope_freqs_test.cpp); the reference rotates by pos * table[i] in double and scales by mscale.
TEST_F(VulkanTest, RopeWithScalingTablesMatchesDoubleReference) {
  using runtime::RopeScalingType;
  struct Case {
    RopeScalingType type;
    runtime::RopeMode mode;
    uint32_t head_dim, n_rot;
  };
  const Case cases[] = {{RopeScalingType::kLlama3, runtime::RopeMode::kInterleaved, 64, 64},
                        {RopeScalingType::kYarn, runtime::RopeMode::kNeox, 64, 64},
                        {RopeScalingType::kLongRope, runtime::RopeMode::kNeox, 96, 64},  // partial rotary
                        {RopeScalingType::kLinear, runtime::RopeMode::kNeox, 32, 32}};
  for (const Case& c : cases) {
    SCOPED_TRACE(static_cast<int>(c.type));
    runtime::RopeScaling sc;
    sc.type = c.type;
    sc.factor = 8.0;
    sc.original_max_position_embeddings = 256;
    for (uint32_t i = 0; i < c.n_rot / 2; ++i) {
      sc.short_factor.push_back(1.0 + 0.1 * i);
      sc.long_factor.push_back(1.0 + 0.5 * i);
    }
    auto f = runtime::rope_frequencies(sc, 10000.0, c.n_rot, 2048);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    const uint32_t tokens = 4, heads = 3;
    std::mt19937 rng(c.head_dim + c.n_rot);
    const uint64_t n = uint64_t{tokens} * heads * c.head_dim;
    const std::vector<float> x = runtime::testing::random_f32(rng, n);
    const std::vector<int32_t> pos = {0, 7, 300, 1999};
    Buffer xb = upload(x, "x");
    Buffer pb = upload(pos, "pos");
    Buffer fb = upload(f->inv_freq, "inv_freq");
    Buffer yb = poisoned_f32(n, "y");
    runtime::RopeArgs a;
    a.x = xb.range();
    a.pos = pb.range();
    a.y = yb.range();
    a.n_tokens = tokens;
    a.n_heads = heads;
    a.head_dim = c.head_dim;
    a.n_rot = c.n_rot;
    a.mode = c.mode;
    a.inv_freq = fb.range();
    a.mscale = f->mscale;
    const Status s = runtime::record_rope(rec(), a);
    ASSERT_TRUE(s.ok()) << s.to_string();
    run();
    const std::vector<float> y = download_f32(a.y);
    std::vector<double> ref(x.begin(), x.end());
    const uint32_t half = c.n_rot / 2;
    for (uint32_t t = 0; t < tokens; ++t) {
      for (uint32_t h = 0; h < heads; ++h) {
        const uint64_t base = (uint64_t{t} * heads + h) * c.head_dim;
        for (uint32_t i = 0; i < half; ++i) {
          const double theta = pos[t] * double(f->inv_freq[i]);
          const uint32_t d0 = c.mode == runtime::RopeMode::kInterleaved ? 2 * i : i;
          const uint32_t d1 = c.mode == runtime::RopeMode::kInterleaved ? 2 * i + 1 : i + half;
          const double p = x[base + d0], q = x[base + d1], m = f->mscale;
          ref[base + d0] = (p * std::cos(theta) - q * std::sin(theta)) * m;
          ref[base + d1] = (p * std::sin(theta) + q * std::cos(theta)) * m;
        }
      }
    }
    EXPECT_EQ(runtime::testing::count_non_finite(y), 0u);
    const double e = runtime::testing::nmse(y, ref);
    std::printf("  NMSE %.3e (mscale %.4f)\n", e, f->mscale);
    EXPECT_LT(e, kRopeNmse);
  }
  Buffer small = alloc(64);
  runtime::RopeArgs bad;
  bad.x = small.range();
  bad.pos = small.range();
  bad.y = small.range();
  bad.n_tokens = 1;
  bad.n_heads = 1;
  bad.head_dim = 8;
  bad.inv_freq = small.range().sub(0, 8);
  const Status s = runtime::record_rope(rec(), bad, "k");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("inv_freq range of 8 bytes < required 16"), std::string::npos) << s.message();
}

TEST_F(VulkanTest, RopeRejectsOddDims) {
  Buffer a = alloc(4096);
  runtime::RopeArgs r;
  r.x = a.range();
  r.pos = a.range();
  r.y = a.range();
  r.n_tokens = 1;
  r.n_heads = 1;
  r.head_dim = 64;
  r.n_rot = 33;
  const Status s = runtime::record_rope(rec(), r, "q");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("rope q [tokens=1 heads=1 head_dim=64 n_rot=33]: head_dim and n_rot must be even"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace rdrr::kernels
