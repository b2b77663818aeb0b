// Per-head Q/K RMSNorm (plain and 1+w), residual add fused with RMSNorm, logit soft-capping and the split
// gated activation over a fused gate_up output, vs double-precision CPU references on NaN-poisoned outputs.
#include <cmath>
#include <cstring>

#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using runtime::Buffer;
using runtime::testing::count_non_finite;
using runtime::testing::nmse;
using runtime::testing::random_f32;
using runtime::testing::VulkanTest;

// As rms_norm (norm_act_vk_test.cpp): f32 sums of squares, one sqrt, two multiplies; measured ~1e-15.
constexpr double kNormNmse = 1e-10;
// One f32 add per element, exactly rounded.
constexpr double kAddNmse = 1e-13;
// tanh / exp through the device's transcendental units (a few ulp): measured ~1e-15 .. 1e-14 on lavapipe.
constexpr double kTranscendentalNmse = 1e-9;

std::vector<double> ref_rms_norm(std::span<const double> x, std::span<const float> w, uint32_t d, float eps,
                                 float offset) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    double ss = 0.0;
    for (uint32_t i = 0; i < d; ++i) ss += x[r * d + i] * x[r * d + i];
    const double scale = 1.0 / std::sqrt(ss / d + double(eps));
    for (uint32_t i = 0; i < d; ++i) y[r * d + i] = x[r * d + i] * scale * (double(w[i]) + offset);
  }
  return y;
}

class FusedTest : public VulkanTest {};

TEST_F(FusedTest, HeadNormPlainAndGemmaMatchDoubleReference) {
  struct Case {
    uint32_t tokens, heads, head_dim;
    float offset;
    bool in_place;
  };
  for (const Case& c : {Case{3, 4, 128, 0.0f, false}, Case{2, 5, 256, 1.0f, true}, Case{1, 2, 80, 1.0f, false}}) {
    SCOPED_TRACE(c.head_dim);
    std::mt19937 rng(c.heads * 17 + c.head_dim);
    const uint64_t n = uint64_t{c.tokens} * c.heads * c.head_dim;
    const std::vector<float> x = random_f32(rng, n, -4.0f, 4.0f);
    const std::vector<float> w = random_f32(rng, c.head_dim, -1.0f, 1.0f);
    Buffer xb = upload(x, "q");
    Buffer wb = upload(w, "q_norm");
    Buffer yb = c.in_place ? Buffer{} : poisoned_f32(n, "y");
    runtime::HeadNormArgs a;
    a.x = xb.range();
    a.w = wb.range();
    a.y = c.in_place ? xb.range() : yb.range();
    a.n_tokens = c.tokens;
    a.n_heads = c.heads;
    a.head_dim = c.head_dim;
    a.eps = 1e-6f;
    a.weight_offset = c.offset;
    ASSERT_TRUE(runtime::record_head_norm(rec(), a, "q_norm").ok());
    run();
    const std::vector<float> y = download_f32(a.y);
    const std::vector<double> xd(x.begin(), x.end());
    const double e = nmse(y, ref_rms_norm(xd, w, c.head_dim, a.eps, c.offset));
    std::printf("  head_norm NMSE %.3e\n", e);
    EXPECT_EQ(count_non_finite(y), 0u);
    EXPECT_LT(e, kNormNmse);
  }
}

TEST_F(FusedTest, AddRmsNormUpdatesResidualAndNormalizes) {
  // d = 40003: past the values a workgroup keeps in registers (8 per invocation, at most 1024 invocations), so
  // the re-read path runs too.
  for (const auto& [offset, rows, d] : {std::tuple{0.0f, 5u, 1000u}, {1.0f, 5u, 1000u}, {0.0f, 2u, 40003u}}) {
    std::mt19937 rng(static_cast<uint32_t>(offset) + 3 + d);
    const std::vector<float> x = random_f32(rng, rows * d, -3.0f, 3.0f);
    const std::vector<float> r = random_f32(rng, rows * d, -3.0f, 3.0f);
    const std::vector<float> w = random_f32(rng, d, -1.0f, 1.0f);
    Buffer xb = upload(x, "x");
    Buffer rb = upload(r, "res");
    Buffer wb = upload(w, "w");
    Buffer yb = poisoned_f32(rows * d, "y");
    runtime::AddRmsNormArgs a;
    a.x = xb.range();
    a.res = rb.range();
    a.w = wb.range();
    a.y = yb.range();
    a.d = d;
    a.n_rows = rows;
    a.eps = 1e-5f;
    a.weight_offset = offset;
    ASSERT_TRUE(runtime::record_add_rms_norm(rec(), a).ok());
    run();
    std::vector<double> sum(x.size());
    for (size_t i = 0; i < x.size(); ++i) sum[i] = double(x[i]) + r[i];
    const std::vector<float> x_after = download_f32(xb.range());
    const std::vector<float> y = download_f32(yb.range());
    const double e_add = nmse(x_after, sum);
    // The norm of the f32 sum (what a separate add then rms_norm would see).
    const std::vector<double> x_f32(x_after.begin(), x_after.end());
    const double e_norm = nmse(y, ref_rms_norm(x_f32, w, d, a.eps, offset));
    std::printf("  add NMSE %.3e, norm NMSE %.3e\n", e_add, e_norm);
    EXPECT_LT(e_add, kAddNmse);
    EXPECT_EQ(count_non_finite(y), 0u);
    EXPECT_LT(e_norm, kNormNmse);
  }
}

TEST_F(FusedTest, AddRmsNormRejectsOverlappingOutput) {
  Buffer a = alloc(4096);
  runtime::AddRmsNormArgs r;
  r.x = a.range().sub(0, 1024);
  r.res = a.range().sub(1024, 1024);
  r.w = a.range().sub(2048, 1024);
  r.y = a.range().sub(512, 1024);
  r.d = 256;
  r.n_rows = 1;
  const Status s = runtime::record_add_rms_norm(rec(), r, "ffn_norm");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("add_rms_norm ffn_norm [rows=1 d=256]: y overlaps x or res"), std::string::npos)
      << s.message();
}

TEST_F(FusedTest, SoftcapMatchesDoubleReference) {
  const uint32_t n = 3001;
  std::mt19937 rng(11);
  std::vector<float> x = random_f32(rng, n, -100.0f, 100.0f);
  x[0] = 1e30f;  // saturates to +cap, no NaN
  x[1] = -1e30f;
  x[2] = 0.0f;
  const float cap = 30.0f;
  Buffer xb = upload(x, "logits");
  Buffer yb = poisoned_f32(n);
  ASSERT_TRUE(runtime::record_softcap(rec(), xb.range(), yb.range(), n, cap, "final").ok());
  ASSERT_TRUE(runtime::record_softcap(rec(), xb.range(), xb.range(), n, cap, "in place").ok());
  run();
  std::vector<double> ref(n);
  for (uint32_t i = 0; i < n; ++i) ref[i] = cap * std::tanh(double(x[i]) / cap);
  for (const runtime::BufferRange& r : {yb.range(), xb.range()}) {
    const std::vector<float> y = download_f32(r);
    EXPECT_EQ(count_non_finite(y), 0u);
    const double e = nmse(y, ref);
    std::printf("  softcap NMSE %.3e\n", e);
    EXPECT_LT(e, kTranscendentalNmse);
  }
  const Status s = runtime::record_softcap(rec(), xb.range(), yb.range(), n, 0.0f, "final");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("softcap final [n=3001]: cap 0.000000 must be finite and > 0"), std::string::npos)
      << s.message();
}

TEST_F(FusedTest, SplitGluReadsGateThenUpPerToken) {
  const uint32_t n_ff = 300, tokens = 3;
  std::mt19937 rng(21);
  const std::vector<float> gu = random_f32(rng, 2 * n_ff * tokens, -6.0f, 6.0f);
  Buffer gb = upload(gu, "gate_up");
  for (runtime::Activation act : {runtime::Activation::kSilu, runtime::Activation::kGeluTanh}) {
    Buffer out = poisoned_f32(n_ff * tokens + 4);
    ASSERT_TRUE(runtime::record_glu_split(rec(), act, gb.range(), out.range().sub(0, n_ff * tokens * 4), n_ff, tokens).ok());
    run();
    std::vector<float> y = download_f32(out.range());
    for (uint32_t i = n_ff * tokens; i < n_ff * tokens + 4; ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, &y[i], 4);
      EXPECT_EQ(bits, runtime::testing::kPoisonBits) << "stray write at " << i;
    }
    y.resize(n_ff * tokens);
    std::vector<double> ref(n_ff * tokens);
    for (uint32_t t = 0; t < tokens; ++t) {
      for (uint32_t i = 0; i < n_ff; ++i) {
        const double g = gu[t * 2 * n_ff + i];
        const double u = gu[t * 2 * n_ff + n_ff + i];
        const double a = act == runtime::Activation::kSilu
                             ? g / (1.0 + std::exp(-g))
                             : 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
        ref[t * n_ff + i] = a * u;
      }
    }
    EXPECT_EQ(count_non_finite(y), 0u);
    const double e = nmse(y, ref);
    std::printf("  glu_split NMSE %.3e\n", e);
    EXPECT_LT(e, kTranscendentalNmse);
  }
  const Status s = runtime::record_glu_split(rec(), runtime::Activation::kSilu, gb.range(), gb.range(), n_ff, 1, "ffn");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("glu_split ffn [n_ff=300 tokens=1]: out overlaps gate_up"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace rdrr::kernels
