// Per-head Q/K RMSNorm (plain and 1+w), residual add fused with RMSNorm, logit soft-capping and the split
// gated activation over a fused gate_up output, the row split of a fused qkv output, vs double-precision CPU
// references on NaN-poisoned outputs.
// Each case is an OpCase (op_test_util.h).
#include <cmath>
#include <string>
#include <tuple>

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

// As rms_norm (norm_act_vk_test.cpp): f32 sums of squares, one sqrt, two multiplies; measured ~1e-15.
constexpr double kNormNmse = 1e-10;
// One f32 add per element, exactly rounded.
constexpr double kAddNmse = 1e-13;
// tanh / exp through the device's transcendental units (a few ulp): measured ~1e-15 .. 1e-14 on lavapipe.
constexpr double kTranscendentalNmse = 1e-9;

class FusedTest : public VulkanTest {};

struct HeadNormCase {
  uint32_t tokens, heads, head_dim;
  float offset;
  bool in_place;
};

OpCase head_norm_case(const HeadNormCase& c) {
  std::mt19937 rng(c.heads * 17 + c.head_dim);
  const uint64_t n = uint64_t{c.tokens} * c.heads * c.head_dim;
  const std::vector<float> x = random_f32(rng, n, -4.0f, 4.0f);
  const std::vector<float> w = random_f32(rng, c.head_dim, -1.0f, 1.0f);
  const float eps = 1e-6f;
  OpCase oc;
  oc.name = std::string("head_norm tokens=") + std::to_string(c.tokens) + " heads=" + std::to_string(c.heads) +
            " head_dim=" + std::to_string(c.head_dim) + (c.in_place ? " in place" : "");
  oc.inputs = {testing::f32_input("q", {c.tokens, c.heads, c.head_dim}, x),
               testing::f32_input("q_norm", {c.head_dim}, w)};
  oc.outputs = {testing::f32_output("y", {c.tokens, c.heads, c.head_dim},
                                    testing::reference_rms_norm(testing::to_double(x), w, c.head_dim, eps, c.offset),
                                    Tolerance::nmse(kNormNmse), c.in_place ? "q" : "")};
  oc.record = [c, eps](runtime::Recorder& rec, const OpBindings& b) {
    runtime::HeadNormArgs a;
    a.x = b["q"];
    a.w = b["q_norm"];
    a.y = b["y"];
    a.n_tokens = c.tokens;
    a.n_heads = c.heads;
    a.head_dim = c.head_dim;
    a.eps = eps;
    a.weight_offset = c.offset;
    return runtime::record_head_norm(rec, a, "q_norm");
  };
  return oc;
}

TEST_F(FusedTest, HeadNormPlainAndGemmaMatchDoubleReference) {
  for (const HeadNormCase& c : {HeadNormCase{3, 4, 128, 0.0f, false}, HeadNormCase{2, 5, 256, 1.0f, true},
                                HeadNormCase{1, 2, 80, 1.0f, false}}) {
    testing::run_op_case(dev(), rec(), head_norm_case(c));
  }
}

// x += res in place, y = rms_norm(x). The norm's reference is the norm of the f32 sum (what a separate add then
// rms_norm would see): one f32 add is exactly rounded, so the CPU's f32 sum is the GPU's bit for bit.
OpCase add_rms_norm_case(float offset, uint32_t rows, uint32_t d) {
  std::mt19937 rng(static_cast<uint32_t>(offset) + 3 + d);
  const std::vector<float> x = random_f32(rng, rows * d, -3.0f, 3.0f);
  const std::vector<float> r = random_f32(rng, rows * d, -3.0f, 3.0f);
  const std::vector<float> w = random_f32(rng, d, -1.0f, 1.0f);
  std::vector<double> sum(x.size()), sum_f32(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    sum[i] = double(x[i]) + r[i];
    sum_f32[i] = x[i] + r[i];
  }
  const float eps = 1e-5f;
  OpCase oc;
  oc.name = std::string("add_rms_norm rows=") + std::to_string(rows) + " d=" + std::to_string(d) +
            " offset=" + std::to_string(int(offset));
  oc.inputs = {testing::f32_input("x", {rows, d}, x), testing::f32_input("res", {rows, d}, r),
               testing::f32_input("w", {d}, w)};
  oc.outputs = {testing::f32_output("x (sum, in place)", {rows, d}, sum, Tolerance::nmse(kAddNmse), "x"),
                testing::f32_output("y", {rows, d}, testing::reference_rms_norm(sum_f32, w, d, eps, offset),
                                    Tolerance::nmse(kNormNmse))};
  oc.record = [=](runtime::Recorder& rec, const OpBindings& b) {
    runtime::AddRmsNormArgs a;
    a.x = b["x"];
    a.res = b["res"];
    a.w = b["w"];
    a.y = b["y"];
    a.d = d;
    a.n_rows = rows;
    a.eps = eps;
    a.weight_offset = offset;
    return runtime::record_add_rms_norm(rec, a);
  };
  return oc;
}

TEST_F(FusedTest, AddRmsNormUpdatesResidualAndNormalizes) {
  // d = 40003: past the values a workgroup keeps in registers (8 per invocation, at most 1024 invocations), so
  // the re-read path runs too.
  for (const auto& [offset, rows, d] : {std::tuple{0.0f, 5u, 1000u}, {1.0f, 5u, 1000u}, {0.0f, 2u, 40003u}}) {
    testing::run_op_case(dev(), rec(), add_rms_norm_case(offset, rows, d));
  }
}

TEST_F(FusedTest, AddRmsNormRejectsOverlappingOutput) {
  runtime::Buffer a = alloc(4096);
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

// y = softcap(x), then x = softcap(x) in place, in one submission.
OpCase softcap_case(uint32_t n, float cap) {
  std::mt19937 rng(11);
  std::vector<float> x = random_f32(rng, n, -100.0f, 100.0f);
  x[0] = 1e30f;  // saturates to +cap, no NaN
  x[1] = -1e30f;
  x[2] = 0.0f;
  std::vector<double> ref(n);
  for (uint32_t i = 0; i < n; ++i) ref[i] = cap * std::tanh(double(x[i]) / cap);
  OpCase oc;
  oc.name = std::string("softcap n=") + std::to_string(n) + " cap=" + std::to_string(int(cap));
  oc.inputs = {testing::f32_input("logits", {n}, x)};
  oc.outputs = {testing::f32_output("y", {n}, ref, Tolerance::nmse(kTranscendentalNmse)),
                testing::f32_output("logits (in place)", {n}, ref, Tolerance::nmse(kTranscendentalNmse), "logits")};
  oc.record = [n, cap](runtime::Recorder& rec, const OpBindings& b) {
    RDRR_RETURN_IF_ERROR(runtime::record_softcap(rec, b["logits"], b["y"], n, cap, "final"));
    return runtime::record_softcap(rec, b["logits"], b["logits"], n, cap, "in place");
  };
  return oc;
}

TEST_F(FusedTest, SoftcapMatchesDoubleReference) {
  const uint32_t n = 3001;
  testing::run_op_case(dev(), rec(), softcap_case(n, 30.0f));
  runtime::Buffer xb = alloc(n * 4);
  runtime::Buffer yb = alloc(n * 4);
  const Status s = runtime::record_softcap(rec(), xb.range(), yb.range(), n, 0.0f, "final");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("softcap final [n=3001]: cap 0.000000 must be finite and > 0"), std::string::npos)
      << s.message();
}

// out[t][i] = act(gate_up[t][i]) * gate_up[t][n_ff + i]; the guard words past out catch stray writes.
OpCase glu_split_case(runtime::Activation act, uint32_t n_ff, uint32_t tokens) {
  std::mt19937 rng(21);
  const std::vector<float> gu = random_f32(rng, 2 * n_ff * tokens, -6.0f, 6.0f);
  const bool is_silu = act == runtime::Activation::kSilu;
  std::vector<double> ref(n_ff * tokens);
  for (uint32_t t = 0; t < tokens; ++t) {
    for (uint32_t i = 0; i < n_ff; ++i) {
      const double g = gu[t * 2 * n_ff + i];
      const double u = gu[t * 2 * n_ff + n_ff + i];
      ref[t * n_ff + i] = (is_silu ? testing::silu(g) : testing::gelu_tanh(g)) * u;
    }
  }
  OpCase oc;
  oc.name = std::string("glu_split ") + (is_silu ? "silu" : "gelu_tanh") + " n_ff=" + std::to_string(n_ff) +
            " tokens=" + std::to_string(tokens);
  oc.inputs = {testing::f32_input("gate_up", {tokens, 2 * n_ff}, gu)};
  oc.outputs = {testing::f32_output("out", {tokens, n_ff}, ref, Tolerance::nmse(kTranscendentalNmse))};
  oc.record = [=](runtime::Recorder& rec, const OpBindings& b) {
    return runtime::record_glu_split(rec, act, b["gate_up"], b["out"], n_ff, tokens);
  };
  return oc;
}

TEST_F(FusedTest, SplitGluReadsGateThenUpPerToken) {
  const uint32_t n_ff = 300, tokens = 3;
  for (runtime::Activation act : {runtime::Activation::kSilu, runtime::Activation::kGeluTanh}) {
    testing::run_op_case(dev(), rec(), glu_split_case(act, n_ff, tokens));
  }
  runtime::Buffer gb = alloc(2 * n_ff * tokens * 4);
  const Status s = runtime::record_glu_split(rec(), runtime::Activation::kSilu, gb.range(), gb.range(), n_ff, 1, "ffn");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("glu_split ffn [n_ff=300 tokens=1]: out overlaps gate_up"), std::string::npos)
      << s.message();
}

}  // namespace

// q[t] = qkv[t][0, n_q), k[t] = qkv[t][n_q, n_q + n_kv), v[t] = the rest: a copy, so bit-exact.
OpCase split_qkv_case(uint32_t n_q, uint32_t n_kv, uint32_t tokens) {
  std::mt19937 rng(n_q * 7 + n_kv);
  const uint32_t width = n_q + 2 * n_kv;
  const std::vector<float> qkv = random_f32(rng, uint64_t{width} * tokens, -3.0f, 3.0f);
  std::vector<double> q, k, v;
  for (uint32_t t = 0; t < tokens; ++t) {
    for (uint32_t c = 0; c < width; ++c) {
      const double x = qkv[uint64_t{t} * width + c];
      (c < n_q ? q : c < n_q + n_kv ? k : v).push_back(x);
    }
  }
  OpCase oc;
  oc.name = "split_qkv n_q=" + std::to_string(n_q) + " n_kv=" + std::to_string(n_kv) + " tokens=" + std::to_string(tokens);
  oc.inputs = {testing::f32_input("qkv", {tokens, width}, qkv)};
  oc.outputs = {testing::f32_output("q", {tokens, n_q}, q, Tolerance::bit_exact()),
                testing::f32_output("k", {tokens, n_kv}, k, Tolerance::bit_exact()),
                testing::f32_output("v", {tokens, n_kv}, v, Tolerance::bit_exact())};
  oc.record = [=](runtime::Recorder& rec, const OpBindings& b) {
    return runtime::record_split_qkv(rec, b["qkv"], b["q"], b["k"], b["v"], n_q, n_kv, tokens);
  };
  return oc;
}

TEST_F(FusedTest, SplitQkvCopiesEachTokensColumns) {
  // GQA with odd widths (no column range on a workgroup boundary), one row (decode without the in-place
  // layout), and more rows than a workgroup covers.
  for (auto [n_q, n_kv, tokens] : {std::tuple{96u, 24u, 1u}, {100u, 36u, 5u}, {512u, 128u, 7u}}) {
    testing::run_op_case(dev(), rec(), split_qkv_case(n_q, n_kv, tokens));
  }
  runtime::Buffer b = alloc(4 * 1024);
  const Status s = runtime::record_split_qkv(rec(), b.range().sub(0, 640), b.range().sub(1024, 256),
                                             b.range().sub(512, 64), b.range().sub(2048, 64), 64, 16, 1, "attn");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("split_qkv attn [n_q=64 n_kv=16 tokens=1]: k overlaps qkv"), std::string::npos)
      << s.message();
  const Status z = runtime::record_split_qkv(rec(), b.range(), b.range(), b.range(), b.range(), 64, 0, 1, "attn");
  EXPECT_EQ(z.code(), StatusCode::kInvalidArgument) << z.message();
}

}  // namespace rdrr::kernels
