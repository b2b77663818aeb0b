#include "quant/q6_k.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "quant/cpu.h"
#include "quant/fixture_test_util.h"
#include "quant/f16.h"

namespace rdrr::quant {
namespace {

const std::string kFixtures = RDRR_FIXTURES_DIR;
const char* const kModels[] = {"tiny-llama", "tiny-qwen2", "tiny-gemma3"};

std::vector<float> normal_values(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

using test_util::read_file;
using test_util::sha256_hex;

std::vector<BlockQ6K> as_blocks(const std::vector<uint8_t>& bytes) {
  std::vector<BlockQ6K> b(bytes.size() / sizeof(BlockQ6K));
  std::memcpy(b.data(), bytes.data(), b.size() * sizeof(BlockQ6K));
  return b;
}

std::vector<float> decode(const std::vector<BlockQ6K>& b) {
  std::vector<float> y(b.size() * kQK_K);
  dequantize_q6_k(b, y);
  return y;
}

// sum(w * (x - y)^2) per 256-value block, in double.
std::vector<double> block_errors(const std::vector<float>& x, const std::vector<float>& y,
                                 const std::vector<float>* w = nullptr) {
  std::vector<double> e(x.size() / kQK_K, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - y[i];
    e[i / kQK_K] += (w ? (*w)[i] : 1.0) * d * d;
  }
  return e;
}

double rel_rmse(const std::vector<float>& x, const std::vector<float>& y) {
  double se = 0, s2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    se += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    s2 += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(se / s2);
}

// Packs q (0..63 per value) as reference-facts.md describes the layout, independently of q6_k.cpp.
void pack_by_hand(const int* q, BlockQ6K* b) {
  for (int half = 0; half < 2; ++half) {
    const int* qq = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      b->ql[64 * half + l] = static_cast<uint8_t>((qq[l] & 15) | ((qq[l + 64] & 15) << 4));
      b->ql[64 * half + l + 32] = static_cast<uint8_t>((qq[l + 32] & 15) | ((qq[l + 96] & 15) << 4));
      b->qh[32 * half + l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) |
                                                  ((qq[l + 64] >> 4) << 4) | ((qq[l + 96] >> 4) << 6));
    }
  }
}

TEST(Q6K, HandBuiltBlockDecodesToHandComputedValues) {
  int q[kQK_K];
  for (int i = 0; i < kQK_K; ++i) q[i] = (i * 37 + 11) % 64;
  BlockQ6K b{};
  pack_by_hand(q, &b);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(s % 2 ? -(s * 8) : s * 7 + 1);
  b.d = 0x3400;  // 0.25
  const std::vector<float> y = decode({b});
  for (int i = 0; i < kQK_K; ++i) {
    const float expect = (0.25f * static_cast<float>(b.scales[i / 16])) * static_cast<float>(q[i] - 32);
    EXPECT_EQ(y[i], expect) << i;
  }
  // d is the last field, little-endian.
  uint8_t raw[sizeof(BlockQ6K)];
  std::memcpy(raw, &b, sizeof raw);
  EXPECT_EQ(raw[208], 0x00);
  EXPECT_EQ(raw[209], 0x34);
  EXPECT_EQ(static_cast<int8_t>(raw[192 + 3]), -24);
}

TEST(Q6K, EncodeRoundTripsWithinOneStepAndBeatsTheReference) {
  const std::vector<float> x = normal_values(256 * kQK_K, 7, 0.02f);
  std::vector<BlockQ6K> ours(256), ref(256);
  quantize_q6_k(x, ours);
  quantize_q6_k_reference(x, ref);
  const std::vector<float> y = decode(ours);
  const std::vector<float> yr = decode(ref);
  for (size_t i = 0; i < x.size(); ++i) {
    const BlockQ6K& b = ours[i / kQK_K];
    const float step = std::fabs(f16_to_f32(b.d) * static_cast<float>(b.scales[(i % kQK_K) / 16]));
    ASSERT_LE(std::fabs(x[i] - y[i]), step * 1.0001f) << i;  // the search may clip the largest value by < 1 step
  }
  // The encoder does not start from the reference's blocks: a block may be a little worse, none much worse.
  const std::vector<double> e = block_errors(x, y);
  const std::vector<double> er = block_errors(x, yr);
  for (size_t b = 0; b < e.size(); ++b) EXPECT_LE(e[b], er[b] * 1.25) << "block " << b;
  std::printf("normal: relative RMSE ours %.5f reference %.5f ratio %.4f\n", rel_rmse(x, y), rel_rmse(x, yr),
              rel_rmse(x, y) / rel_rmse(x, yr));
  EXPECT_LT(rel_rmse(x, y), 0.97 * rel_rmse(x, yr));  // the search pays (about 6% on normal data)
  EXPECT_LT(rel_rmse(x, y), 0.02);
}

TEST(Q6K, BeatsTheReferenceOnHeavyTailedWeights) {
  // Laplace and Student-t(3) weights (scale 0.02).
  std::mt19937 rng(21);
  std::exponential_distribution<float> expo(50.f);
  std::bernoulli_distribution sign(0.5);
  std::student_t_distribution<float> t3(3.f);
  for (int dist = 0; dist < 2; ++dist) {
    std::vector<float> x(256 * kQK_K);
    for (float& v : x) v = dist == 0 ? expo(rng) * (sign(rng) ? 1.f : -1.f) : 0.02f * t3(rng);
    std::vector<BlockQ6K> ours(256), ref(256);
    quantize_q6_k(x, ours);
    quantize_q6_k_reference(x, ref);
    const double o = rel_rmse(x, decode(ours)), r = rel_rmse(x, decode(ref));
    std::printf("%s: relative RMSE ours %.5f reference %.5f ratio %.4f\n", dist == 0 ? "laplace" : "student-t(3)", o,
                r, o / r);
    EXPECT_LT(o, 0.98 * r);
  }
}

TEST(Q6K, ZeroAllEqualAndAllPositiveBlocks) {
  std::vector<BlockQ6K> b(1);
  quantize_q6_k(std::vector<float>(kQK_K, 0.0f), b);
  const BlockQ6K zero{};
  EXPECT_EQ(std::memcmp(&b[0], &zero, sizeof zero), 0);
  for (float v : decode(b)) EXPECT_EQ(v, 0.0f);

  for (float c : {0.7f, -1e-3f, 1234.5f}) {
    quantize_q6_k(std::vector<float>(kQK_K, c), b);
    // 2e-3: for c = -1e-3 the super-block scale d is an f16 subnormal, which limits the resolution.
    for (float v : decode(b)) EXPECT_NEAR(v, c, std::fabs(c) * 2e-3f) << c;
  }

  std::vector<float> pos(kQK_K);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(1.0f, 2.0f);
  for (float& v : pos) v = u(rng);
  quantize_q6_k(pos, b);
  const std::vector<float> y = decode(b);
  EXPECT_LT(rel_rmse(pos, y), 0.02);
  for (int i = 0; i < kQK_K; ++i) EXPECT_GT(y[i], 0.9f) << i;
}

TEST(Q6K, WeightsSteerTheFitAndBeatTheWeightedReference) {
  const std::vector<float> x = normal_values(64 * kQK_K, 11);
  std::vector<float> w(x.size());
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& v : w) v = u(rng) < 0.25f ? 10.0f : 0.1f;
  std::vector<BlockQ6K> weighted(64), plain(64), ref(64);
  quantize_q6_k(x, weighted, w);
  quantize_q6_k(x, plain);
  quantize_q6_k_reference(x, ref, w);
  const std::vector<double> ew = block_errors(x, decode(weighted), &w);
  const std::vector<double> ep = block_errors(x, decode(plain), &w);
  const std::vector<double> er = block_errors(x, decode(ref), &w);
  double sw = 0, sp = 0, sr = 0;
  for (size_t b = 0; b < ew.size(); ++b) {
    EXPECT_LE(ew[b], er[b] * 1.25) << b;
    sw += ew[b];
    sp += ep[b];
    sr += er[b];
  }
  std::printf("weighted objective: ours %.5f unweighted encode %.5f weighted reference %.5f\n", sw, sp, sr);
  EXPECT_LT(sw, sp);
  EXPECT_LT(sw, sr);
}

TEST(Q6K, NonFiniteInputDoesNotCrash) {
  // Unspecified blocks (the converter rejects NaN/Inf first), but no crash and no undefined conversions.
  std::vector<float> x = normal_values(3 * kQK_K, 19);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[300] = std::numeric_limits<float>::infinity();
  std::fill(x.begin() + 2 * kQK_K, x.end(), -std::numeric_limits<float>::infinity());
  std::vector<BlockQ6K> b(3);
  quantize_q6_k(x, b);
  quantize_q6_k(x, b, std::vector<float>(x.size(), std::numeric_limits<float>::quiet_NaN()));
  quantize_q6_k_reference(x, b);
  SUCCEED();
}

TEST(Q6K, EncodingIsDeterministic) {
  const std::vector<float> x = normal_values(16 * kQK_K, 13);
  std::vector<BlockQ6K> a(16), b(16);
  quantize_q6_k(x, a);
  quantize_q6_k(x, b);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(BlockQ6K)), 0);
}

// The AVX2 build of the scale search and the generic one give the same bytes (with and without weights).
TEST(Q6K, SimdAndScalarPathsGiveIdenticalBytes) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2/F16C";
  std::vector<float> x = normal_values(128 * kQK_K, 17, 0.02f);
  for (size_t i = 0; i < x.size(); i += 97) x[i] *= 8.0f;  // outliers exercise the clipping candidates
  std::vector<float> w(x.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f + static_cast<float>(i % 13);
  for (const bool weighted : {false, true}) {
    std::vector<BlockQ6K> simd(128), scalar(128);
    set_simd_enabled(true);
    quantize_q6_k(x, simd, weighted ? std::span<const float>(w) : std::span<const float>());
    set_simd_enabled(false);
    quantize_q6_k(x, scalar, weighted ? std::span<const float>(w) : std::span<const float>());
    set_simd_enabled(true);
    EXPECT_EQ(std::memcmp(simd.data(), scalar.data(), simd.size() * sizeof(BlockQ6K)), 0) << weighted;
  }
}

// --- Fixtures: llama.cpp's Q6_K blocks and gguf-py's decode of them -------------------------------------------

struct GoldenEntry {
  std::string model, name, blocks_file, dequant_file, blocks_sha256;
  uint64_t blocks_bytes = 0, n_values = 0;
};

std::vector<GoldenEntry> q6k_golden_entries() {
  std::vector<GoldenEntry> out;
  for (const char* model : kModels) {
    const std::string dir = kFixtures + "/" + model + "/golden/dequant/";
    const std::vector<uint8_t> text = read_file(dir + "index.json");
    const auto j = nlohmann::json::parse(text.begin(), text.end());
    for (const auto& t : j.at("tensors")) {
      if (t.at("ggml_type") != "Q6_K") continue;
      out.push_back({model, t.at("name"), t.at("blocks_file"), t.at("dequant_file"), t.at("blocks_sha256"),
                     t.at("blocks_bytes"), t.at("n_values")});
    }
  }
  return out;
}

std::map<std::string, std::string> read_sha_list(const std::string& path) {
  const std::vector<uint8_t> text = read_file(path);
  std::istringstream in(std::string(text.begin(), text.end()));
  std::map<std::string, std::string> m;
  std::string hash, file;
  while (in >> hash >> file) m[file] = hash;
  return m;
}

TEST(Q6KGolden, DecodeReproducesGgufPyBitForBit) {
  const std::vector<GoldenEntry> entries = q6k_golden_entries();
  ASSERT_EQ(entries.size(), 3u);
  for (const GoldenEntry& e : entries) {
    const std::string dir = kFixtures + "/" + e.model + "/golden/dequant/";
    const std::vector<uint8_t> bytes = read_file(dir + e.blocks_file);
    ASSERT_EQ(bytes.size(), e.blocks_bytes) << e.name;
    ASSERT_EQ(sha256_hex(bytes.data(), bytes.size()), e.blocks_sha256) << e.name;
    const std::vector<float> y = decode(as_blocks(bytes));
    ASSERT_EQ(y.size(), e.n_values) << e.name;
    const auto want = read_sha_list(dir + "dequant.sha256");
    ASSERT_TRUE(want.count(e.dequant_file)) << e.dequant_file;
    EXPECT_EQ(sha256_hex(y.data(), y.size() * sizeof(float)), want.at(e.dequant_file)) << e.model << " " << e.name;
  }
}

// The F32 source of a golden tensor, from the fixture's HF checkpoint (SafeTensors, F32, untransposed).
std::vector<float> hf_tensor(const std::string& model, const std::string& gguf_name) {
  static const std::map<std::string, std::string> kHfName = {
      {"output.weight", "lm_head.weight"},
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"blk.2.ffn_down.weight", "model.layers.2.mlp.down_proj.weight"}};
  const std::vector<uint8_t> file = read_file(kFixtures + "/" + model + "/hf/model.safetensors");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file.data(), 8);
  const auto header = nlohmann::json::parse(file.begin() + 8, file.begin() + 8 + static_cast<int64_t>(header_len));
  const auto& t = header.at(kHfName.at(gguf_name));
  EXPECT_EQ(t.at("dtype"), "F32");
  const uint64_t begin = t.at("data_offsets")[0], end = t.at("data_offsets")[1];
  std::vector<float> v((end - begin) / 4);
  std::memcpy(v.data(), file.data() + 8 + header_len + begin, end - begin);
  return v;
}

// llama-quantize (no imatrix) turned the F32 weights into exactly these blocks; the replica must match, and the
// production quantizer must have a clearly lower error on the tensor (and no block much worse).
TEST(Q6KGolden, ReferenceReplicaMatchesLlamaCppAndOursIsBetter) {
  for (const GoldenEntry& e : q6k_golden_entries()) {
    const std::vector<float> x = hf_tensor(e.model, e.name);
    ASSERT_EQ(x.size(), e.n_values) << e.name;
    const std::vector<uint8_t> golden = read_file(kFixtures + "/" + e.model + "/golden/dequant/" + e.blocks_file);
    std::vector<BlockQ6K> ref(x.size() / kQK_K), ours(x.size() / kQK_K);
    quantize_q6_k_reference(x, ref);
    ASSERT_EQ(golden.size(), ref.size() * sizeof(BlockQ6K));
    EXPECT_EQ(std::memcmp(golden.data(), ref.data(), golden.size()), 0) << e.model << " " << e.name;
    quantize_q6_k(x, ours);
    const std::vector<float> y = decode(ours);
    const std::vector<float> yr = decode(as_blocks(golden));
    const std::vector<double> eo = block_errors(x, y);
    const std::vector<double> er = block_errors(x, yr);
    for (size_t b = 0; b < eo.size(); ++b) ASSERT_LE(eo[b], er[b] * 1.25) << e.name << " block " << b;
    EXPECT_LT(rel_rmse(x, y), 0.97 * rel_rmse(x, yr)) << e.model << " " << e.name;
  }
}

}  // namespace
}  // namespace rdrr::quant
