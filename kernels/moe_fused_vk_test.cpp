// The decode step moe_route_gate_up_glu in one dispatch (gemv_q4k.comp ROWS MOE ROUTE_GLU, record_moe_route_glu)
// against the double references of the three steps it replaces: the router (reference_route: softmax, top-k, ties
// to the lower expert, renormalisation), each selected expert's gate and up rows over the exactly dequantized
// weights, and the gated activation. Outputs (ids, weights, act) NaN-poisoned, with poisoned guard words after
// them that must stay so. Then the op's validation errors.
#include <cmath>
#include <cstring>
#include <random>

#include "kernels/error_case_test_util.h"
#include "kernels/kernel_test_ref.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;
using runtime::Activation;
using runtime::Buffer;

// act NMSE bound: act = act(g) * u, g and u f32 dot products (NMSE ~1e-14 .. 1e-12 against double for K <= 1024,
// as moe_vk_test's kMoeGemvNmse derives), SiLU / GELU-tanh within a few ulp (|g| small), one product: the same order.
// 1e-9 leaves room for other devices' contraction and summation orders; one wrong expert, row or gate / up swap
// among ~10^2 .. 10^3 outputs gives NMSE >= ~1e-3.
constexpr double kActNmse = 1e-9;
// Routing weights: moe_vk_test's kRouteRel derivation (exp within 3 + 2|x| ulp, the f32 sum of <= 256 terms,
// the renormalisation): 4.5e-5 at most; 1e-4.
constexpr double kWeightRel = 1e-4;
constexpr uint32_t kGuard = 8;

struct FusedCase {
  const char* what;
  DType dtype;
  Layout layout;
  uint32_t e, ff, k, m, t;
  bool normalize;
  Activation act;
  runtime::MoeGemvTuning tuning{};
  uint32_t w_offset = 64;
  std::vector<testing::Tie> ties{};
};

double act_ref(Activation a, double g) { return a == Activation::kGeluTanh ? testing::gelu_tanh(g) : testing::silu(g); }

class MoeRouteGluTest : public runtime::testing::VulkanTest {
 protected:
  void check(const FusedCase& c) {
    SCOPED_TRACE(c.what);
    std::mt19937 rng(c.e * 977 + c.ff * 31 + c.k + c.m);
    const uint32_t rows = c.e * 2 * c.ff;
    const testing::PackedWeight w = testing::random_weight(rng, c.dtype, c.layout, rows, c.k);
    const std::vector<float> x = runtime::testing::random_f32(rng, uint64_t{c.m} * c.k);
    const std::vector<float> logits = testing::route_logits(rng, c.m, c.e, c.ties);
    const uint64_t slots = uint64_t{c.m} * c.t;

    std::vector<std::byte> wbytes(c.w_offset, std::byte{0x33});
    wbytes.insert(wbytes.end(), w.bytes.begin(), w.bytes.end());
    Buffer wb = upload_bytes(wbytes, "w");
    Buffer xb = upload(x, "x");
    Buffer lb = upload(logits, "logits");
    Buffer ib = poisoned_f32(slots + kGuard, "ids");
    Buffer gb = poisoned_f32(slots + kGuard, "weights");
    Buffer ab = poisoned_f32(slots * c.ff + kGuard, "act");
    runtime::MoeRouteGluArgs a;
    a.w = wb.range().sub(c.w_offset, w.bytes.size());
    a.dtype = c.dtype;
    a.layout = c.layout;
    a.n_experts = c.e;
    a.ff = c.ff;
    a.k = c.k;
    a.m_rows = c.m;
    a.top_k = c.t;
    a.normalize = c.normalize;
    a.act = c.act;
    a.x = xb.range();
    a.logits = lb.range();
    a.ids = ib.range().sub(0, slots * 4);
    a.weights = gb.range().sub(0, slots * 4);
    a.act_out = ab.range().sub(0, slots * c.ff * 4);
    a.tuning = c.tuning;
    const Status s = runtime::record_moe_route_glu(rec(), a);
    ASSERT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(rec().dispatch_count(), 1u);
    run();

    const testing::RouteRef route = testing::reference_route(logits, c.m, c.e, c.t, c.normalize);
    const std::vector<float> idf = download_f32(ib.range());
    const std::vector<float> wf = download_f32(gb.range());
    const std::vector<float> af = download_f32(ab.range());
    std::vector<uint32_t> ids(idf.size());
    std::memcpy(ids.data(), idf.data(), ids.size() * 4);
    double err = 0.0, norm = 0.0;
    for (uint64_t s_i = 0; s_i < slots; ++s_i) {
      ASSERT_EQ(ids[s_i], route.ids[s_i]) << "slot " << s_i;
      EXPECT_LE(std::abs(wf[s_i] - route.weights[s_i]), kWeightRel * route.weights[s_i]) << "slot " << s_i;
      const uint64_t e = route.ids[s_i];
      const float* xr = &x[(s_i / c.t) * c.k];
      for (uint32_t n = 0; n < c.ff; ++n) {
        double g = 0.0, u = 0.0;
        for (uint32_t i = 0; i < c.k; ++i) {
          g += w.w[(e * 2 * c.ff + n) * c.k + i] * double(xr[i]);
          u += w.w[(e * 2 * c.ff + c.ff + n) * c.k + i] * double(xr[i]);
        }
        const double ref = act_ref(c.act, g) * u;
        const double got = af[s_i * c.ff + n];
        ASSERT_TRUE(std::isfinite(got)) << "slot " << s_i << " row " << n;
        err += (got - ref) * (got - ref);
        norm += ref * ref;
      }
    }
    EXPECT_LE(err / norm, kActNmse);
    for (uint32_t i = 0; i < kGuard; ++i) {
      uint32_t bits[3];
      std::memcpy(&bits[0], &idf[slots + i], 4);
      std::memcpy(&bits[1], &wf[slots + i], 4);
      std::memcpy(&bits[2], &af[slots * c.ff + i], 4);
      for (uint32_t b : bits) EXPECT_EQ(b, runtime::testing::kPoisonBits) << "guard word " << i << " written";
    }
  }
};

// Qwen3-MoE's routing (E = 128, T = 8, renormalised) and Mixtral's (8 / 2), decode; a pass of three tokens (slots
// fastest) with Qwen1.5-MoE's 60 / 4, GELU and no renormalisation over padded rows (K = 300); F not a multiple of the
// row pairs per workgroup; flat blocks; Q5_K; other workgroup shapes; a weight at a 16-byte skip; ties (two experts
// with the top logit, a tie for the last place across subgroups; 256 experts with ties across the register and
// re-read ranges).
TEST_F(MoeRouteGluTest, MatchesTheThreeStepsInDouble) {
  const std::vector<FusedCase> cases = {
      {"qwen3 routing", DType::kQ4_K, Layout::kRowWise, 128, 24, 512, 1, 8, true, Activation::kSilu},
      {"mixtral routing", DType::kQ4_K, Layout::kRowWise, 8, 37, 256, 1, 2, true, Activation::kSilu},
      {"three tokens", DType::kQ4_K, Layout::kRowWise, 60, 19, 300, 3, 4, false, Activation::kGeluTanh},
      {"flat", DType::kQ4_K, Layout::kFlat, 16, 16, 768, 2, 4, true, Activation::kSilu, {}, 80},
      {"q5_k", DType::kQ5_K, Layout::kRowWise, 16, 21, 512, 1, 4, true, Activation::kSilu},
      {"q5_k three tokens", DType::kQ5_K, Layout::kRowWise, 60, 9, 260, 3, 4, false, Activation::kGeluTanh},
      {"8 rows, 32 invocations", DType::kQ4_K, Layout::kRowWise, 32, 29, 1024, 1, 4, true, Activation::kSilu, {32, 8}},
      {"2 rows, 128 invocations", DType::kQ4_K, Layout::kRowWise, 32, 13, 512, 2, 2, true, Activation::kSilu,
       {128, 2}},
      {"ties", DType::kQ4_K, Layout::kRowWise, 60, 8, 256, 2, 4, true, Activation::kSilu, {}, 64,
       {{0, 7, 5.0f}, {0, 3, 5.0f}, {1, 40, 4.5f}, {1, 9, 4.5f}, {1, 33, 4.5f}, {1, 2, 4.75f}, {1, 50, 4.8f}}},
      // 256 experts: past the 8 logits per invocation kept in registers on subgroups narrower than 32 (lavapipe's 8),
      // ties between a register expert and later ones.
      {"256 experts, ties", DType::kQ4_K, Layout::kRowWise, 256, 8, 256, 1, 8, true, Activation::kSilu, {}, 64,
       {{0, 250, 5.0f}, {0, 17, 5.0f}, {0, 130, 5.0f}, {0, 255, 4.9f}, {0, 64, 4.9f}}},
  };
  for (const FusedCase& c : cases) check(c);
}

// A router row whose logits are all NaN selects expert 0 with a NaN weight for every rank (as moe_route): the
// layer's output is NaN, not a silently skipped expert.
TEST_F(MoeRouteGluTest, NonFiniteLogitsGiveExpertZeroWithNaNWeights) {
  std::mt19937 rng(5);
  const uint32_t e = 8, ff = 4, k = 256, t = 2;
  const testing::PackedWeight w = testing::random_weight(rng, DType::kQ4_K, Layout::kRowWise, e * 2 * ff, k);
  Buffer wb = upload_bytes(w.bytes, "w");
  Buffer xb = upload(runtime::testing::random_f32(rng, k), "x");
  Buffer lb = upload(std::vector<float>(e, std::nanf("")), "logits");
  Buffer ib = poisoned_f32(t, "ids");
  Buffer gb = poisoned_f32(t, "weights");
  Buffer ab = poisoned_f32(t * ff, "act");
  runtime::MoeRouteGluArgs a;
  a.w = wb.range();
  a.n_experts = e;
  a.ff = ff;
  a.k = k;
  a.m_rows = 1;
  a.top_k = t;
  a.normalize = true;
  a.x = xb.range();
  a.logits = lb.range();
  a.ids = ib.range();
  a.weights = gb.range();
  a.act_out = ab.range();
  ASSERT_TRUE(runtime::record_moe_route_glu(rec(), a).ok());
  run();
  const std::vector<float> idf = download_f32(ib.range());
  const std::vector<float> wf = download_f32(gb.range());
  for (uint32_t j = 0; j < t; ++j) {
    uint32_t id;
    std::memcpy(&id, &idf[j], 4);
    EXPECT_EQ(id, 0u) << "rank " << j;
    EXPECT_TRUE(std::isnan(wf[j])) << "rank " << j;
  }
}

using testing::ErrorCase;
class MoeRouteGluErrorsTest : public testing::ErrorCasesTest {};

TEST_F(MoeRouteGluErrorsTest, Rules) {
  Buffer w = alloc(1 << 16);
  Buffer io = alloc(1 << 16);
  // Q4_K row_wise E = 4, F = 4, K = 256: 32 rows of one 144-byte block = 4608 bytes.
  auto args = [&] {
    runtime::MoeRouteGluArgs a;
    a.w = w.range().sub(0, 4608);
    a.dtype = DType::kQ4_K;
    a.n_experts = 4;
    a.ff = 4;
    a.k = 256;
    a.m_rows = 1;
    a.top_k = 2;
    a.x = io.range().sub(0, 1024);
    a.logits = io.range().sub(1024, 16);
    a.ids = io.range().sub(2048, 8);
    a.weights = io.range().sub(3072, 8);
    a.act_out = io.range().sub(4096, 32);
    return a;
  };
  auto run = [&](const runtime::MoeRouteGluArgs& a) { return runtime::record_moe_route_glu(rec(), a, "f"); };
  expect_all({
      {"n_experts 0", [&] { auto a = args(); a.n_experts = 0; return run(a); }, StatusCode::kInvalidArgument,
       "moe_route_glu f [Q4_K row_wise E=0 F=4 K=256 M=1 T=2]: n_experts is 0"},
      {"ff 0", [&] { auto a = args(); a.ff = 0; return run(a); }, StatusCode::kInvalidArgument, "ff is 0"},
      {"top_k > E", [&] { auto a = args(); a.top_k = 5; return run(a); }, StatusCode::kInvalidArgument,
       "top_k 5 > n_experts 4"},
      {"E > 256", [&] { auto a = args(); a.n_experts = 257; return run(a); }, StatusCode::kUnsupported,
       "at most 256 experts"},
      {"top_k > 8", [&] { auto a = args(); a.n_experts = 16; a.top_k = 9; return run(a); }, StatusCode::kUnsupported,
       "top_k <= 8"},
      {"Q6_K", [&] { auto a = args(); a.dtype = DType::kQ6_K; return run(a); }, StatusCode::kUnsupported,
       "no moe_gemv_route_glu kernel reads this dtype"},
      {"flat K", [&] { auto a = args(); a.layout = Layout::kFlat; a.k = 200; return run(a); }, StatusCode::kUnsupported,
       "no moe_gemv_route_glu kernel"},
      {"w short", [&] { auto a = args(); a.w = w.range().sub(0, 4000); return run(a); }, StatusCode::kValidation,
       "w range of 4000 bytes < required 4608"},
      {"act short", [&] { auto a = args(); a.act_out = io.range().sub(4096, 16); return run(a); },
       StatusCode::kValidation, "act range of 16 bytes < required 32"},
      {"logits short", [&] { auto a = args(); a.logits = io.range().sub(1024, 8); return run(a); },
       StatusCode::kValidation, "logits range of 8 bytes < required 16"},
      {"ids over act", [&] { auto a = args(); a.ids = io.range().sub(4096, 8); return run(a); },
       StatusCode::kInvalidArgument, "ids overlaps act"},
      {"act over x", [&] { auto a = args(); a.act_out = io.range().sub(512, 32); return run(a); },
       StatusCode::kInvalidArgument, "act overlaps x"},
      {"weights over logits", [&] { auto a = args(); a.weights = io.range().sub(1024, 8); return run(a); },
       StatusCode::kInvalidArgument, "weights overlaps logits"},
      {"odd rows", [&] { auto a = args(); a.tuning.num_rows = 3; return run(a); }, StatusCode::kInvalidArgument,
       "num_rows 3 is odd"},
  });
}

}  // namespace
}  // namespace rdrr::kernels
