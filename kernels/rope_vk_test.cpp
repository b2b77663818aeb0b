// RoPE (interleaved GGUF-llama order and neox rotate-half, full and partial rotary; computed frequencies and
// CPU frequency tables for llama3 / YaRN / LongRoPE / linear scaling with mscale) vs a double reference; and
// kv_append_rope (K rotated on its way into the KV cache) vs the two-step path and the same reference. The
// rope cases are OpCases (op_test_util.h); kv_append_rope writes a KV cache (runtime/kv_cache.h) and compares
// two paths, so it sets up its own buffers.
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <string>

#include "kernels/kernel_test_ref.h"
#include "kernels/op_test_util.h"
#include "quant/f16.h"
#include "runtime/kv_cache.h"
#include "runtime/ops.h"
#include "runtime/rope_freqs.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using runtime::Buffer;
using runtime::testing::VulkanTest;
using testing::OpBindings;
using testing::OpCase;
using testing::Tolerance;

// theta = pos * base^(-2i/n_rot) is formed in f32 (as every GPU RoPE does): at position ~1000 its absolute
// error is ~1e-4 rad, and Vulkan's sin/cos are a few ulp; measured NMSE ~1e-10 on lavapipe.
constexpr double kRopeNmse = 1e-7;

// x [tokens, heads, head_dim] rotated in double: the pairs (d0, d1) of the first n_rot dims of each head by
// theta(t, i) (i < n_rot / 2; interleaved: (2i, 2i+1), neox: (i, i + n_rot / 2)), cos and sin times mscale.
std::vector<double> reference_rope(std::span<const double> x, const runtime::RopeArgs& a,
                                   const std::function<double(uint32_t t, uint32_t i)>& theta) {
  std::vector<double> ref(x.begin(), x.end());
  const uint32_t n_rot = a.n_rot != 0 ? a.n_rot : a.head_dim;
  const uint32_t half = n_rot / 2;
  const bool interleaved = a.mode == runtime::RopeMode::kInterleaved;
  for (uint32_t t = 0; t < a.n_tokens; ++t) {
    for (uint32_t h = 0; h < a.n_heads; ++h) {
      const uint64_t base = (uint64_t{t} * a.n_heads + h) * a.head_dim;
      for (uint32_t i = 0; i < half; ++i) {
        const double th = theta(t, i);
        const uint32_t d0 = interleaved ? 2 * i : i;
        const uint32_t d1 = interleaved ? 2 * i + 1 : i + half;
        const double p = x[base + d0], q = x[base + d1], m = a.mscale;
        ref[base + d0] = (p * std::cos(th) - q * std::sin(th)) * m;
        ref[base + d1] = (p * std::sin(th) + q * std::cos(th)) * m;
      }
    }
  }
  return ref;
}

// One rope call: `shape` holds every scalar argument; inv_freq empty: computed frequencies, else the table; norm_w
// not empty: the per-head RMSNorm first (shape.norm's eps and offset; rope_norm / rope_freqs_norm).
OpCase rope_case(std::string name, const runtime::RopeArgs& shape, const std::vector<float>& x,
                 const std::vector<int32_t>& pos, const std::vector<float>& inv_freq, bool in_place,
                 const std::vector<float>& norm_w = {}) {
  const bool table = !inv_freq.empty();
  const bool norm = !norm_w.empty();
  const std::vector<double> xin = norm ? testing::reference_rms_norm(testing::to_double(x), norm_w, shape.head_dim,
                                                                      shape.norm->eps, shape.norm->weight_offset)
                                       : std::vector<double>(x.begin(), x.end());
  const std::vector<double> ref = reference_rope(xin, shape, [&](uint32_t t, uint32_t i) {
    if (table) return pos[t] * double(inv_freq[i]);
    return pos[t] * double(shape.freq_scale) * std::pow(double(shape.theta_base), -2.0 * i / shape.n_rot);
  });
  OpCase oc;
  oc.name = std::move(name);
  const std::vector<uint64_t> dims = {shape.n_tokens, shape.n_heads, shape.head_dim};
  oc.inputs = {testing::f32_input("x", dims, x), testing::i32_input("pos", pos)};
  if (table) oc.inputs.push_back(testing::f32_input("inv_freq", {inv_freq.size()}, inv_freq));
  if (norm) oc.inputs.push_back(testing::f32_input("norm_w", {norm_w.size()}, norm_w));
  oc.outputs = {testing::f32_output("y", dims, ref, Tolerance::nmse(kRopeNmse), in_place ? "x" : "")};
  oc.record = [shape, table, norm](runtime::Recorder& rec, const OpBindings& b) {
    runtime::RopeArgs a = shape;
    a.x = b["x"];
    a.pos = b["pos"];
    a.y = b["y"];
    if (table) a.inv_freq = b["inv_freq"];
    if (norm) a.norm->w = b["norm_w"];
    return runtime::record_rope(rec, a);
  };
  return oc;
}

struct RopeCase {
  uint32_t tokens, heads, head_dim, n_rot;
  runtime::RopeMode mode;
  float base, freq_scale;
  bool in_place;
  float norm_offset = -1.0f;  // >= 0: the per-head RMSNorm first (q_norm_rope), weight offset 0 or 1 (Gemma)
};

class RopeTest : public VulkanTest, public ::testing::WithParamInterface<RopeCase> {};

TEST_P(RopeTest, MatchesDoubleReference) {
  const RopeCase c = GetParam();
  std::mt19937 rng(c.head_dim * 7 + c.n_rot);
  const std::vector<float> x = runtime::testing::random_f32(rng, uint64_t{c.tokens} * c.heads * c.head_dim);
  std::vector<int32_t> pos(c.tokens);
  for (uint32_t t = 0; t < c.tokens; ++t) pos[t] = static_cast<int32_t>(t == 0 ? 0 : (t * 997) % 1500 + 1);
  runtime::RopeArgs a;
  a.n_tokens = c.tokens;
  a.n_heads = c.heads;
  a.head_dim = c.head_dim;
  a.n_rot = c.n_rot;
  a.theta_base = c.base;
  a.freq_scale = c.freq_scale;
  a.mode = c.mode;
  std::vector<float> norm_w;
  if (c.norm_offset >= 0.0f) {
    norm_w = runtime::testing::random_f32(rng, c.head_dim, 0.5f, 1.5f);
    a.norm = runtime::HeadNormWeight{{}, 1e-6f, c.norm_offset};
  }
  const std::string name = std::string("rope ") + (c.mode == runtime::RopeMode::kNeox ? "neox" : "interleaved") +
                           " head_dim=" + std::to_string(c.head_dim) + " n_rot=" + std::to_string(c.n_rot) +
                           (c.in_place ? " in place" : "") + (a.norm ? " head norm" : "");
  testing::run_op_case(dev(), rec(), rope_case(name, a, x, pos, {}, c.in_place, norm_w));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RopeTest,
    ::testing::Values(RopeCase{3, 4, 64, 64, runtime::RopeMode::kNeox, 10000.0f, 1.0f, false},
                      RopeCase{5, 3, 64, 64, runtime::RopeMode::kInterleaved, 500000.0f, 1.0f, false},
                      RopeCase{2, 3, 80, 32, runtime::RopeMode::kNeox, 10000.0f, 0.25f, false},    // partial rotary
                      RopeCase{4, 2, 96, 64, runtime::RopeMode::kInterleaved, 10000.0f, 1.0f, true},  // in place
                      // The per-head RMSNorm first (rope_norm): Qwen3's head_dim 128, Gemma's offset 1 with partial
                      // rotary, in place.
                      RopeCase{3, 4, 128, 128, runtime::RopeMode::kNeox, 1000000.0f, 1.0f, true, 0.0f},
                      RopeCase{2, 3, 80, 32, runtime::RopeMode::kNeox, 10000.0f, 1.0f, false, 1.0f},
                      RopeCase{5, 2, 64, 64, runtime::RopeMode::kInterleaved, 10000.0f, 0.5f, true, 0.0f}));

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
    std::mt19937 rng(c.head_dim + c.n_rot);
    runtime::RopeArgs a;
    a.n_tokens = 4;
    a.n_heads = 3;
    a.head_dim = c.head_dim;
    a.n_rot = c.n_rot;
    a.mode = c.mode;
    a.mscale = f->mscale;
    const std::vector<float> x = runtime::testing::random_f32(rng, uint64_t{a.n_tokens} * a.n_heads * c.head_dim);
    const std::string name = std::string("rope table type=") + std::to_string(static_cast<int>(c.type)) + " head_dim=" +
                             std::to_string(c.head_dim) + " mscale=" + std::to_string(f->mscale);
    testing::run_op_case(dev(), rec(), rope_case(name, a, x, {0, 7, 300, 1999}, f->inv_freq, false));
    // rope_freqs_norm: the per-head RMSNorm, then the table's rotation.
    a.norm = runtime::HeadNormWeight{{}, 1e-5f, 0.0f};
    testing::run_op_case(dev(), rec(), rope_case(name + " head norm", a, x, {0, 7, 300, 1999}, f->inv_freq, false,
                                                 runtime::testing::random_f32(rng, c.head_dim, 0.5f, 1.5f)));
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

// kv_append_rope: K rotated into the cache in one dispatch. Compared with the two-step path (record_rope into a
// copy of K, then record_kv_append: what packs without the fused op run) and with the double reference; V must be
// stored exactly as kv_append stores it, and positions outside p0 .. p0 + tokens - 1 left untouched.
struct KvRopeCase {
  const char* name;
  DType dtype;
  runtime::RopeMode mode;
  uint32_t head_dim, n_rot;
  bool table;  // llama3 frequency table (as the executor binds for scaled models), else computed frequencies
  float freq_scale = 1.0f;  // computed frequencies: linear scaling
  float norm_offset = -1.0f;  // >= 0: K RMS-normed per head first (kv_append_norm_rope), weight offset 0 or 1
};

class KvAppendRopeTest : public VulkanTest, public ::testing::WithParamInterface<KvRopeCase> {};

// A layer's K or V cache, [heads][capacity][head_dim], as floats (F16 halves widened).
std::vector<float> cache_values(runtime::Device& dev, const runtime::BufferRange& r, DType dtype, uint64_t n) {
  std::vector<std::byte> raw(r.size);
  EXPECT_TRUE(dev.download(r, raw).ok());
  std::vector<float> out(n);
  for (uint64_t i = 0; i < n; ++i) {
    if (dtype == DType::kF16) {
      uint16_t h = 0;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      out[i] = quant::f16_to_f32(h);
    } else {
      std::memcpy(&out[i], raw.data() + 4 * i, 4);
    }
  }
  return out;
}

TEST_P(KvAppendRopeTest, MatchesTwoStepPathAndReference) {
  const KvRopeCase c = GetParam();
  const uint32_t heads = 3, cap = 12, p0 = 5, tokens = 4;
  const uint64_t n = uint64_t{tokens} * heads * c.head_dim;
  std::mt19937 rng(c.head_dim * 3 + c.n_rot);
  const std::vector<float> k = runtime::testing::random_f32(rng, n);
  const std::vector<float> v = runtime::testing::random_f32(rng, n);
  std::vector<int32_t> pos(tokens);
  for (uint32_t t = 0; t < tokens; ++t) pos[t] = static_cast<int32_t>(p0 + t);
  std::vector<float> inv_freq(c.n_rot / 2);
  float mscale = 1.0f;
  const float theta_base = 500000.0f;
  if (c.table) {
    runtime::RopeScaling sc;
    sc.type = runtime::RopeScalingType::kLlama3;
    sc.factor = 8.0;
    sc.original_max_position_embeddings = 8;
    auto f = runtime::rope_frequencies(sc, theta_base, c.n_rot);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    inv_freq = f->inv_freq;
    mscale = f->mscale;
  } else {
    for (uint32_t i = 0; i < c.n_rot / 2; ++i) {
      inv_freq[i] = float(c.freq_scale * std::pow(double(theta_base), -2.0 * i / c.n_rot));
    }
  }
  Buffer kb = upload(k, "k");
  Buffer vb = upload(v, "v");
  Buffer pb = upload(pos, "pos");
  Buffer fb = upload(inv_freq, "inv_freq");
  Buffer k_roped = poisoned_f32(n, "k roped");
  const bool norm = c.norm_offset >= 0.0f;
  const std::vector<float> norm_w = runtime::testing::random_f32(rng, c.head_dim, 0.5f, 1.5f);
  Buffer nb = upload(norm_w, "norm w");
  Buffer k_normed = poisoned_f32(n, "k normed");
  const runtime::HeadNormWeight head_norm{nb.range(), 1e-6f, c.norm_offset};
  const runtime::KvCacheShape shape{1, heads, c.head_dim, cap, c.dtype};
  auto fused = runtime::KvCache::create(dev(), shape, "fused");
  auto two_step = runtime::KvCache::create(dev(), shape, "two-step");
  ASSERT_TRUE(fused.ok() && two_step.ok());
  ASSERT_TRUE(dev().fill(fused->range(), 0x5a5a5a5au).ok());
  ASSERT_TRUE(dev().fill(two_step->range(), 0x5a5a5a5au).ok());

  runtime::KvRope rope;
  rope.pos = pb.range();
  rope.n_rot = c.n_rot;
  rope.interleaved = c.mode == runtime::RopeMode::kInterleaved;
  rope.theta_base = theta_base;
  rope.freq_scale = c.freq_scale;
  if (c.table) {
    rope.inv_freq = fb.range();
    rope.mscale = mscale;
  }
  if (norm) rope.k_norm = head_norm;
  const Status s = runtime::record_kv_append(rec(), {fused->layer(0), kb.range(), vb.range(), tokens, p0, rope});
  ASSERT_TRUE(s.ok()) << s.to_string();
  // The two-step path: head norm (record_head_norm), rotation, append.
  if (norm) {
    ASSERT_TRUE(runtime::record_head_norm(rec(), {kb.range(), nb.range(), k_normed.range(), tokens, heads, c.head_dim,
                                                  head_norm.eps, head_norm.weight_offset})
                    .ok());
  }
  runtime::RopeArgs r;
  r.x = norm ? k_normed.range() : kb.range();
  r.pos = pb.range();
  r.y = k_roped.range();
  r.n_tokens = tokens;
  r.n_heads = heads;
  r.head_dim = c.head_dim;
  r.n_rot = c.n_rot;
  r.mode = c.mode;
  r.theta_base = theta_base;
  r.freq_scale = c.freq_scale;
  if (c.table) {
    r.inv_freq = fb.range();
    r.mscale = mscale;
  }
  ASSERT_TRUE(runtime::record_rope(rec(), r).ok());
  ASSERT_TRUE(runtime::record_kv_append(rec(), {two_step->layer(0), k_roped.range(), vb.range(), tokens, p0,
                                                std::nullopt})
                  .ok());
  run();

  const uint64_t cache_elems = uint64_t{heads} * cap * c.head_dim;
  const std::vector<float> kf = cache_values(dev(), fused->layer(0).k, c.dtype, cache_elems);
  const std::vector<float> kt = cache_values(dev(), two_step->layer(0).k, c.dtype, cache_elems);
  std::vector<std::byte> vf(fused->range_bytes()), vt(two_step->range_bytes());
  ASSERT_TRUE(dev().download(fused->layer(0).v, vf).ok());
  ASSERT_TRUE(dev().download(two_step->layer(0).v, vt).ok());
  EXPECT_EQ(vf, vt) << "V must be stored as kv_append stores it";

  // The appended rows against the two-step path and the double reference; every other row still poisoned.
  std::vector<float> got, other;
  std::vector<double> ref;
  const uint32_t half = c.n_rot / 2;
  uint32_t poisoned = 0;
  const std::vector<double> kd = norm ? testing::reference_rms_norm(testing::to_double(k), norm_w, c.head_dim, head_norm.eps,
                                                                         c.norm_offset)
                                      : std::vector<double>(k.begin(), k.end());
  for (uint32_t h = 0; h < heads; ++h) {
    for (uint32_t p = 0; p < cap; ++p) {
      const uint64_t row = (uint64_t{h} * cap + p) * c.head_dim;
      if (p < p0 || p >= p0 + tokens) {
        uint32_t bits = 0;
        std::memcpy(&bits, &kf[row], 4);
        poisoned += c.dtype == DType::kF16 ? (quant::f32_to_f16(kf[row]) == 0x5a5au) : (bits == 0x5a5a5a5au);
        continue;
      }
      const uint32_t t = p - p0;
      const uint64_t src = (uint64_t{t} * heads + h) * c.head_dim;
      std::vector<double> want(kd.begin() + static_cast<std::ptrdiff_t>(src),
                               kd.begin() + static_cast<std::ptrdiff_t>(src + c.head_dim));
      for (uint32_t i = 0; i < half; ++i) {
        const double theta = pos[t] * double(inv_freq[i]);
        const uint32_t d0 = c.mode == runtime::RopeMode::kInterleaved ? 2 * i : i;
        const uint32_t d1 = c.mode == runtime::RopeMode::kInterleaved ? 2 * i + 1 : i + half;
        const double a = kd[src + d0], b = kd[src + d1];
        want[d0] = (a * std::cos(theta) - b * std::sin(theta)) * mscale;
        want[d1] = (a * std::sin(theta) + b * std::cos(theta)) * mscale;
      }
      for (uint32_t d = 0; d < c.head_dim; ++d) {
        got.push_back(kf[row + d]);
        other.push_back(kt[row + d]);
        ref.push_back(want[d]);
      }
    }
  }
  EXPECT_EQ(poisoned, heads * (cap - tokens)) << "rows outside the appended positions were written";
  EXPECT_EQ(runtime::testing::count_non_finite(got), 0u);
  const double vs_two_step = runtime::testing::nmse(got, std::vector<double>(other.begin(), other.end()));
  const double vs_ref = runtime::testing::nmse(got, ref);
  std::printf("  NMSE vs two-step %.3e, vs reference %.3e\n", vs_two_step, vs_ref);
  // Same arithmetic (kernels/include/rope.glsl): equal up to a compiler's operation order; F16 adds the half
  // rounding (2^-11 relative) to the reference bound. With the head norm the sums of squares run in another order
  // (one workgroup per head here, rms_norm.comp's there): a few ulp of the scale, NMSE ~1e-14 in F32; in F16 such an
  // ulp now and then flips a half's rounding, (2^-11)^2 = 2.4e-7 each (H200: 1.4e-10 over 1,536 values), so F16 allows
  // 1e-8 (~4% of the values flipped). A wrong norm or weight is off by NMSE >= ~1e-3.
  EXPECT_LT(vs_two_step, !norm ? 1e-12 : c.dtype == DType::kF16 ? 1e-8 : 1e-10);
  EXPECT_LT(vs_ref, c.dtype == DType::kF16 ? 1e-6 : kRopeNmse);
}

const KvRopeCase kKvRopeCases[] = {
    {"neox_f16", DType::kF16, runtime::RopeMode::kNeox, 64, 64, false},
    {"interleaved_f32", DType::kF32, runtime::RopeMode::kInterleaved, 64, 64, false},
    {"partial_neox_f16", DType::kF16, runtime::RopeMode::kNeox, 80, 32, false},
    {"partial_interleaved_f32", DType::kF32, runtime::RopeMode::kInterleaved, 96, 64, false},
    {"llama3_table_f16", DType::kF16, runtime::RopeMode::kNeox, 64, 64, true},
    {"llama3_table_interleaved_f32", DType::kF32, runtime::RopeMode::kInterleaved, 64, 64, true},
    {"linear_scaling_f32", DType::kF32, runtime::RopeMode::kNeox, 64, 48, false, 0.25f},
    {"head_norm_neox_f16", DType::kF16, runtime::RopeMode::kNeox, 128, 128, false, 1.0f, 0.0f},
    {"head_norm_partial_f32", DType::kF32, runtime::RopeMode::kNeox, 80, 32, false, 1.0f, 1.0f},
    {"head_norm_llama3_table_interleaved_f32", DType::kF32, runtime::RopeMode::kInterleaved, 64, 64, true, 1.0f, 0.0f},
};
INSTANTIATE_TEST_SUITE_P(Cases, KvAppendRopeTest, ::testing::ValuesIn(kKvRopeCases),
                         [](const ::testing::TestParamInfo<KvRopeCase>& i) { return std::string(i.param.name); });

TEST_F(VulkanTest, KvAppendRopeErrorsNameTheBadField) {
  const runtime::KvCacheShape shape{1, 2, 8, 16, DType::kF16};
  auto cache = runtime::KvCache::create(dev(), shape, "kv");
  ASSERT_TRUE(cache.ok());
  Buffer src = alloc(4096);
  runtime::KvRope rope;
  rope.pos = src.range().sub(0, 8);
  rope.n_rot = 6;
  runtime::KvAppendArgs a{cache->layer(0), src.range(), src.range(), 4, 0, rope};
  Status s = runtime::record_kv_append(rec(), a, "blk.1");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("kv_append blk.1 [tokens=4 p0=0 capacity=16] rope n_rot=6: pos range of 8 bytes < "
                             "required 16"),
            std::string::npos)
      << s.message();
  a.rope->n_rot = 10;
  s = runtime::record_kv_append(rec(), a, "blk.1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("n_rot must be even and <= head_dim 8"), std::string::npos) << s.message();
  a.rope->n_rot = 0;
  a.rope->pos = src.range();
  a.rope->theta_base = 0.0f;
  s = runtime::record_kv_append(rec(), a, "blk.1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("rope n_rot=8: theta_base must be > 0"), std::string::npos) << s.message();
  // The fused head norm: its weight holds head_dim floats, eps > 0.
  a.rope->theta_base = 10000.0f;
  a.rope->k_norm = runtime::HeadNormWeight{src.range().sub(0, 16), 1e-6f, 0.0f};
  s = runtime::record_kv_append(rec(), a, "blk.1");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("norm w range of 16 bytes < required 32"), std::string::npos) << s.message();
  a.rope->k_norm = runtime::HeadNormWeight{src.range(), 0.0f, 0.0f};
  s = runtime::record_kv_append(rec(), a, "blk.1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("norm eps must be finite and > 0"), std::string::npos) << s.message();
  runtime::RopeArgs r;
  r.x = src.range();
  r.pos = src.range();
  r.y = src.range();
  r.n_tokens = 1;
  r.n_heads = 2;
  r.head_dim = 8;
  r.norm = runtime::HeadNormWeight{src.range().sub(0, 8), 1e-6f, 0.0f};
  s = runtime::record_rope(rec(), r, "q");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("rope q [tokens=1 heads=2 head_dim=8 n_rot=8]: norm w range of 8 bytes < required 32"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(rec().dispatch_count(), 0u);
}

}  // namespace
}  // namespace rdrr::kernels
