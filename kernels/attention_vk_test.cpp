// KV cache append and attention vs double-precision CPU references: prefill (causal) and decode (split-K),
// GQA ratios 1, 2, 4, 8, sliding window on / off, logit soft-capping, F16 and F32 caches, context lengths
// off the tile size, queries starting mid-cache (chunked prefill). The cache is filled with record_kv_append
// in two chunks, so the p0 offset is exercised; the reference reads the cached values back as stored (f16
// rounding included), so the bound measures the attention arithmetic alone.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <optional>

#include "quant/f16.h"
#include "runtime/kv_cache.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using runtime::Buffer;
using runtime::testing::VulkanTest;

// f32 dot products, exp and running sums over up to ~1000 positions: measured NMSE ~1e-14 .. 1e-12 on
// lavapipe; 1e-9 leaves room for other devices' exp / FMA while any wrong position, head or mask (one
// misplaced value among hundreds) gives >= ~1e-5.
constexpr double kAttnNmse = 1e-9;

struct AttnCase {
  const char* name;
  DType dtype;
  uint32_t n_heads, n_kv_heads, head_dim;
  uint32_t kv_len;  // positions cached = p0 + n_q
  uint32_t n_q;
  uint32_t window;
  float softcap;
  float q_gain;          // spreads the logits (peakier softmax)
  uint32_t n_splits;     // 0 = automatic (scratch given)
  uint32_t local_size;   // 0 = default tile
  uint32_t decode = 0;   // AttentionTuning::decode: 0 auto (n_q = 1: attention_decode.comp), 1 tiled, 2 decode
  uint32_t prefill = 0;  // AttentionTuning::prefill: 0 auto (n_q > 1: attention_prefill.comp), 1 tiled, 2 prefill
  uint32_t positions = 0;  // AttentionTuning::prefill_positions
};

void PrintTo(const AttnCase& c, std::ostream* os) { *os << c.name; }
std::string case_name(const ::testing::TestParamInfo<AttnCase>& info) { return info.param.name; }

float stored(DType dtype, float v) { return dtype == DType::kF16 ? quant::f16_to_f32(quant::f32_to_f16(v)) : v; }

// out [n_q, n_heads, head_dim] in double; k / v [kv_len, n_kv_heads, head_dim] as stored.
std::vector<double> reference_attention(const AttnCase& c, std::span<const float> q, std::span<const float> k,
                                        std::span<const float> v, float scale) {
  const uint32_t hd = c.head_dim;
  const uint32_t p0 = c.kv_len - c.n_q;
  std::vector<double> out(uint64_t{c.n_q} * c.n_heads * hd, 0.0);
  for (uint32_t t = 0; t < c.n_q; ++t) {
    const uint32_t qp = p0 + t;
    const uint32_t lo = (c.window != 0 && qp + 1 > c.window) ? qp + 1 - c.window : 0;
    for (uint32_t h = 0; h < c.n_heads; ++h) {
      const uint32_t kvh = h / (c.n_heads / c.n_kv_heads);
      const float* qv = &q[(uint64_t{t} * c.n_heads + h) * hd];
      std::vector<double> s(qp + 1 - lo);
      double m = -INFINITY;
      for (uint32_t j = lo; j <= qp; ++j) {
        const float* kv = &k[(uint64_t{j} * c.n_kv_heads + kvh) * hd];
        double d = 0.0;
        for (uint32_t i = 0; i < hd; ++i) d += double(qv[i]) * kv[i];
        d *= scale;
        if (c.softcap > 0.0f) d = c.softcap * std::tanh(d / c.softcap);
        s[j - lo] = d;
        m = std::max(m, d);
      }
      double l = 0.0;
      for (double& x : s) l += (x = std::exp(x - m));
      double* o = &out[(uint64_t{t} * c.n_heads + h) * hd];
      for (uint32_t j = lo; j <= qp; ++j) {
        const float* vv = &v[(uint64_t{j} * c.n_kv_heads + kvh) * hd];
        for (uint32_t i = 0; i < hd; ++i) o[i] += s[j - lo] / l * vv[i];
      }
    }
  }
  return out;
}

class AttentionTest : public VulkanTest, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(AttentionTest, MatchesDoubleReference) {
  const AttnCase c = GetParam();
  std::mt19937 rng(c.kv_len * 31 + c.n_heads * 7 + c.head_dim);
  const uint32_t hd = c.head_dim;
  const uint64_t kv_elems = uint64_t{c.kv_len} * c.n_kv_heads * hd;
  const std::vector<float> k = runtime::testing::random_f32(rng, kv_elems);
  const std::vector<float> v = runtime::testing::random_f32(rng, kv_elems);
  std::vector<float> q = runtime::testing::random_f32(rng, uint64_t{c.n_q} * c.n_heads * hd);
  for (float& x : q) x *= c.q_gain;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  runtime::KvCacheShape shape{2, c.n_kv_heads, hd, c.kv_len + 13, c.dtype};
  auto cache = runtime::KvCache::create(dev(), shape, "kv");
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  const runtime::KvLayer layer = cache->layer(1);
  // Two appends in one submission: positions [0, first) and [first, kv_len), each from its own buffers.
  const uint32_t first = c.kv_len > 1 ? c.kv_len / 3 + 1 : 1;
  const uint64_t row = uint64_t{c.n_kv_heads} * hd;
  std::vector<Buffer> keep;
  for (auto [p0, n] : {std::pair<uint32_t, uint32_t>{0, first}, {first, c.kv_len - first}}) {
    if (n == 0) continue;
    keep.push_back(upload(std::vector<float>(k.begin() + p0 * row, k.begin() + (p0 + n) * row), "k"));
    keep.push_back(upload(std::vector<float>(v.begin() + p0 * row, v.begin() + (p0 + n) * row), "v"));
    runtime::KvAppendArgs ap;
    ap.kv = layer;
    ap.k_src = keep[keep.size() - 2].range();
    ap.v_src = keep.back().range();
    ap.n_tokens = n;
    ap.p0 = p0;
    const Status s = runtime::record_kv_append(rec(), ap, "append");
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  run();
  Buffer qb = upload(q, "q");
  Buffer ob = poisoned_f32(q.size(), "out");
  const uint32_t max_splits = 16;
  Buffer scratch = alloc(runtime::attention_scratch_bytes(c.n_q, c.n_heads, hd, max_splits), "scratch");
  runtime::AttentionArgs a;
  a.q = qb.range();
  a.kv = layer;
  a.out = ob.range();
  a.scratch = scratch.range();
  a.n_q = c.n_q;
  a.n_heads = c.n_heads;
  a.p0 = c.kv_len - c.n_q;
  a.scale = scale;
  a.window = c.window;
  a.softcap = c.softcap;
  a.tuning.n_splits = c.n_splits;
  a.tuning.local_size_x = c.local_size;
  a.tuning.decode = c.decode;
  a.tuning.prefill = c.prefill;
  a.tuning.prefill_positions = c.positions;
  const Status s = runtime::record_attention(rec(), a, "attn");
  ASSERT_TRUE(s.ok()) << s.to_string();
  const uint32_t dispatches = rec().dispatch_count();
  run();
  const std::vector<float> y = download_f32(ob.range());

  std::vector<float> ks(k.size()), vs(v.size());
  for (size_t i = 0; i < k.size(); ++i) {
    ks[i] = stored(c.dtype, k[i]);
    vs[i] = stored(c.dtype, v[i]);
  }
  const std::vector<double> ref = reference_attention(c, q, ks, vs, scale);
  EXPECT_EQ(runtime::testing::count_non_finite(y), 0u);
  const double e = runtime::testing::nmse(y, ref);
  std::printf("  NMSE %.3e (%u dispatches)\n", e, dispatches);
  EXPECT_LT(e, kAttnNmse);
  if (c.n_splits > 1) {
    // Tiled kernel: split + attn_merge. Decode kernel: the ticket zeroing (first use of the scratch in this
    // recording) + the split dispatch that merges in its last workgroups.
    EXPECT_EQ(dispatches, 2u) << "split-K attention + merge";
  }
}

// Decode split calls sharing one scratch: each merges in its own dispatch (tickets left at rest by the calls
// before it, zeroed once per recording), from a poisoned scratch, over two submissions; and a scratch whose
// tickets something else overwrote between two calls (against the contract) gives NaN, not a wrong result.
class AttentionScratchReuse : public VulkanTest {
 protected:
  static constexpr AttnCase kCase{"reuse", DType::kF16, 8, 2, 64, 300, 1, 0, 0.0f, 4.0f, 3, 0};

  void SetUp() override {
    VulkanTest::SetUp();
    std::mt19937 rng(5);
    const uint64_t kv_elems = uint64_t{kCase.kv_len} * kCase.n_kv_heads * kCase.head_dim;
    k_ = runtime::testing::random_f32(rng, kv_elems);
    v_ = runtime::testing::random_f32(rng, kv_elems);
    auto cache = runtime::KvCache::create(dev(), {1, kCase.n_kv_heads, kCase.head_dim, kCase.kv_len, kCase.dtype}, "kv");
    ASSERT_TRUE(cache.ok()) << cache.status().to_string();
    cache_ = std::move(cache).value();
    Buffer kb = upload(k_, "k");
    Buffer vb = upload(v_, "v");
    runtime::KvAppendArgs ap;
    ap.kv = cache_->layer(0);
    ap.k_src = kb.range();
    ap.v_src = vb.range();
    ap.n_tokens = kCase.kv_len;
    ASSERT_TRUE(runtime::record_kv_append(rec(), ap, "append").ok());
    run();
    for (float& x : k_) x = stored(kCase.dtype, x);
    for (float& x : v_) x = stored(kCase.dtype, x);
    scratch_ = alloc(runtime::attention_scratch_bytes(1, kCase.n_heads, kCase.head_dim, kCase.n_splits), "scratch");
    ASSERT_TRUE(dev().fill(scratch_.range(), runtime::testing::kPoisonBits).ok());
  }

  // Records one call on a fresh q; returns (q, out buffer).
  std::pair<std::vector<float>, Buffer> record_call(std::mt19937& rng, const char* label) {
    std::vector<float> q = runtime::testing::random_f32(rng, uint64_t{kCase.n_heads} * kCase.head_dim);
    for (float& x : q) x *= kCase.q_gain;
    Buffer qb = upload(q, "q");
    Buffer ob = poisoned_f32(q.size(), "out");
    runtime::AttentionArgs a;
    a.q = qb.range();
    a.kv = cache_->layer(0);
    a.out = ob.range();
    a.scratch = scratch_.range();
    a.n_q = 1;
    a.n_heads = kCase.n_heads;
    a.p0 = kCase.kv_len - 1;
    a.scale = 1.0f / std::sqrt(static_cast<float>(kCase.head_dim));
    a.tuning.n_splits = kCase.n_splits;
    const Status s = runtime::record_attention(rec(), a, label);
    EXPECT_TRUE(s.ok()) << s.to_string();
    keep_.push_back(std::move(qb));
    return {std::move(q), std::move(ob)};
  }

  double error_of(const std::vector<float>& q, const Buffer& out) {
    const std::vector<float> y = download_f32(out.range());
    if (runtime::testing::count_non_finite(y) != 0) return INFINITY;
    const float scale = 1.0f / std::sqrt(static_cast<float>(kCase.head_dim));
    return runtime::testing::nmse(y, reference_attention(kCase, q, k_, v_, scale));
  }

  std::vector<float> k_, v_;
  std::optional<runtime::KvCache> cache_;
  Buffer scratch_;
  std::vector<Buffer> keep_;
};

TEST_F(AttentionScratchReuse, CallsSharingScratchStayCorrect) {
  std::mt19937 rng(6);
  for (int submit = 0; submit < 2; ++submit) {
    std::vector<std::pair<std::vector<float>, Buffer>> calls;
    for (int c = 0; c < 3; ++c) calls.push_back(record_call(rng, "reuse"));
    EXPECT_EQ(rec().dispatch_count(), 4u) << "one ticket zeroing, then one dispatch per call";
    run();
    for (auto& [q, out] : calls) EXPECT_LT(error_of(q, out), kAttnNmse) << "submit " << submit;
  }
}

TEST_F(AttentionScratchReuse, ClobberedTicketsGiveNaN) {
  std::mt19937 rng(7);
  auto first = record_call(rng, "first");
  Buffer fives = alloc(1024, "fives");
  ASSERT_TRUE(dev().fill(fives.range(), 0x40a00000u).ok());  // 5.0f
  // 10.0f over the ticket words: counts far past any split count.
  ASSERT_TRUE(runtime::record_add(rec(), fives.range(), fives.range(), scratch_.range().sub(0, 1024), 256).ok());
  auto second = record_call(rng, "second");
  run();
  EXPECT_LT(error_of(first.first, first.second), kAttnNmse);
  const std::vector<float> y = download_f32(second.second.range());
  EXPECT_EQ(runtime::testing::count_non_finite(y), y.size());
}

const AttnCase kCases[] = {
    // name, dtype, heads, kv_heads, head_dim, kv_len, n_q, window, softcap, q_gain, n_splits, local_size
    {"prefill_mha_f32", DType::kF32, 4, 4, 64, 37, 37, 0, 0.0f, 3.0f, 0, 0},
    {"prefill_gqa2_window_f16", DType::kF16, 4, 2, 32, 70, 70, 16, 0.0f, 3.0f, 0, 0},
    {"prefill_chunk_gqa2_softcap_tile32", DType::kF16, 6, 3, 80, 150, 20, 64, 2.0f, 8.0f, 0, 32},
    {"prefill_gqa4_f32", DType::kF32, 8, 2, 96, 45, 45, 0, 0.0f, 2.0f, 0, 0},
    {"decode_single_position", DType::kF16, 2, 1, 64, 1, 1, 0, 0.0f, 1.0f, 0, 0},
    {"decode_gqa4_auto_split_f16", DType::kF16, 8, 2, 128, 300, 1, 0, 0.0f, 4.0f, 0, 0},
    {"decode_gqa8_split7_softcap_f32", DType::kF32, 8, 1, 256, 1000, 1, 0, 3.0f, 10.0f, 7, 0},
    {"decode_gqa1_window_split3_f16", DType::kF16, 4, 4, 64, 517, 1, 100, 0.0f, 4.0f, 3, 32},
    {"decode_gqa2_window_longer_than_ctx", DType::kF32, 2, 1, 48, 300, 1, 4096, 0.0f, 4.0f, 2, 0},
    {"decode_batch3_gqa2_split4_f16", DType::kF16, 4, 2, 64, 260, 3, 0, 0.0f, 3.0f, 4, 64},
    // The tiled kernel forced for one query, and attention_decode.comp on other head sizes (48 / 80: value
    // pairs not a multiple of the lanes), a partial last block, one position per split, a 32-wide workgroup.
    {"decode_tiled_gqa4_f16", DType::kF16, 8, 2, 128, 300, 1, 0, 0.0f, 4.0f, 0, 0, 1},
    {"decode_tiled_split7_softcap_f32", DType::kF32, 8, 1, 256, 1000, 1, 0, 3.0f, 10.0f, 7, 0, 1},
    {"decode_kernel_hd48_f32", DType::kF32, 6, 2, 48, 777, 1, 0, 0.0f, 6.0f, 0, 0, 2},
    {"decode_kernel_hd80_window_softcap_f16", DType::kF16, 4, 1, 80, 1500, 1, 333, 5.0f, 6.0f, 5, 0, 2},
    {"decode_kernel_short_split3_f16", DType::kF16, 2, 2, 64, 70, 1, 0, 0.0f, 4.0f, 3, 32, 2},
    {"decode_kernel_wg32_split2_f32", DType::kF32, 4, 2, 64, 200, 1, 0, 0.0f, 4.0f, 2, 32, 2},
    // The prefill cases above run attention_prefill.comp (auto); the tiled kernel forced for two of them, and
    // attention_prefill.comp on: head sizes whose vectors are not a multiple of the 4 lanes (48, 80, 20), every
    // workgroup size and tile length, rows not filling the last workgroup, a chunk after cached positions (p0 > 0,
    // so tiles start past 0), windows shorter than a tile, GQA 1 / 2 / 4 / 8 and head_dim 256.
    {"prefill_tiled_mha_f32", DType::kF32, 4, 4, 64, 37, 37, 0, 0.0f, 3.0f, 0, 0, 0, 1},
    {"prefill_tiled_chunk_softcap_f16", DType::kF16, 6, 3, 80, 150, 20, 64, 2.0f, 8.0f, 0, 32, 0, 1},
    {"prefill_kernel_hd48_gqa3_f16", DType::kF16, 6, 2, 48, 97, 97, 0, 0.0f, 4.0f, 0, 0, 0, 2},
    {"prefill_kernel_hd20_wg32_p4_f32", DType::kF32, 2, 1, 20, 33, 33, 0, 0.0f, 3.0f, 0, 32, 0, 2, 4},
    {"prefill_kernel_hd80_chunk_window5_f16", DType::kF16, 4, 2, 80, 300, 45, 5, 0.0f, 6.0f, 0, 64, 0, 2, 8},
    {"prefill_kernel_hd64_gqa4_wg128_p32_f16", DType::kF16, 32, 8, 64, 130, 130, 0, 0.0f, 4.0f, 0, 128, 0, 2, 32},
    {"prefill_kernel_hd128_gqa8_chunk_softcap_f32", DType::kF32, 8, 1, 128, 400, 77, 0, 30.0f, 8.0f, 0, 0, 0, 2},
    {"prefill_kernel_hd256_gqa2_window_f16", DType::kF16, 4, 2, 256, 90, 90, 40, 0.0f, 4.0f, 0, 0, 0, 2},
    {"prefill_kernel_two_tokens_f16", DType::kF16, 8, 8, 64, 2, 2, 0, 0.0f, 2.0f, 0, 0, 0, 2},
};
INSTANTIATE_TEST_SUITE_P(Cases, AttentionTest, ::testing::ValuesIn(kCases), case_name);

class KvAppendTest : public VulkanTest {};

// F16 cache values must be the round-to-nearest-even halves of the inputs (as quant::f32_to_f16), F32 exact;
// untouched positions keep their previous contents.
TEST_F(KvAppendTest, StoresRoundedValuesAtTheirPositions) {
  for (DType dtype : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(std::string(quant::dtype_name(dtype)));
    const uint32_t heads = 3, hd = 10, cap = 9, p0 = 4, n = 3;
    runtime::KvCacheShape shape{1, heads, hd, cap, dtype};
    auto cache = runtime::KvCache::create(dev(), shape, "kv");
    ASSERT_TRUE(cache.ok()) << cache.status().to_string();
    ASSERT_TRUE(dev().fill(cache->range(), 0x5a5a5a5au).ok());
    std::mt19937 rng(9);
    std::vector<float> k = runtime::testing::random_f32(rng, n * heads * hd, -70000.0f, 70000.0f);
    k[0] = 1.0f + 1.0f / 2048.0f;  // exact tie between two halves: rounds to even (1.0)
    k[1] = 1e-6f;                  // subnormal half
    const std::vector<float> v = runtime::testing::random_f32(rng, n * heads * hd);
    Buffer kb = upload(k, "k");
    Buffer vb = upload(v, "v");
    runtime::KvAppendArgs a;
    a.kv = cache->layer(0);
    a.k_src = kb.range();
    a.v_src = vb.range();
    a.n_tokens = n;
    a.p0 = p0;
    ASSERT_TRUE(runtime::record_kv_append(rec(), a).ok());
    run();
    std::vector<std::byte> kc(cache->range_bytes());
    ASSERT_TRUE(dev().download(cache->layer(0).k, kc).ok());
    const size_t es = dtype == DType::kF16 ? 2 : 4;
    size_t mismatches = 0;
    for (uint32_t h = 0; h < heads; ++h) {
      for (uint32_t p = 0; p < cap; ++p) {
        for (uint32_t i = 0; i < hd; ++i) {
          const size_t off = ((uint64_t{h} * cap + p) * hd + i) * es;
          uint32_t got = 0, want = 0x5a5a5a5au & (es == 2 ? 0xffffu : 0xffffffffu);
          std::memcpy(&got, kc.data() + off, es);
          if (p >= p0 && p < p0 + n) {
            const float src = k[((p - p0) * heads + h) * hd + i];
            if (es == 2) {
              want = quant::f32_to_f16(src);
            } else {
              std::memcpy(&want, &src, 4);
            }
          }
          if (got != want && mismatches++ < 5) ADD_FAILURE() << "head " << h << " pos " << p << " dim " << i;
        }
      }
    }
    EXPECT_EQ(mismatches, 0u);
  }
}

TEST_F(KvAppendTest, ErrorsNameTheBadField) {
  runtime::KvCacheShape shape{1, 2, 8, 16, DType::kF16};
  auto cache = runtime::KvCache::create(dev(), shape, "kv");
  ASSERT_TRUE(cache.ok());
  Buffer src = alloc(4096);
  runtime::KvAppendArgs a;
  a.kv = cache->layer(0);
  a.k_src = src.range();
  a.v_src = src.range();
  a.n_tokens = 4;
  a.p0 = 14;
  Status s = runtime::record_kv_append(rec(), a, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kv_append blk.3 [tokens=4 p0=14 capacity=16]: positions up to 18 exceed the cache "
                             "capacity 16"),
            std::string::npos)
      << s.message();
  a.p0 = 0;
  a.v_src = src.range().sub(0, 100);
  s = runtime::record_kv_append(rec(), a, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("v_src range of 100 bytes < required 256"), std::string::npos) << s.message();

  Buffer out = alloc(4096);
  runtime::AttentionArgs at;
  at.q = src.range();
  at.out = out.range();
  at.kv = cache->layer(0);
  at.n_q = 1;
  at.n_heads = 3;
  at.p0 = 3;
  at.scale = 0.125f;
  s = runtime::record_attention(rec(), at, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("attention blk.3 [q=1 heads=3/2 head_dim=8 p0=3]: n_heads 3 is not a multiple of "
                             "n_kv_heads 2"),
            std::string::npos)
      << s.message();
  at.n_heads = 4;
  at.tuning.n_splits = 2;
  s = runtime::record_attention(rec(), at, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("scratch range of 0 bytes < required"), std::string::npos) << s.message();
  at.tuning.n_splits = 0;
  at.scale = 0.0f;
  s = runtime::record_attention(rec(), at, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("scale 0.000000 must be finite and > 0"), std::string::npos) << s.message();
  at.scale = 0.125f;
  at.out = at.q;
  s = runtime::record_attention(rec(), at, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("out overlaps q"), std::string::npos) << s.message();
  // The decode kernel forced where it cannot run names the condition.
  at.out = out.range();
  at.tuning.decode = 2;
  at.n_q = 2;
  s = runtime::record_attention(rec(), at, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("attention_decode cannot run: n_q 2 != 1"), std::string::npos) << s.message();
  at.n_q = 1;
  at.tuning.local_size_x = 1024;
  s = runtime::record_attention(rec(), at, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("more than 16 subgroups per workgroup (local_size_x 1024)"), std::string::npos)
      << s.message();
  // The prefill kernel forced where it cannot run names the condition.
  at.tuning = {};
  at.n_q = 2;
  at.tuning.prefill = 2;
  at.tuning.n_splits = 2;
  s = runtime::record_attention(rec(), at, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("attention_prefill cannot run: an explicit split (2)"), std::string::npos) << s.message();
  at.tuning.n_splits = 0;
  at.tuning.prefill_positions = 6;
  s = runtime::record_attention(rec(), at, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("attention_prefill cannot run: local_size_x / prefill_positions not multiples of 4"),
            std::string::npos)
      << s.message();
  at.tuning.prefill_positions = 0;
  auto hd6 = runtime::KvCache::create(dev(), {1, 2, 6, 16, DType::kF16}, "hd6");
  ASSERT_TRUE(hd6.ok());
  at.kv = hd6->layer(0);
  s = runtime::record_attention(rec(), at, "blk.3");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("attention_prefill cannot run: head_dim 6 is not a multiple of 4 up to 256"),
            std::string::npos)
      << s.message();
  auto bad = runtime::KvCache::create(dev(), {1, 2, 7, 16, DType::kF16}, "odd");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("head_dim must be even"), std::string::npos);
  EXPECT_EQ(rec().dispatch_count(), 0u);
}

}  // namespace
}  // namespace rdrr::kernels
