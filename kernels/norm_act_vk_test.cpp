// RMSNorm (plain and Gemma 1+w), residual add and gated activations (SiLU, GELU-tanh) vs double-precision
// CPU references, on NaN-poisoned outputs, including in-place use. Each case is an OpCase (op_test_util.h).
#include <cmath>
#include <string>

#include "kernels/kernel_test_ref.h"
#include "kernels/op_test_util.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using runtime::testing::random_f32;
using runtime::testing::VulkanTest;
using testing::OpBindings;
using testing::OpCase;
using testing::Tolerance;

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

OpCase rms_norm_case(const NormCase& c) {
  std::mt19937 rng(c.rows * 131 + c.d);
  const std::vector<float> x = random_f32(rng, uint64_t{c.rows} * c.d, -3.0f, 3.0f);
  const std::vector<float> w = random_f32(rng, c.d, -1.0f, 1.0f);
  OpCase oc;
  oc.name = std::string("rms_norm rows=") + std::to_string(c.rows) + " d=" + std::to_string(c.d) +
            " offset=" + std::to_string(int(c.weight_offset)) + (c.in_place ? " in place" : "");
  oc.inputs = {testing::f32_input("x", {c.rows, c.d}, x), testing::f32_input("w", {c.d}, w)};
  oc.outputs = {testing::f32_output("y", {c.rows, c.d},
                                    testing::reference_rms_norm(testing::to_double(x), w, c.d, c.eps, c.weight_offset),
                                    Tolerance::nmse(kRmsNormNmse), c.in_place ? "x" : "")};
  oc.record = [c](runtime::Recorder& rec, const OpBindings& b) {
    runtime::RmsNormArgs a;
    a.x = b["x"];
    a.w = b["w"];
    a.y = b["y"];
    a.d = c.d;
    a.n_rows = c.rows;
    a.eps = c.eps;
    a.weight_offset = c.weight_offset;
    return runtime::record_rms_norm(rec, a);
  };
  return oc;
}

class RmsNormTest : public VulkanTest, public ::testing::WithParamInterface<NormCase> {};

TEST_P(RmsNormTest, MatchesDoubleReference) { testing::run_op_case(dev(), rec(), rms_norm_case(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Shapes, RmsNormTest,
                         ::testing::Values(NormCase{3, 301, 1e-6f, 0.0f, false}, NormCase{1, 7, 1e-5f, 0.0f, false},
                                           NormCase{5, 2048, 1e-6f, 1.0f, false},  // Gemma (1 + w)
                                           NormCase{4, 129, 1e-6f, 1.0f, true},   // in place
                                           NormCase{130, 64, 1e-6f, 0.0f, false},
                                           // past the values kept in registers (8 x at most 1024 invocations)
                                           NormCase{2, 40003, 1e-6f, 0.0f, false}, NormCase{1, 9000, 1e-6f, 1.0f, true}));

// out = a + b, then a += b in place (the residual update) in the same submission.
OpCase add_case(uint32_t n) {
  std::mt19937 rng(n);
  const std::vector<float> a = random_f32(rng, n, -10.0f, 10.0f);
  const std::vector<float> b = random_f32(rng, n, -10.0f, 10.0f);
  std::vector<double> ref(n);
  for (uint32_t i = 0; i < n; ++i) ref[i] = double(a[i]) + b[i];
  OpCase oc;
  oc.name = std::string("add n=") + std::to_string(n);
  oc.inputs = {testing::f32_input("a", {n}, a), testing::f32_input("b", {n}, b)};
  oc.outputs = {testing::f32_output("out", {n}, ref, Tolerance::nmse(kAddNmse)),
                testing::f32_output("a (in place)", {n}, ref, Tolerance::nmse(kAddNmse), "a")};
  oc.record = [n](runtime::Recorder& rec, const OpBindings& bind) {
    RDRR_RETURN_IF_ERROR(runtime::record_add(rec, bind["a"], bind["b"], bind["out"], n));
    return runtime::record_add(rec, bind["a"], bind["b"], bind["a"], n, "residual in place");
  };
  return oc;
}

class EltwiseTest : public VulkanTest {};

TEST_F(EltwiseTest, AddMatchesAndWorksInPlace) {
  for (uint32_t n : {1u, 4099u}) testing::run_op_case(dev(), rec(), add_case(n));
}

OpCase glu_case(runtime::Activation act) {
  const uint32_t n = 5003;
  std::mt19937 rng(5);
  std::vector<float> gate = random_f32(rng, n, -8.0f, 8.0f);
  gate[0] = 90.0f;  // exp overflow / tanh saturation must not produce NaN
  gate[1] = -90.0f;
  gate[2] = 0.0f;
  const std::vector<float> up = random_f32(rng, n, -2.0f, 2.0f);
  const bool is_silu = act == runtime::Activation::kSilu;
  std::vector<double> ref(n);
  for (uint32_t i = 0; i < n; ++i) ref[i] = (is_silu ? testing::silu(gate[i]) : testing::gelu_tanh(gate[i])) * up[i];
  OpCase oc;
  oc.name = std::string("glu ") + (is_silu ? "silu" : "gelu_tanh") + " n=" + std::to_string(n);
  oc.inputs = {testing::f32_input("gate", {n}, gate), testing::f32_input("up", {n}, up)};
  oc.outputs = {testing::f32_output("out", {n}, ref, Tolerance::nmse(kGluNmse))};
  oc.record = [act, n](runtime::Recorder& rec, const OpBindings& b) {
    return runtime::record_glu(rec, act, b["gate"], b["up"], b["out"], n);
  };
  return oc;
}

TEST_F(EltwiseTest, GatedActivationsMatchDoubleReference) {
  for (runtime::Activation act : {runtime::Activation::kSilu, runtime::Activation::kGeluTanh}) {
    testing::run_op_case(dev(), rec(), glu_case(act));
  }
}

TEST_F(EltwiseTest, ShortRangesAreRejected) {
  runtime::Buffer a = alloc(64);
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
