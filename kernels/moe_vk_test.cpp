// Mixture-of-experts differential tests: the router (moe_route.comp) against softmax / top-k / renormalisation
// in double, the expert GEMVs (moe_gemv.comp, gather and combine) over stacked packed expert weights in every
// dtype against the exactly dequantized weights in double, and the gated add (gated_add.comp); outputs are
// NaN-poisoned before the dispatch and guard words past them must stay poisoned. Then the validation errors of
// the three record functions (each rule's StatusCode and the field its message names; nothing recorded).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

#include "kernels/kernel_test_ref.h"
#include "kernels/op_test_util.h"
#include "runtime/ops.h"
#include "kernels/error_case_test_util.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;
using runtime::Buffer;
using runtime::testing::VulkanTest;
using testing::OpBindings;
using testing::OpCase;
using testing::OpOutcome;
using testing::Tolerance;

// ---------------------------------------------------------------------------------------------------------
// Expert GEMV.

// NMSE bound vs the double reference on the exactly dequantized weights. Every path accumulates in f32 (gather:
// gemv.comp's item sums and subgroup reduction; combine: T such dot products, each scaled by its router weight and
// added in j order), so the error is f32 rounding only: about K * 2^-24 relative per dot product in the worst
// case, ~sqrt(K) * 2^-24 typically, i.e. NMSE ~1e-14 .. 1e-12 for K <= 1024 (gemv_vk_test measures the same
// order). 1e-9 leaves room for other devices' FMA contraction and summation orders while one wrong weight row,
// expert or x row among ~10^3 outputs gives NMSE >= ~1e-4.
constexpr double kMoeGemvNmse = 1e-9;

struct MoeCase {
  DType dtype;
  Layout layout;
  uint32_t e;  // experts
  uint32_t n;  // rows per expert
  uint32_t k;
  uint32_t m;  // tokens
  uint32_t t;  // experts per token
  bool combine;
  runtime::MoeGemvTuning tuning{};
  uint32_t w_offset = 64;  // byte offset of the stacked weight in its buffer
  bool bad_id = false;     // one id >= E (reads nothing)
  std::string kernel{};    // forced kernel; empty: the automatic choice (the vectorized kernels where they fit)
};

std::string case_text(const MoeCase& c) {
  std::string s = std::string(c.combine ? "combine_" : "gather_") + std::string(quant::dtype_name(c.dtype)) + "_" +
                  std::string(quant::layout_name(c.layout)) + "_E" + std::to_string(c.e) + "_N" + std::to_string(c.n) +
                  "_K" + std::to_string(c.k) + "_M" + std::to_string(c.m) + "_T" + std::to_string(c.t);
  if (c.tuning.local_size_x) s += "_wg" + std::to_string(c.tuning.local_size_x);
  if (c.tuning.num_rows) s += "_rows" + std::to_string(c.tuning.num_rows);
  if (c.w_offset != 64) s += "_off" + std::to_string(c.w_offset);
  if (c.bad_id) s += "_badid";
  if (!c.kernel.empty()) s += c.kernel.ends_with("_vec") ? "_vec" : "_generic";
  return s;
}
std::string case_name(const ::testing::TestParamInfo<MoeCase>& info) { return case_text(info.param); }
void PrintTo(const MoeCase& c, std::ostream* os) { *os << case_text(c); }

// Expert ids [M * T]: T distinct experts per token, token 0 holding the first and the last expert (T >= 2; with
// T = 1 tokens 0 and 1 take them), token 2 routed like token 0 and token 3 to token 0's experts in reverse order
// (several tokens on one expert), the rest random.
std::vector<uint32_t> make_ids(std::mt19937& rng, const MoeCase& c) {
  std::vector<uint32_t> ids(uint64_t{c.m} * c.t);
  std::vector<uint32_t> perm(c.e);
  for (uint32_t m = 0; m < c.m; ++m) {
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    if (m == 0 || (m == 1 && c.t == 1)) {
      const uint32_t first = m == 0 ? 0u : c.e - 1;
      std::iter_swap(perm.begin(), std::find(perm.begin(), perm.end(), first));
      if (c.t >= 2 && m == 0) std::iter_swap(perm.begin() + 1, std::find(perm.begin(), perm.end(), c.e - 1));
      std::shuffle(perm.begin(), perm.begin() + c.t, rng);
    }
    for (uint32_t j = 0; j < c.t; ++j) ids[m * c.t + j] = perm[j];
    if (m == 2) std::copy_n(ids.begin(), c.t, ids.begin() + 2 * c.t);
    if (m == 3) std::reverse_copy(ids.begin(), ids.begin() + c.t, ids.begin() + 3 * c.t);
  }
  if (c.bad_id) ids[ids.size() - 1] = c.e + 7;
  return ids;
}

// Row r of W [E * N, K] dotted with x[0 .. K) in double.
double dot_row(const testing::PackedWeight& w, uint64_t r, uint32_t k, const float* x) {
  double s = 0.0;
  for (uint32_t i = 0; i < k; ++i) s += w.w[r * k + i] * double(x[i]);
  return s;
}

OpCase moe_case(const MoeCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint64_t rows = uint64_t{c.e} * c.n;
  const testing::PackedWeight w = testing::random_weight(rng, c.dtype, c.layout, static_cast<uint32_t>(rows), c.k);
  const uint64_t slots = uint64_t{c.m} * c.t;
  const uint64_t x_rows = c.combine ? slots : c.m;
  const std::vector<float> x = runtime::testing::random_f32(rng, x_rows * c.k);
  const std::vector<uint32_t> ids = make_ids(rng, c);
  const std::vector<float> weights = runtime::testing::random_f32(rng, slots, 0.05f, 1.0f);
  std::vector<double> ref;
  if (c.combine) {
    ref.assign(uint64_t{c.m} * c.n, 0.0);
    for (uint32_t m = 0; m < c.m; ++m) {
      for (uint32_t j = 0; j < c.t; ++j) {
        const uint64_t s = uint64_t{m} * c.t + j;
        if (ids[s] >= c.e) continue;
        for (uint32_t n = 0; n < c.n; ++n) {
          ref[uint64_t{m} * c.n + n] += double(weights[s]) * dot_row(w, uint64_t{ids[s]} * c.n + n, c.k, &x[s * c.k]);
        }
      }
    }
  } else {
    ref.assign(slots * c.n, 0.0);
    for (uint64_t s = 0; s < slots; ++s) {
      if (ids[s] >= c.e) continue;
      for (uint32_t n = 0; n < c.n; ++n) {
        ref[s * c.n + n] = dot_row(w, uint64_t{ids[s]} * c.n + n, c.k, &x[(s / c.t) * c.k]);
      }
    }
  }
  OpCase oc;
  oc.name = "moe_gemv " + case_text(c);
  oc.inputs = {testing::packed_input("w", c.dtype, c.layout, rows, c.k, w.bytes, c.w_offset, std::byte{0x33}),
               testing::f32_input("x", {x_rows, c.k}, x), testing::u32_input("ids", ids)};
  if (c.combine) oc.inputs.push_back(testing::f32_input("weights", {slots}, weights));
  oc.outputs = {
      testing::f32_output("y", {c.combine ? c.m : slots, c.n}, std::move(ref), Tolerance::nmse(kMoeGemvNmse))};
  oc.record = [c](runtime::Recorder& rec, const OpBindings& b) {
    runtime::MoeGemvArgs a;
    a.w = b["w"];
    a.dtype = c.dtype;
    a.layout = c.layout;
    a.n_experts = c.e;
    a.n_rows = c.n;
    a.k = c.k;
    a.m_rows = c.m;
    a.top_k = c.t;
    a.x = b["x"];
    a.ids = b["ids"];
    if (c.combine) a.weights = b["weights"];
    a.y = b["y"];
    a.combine = c.combine;
    a.tuning = c.tuning;
    a.kernel = c.kernel;
    return runtime::record_moe_gemv(rec, a);
  };
  return oc;
}

class MoeGemvTest : public VulkanTest, public ::testing::WithParamInterface<MoeCase> {};

TEST_P(MoeGemvTest, MatchesDoubleReference) {
  const MoeCase& c = GetParam();
  const OpOutcome o = testing::run_op_case(dev(), rec(), moe_case(c, 3000 + c.e * 131 + c.n * 7 + c.k + c.m * 3 + c.t));
  EXPECT_EQ(o.dispatches, 1u);
}

// Per dtype: the decode shape (M = 1) with Mixtral's T = 2 of E = 8, a prefill shape (M = 5) with Qwen's E = 60
// and T = 4, E = 4 with T = 1 (every token on one expert) and several rows per workgroup, each as gather and as
// combine; K values with row padding (and not multiples of 4) where the dtype allows them, flat where K is a
// block multiple, weights at offsets that leave a skip in the binding (w_base > 0, the virtual block shift
// wrapping around below it), and an id past the last expert.
std::vector<MoeCase> make_cases() {
  struct DtypeShapes {
    DType dtype;
    uint32_t k_a, k_b;  // two K per dtype: k_b off the block size where row_wise padding allows it
    uint32_t unit;      // weight unit bytes (the offset cases below keep it)
  };
  const DtypeShapes kDtypes[] = {
      {DType::kF32, 301, 5, 4},    {DType::kF16, 301, 7, 2},    {DType::kQ8_0, 96, 85, 2},  {DType::kQ6_K, 512, 300, 2},
      {DType::kQ4_K, 512, 300, 4}, {DType::kQ4_0, 96, 85, 2},   {DType::kQ5_0, 96, 85, 2},  {DType::kQ5_K, 512, 300, 4},
  };
  std::vector<MoeCase> cases;
  for (const DtypeShapes& d : kDtypes) {
    for (bool combine : {false, true}) {
      cases.push_back({d.dtype, Layout::kRowWise, 8, 37, d.k_a, 1, 2, combine});
      cases.push_back({d.dtype, Layout::kRowWise, 60, 19, d.k_b, 5, 4, combine, {}, 64 + d.unit});
      cases.push_back({d.dtype, Layout::kRowWise, 4, 64, d.k_b, 5, 1, combine, {32, 3}});
    }
  }
  // Flat blocks (K a block multiple) and an id past the last expert.
  for (bool combine : {false, true}) {
    cases.push_back({DType::kQ8_0, Layout::kFlat, 8, 13, 64, 5, 2, combine});
    cases.push_back({DType::kQ4_K, Layout::kFlat, 8, 9, 512, 1, 2, combine, {}, 68});
    cases.push_back({DType::kQ6_K, Layout::kFlat, 4, 7, 256, 5, 4, combine});
    cases.push_back({DType::kQ4_K, Layout::kRowWise, 8, 21, 300, 5, 2, combine, {}, 64, true});
    cases.push_back({DType::kF16, Layout::kRowWise, 60, 33, 130, 5, 4, combine, {64, 2}, 66, true});
  }
  // The vectorized expert GEMVs (gemv_q4k.comp ROWS MOE [Q5K], gemv_q6k.comp MOE), forced: the decode shape, a
  // prefill shape at a 16-byte skip, several rows per workgroup, rows with padding (K = 260, K % 4 == 0: x rows of
  // slots at multiples of 4), K = 768 (a row of 24 / 12 items: fewer than one subgroup of 32), flat blocks and
  // a bad id. The automatic choice runs them wherever they fit, so the generic kernels are forced on copies of
  // the Q4_K / Q5_K / Q6_K cases above.
  const size_t n_base = cases.size();
  const auto suffix = [](DType dt) { return dt == DType::kQ4_K ? "q4_k" : dt == DType::kQ5_K ? "q5_k" : "q6_k"; };
  for (size_t i = 0; i < n_base; ++i) {
    const DType dt = cases[i].dtype;
    if (dt != DType::kQ4_K && dt != DType::kQ5_K && dt != DType::kQ6_K) continue;
    MoeCase g = cases[i];
    g.kernel = std::string(cases[i].combine ? "moe_gemv_combine_" : "moe_gemv_") + suffix(dt);
    cases.push_back(g);
  }
  for (DType dt : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    for (bool combine : {false, true}) {
      const std::string name = std::string(combine ? "moe_gemv_combine_" : "moe_gemv_") + suffix(dt) + "_vec";
      cases.push_back({dt, Layout::kRowWise, 8, 37, 512, 1, 2, combine, {}, 64, false, name});
      cases.push_back({dt, Layout::kRowWise, 60, 19, 768, 5, 4, combine, {}, 80, false, name});
      cases.push_back({dt, Layout::kRowWise, 4, 64, 1024, 5, 1, combine, {32, 3}, 64, false, name});
      cases.push_back({dt, Layout::kRowWise, 8, 21, 260, 5, 2, combine, {}, 64, true, name});
      cases.push_back({dt, Layout::kFlat, 8, 9, 512, 3, 2, combine, {64, 5}, 64, false, name});
    }
  }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Shapes, MoeGemvTest, ::testing::ValuesIn(make_cases()), case_name);

// ---------------------------------------------------------------------------------------------------------
// Router.

// Relative bound on each routing weight vs the double reference. p_i = exp(l_i - max) / sum: Vulkan's exp is
// within 3 + 2|x| ulp, |x| <= 8 for logits in [-4, 4] (19 ulp, 2.3e-6 relative), the f32 sum of E <= 256 terms
// within (E - 1) * 2^-24 (1.5e-5) plus its terms' 2.3e-6, the division 2.5 ulp (3e-7): <= 2.1e-5 for p; the
// renormalisation adds the same again at most (a sum of <= 8 such p and a division): 4.5e-5. 1e-4 is twice that;
// a wrong expert or a missing / extra normalisation is off by far more (the logits are >= 8 / E apart).
constexpr double kRouteRel = 1e-4;

class MoeRouteTest : public VulkanTest {
 protected:
  // Runs the router on `logits` into NaN-poisoned outputs with poisoned guard words past them, and compares ids
  // exactly and weights within kRouteRel of the reference.
  // Both workgroup shapes: the automatic one (one subgroup per row where the subgroup is 8 .. 64 wide: rounds
  // without barriers) and 64 invocations (several subgroups on lavapipe and NVIDIA: candidates through shared
  // memory).
  void check(const std::string& what, std::span<const float> logits, uint32_t m_rows, uint32_t e, uint32_t k,
             bool normalize) {
    for (uint32_t lx : {0u, 64u}) check_one(what, logits, m_rows, e, k, normalize, lx);
  }
  void check_one(const std::string& what, std::span<const float> logits, uint32_t m_rows, uint32_t e, uint32_t k,
                 bool normalize, uint32_t local_size_x) {
    SCOPED_TRACE(what + " rows=" + std::to_string(m_rows) + " E=" + std::to_string(e) + " K=" + std::to_string(k) +
                 (normalize ? " normalize" : "") + " local_size_x=" + std::to_string(local_size_x));
    constexpr uint32_t kGuard = 8;
    const uint64_t picks = uint64_t{m_rows} * k;
    Buffer lb = upload(std::vector<float>(logits.begin(), logits.end()), "logits");
    Buffer ib = poisoned_f32(picks + kGuard, "ids");
    Buffer wb = poisoned_f32(picks + kGuard, "weights");
    runtime::MoeRouteArgs a;
    a.logits = lb.range();
    a.ids = ib.range().sub(0, picks * 4);
    a.weights = wb.range().sub(0, picks * 4);
    a.m_rows = m_rows;
    a.n_experts = e;
    a.top_k = k;
    a.normalize = normalize;
    a.local_size_x = local_size_x;
    const Status s = runtime::record_moe_route(rec(), a);
    ASSERT_TRUE(s.ok()) << s.to_string();
    run();
    const std::vector<float> wf = download_f32(wb.range());
    const std::vector<float> idf = download_f32(ib.range());
    std::vector<uint32_t> ids(idf.size());
    std::memcpy(ids.data(), idf.data(), ids.size() * 4);
    const testing::RouteRef ref = testing::reference_route(logits, m_rows, e, k, normalize);
    for (uint64_t i = 0; i < picks; ++i) {
      EXPECT_EQ(ids[i], ref.ids[i]) << "row " << i / k << " pick " << i % k;
      EXPECT_TRUE(std::isfinite(wf[i])) << "row " << i / k << " pick " << i % k;
      EXPECT_LE(std::abs(wf[i] - ref.weights[i]), kRouteRel * ref.weights[i])
          << "row " << i / k << " pick " << i % k << ": got " << wf[i] << ", reference " << ref.weights[i];
    }
    for (uint64_t i = picks; i < picks + kGuard; ++i) {
      EXPECT_EQ(ids[i], runtime::testing::kPoisonBits) << "ids guard word " << i - picks << " written";
      uint32_t bits;
      std::memcpy(&bits, &wf[i], 4);
      EXPECT_EQ(bits, runtime::testing::kPoisonBits) << "weights guard word " << i - picks << " written";
    }
  }
};

TEST_F(MoeRouteTest, QwenSixtyExpertsTopFourWithTies) {
  std::mt19937 rng(11);
  // Row 0: every logit equal (experts 0 .. 3, each 1/60). Row 1: experts 7 and 3 tie for the top. Row 2: experts 10
  // and 5 tie for the fourth place (5 is taken, 10 is not). Row 3: three-way tie for the second place across
  // subgroups (experts 40, 9, 33). Row 4: plain.
  std::vector<testing::Tie> ties;
  for (uint32_t i = 0; i < 60; ++i) ties.push_back({0, i, 0.5f});
  ties.insert(ties.end(), {{1, 7, 6.0f}, {1, 3, 6.0f}, {2, 0, 7.0f}, {2, 1, 6.5f}, {2, 2, 6.0f}, {2, 10, 5.0f},
                           {2, 5, 5.0f}, {3, 59, 7.0f}, {3, 40, 6.0f}, {3, 9, 6.0f}, {3, 33, 6.0f}});
  const std::vector<float> logits = testing::route_logits(rng, 5, 60, ties);
  for (bool normalize : {false, true}) check("qwen", logits, 5, 60, 4, normalize);
  // The ties resolved as documented (the reference's stable sort agrees; spelled out here).
  const testing::RouteRef r = testing::reference_route(logits, 5, 60, 4, true);
  EXPECT_EQ(std::vector<uint32_t>(r.ids.begin(), r.ids.begin() + 4), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(r.ids[4], 3u);
  EXPECT_EQ(r.ids[5], 7u);
  EXPECT_EQ(r.ids[11], 5u);
  EXPECT_EQ(std::vector<uint32_t>(r.ids.begin() + 12, r.ids.begin() + 16), (std::vector<uint32_t>{59, 9, 33, 40}));
}

TEST_F(MoeRouteTest, ShapesAndLimits) {
  std::mt19937 rng(12);
  // Mixtral (E = 8, K = 2, normalized), K = E, the limits E = 256 / K = 8, one expert, and enough rows to fold.
  struct Shape {
    uint32_t m, e, k;
  };
  for (const Shape& s : {Shape{3, 8, 2}, Shape{5, 4, 4}, Shape{2, 256, 8}, Shape{3, 1, 1}, Shape{70, 128, 8},
                         Shape{1, 65, 3}}) {
    const std::vector<float> logits = testing::route_logits(rng, s.m, s.e, {});
    for (bool normalize : {false, true}) check("shape", logits, s.m, s.e, s.k, normalize);
  }
}

// A row with a non-finite logit has no candidate: every pick is expert 0 with a NaN weight (the layer's output is
// NaN, as the CPU reference's); the other rows are routed as usual.
TEST_F(MoeRouteTest, NonFiniteLogitsGiveNaNWeights) {
  std::mt19937 rng(13);
  std::vector<float> logits = testing::route_logits(rng, 2, 8, {});
  logits[3] = std::numeric_limits<float>::quiet_NaN();
  Buffer lb = upload(logits, "logits");
  Buffer ib = poisoned_f32(4, "ids");
  Buffer wb = poisoned_f32(4, "weights");
  runtime::MoeRouteArgs a;
  a.logits = lb.range();
  a.ids = ib.range();
  a.weights = wb.range();
  a.m_rows = 2;
  a.n_experts = 8;
  a.top_k = 2;
  a.normalize = true;
  ASSERT_TRUE(runtime::record_moe_route(rec(), a).ok());
  run();
  const std::vector<float> wf = download_f32(wb.range());
  const std::vector<float> idf = download_f32(ib.range());
  std::vector<uint32_t> ids(idf.size());
  std::memcpy(ids.data(), idf.data(), ids.size() * 4);
  EXPECT_EQ(ids[0], 0u);
  EXPECT_EQ(ids[1], 0u);
  EXPECT_TRUE(std::isnan(wf[0]) && std::isnan(wf[1]));
  const testing::RouteRef ref = testing::reference_route(std::span<const float>(logits).subspan(8), 1, 8, 2, true);
  EXPECT_EQ(ids[2], ref.ids[0]);
  EXPECT_EQ(ids[3], ref.ids[1]);
  EXPECT_NEAR(wf[2], ref.weights[0], kRouteRel * ref.weights[0]);
}

// ---------------------------------------------------------------------------------------------------------
// Gated add.

// y + sigmoid(g) * s: one f32 exp, add, divide, multiply-add; |error| <= ~(19 + 4) ulp of values <= ~2 in size
// (g in [-8, 8]): 5e-6 absolute; 1e-5 is twice that and far below a wrong row's gate (>= 1e-2 apart).
constexpr double kGatedAddAbs = 1e-5;

class MoeGatedAddTest : public VulkanTest {};

TEST_F(MoeGatedAddTest, MatchesDoubleReference) {
  struct Shape {
    uint32_t m, d;
  };
  for (const Shape& sh : {Shape{1, 64}, Shape{5, 301}, Shape{3, 2048}}) {
    std::mt19937 rng(20 + sh.m + sh.d);
    std::vector<float> g = runtime::testing::random_f32(rng, sh.m, -8.0f, 8.0f);
    if (sh.m >= 3) {
      g[1] = -100.0f;  // exp overflows to inf: gate 0
      g[2] = 100.0f;   // gate 1
    }
    const std::vector<float> s = runtime::testing::random_f32(rng, uint64_t{sh.m} * sh.d);
    const std::vector<float> y = runtime::testing::random_f32(rng, uint64_t{sh.m} * sh.d);
    std::vector<double> ref(y.size());
    for (uint64_t i = 0; i < y.size(); ++i) {
      ref[i] = double(y[i]) + double(s[i]) / (1.0 + std::exp(-double(g[i / sh.d])));
    }
    OpCase oc;
    oc.name = "gated_add m=" + std::to_string(sh.m) + " d=" + std::to_string(sh.d);
    oc.inputs = {testing::f32_input("g", {sh.m}, g), testing::f32_input("s", {sh.m, sh.d}, s),
                 testing::f32_input("y", {sh.m, sh.d}, y)};
    oc.outputs = {testing::f32_output("y_out", {sh.m, sh.d}, ref, Tolerance::max_abs(kGatedAddAbs), "y")};
    oc.record = [sh](runtime::Recorder& r, const OpBindings& b) {
      runtime::GatedAddArgs a;
      a.g = b["g"];
      a.s = b["s"];
      a.y = b["y"];
      a.m_rows = sh.m;
      a.d = sh.d;
      return runtime::record_gated_add(r, a);
    };
    const OpOutcome o = testing::run_op_case(dev(), rec(), oc);
    EXPECT_EQ(o.dispatches, 1u);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Validation errors.

using testing::ErrorCase;
class MoeErrorsTest : public testing::ErrorCasesTest {};

TEST_F(MoeErrorsTest, RouteRules) {
  Buffer big = alloc(1 << 16);
  auto args = [&] {
    runtime::MoeRouteArgs a;
    a.logits = big.range().sub(0, 8192);
    a.ids = big.range().sub(8192, 1024);
    a.weights = big.range().sub(16384, 1024);
    a.m_rows = 2;
    a.n_experts = 60;
    a.top_k = 4;
    return a;
  };
  auto run = [&](const runtime::MoeRouteArgs& a) { return runtime::record_moe_route(rec(), a, "r"); };
  expect_all({
      {"m_rows 0", [&] { auto a = args(); a.m_rows = 0; return run(a); },
       StatusCode::kInvalidArgument, "moe_route r [rows=0 E=60 K=4]: m_rows is 0"},
      {"n_experts 0", [&] { auto a = args(); a.n_experts = 0; return run(a); },
       StatusCode::kInvalidArgument, "n_experts is 0"},
      {"top_k 0", [&] { auto a = args(); a.top_k = 0; return run(a); },
       StatusCode::kInvalidArgument, "top_k is 0"},
      {"E > 256", [&] { auto a = args(); a.n_experts = 257; return run(a); },
       StatusCode::kUnsupported, "n_experts 257 > 256"},
      {"K > E", [&] { auto a = args(); a.n_experts = 3; return run(a); },
       StatusCode::kInvalidArgument, "top_k 4 > n_experts 3"},
      {"K > 8", [&] { auto a = args(); a.top_k = 9; return run(a); },
       StatusCode::kUnsupported, "top_k 9 > 8"},
      {"logits", [&] { auto a = args(); a.logits = big.range().sub(0, 100); return run(a); },
       StatusCode::kValidation, "logits range of 100 bytes < required 480"},
      {"ids", [&] { auto a = args(); a.ids = big.range().sub(8192, 16); return run(a); },
       StatusCode::kValidation, "ids range of 16 bytes < required 32"},
      {"weights", [&] { auto a = args(); a.weights = big.range().sub(16384, 4); return run(a); },
       StatusCode::kValidation, "weights range of 4 bytes < required 32"},
      {"overlap", [&] { auto a = args(); a.weights = a.ids; return run(a); },
       StatusCode::kInvalidArgument, "ids overlaps weights"},
      {"overlap logits", [&] { auto a = args(); a.ids = big.range().sub(256, 64); return run(a); },
       StatusCode::kInvalidArgument, "ids overlaps logits"},
  });
}

TEST_F(MoeErrorsTest, GemvRules) {
  Buffer w = alloc(1 << 16);
  Buffer io = alloc(1 << 16);
  // Q8_0 row_wise E = 4, N = 8, K = 64: 32 rows of 2 blocks of 34 bytes = 2176 bytes.
  auto args = [&] {
    runtime::MoeGemvArgs a;
    a.w = w.range().sub(0, 2176);
    a.dtype = DType::kQ8_0;
    a.n_experts = 4;
    a.n_rows = 8;
    a.k = 64;
    a.m_rows = 1;
    a.top_k = 2;
    a.x = io.range().sub(0, 512);
    a.ids = io.range().sub(1024, 8);
    a.y = io.range().sub(2048, 64);
    return a;
  };
  auto combine = [&] {
    runtime::MoeGemvArgs a = args();
    a.combine = true;
    a.weights = io.range().sub(4096, 8);
    return a;
  };
  auto run = [&](const runtime::MoeGemvArgs& a) { return runtime::record_moe_gemv(rec(), a, "g"); };
  expect_all({
      {"n_experts 0", [&] { auto a = args(); a.n_experts = 0; return run(a); }, StatusCode::kInvalidArgument,
       "moe_gemv g [gather Q8_0 row_wise E=0 N=8 K=64 M=1 T=2]: n_experts is 0"},
      {"n_rows 0", [&] { auto a = args(); a.n_rows = 0; return run(a); }, StatusCode::kInvalidArgument, "n_rows is 0"},
      {"k 0", [&] { auto a = args(); a.k = 0; return run(a); }, StatusCode::kInvalidArgument, "k is 0"},
      {"m_rows 0", [&] { auto a = args(); a.m_rows = 0; return run(a); }, StatusCode::kInvalidArgument, "m_rows is 0"},
      {"top_k 0", [&] { auto a = args(); a.top_k = 0; return run(a); }, StatusCode::kInvalidArgument, "top_k is 0"},
      {"T > E", [&] { auto a = args(); a.top_k = 5; return run(a); }, StatusCode::kInvalidArgument,
       "top_k 5 > n_experts 4"},
      {"combine without weights", [&] { auto a = args(); a.combine = true; return run(a); },
       StatusCode::kInvalidArgument, "weights missing (combine)"},
      {"gather with weights", [&] { auto a = combine(); a.combine = false; return run(a); },
       StatusCode::kInvalidArgument, "weights given to a gather call"},
      {"column_wise", [&] { auto a = args(); a.dtype = DType::kQ4_K; a.layout = Layout::kColumnWise; return run(a); },
       StatusCode::kUnsupported, "no moe_gemv kernel for this dtype and layout"},
      {"BF16", [&] { auto a = combine(); a.dtype = DType::kBF16; return run(a); }, StatusCode::kUnsupported,
       "no moe_gemv_combine kernel for this dtype and layout"},
      {"flat K", [&] { auto a = args(); a.layout = Layout::kFlat; a.k = 48; return run(a); }, StatusCode::kUnsupported,
       "flat layout needs k % 32 == 0"},
      {"forced", [&] { auto a = args(); a.kernel = "moe_gemv_combine_q8_0"; return run(a); },
       StatusCode::kUnsupported, "moe_gemv_combine_q8_0"},
      {"unroll generic", [&] { auto a = args(); a.tuning.unroll = 2; return run(a); }, StatusCode::kInvalidArgument,
       "unroll is a knob of the vectorized Q4_K / Q5_K kernels"},
      {"w", [&] { auto a = args(); a.w = w.range().sub(0, 2000); return run(a); }, StatusCode::kValidation,
       "w range of 2000 bytes < required 2176"},
      {"x gather", [&] { auto a = args(); a.x = io.range().sub(0, 200); return run(a); }, StatusCode::kValidation,
       "x range of 200 bytes < required 256"},
      {"x combine", [&] { auto a = combine(); a.x = io.range().sub(0, 256); return run(a); }, StatusCode::kValidation,
       "x range of 256 bytes < required 512"},
      {"ids", [&] { auto a = args(); a.ids = io.range().sub(1024, 4); return run(a); }, StatusCode::kValidation,
       "ids range of 4 bytes < required 8"},
      {"weights", [&] { auto a = combine(); a.weights = io.range().sub(4096, 4); return run(a); },
       StatusCode::kValidation, "weights range of 4 bytes < required 8"},
      {"y gather", [&] { auto a = args(); a.y = io.range().sub(2048, 32); return run(a); }, StatusCode::kValidation,
       "y range of 32 bytes < required 64"},
      {"y combine", [&] { auto a = combine(); a.y = io.range().sub(2048, 16); return run(a); }, StatusCode::kValidation,
       "y range of 16 bytes < required 32"},
      {"w offset", [&] { auto a = args(); a.dtype = DType::kQ4_K; a.k = 256; a.x = io.range().sub(0, 1024);
                         a.w = w.range().sub(2, 20000); return run(a); },
       StatusCode::kValidation, "w offset 2 is not a multiple of 4"},
      {"y over x", [&] { auto a = args(); a.y = io.range().sub(0, 64); return run(a); }, StatusCode::kInvalidArgument,
       "y overlaps x"},
      {"y over ids", [&] { auto a = args(); a.y = io.range().sub(1024, 64); return run(a); },
       StatusCode::kInvalidArgument, "y overlaps ids"},
      {"y over weights", [&] { auto a = combine(); a.y = io.range().sub(4096, 64); return run(a); },
       StatusCode::kInvalidArgument, "y overlaps weights"},
      {"32-bit", [&] { auto a = args(); a.dtype = DType::kF32; a.n_experts = 256; a.n_rows = 4096; a.k = 4096;
                       return run(a); },
       StatusCode::kUnsupported, "32-bit element indexing"},
      {"vec K % 4", [&] { auto a = args(); a.dtype = DType::kQ4_K; a.k = 302; a.x = io.range().sub(0, 1208);
                          a.w = w.range().sub(0, 32 * 288); a.kernel = "moe_gemv_q4_k_vec"; return run(a); },
       StatusCode::kUnsupported, "forced kernel moe_gemv_q4_k_vec cannot read this weight (rows not whole blocks or "
                                 "K not a multiple of 4)"},
      {"vec other dtype", [&] { auto a = combine(); a.dtype = DType::kQ6_K; a.k = 256;
                                a.w = w.range().sub(0, 32 * 210); a.x = io.range().sub(0, 2048);
                                a.kernel = "moe_gemv_combine_q4_k_vec"; return run(a); },
       StatusCode::kUnsupported, "moe_gemv_combine_q4_k_vec"},
      {"vec unaligned", [&] { auto a = args(); a.dtype = DType::kQ4_K; a.k = 256; a.x = io.range().sub(0, 1024);
                              a.w = w.range().sub(4, 32 * 144); a.kernel = "moe_gemv_q4_k_vec"; return run(a); },
       StatusCode::kUnsupported, "forced kernel moe_gemv_q4_k_vec cannot run these args (blocks not 16-byte aligned)"},
  });
}

TEST_F(MoeErrorsTest, GatedAddRules) {
  Buffer big = alloc(1 << 16);
  auto args = [&] {
    runtime::GatedAddArgs a;
    a.g = big.range().sub(0, 64);
    a.s = big.range().sub(1024, 4096);
    a.y = big.range().sub(8192, 4096);
    a.m_rows = 4;
    a.d = 256;
    return a;
  };
  auto run = [&](const runtime::GatedAddArgs& a) { return runtime::record_gated_add(rec(), a, "ga"); };
  expect_all({
      {"m_rows 0", [&] { auto a = args(); a.m_rows = 0; return run(a); }, StatusCode::kInvalidArgument,
       "gated_add ga [rows=0 d=256]: m_rows is 0"},
      {"d 0", [&] { auto a = args(); a.d = 0; return run(a); }, StatusCode::kInvalidArgument, "d is 0"},
      {"g", [&] { auto a = args(); a.g = big.range().sub(0, 8); return run(a); }, StatusCode::kValidation,
       "g range of 8 bytes < required 16"},
      {"s", [&] { auto a = args(); a.s = big.range().sub(1024, 100); return run(a); }, StatusCode::kValidation,
       "s range of 100 bytes < required 4096"},
      {"y", [&] { auto a = args(); a.y = big.range().sub(8192, 100); return run(a); }, StatusCode::kValidation,
       "y range of 100 bytes < required 4096"},
      {"y over s", [&] { auto a = args(); a.y = a.s; return run(a); }, StatusCode::kInvalidArgument, "y overlaps s"},
      {"y over g", [&] { auto a = args(); a.y = big.range().sub(0, 4096); return run(a); },
       StatusCode::kInvalidArgument, "y overlaps g"},
      {"32-bit", [&] { auto a = args(); a.m_rows = 1u << 16; a.d = 1u << 16; return run(a); }, StatusCode::kUnsupported,
       "32-bit indexing"},
  });
}

// A device whose binding cap is 16 KiB: a stacked weight larger than one binding is refused (MoE weights are not
// split over bindings), naming its size and the limit; one that fits still runs.
class MoeBindingLimitTest : public VulkanTest {
 protected:
  runtime::DeviceOptions options() const override {
    runtime::DeviceOptions o = runtime::testing::test_device_options();
    o.max_binding_bytes = 16384;
    return o;
  }
};

TEST_F(MoeBindingLimitTest, StackedWeightBeyondOneBindingIsUnsupported) {
  Buffer w = alloc(1 << 16);
  Buffer io = alloc(1 << 14);
  runtime::MoeGemvArgs a;
  a.w = w.range().sub(0, 32768);
  a.dtype = DType::kF32;
  a.n_experts = 8;
  a.n_rows = 16;
  a.k = 64;  // 8 * 16 * 64 * 4 = 32768 bytes
  a.m_rows = 1;
  a.top_k = 2;
  a.x = io.range().sub(0, 256);
  a.ids = io.range().sub(1024, 8);
  a.y = io.range().sub(2048, 128);
  const Status s = runtime::record_moe_gemv(rec(), a, "big");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.to_string();
  EXPECT_NE(s.message().find("stacked expert weight of 32768 bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("binding limit of 16384 bytes"), std::string::npos) << s.message();
  EXPECT_EQ(rec().dispatch_count(), 0u);
  // Half the experts fit.
  MoeCase c{DType::kF32, Layout::kRowWise, 4, 8, 64, 5, 2, true};
  const OpOutcome o = testing::run_op_case(dev(), rec(), moe_case(c, 99));
  EXPECT_TRUE(o.ran);
}

}  // namespace
}  // namespace rdrr::kernels
