// GPU argmax and top-k / temperature sampling vs a CPU reference of the same Gumbel-max draw (same hash,
// noise in double): greedy ties go to the first index across chunk boundaries, NaN is never chosen, top-k
// keeps ties at the k-th value, top_k = 1 is greedy, and the seeded draw reproduces the CPU token. The CPU
// draw itself is checked against softmax(logits / T) by frequency.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using runtime::Buffer;
using runtime::testing::VulkanTest;

constexpr uint32_t kNone = 0xffffffffu;
// GPU Gumbel noise differs from the double reference by <~1e-5 (f32 logs); draws whose best and second-best
// perturbed scores are closer than this are not compared.
constexpr double kMinMargin = 1e-3;

uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

struct Draw {
  uint32_t token = kNone;
  double margin = INFINITY;  // best minus second-best score
};

// kernels/sample.comp in double.
Draw cpu_sample(std::span<const float> logits, float temperature, uint32_t top_k, uint64_t seed) {
  double thr = -INFINITY;
  if (temperature > 0.0f && top_k != 0 && top_k < logits.size()) {
    std::vector<float> v;
    for (float l : logits) {
      if (!std::isnan(l)) v.push_back(l);
    }
    std::nth_element(v.begin(), v.begin() + (top_k - 1), v.end(), std::greater<float>());
    thr = v[top_k - 1];
  }
  const uint32_t key = mix32(static_cast<uint32_t>(seed) ^ mix32(static_cast<uint32_t>(seed >> 32) ^ 0x9e3779b9u));
  Draw d;
  double best = -INFINITY, second = -INFINITY;
  for (uint32_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i]) || logits[i] < thr) continue;
    double s = logits[i];
    if (temperature > 0.0f) {
      const double u = (double(mix32(mix32(i) ^ key) >> 9) + 0.5) / 8388608.0;
      s = s / temperature - std::log(-std::log(u));
    }
    if (s > best) {
      second = best;
      best = s;
      d.token = i;
    } else if (s > second) {
      second = s;
    }
  }
  d.margin = best - second;
  return d;
}

class SampleTest : public VulkanTest {
 protected:
  // Records one selection per argument set into one submission; returns the tokens.
  std::vector<uint32_t> gpu_tokens(const std::vector<float>& logits, std::span<const runtime::SampleArgs> draws) {
    Buffer lb = upload(logits, "logits");
    const uint32_t n = static_cast<uint32_t>(logits.size());
    Buffer scratch = alloc(runtime::sample_scratch_bytes(n), "scratch");
    constexpr uint64_t kSlot = 256;  // token slots at binding-aligned offsets
    Buffer tokens = alloc(kSlot * draws.size(), "tokens");
    EXPECT_TRUE(dev().fill(tokens.range(), 0x5a5a5a5au).ok());
    for (size_t i = 0; i < draws.size(); ++i) {
      runtime::SampleArgs a = draws[i];
      a.logits = lb.range();
      a.scratch = scratch.range();
      a.token = tokens.range().sub(i * kSlot, 4);
      a.n = n;
      const Status s = runtime::record_sample(rec(), a);
      EXPECT_TRUE(s.ok()) << s.to_string();
    }
    run();
    std::vector<uint32_t> all(kSlot / 4 * draws.size());
    EXPECT_TRUE(dev().download(tokens.range(), std::as_writable_bytes(std::span(all))).ok());
    std::vector<uint32_t> out;
    for (size_t i = 0; i < draws.size(); ++i) out.push_back(all[i * kSlot / 4]);
    return out;
  }
};

TEST_F(SampleTest, ArgmaxTakesFirstMaximumAcrossChunksAndSkipsNaN) {
  std::mt19937 rng(5);
  std::vector<float> logits = runtime::testing::random_f32(rng, 50000, -20.0f, 20.0f);
  logits[40000] = 25.0f;
  logits[777] = 25.0f;  // same maximum, lower index
  logits[3] = std::numeric_limits<float>::quiet_NaN();
  logits[4] = std::numeric_limits<float>::infinity() * 0.0f;  // NaN too
  runtime::SampleArgs greedy;
  EXPECT_EQ(gpu_tokens(logits, std::span(&greedy, 1))[0], 777u);
  // Maximum tied across the 4096-logit chunk boundary, and a later chunk with the maximum alone.
  std::vector<float> edge(4097 + 5000, -1.0f);
  edge[4095] = 2.0f;
  edge[4096] = 2.0f;
  EXPECT_EQ(gpu_tokens(edge, std::span(&greedy, 1))[0], 4095u);
  edge[9000] = 3.0f;
  EXPECT_EQ(gpu_tokens(edge, std::span(&greedy, 1))[0], 9000u);
  EXPECT_EQ(gpu_tokens({-7.5f}, std::span(&greedy, 1))[0], 0u);
  const float ninf = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(gpu_tokens({ninf, std::numeric_limits<float>::quiet_NaN(), ninf}, std::span(&greedy, 1))[0], kNone);
}

TEST_F(SampleTest, SeededDrawsReproduceTheCpuDraw) {
  std::mt19937 rng(17);
  std::vector<float> logits = runtime::testing::random_f32(rng, 3001, -4.0f, 4.0f);
  std::sort(logits.begin() + 100, logits.begin() + 110);
  for (uint32_t i = 100; i < 110; ++i) logits[i] = 4.5f;  // 10-way tie at the top: top-5 keeps all ten
  logits[2000] = std::numeric_limits<float>::quiet_NaN();
  std::vector<runtime::SampleArgs> draws;
  for (float t : {0.7f, 1.3f}) {
    for (uint32_t k : {0u, 1u, 5u, 50u}) {
      for (uint64_t seed = 0; seed < 12; ++seed) {
        runtime::SampleArgs a;
        a.temperature = t;
        a.top_k = k;
        a.seed = seed * 0x9e3779b97f4a7c15ull;
        draws.push_back(a);
      }
    }
  }
  const std::vector<uint32_t> got = gpu_tokens(logits, draws);
  std::vector<float> sorted;
  for (float l : logits) {
    if (!std::isnan(l)) sorted.push_back(l);
  }
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  size_t compared = 0;
  for (size_t i = 0; i < draws.size(); ++i) {
    const Draw want = cpu_sample(logits, draws[i].temperature, draws[i].top_k, draws[i].seed);
    SCOPED_TRACE("T=" + std::to_string(draws[i].temperature) + " k=" + std::to_string(draws[i].top_k) +
                 " draw " + std::to_string(i));
    ASSERT_LT(got[i], logits.size());
    if (draws[i].top_k != 0) {
      EXPECT_GE(logits[got[i]], sorted[draws[i].top_k - 1]) << "outside top-k";
    }
    if (draws[i].top_k == 1) {
      EXPECT_TRUE(got[i] >= 100 && got[i] < 110) << "top_k = 1 keeps only the tied maxima";
    }
    if (want.margin < kMinMargin) continue;
    ++compared;
    EXPECT_EQ(got[i], want.token);
  }
  std::printf("  %zu of %zu draws compared token for token\n", compared, draws.size());
  EXPECT_GT(compared, draws.size() * 9 / 10);
}

// The draw the kernel implements is softmax(logits / T): frequencies of the CPU mirror over many seeds.
TEST(SampleDistribution, GumbelDrawFollowsSoftmax) {
  const std::vector<float> logits = {1.0f, 0.5f, -0.3f, 2.0f, 0.0f, -1.0f, 1.5f, 0.2f};
  for (float t : {1.0f, 0.6f}) {
    std::vector<double> p(logits.size());
    double z = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) z += (p[i] = std::exp(logits[i] / t));
    std::vector<double> freq(logits.size(), 0.0);
    const int draws = 200000;
    for (int s = 0; s < draws; ++s) freq[cpu_sample(logits, t, 0, uint64_t(s) * 7919 + 1).token] += 1.0 / draws;
    for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(freq[i], p[i] / z, 0.005) << "token " << i << " T " << t;
  }
}

TEST_F(SampleTest, ErrorsNameTheBadField) {
  Buffer logits = alloc(4096);
  Buffer scratch = alloc(16);
  Buffer token = alloc(256);
  runtime::SampleArgs a;
  a.logits = logits.range();
  a.scratch = scratch.range();
  a.token = token.range();
  a.n = 1024;
  Status s = runtime::record_sample(rec(), a, "lm_head");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("sample lm_head [n=1024 top_k=0 T=0.000000]: scratch range of 16 bytes < required 24"),
            std::string::npos)
      << s.message();
  a.n = 2000;
  s = runtime::record_argmax(rec(), logits.range(), token.range(), token.range(), 2000);
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("sample argmax [n=2000"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("logits range of 4096 bytes < required 8000"), std::string::npos) << s.message();
  EXPECT_EQ(rec().dispatch_count(), 0u);
}

}  // namespace
}  // namespace rdrr::kernels
