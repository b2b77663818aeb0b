#include "quant/q4_k.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "quant/cpu.h"
#include "quant/fixture_test_util.h"
#include "quant/f16.h"

namespace rdrr::quant {
namespace {

const std::string kFixtures = RDRR_FIXTURES_DIR;
const char* const kModels[] = {"tiny-llama", "tiny-qwen2", "tiny-gemma3"};

using test_util::read_file;
using test_util::sha256_hex;

std::vector<float> decode(const std::vector<BlockQ4K>& b) {
  std::vector<float> y(b.size() * kQK_K);
  dequantize_q4_k(b, y);
  return y;
}

std::vector<BlockQ4K> encode(const std::vector<float>& x, const std::vector<float>& w = {}) {
  std::vector<BlockQ4K> b(x.size() / kQK_K);
  quantize_q4_k(x, b, w);
  return b;
}

std::vector<BlockQ4K> encode_reference(const std::vector<float>& x) {
  std::vector<BlockQ4K> b(x.size() / kQK_K);
  quantize_q4_k_reference(x, b);
  return b;
}

// Per-block objective sum w*(x - decoded)^2 in double (w = 1 when empty).
std::vector<double> block_errors(const std::vector<float>& x, const std::vector<BlockQ4K>& b,
                                 const std::vector<float>& w = {}) {
  const std::vector<float> y = decode(b);
  std::vector<double> e(b.size(), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - y[i];
    e[i / kQK_K] += (w.empty() ? 1.0 : w[i]) * d * d;
  }
  return e;
}

double rel_rmse(const std::vector<float>& x, const std::vector<BlockQ4K>& b) {
  const std::vector<float> y = decode(b);
  double se = 0, ss = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    se += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    ss += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(se / ss);
}

bool same_bytes(const std::vector<BlockQ4K>& a, const std::vector<BlockQ4K>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(BlockQ4K)) == 0;
}

// Many kinds of blocks: Gaussian at several scales, uniform, heavy tails, all-positive and all-negative
// sub-blocks, constants, zeros, outliers, per-sub-block scale changes.
std::vector<float> varied_blocks(size_t n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::student_t_distribution<float> heavy(2.f);
  std::vector<float> x(n_blocks * kQK_K);
  for (size_t b = 0; b < n_blocks; ++b) {
    float* v = x.data() + b * kQK_K;
    const int kind = static_cast<int>(b % 10);
    const float scale = std::pow(10.f, static_cast<float>(static_cast<int>(b % 7)) - 4.f);  // 1e-4 .. 1e2
    for (int i = 0; i < kQK_K; ++i) {
      const int sub = i / 32;
      float t = 0;
      switch (kind) {
        case 0: t = normal(rng); break;
        case 1: t = uni(rng); break;
        case 2: t = heavy(rng); break;
        case 3: t = std::fabs(normal(rng)) + 1.f; break;           // all positive
        case 4: t = -std::fabs(normal(rng)) - 0.5f; break;         // all negative
        case 5: t = sub % 2 == 0 ? 0.f : normal(rng); break;         // zero sub-blocks
        case 6: t = 0.75f; break;                                    // constant
        case 7: t = normal(rng) * (i == 77 ? 300.f : 1.f); break;    // one outlier
        case 8: t = normal(rng) * std::pow(2.f, static_cast<float>(sub)); break;  // sub-block scales differ
        default: t = sub == 3 ? 1.f : normal(rng); break;            // one constant sub-block
      }
      v[i] = t * scale;
    }
  }
  return x;
}

TEST(Q4KScales, PackMatchesGgufLayout) {
  Q4KScales c{};
  for (int j = 0; j < 8; ++j) {
    c.sc[j] = static_cast<uint8_t>(10 + 7 * j);  // 10, 17, ..., 59
    c.m[j] = static_cast<uint8_t>(63 - 5 * j);   // 63, 58, ..., 28
  }
  uint8_t packed[12];
  pack_q4k_scales(c, packed);
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(packed[j] & 63, c.sc[j]);
    EXPECT_EQ(packed[j + 4] & 63, c.m[j]);
    EXPECT_EQ(packed[j] >> 6, c.sc[j + 4] >> 4);
    EXPECT_EQ(packed[j + 4] >> 6, c.m[j + 4] >> 4);
    EXPECT_EQ(packed[j + 8], (c.sc[j + 4] & 15) | ((c.m[j + 4] & 15) << 4));
  }
  // sc[5] = 45 = 0b101101: low nibble 1101 in byte 9, top bits 10 in bits 6-7 of byte 1.
  EXPECT_EQ(packed[9] & 15, 0b1101);
  EXPECT_EQ(packed[1] >> 6, 0b10);
}

TEST(Q4KScales, RoundTripsEveryCode) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    Q4KScales c{};
    for (int j = 0; j < 8; ++j) {
      c.sc[j] = static_cast<uint8_t>(rng() % 64);
      c.m[j] = static_cast<uint8_t>(rng() % 64);
    }
    if (iter < 64) std::fill(std::begin(c.sc), std::end(c.sc), static_cast<uint8_t>(iter));
    uint8_t packed[12];
    pack_q4k_scales(c, packed);
    const Q4KScales back = unpack_q4k_scales(packed);
    for (int j = 0; j < 8; ++j) {
      ASSERT_EQ(back.sc[j], c.sc[j]);
      ASSERT_EQ(back.m[j], c.m[j]);
    }
  }
}

// The decoder reproduces gguf-py's float32 decode of llama.cpp's Q4_K blocks bit for bit (SHA-256 of the
// output bytes). Q6_K entries of the same index belong to the Q6_K codec's tests.
TEST(Q4KDecode, MatchesGgufPyGoldenHashes) {
  int checked = 0;
  for (const char* model : kModels) {
    const std::string dir = kFixtures + "/" + model + "/golden/dequant/";
    std::ifstream index_file(dir + "index.json");
    ASSERT_TRUE(index_file.good()) << dir;
    const nlohmann::json index = nlohmann::json::parse(index_file);
    std::map<std::string, std::string> expected;  // dequant file -> sha256
    std::ifstream sums(dir + "dequant.sha256");
    for (std::string hash, file; sums >> hash >> file;) expected[file] = hash;
    for (const auto& t : index.at("tensors")) {
      if (t.at("ggml_type").get<std::string>() != "Q4_K") continue;
      const std::vector<uint8_t> bytes = read_file(dir + t.at("blocks_file").get<std::string>());
      ASSERT_EQ(bytes.size(), t.at("blocks_bytes").get<size_t>()) << t.at("name");
      ASSERT_EQ(bytes.size() % sizeof(BlockQ4K), 0u);
      EXPECT_EQ(sha256_hex(bytes.data(), bytes.size()), t.at("blocks_sha256").get<std::string>());
      std::vector<BlockQ4K> blocks(bytes.size() / sizeof(BlockQ4K));
      std::memcpy(blocks.data(), bytes.data(), bytes.size());
      const std::vector<float> y = decode(blocks);
      ASSERT_EQ(y.size(), t.at("n_values").get<size_t>());
      const std::string file = t.at("dequant_file").get<std::string>();
      ASSERT_TRUE(expected.count(file)) << file;
      EXPECT_EQ(sha256_hex(y.data(), y.size() * sizeof(float)), expected[file]) << model << " " << t.at("name");
      ++checked;
    }
  }
  EXPECT_GE(checked, 3);
}

TEST(Q4KEncode, ScalarAndAvx2GiveIdenticalBytes) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU";
  const std::vector<float> x = varied_blocks(3000, 11);
  std::vector<float> w(x.size());
  std::mt19937 rng(5);
  std::exponential_distribution<float> expo(1.f);
  for (float& v : w) v = expo(rng);
  std::vector<BlockQ4K> s_plain, s_weighted, s_ref, v_plain, v_weighted, v_ref;
  set_simd_enabled(false);
  s_plain = encode(x);
  s_weighted = encode(x, w);
  s_ref = encode_reference(x);
  set_simd_enabled(true);
  v_plain = encode(x);
  v_weighted = encode(x, w);
  v_ref = encode_reference(x);
  EXPECT_TRUE(same_bytes(s_plain, v_plain));
  EXPECT_TRUE(same_bytes(s_weighted, v_weighted));
  EXPECT_TRUE(same_bytes(s_ref, v_ref));
  // An odd block count exercises the single-block (not interleaved) reference search.
  const std::vector<float> odd(x.begin(), x.begin() + 3 * kQK_K);
  set_simd_enabled(false);
  const std::vector<BlockQ4K> s_odd = encode(odd);
  set_simd_enabled(true);
  EXPECT_TRUE(same_bytes(s_odd, encode(odd)));
}

// Against llama.cpp's reference quantizer (which the encoder no longer starts from): for every kind of block
// of varied_blocks, the total error is lower, in the plain squared error and in a weighted objective; no block
// is much worse; ordinary blocks are clearly better on average.
TEST(Q4KEncode, BetterThanReferenceOnEveryKindOfBlock) {
  const std::vector<float> x = varied_blocks(2000, 3);
  std::vector<float> w(x.size());
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(0.f, 4.f);
  for (float& v : w) v = u(rng);
  const std::vector<BlockQ4K> ref = encode_reference(x);
  const std::vector<double> e_ref = block_errors(x, ref), e_ref_w = block_errors(x, ref, w);
  const std::vector<double> e_ours = block_errors(x, encode(x));
  const std::vector<double> e_ours_w = block_errors(x, encode(x, w), w);
  double kind_ours[10] = {}, kind_ref[10] = {}, kind_ours_w[10] = {}, kind_ref_w[10] = {};
  double ratio_sum = 0, worst = 0;
  int ratio_count = 0;
  for (size_t b = 0; b < e_ref.size(); ++b) {
    const size_t kind = b % 10;
    kind_ours[kind] += e_ours[b];
    kind_ref[kind] += e_ref[b];
    kind_ours_w[kind] += e_ours_w[b];
    kind_ref_w[kind] += e_ref_w[b];
    // Exact blocks (constants, zeros) stay exact up to f16 rounding of the scales.
    const double floor = 1e-9 * (1 + e_ref[b]);
    if (e_ref[b] > 1e-12) worst = std::max(worst, e_ours[b] / e_ref[b]);
    EXPECT_LE(e_ours[b], 1.25 * e_ref[b] + floor) << "block " << b;
    EXPECT_LE(e_ours_w[b], 1.25 * e_ref_w[b] + 1e-9 * (1 + e_ref_w[b])) << "block " << b;
    if (kind == 0 || kind == 1 || kind == 8) {  // Gaussian, uniform, mixed sub-block scales
      ratio_sum += e_ours[b] / e_ref[b];
      ++ratio_count;
    }
  }
  for (int kind = 0; kind < 10; ++kind) {
    std::printf("kind %d: squared-error ratio %.4f, weighted %.4f\n", kind, kind_ours[kind] / kind_ref[kind],
                kind_ours_w[kind] / kind_ref_w[kind]);
    EXPECT_LE(kind_ours[kind], kind_ref[kind] * (1 + 1e-6)) << "kind " << kind;
    EXPECT_LE(kind_ours_w[kind], kind_ref_w[kind] * (1 + 1e-6)) << "kind " << kind;
  }
  std::printf("worst block ratio %.4f, mean ratio on ordinary blocks %.4f\n", worst, ratio_sum / ratio_count);
  EXPECT_LT(ratio_sum / ratio_count, 0.98);  // mean squared-error ratio on ordinary blocks
}

TEST(Q4KEncode, WeightsSteerTheError) {
  // Heavy weights on every other value: the weighted encode must have a lower weighted error overall than the
  // unweighted one.
  const std::vector<float> x = varied_blocks(500, 21);
  std::vector<float> w(x.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = i % 2 == 0 ? 50.f : 0.1f;
  double weighted = 0, plain = 0;
  for (double e : block_errors(x, encode(x, w), w)) weighted += e;
  for (double e : block_errors(x, encode(x), w)) plain += e;
  EXPECT_LT(weighted, plain);
  // All-zero weights: every block is optimal; the encoding stays deterministic and decodes to finite values.
  const std::vector<float> zeros(x.size(), 0.f);
  const std::vector<BlockQ4K> z = encode(x, zeros);
  EXPECT_TRUE(same_bytes(z, encode(x, zeros)));
  for (float y : decode(z)) ASSERT_TRUE(std::isfinite(y));
}

TEST(Q4KEncode, ConstantsAndZeros) {
  {  // all-positive constant: the min clamp must not turn 1.0 into 0
    const std::vector<float> x(kQK_K, 1.0f);
    for (float y : decode(encode(x))) EXPECT_NEAR(y, 1.0f, 1e-3f);
  }
  {  // negative constant: represented by the sub-min alone
    const std::vector<float> x(kQK_K, -1.0f);
    for (float y : decode(encode(x))) EXPECT_NEAR(y, -1.0f, 1e-3f);
  }
  {  // all zeros: exact zeros, zero scales
    const std::vector<float> x(2 * kQK_K, 0.0f);
    const std::vector<BlockQ4K> b = encode(x);
    for (float y : decode(b)) EXPECT_EQ(y, 0.0f);
    EXPECT_EQ(b[0].d, 0);
    EXPECT_EQ(b[0].dmin, 0);
  }
  {  // a zero sub-block inside a non-zero block stays exactly zero
    std::vector<float> x(kQK_K);
    std::mt19937 rng(1);
    std::normal_distribution<float> n(0.f, 0.05f);
    for (int i = 0; i < kQK_K; ++i) x[i] = i / 32 == 2 ? 0.f : n(rng);
    const std::vector<float> y = decode(encode(x));
    for (int i = 64; i < 96; ++i) EXPECT_EQ(y[i], 0.0f) << i;
  }
  {  // all-positive values: decoded within half a step of the [0, max] grid
    std::vector<float> x(kQK_K);
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(1.f, 2.f);
    for (float& v : x) v = u(rng);
    const std::vector<float> y = decode(encode(x));
    for (int i = 0; i < kQK_K; ++i) EXPECT_NEAR(y[i], x[i], 2.f / 15.f) << i;
  }
}

TEST(Q4KEncode, MagnitudesAndOutliers) {
  std::mt19937 rng(4);
  std::normal_distribution<float> n(0.f, 1.f);
  std::vector<float> base(4 * kQK_K);
  for (float& v : base) v = n(rng);
  for (float scale : {1e-6f, 1e-3f, 1.f, 1e3f, 1e6f}) {
    std::vector<float> x(base);
    for (float& v : x) v *= scale;
    const std::vector<BlockQ4K> b = encode(x);
    const std::vector<float> y = decode(b);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_TRUE(std::isfinite(y[i])) << scale;
    const std::vector<double> e = block_errors(x, b), e_ref = block_errors(x, encode_reference(x));
    for (size_t k = 0; k < e.size(); ++k) EXPECT_LE(e[k], e_ref[k] * (1 + 1e-5)) << scale;
    // Above the f16 subnormal range of d the relative error is the usual ~7%; 1e-6 values are below
    // what Q4_K can represent (d underflows) and only have to stay finite and bounded.
    if (scale >= 1e-3f) {
      EXPECT_LT(rel_rmse(x, b), 0.1) << scale;
    }
    double max_abs = 0;
    for (float v : x) max_abs = std::max(max_abs, static_cast<double>(std::fabs(v)));
    for (float v : y) EXPECT_LE(std::fabs(v), 1.01 * max_abs) << scale;
  }
  {  // one large outlier: reproduced closely; its sub-block dominates d, the rest stay finite
    std::vector<float> x(base.begin(), base.begin() + kQK_K);
    for (float& v : x) v *= 0.01f;
    x[77] = 10.f;
    const std::vector<float> y = decode(encode(x));
    EXPECT_NEAR(y[77], 10.f, 0.35f);
    for (float v : y) EXPECT_TRUE(std::isfinite(v));
  }
}

TEST(Q4KEncode, NonFiniteInputDoesNotCrash) {
  std::vector<float> x(3 * kQK_K, 0.5f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[300] = std::numeric_limits<float>::infinity();
  std::fill(x.begin() + 2 * kQK_K, x.end(), std::numeric_limits<float>::quiet_NaN());
  std::vector<BlockQ4K> b(3);
  quantize_q4_k(x, b);
  quantize_q4_k_reference(x, b);
  std::vector<float> w(x.size(), std::numeric_limits<float>::quiet_NaN());
  quantize_q4_k(x, b, w);
  SUCCEED();
}

TEST(Q4KEncode, ThreadSafeAndDeterministic) {
  const std::vector<float> x = varied_blocks(400, 17);
  const std::vector<BlockQ4K> serial = encode(x);
  std::vector<std::vector<BlockQ4K>> out(4, std::vector<BlockQ4K>(serial.size()));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < out.size(); ++t) {
    threads.emplace_back([&, t] {
      // Each thread encodes the blocks in a different chunking.
      const size_t chunk = t + 1;
      for (size_t b = 0; b < serial.size(); b += chunk) {
        const size_t n = std::min(chunk, serial.size() - b);
        quantize_q4_k(std::span<const float>(x).subspan(b * kQK_K, n * kQK_K),
                      std::span<BlockQ4K>(out[t]).subspan(b, n));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const auto& o : out) EXPECT_TRUE(same_bytes(o, serial));
}

TEST(Q4KEncode, QualityOnGaussianWeights) {
  // Typical trained-weight statistics: llama.cpp's reference gives a relative RMSE of about 0.072 here.
  std::mt19937 rng(8);
  std::normal_distribution<float> n(0.f, 0.02f);
  std::vector<float> x(512 * kQK_K);
  for (float& v : x) v = n(rng);
  const double ours = rel_rmse(x, encode(x)), ref = rel_rmse(x, encode_reference(x));
  std::printf("gaussian: relative RMSE ours %.5f reference %.5f ratio %.4f\n", ours, ref, ours / ref);
  EXPECT_LT(ours, 0.99 * ref);
  EXPECT_GT(ref, 0.06);
  EXPECT_LT(ref, 0.09);
}

TEST(Q4KEncode, QualityOnHeavyTailedWeights) {
  // Laplace and Student-t(3) weights (scale 0.02): lower error than llama.cpp's reference on both.
  std::mt19937 rng(12);
  std::exponential_distribution<float> expo(50.f);
  std::bernoulli_distribution sign(0.5);
  std::student_t_distribution<float> t3(3.f);
  for (int dist = 0; dist < 2; ++dist) {
    std::vector<float> x(512 * kQK_K);
    for (float& v : x) v = dist == 0 ? expo(rng) * (sign(rng) ? 1.f : -1.f) : 0.02f * t3(rng);
    const double ours = rel_rmse(x, encode(x)), ref = rel_rmse(x, encode_reference(x));
    std::printf("%s: relative RMSE ours %.5f reference %.5f ratio %.4f\n", dist == 0 ? "laplace" : "student-t(3)",
                ours, ref, ours / ref);
    EXPECT_LT(ours, 0.99 * ref);
  }
}

}  // namespace
}  // namespace rdrr::quant
