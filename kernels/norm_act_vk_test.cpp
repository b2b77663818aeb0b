// RMSNorm (plain and Gemma 1+w), residual add and gated activations (SiLU, GELU-tanh) vs double-precision
// CPU references, on NaN-poisoned outputs, including in-place use.
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

// f32 accumulation of d squares + one sqrt + two multiplies per element: measured ~1e-15 .. 1e-14.
constexpr double kRmsNormNmse = 1e-10;
// One f32 add per element, exactly rounded: NMSE ~1e-16 at most (it is usually exactly 0).
constexpr double kAddNmse = 1e-13;
// exp / tanh through the GPU's transcendental units (Vulkan allows a few ulp): measured ~1e-14 on lavapipe.
constexpr double kGluNmse = 1e-9;

struct NormCase {
  uint32_t rows, d;
  float eps, weight_offset;
  bool in_place;
};

class RmsNormTest : public VulkanTest, public ::testing::WithParamInterface<NormCase> {};

TEST_P(RmsNormTest, MatchesDoubleReference) {
  const NormCase c = GetParam();
  std::mt19937 rng(c.rows * 131 + c.d);
  const std::vector<float> x = random_f32(rng, uint64_t{c.rows} * c.d, -3.0f, 3.0f);
  const std::vector<float> w = random_f32(rng, c.d, -1.0f, 1.0f);
  Buffer xb = upload(x, "x");
  Buffer wb = upload(w, "w");
  Buffer yb = c.in_place ? Buffer{} : poisoned_f32(x.size(), "y");
  runtime::RmsNormArgs a;
  a.x = xb.range();
  a.w = wb.range();
  a.y = c.in_place ? xb.range() : yb.range();
  a.d = c.d;
  a.n_rows = c.rows;
  a.eps = c.eps;
  a.weight_offset = c.weight_offset;
  ASSERT_TRUE(runtime::record_rms_norm(rec(), a).ok());
  run();
  const std::vector<float> y = download_f32(a.y);
  std::vector<double> ref(x.size());
  for (uint32_t r = 0; r < c.rows; ++r) {
    double ss = 0.0;
    for (uint32_t i = 0; i < c.d; ++i) ss += double(x[r * c.d + i]) * x[r * c.d + i];
    const double scale = 1.0 / std::sqrt(ss / c.d + double(c.eps));
    for (uint32_t i = 0; i < c.d; ++i) ref[r * c.d + i] = x[r * c.d + i] * scale * (double(w[i]) + c.weight_offset);
  }
  EXPECT_EQ(count_non_finite(y), 0u);
  const double e = nmse(y, ref);
  std::printf("  NMSE %.3e\n", e);
  EXPECT_LT(e, kRmsNormNmse);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RmsNormTest,
                         ::testing::Values(NormCase{3, 301, 1e-6f, 0.0f, false}, NormCase{1, 7, 1e-5f, 0.0f, false},
                                           NormCase{5, 2048, 1e-6f, 1.0f, false},  // Gemma (1 + w)
                                           NormCase{4, 129, 1e-6f, 1.0f, true},   // in place
                                           NormCase{130, 64, 1e-6f, 0.0f, false},
                                           // past the values kept in registers (8 x at most 1024 invocations)
                                           NormCase{2, 40003, 1e-6f, 0.0f, false}, NormCase{1, 9000, 1e-6f, 1.0f, true}));

class EltwiseTest : public VulkanTest {};

TEST_F(EltwiseTest, AddMatchesAndWorksInPlace) {
  for (uint32_t n : {1u, 4099u}) {
    std::mt19937 rng(n);
    const std::vector<float> a = random_f32(rng, n, -10.0f, 10.0f);
    const std::vector<float> b = random_f32(rng, n, -10.0f, 10.0f);
    std::vector<double> ref(n);
    for (uint32_t i = 0; i < n; ++i) ref[i] = double(a[i]) + b[i];
    Buffer ab = upload(a, "a");
    Buffer bb = upload(b, "b");
    Buffer out = poisoned_f32(n);
    ASSERT_TRUE(runtime::record_add(rec(), ab.range(), bb.range(), out.range(), n).ok());
    run();
    std::vector<float> y = download_f32(out.range());
    EXPECT_EQ(count_non_finite(y), 0u);
    EXPECT_LT(nmse(y, ref), kAddNmse);
    ASSERT_TRUE(runtime::record_add(rec(), ab.range(), bb.range(), ab.range(), n, "residual in place").ok());
    run();
    y = download_f32(ab.range());
    EXPECT_LT(nmse(y, ref), kAddNmse);
  }
}

double silu(double g) { return g / (1.0 + std::exp(-g)); }
double gelu_tanh(double g) {
  return 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
}

TEST_F(EltwiseTest, GatedActivationsMatchDoubleReference) {
  const uint32_t n = 5003;
  std::mt19937 rng(5);
  std::vector<float> gate = random_f32(rng, n, -8.0f, 8.0f);
  gate[0] = 90.0f;  // exp overflow / tanh saturation must not produce NaN
  gate[1] = -90.0f;
  gate[2] = 0.0f;
  const std::vector<float> up = random_f32(rng, n, -2.0f, 2.0f);
  Buffer gb = upload(gate, "gate");
  Buffer ub = upload(up, "up");
  for (runtime::Activation act : {runtime::Activation::kSilu, runtime::Activation::kGeluTanh}) {
    SCOPED_TRACE(act == runtime::Activation::kSilu ? "silu" : "gelu_tanh");
    Buffer out = poisoned_f32(n);
    ASSERT_TRUE(runtime::record_glu(rec(), act, gb.range(), ub.range(), out.range(), n).ok());
    run();
    const std::vector<float> y = download_f32(out.range());
    std::vector<double> ref(n);
    for (uint32_t i = 0; i < n; ++i) ref[i] = (act == runtime::Activation::kSilu ? silu(gate[i]) : gelu_tanh(gate[i])) * up[i];
    EXPECT_EQ(count_non_finite(y), 0u);
    const double e = nmse(y, ref);
    std::printf("  NMSE %.3e\n", e);
    EXPECT_LT(e, kGluNmse);
  }
}

TEST_F(EltwiseTest, ShortRangesAreRejected) {
  Buffer a = alloc(64);
  const Status s = runtime::record_add(rec(), a.range(), a.range(), a.range().sub(0, 32), 16, "resid");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("add resid [n=16]: out range of 32 bytes < required 64"), std::string::npos) << s.message();
  runtime::RmsNormArgs r;
  r.x = a.range();
  r.w = a.range().sub(0, 8);
  r.y = a.range();
  r.d = 4;
  r.n_rows = 4;
  const Status s2 = runtime::record_rms_norm(rec(), r, "attn_norm");
  EXPECT_EQ(s2.code(), StatusCode::kValidation);
  EXPECT_NE(s2.message().find("rms_norm attn_norm [rows=4 d=4]: w range of 8 bytes < required 16"), std::string::npos)
      << s2.message();
}

}  // namespace
}  // namespace rdrr::kernels
