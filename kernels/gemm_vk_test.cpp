// GEMM differential tests: GPU Y = X W^T with W packed (F32, F16, Q8_0, Q6_K, Q4_K in every layout the gemm
// kernels accept) against the same product in double on the exactly-dequantized weights. M covers 1, 3, 17
// and 64 rows, K is odd (padding inside blocks, masked K tiles), N is off the tile and off 256; Y is
// NaN-poisoned first and guard words past M * N must stay poisoned (no stray writes): the cases are OpCases
// (op_test_util.h). The cooperative-matrix variants (*_cm, f16 products) run where the device has them
// (GemmCoopmatTest; skipped on lavapipe, which has no cooperative matrices); every other case pins the f32
// kernels.
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "kernels/kernel_test_ref.h"
#include "kernels/op_test_util.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;
using runtime::GemmTuning;
using runtime::testing::VulkanTest;
using testing::OpBindings;
using testing::OpCase;
using testing::OpOutcome;
using testing::Tolerance;

// NMSE bound vs the double reference on the dequantized weights: the kernel decodes every weight exactly
// and accumulates in f32, so only f32 rounding remains (about 1e-14 on lavapipe); one wrong weight or index
// among ~10^4 products gives NMSE >= ~1e-5.
constexpr double kGemmNmse = 1e-9;

struct GemmCase {
  DType dtype;
  Layout layout;
  uint32_t m;
  uint32_t n;
  uint32_t k;
  GemmTuning tuning;
  uint32_t w_offset = 64;  // byte offset of the tensor in its buffer
  bool coopmat = false;    // force the kernel's *_cm variant
  bool automatic_cm = false;  // GemmArgs::cooperative_matrix: record_gemm may pick the *_cm variant itself
};

std::string case_text(const GemmCase& c) {
  std::string s = std::string(quant::dtype_name(c.dtype)) + "_" + std::string(quant::layout_name(c.layout)) + "_M" +
                  std::to_string(c.m) + "_N" + std::to_string(c.n) + "_K" + std::to_string(c.k);
  if (c.tuning.local_size_x) s += "_lx" + std::to_string(c.tuning.local_size_x);
  if (c.tuning.local_size_y) s += "_ly" + std::to_string(c.tuning.local_size_y);
  if (c.tuning.rm) s += "_rm" + std::to_string(c.tuning.rm);
  if (c.tuning.rn) s += "_rn" + std::to_string(c.tuning.rn);
  if (c.tuning.tk) s += "_tk" + std::to_string(c.tuning.tk);
  if (c.tuning.dbuf) s += "_dbuf" + std::to_string(c.tuning.dbuf);
  if (c.tuning.wn) s += "_wn" + std::to_string(c.tuning.wn);
  if (c.w_offset != 64) s += "_off" + std::to_string(c.w_offset);
  if (c.coopmat) s += "_cm";
  return s;
}
std::string case_name(const ::testing::TestParamInfo<GemmCase>& info) { return case_text(info.param); }
void PrintTo(const GemmCase& c, std::ostream* os) { *os << case_text(c); }

// One case on the device, compared with bound `nmse`: w at c.w_offset in its buffer, x bound with a tail of
// large values past M * K (reads beyond x show).
OpCase gemm_case(const GemmCase& c, uint32_t seed, double nmse) {
  std::mt19937 rng(seed);
  const testing::PackedWeight w = testing::random_weight(rng, c.dtype, c.layout, c.n, c.k);
  const std::vector<float> x = runtime::testing::random_f32(rng, size_t{c.m} * c.k);
  std::vector<float> x_guarded = x;
  x_guarded.resize(x.size() + 61, 1000.0f);
  std::vector<double> ref;
  ref.reserve(size_t{c.m} * c.n);
  for (uint32_t row = 0; row < c.m; ++row) {
    const std::vector<double> yr = testing::reference_gemv(w, std::span(x).subspan(size_t{row} * c.k, c.k), c.n, c.k);
    ref.insert(ref.end(), yr.begin(), yr.end());
  }
  OpCase oc;
  oc.name = std::string("gemm ") + case_text(c);
  oc.inputs = {testing::packed_input("w", c.dtype, c.layout, c.n, c.k, w.bytes, c.w_offset, std::byte{0x33}),
               testing::f32_input("x", {x_guarded.size()}, x_guarded)};
  oc.outputs = {testing::f32_output("y", {c.m, c.n}, std::move(ref), Tolerance::nmse(nmse))};
  const std::string forced = c.coopmat ? std::string(find_kernel(Op::kGemm, c.dtype, c.layout)->name) + "_cm" : "";
  oc.record = [c, forced](runtime::Recorder& rec, const OpBindings& b) {
    runtime::GemmArgs args;
    args.w = b["w"];
    args.dtype = c.dtype;
    args.layout = c.layout;
    args.n_rows = c.n;
    args.k = c.k;
    args.m_rows = c.m;
    args.x = b["x"];
    args.y = b["y"];
    args.tuning = c.tuning;
    args.cooperative_matrix = c.automatic_cm;
    if (!forced.empty()) args.kernel = forced;
    return runtime::record_gemm(rec, args);
  };
  return oc;
}

class GemmTest : public VulkanTest, public ::testing::WithParamInterface<GemmCase> {};

TEST_P(GemmTest, MatchesDoubleReference) {
  const GemmCase& c = GetParam();
  const OpOutcome o = testing::run_op_case(dev(), rec(), gemm_case(c, 3000 + c.m * 131 + c.n * 7 + c.k, kGemmNmse));
  EXPECT_EQ(o.dispatches, 1u);
}

// Default tile: TM = 16 rows, TN = 64 outputs, TK = 32 inputs.
const GemmCase kCases[] = {
    {DType::kF32, Layout::kRowWise, 1, 37, 301, {}},
    {DType::kF32, Layout::kRowWise, 17, 70, 33, {}},
    {DType::kF16, Layout::kRowWise, 3, 37, 301, {}},
    {DType::kF16, Layout::kRowWise, 64, 65, 7, {}},
    {DType::kQ8_0, Layout::kRowWise, 17, 33, 85, {}},
    {DType::kQ8_0, Layout::kFlat, 3, 13, 45, {}},
    {DType::kQ8_0, Layout::kRowWise, 64, 70, 97, {8, 4, 1, 2, 16}},
    {DType::kQ6_K, Layout::kRowWise, 1, 19, 513, {}},
    {DType::kQ6_K, Layout::kRowWise, 17, 67, 301, {}},
    {DType::kQ6_K, Layout::kRowWise, 65, 130, 300, {}},  // M >= 64: the automatic wide tile
    {DType::kQ6_K, Layout::kFlat, 3, 9, 301, {}},
    {DType::kQ6_K, Layout::kFlat, 3, 9, 512, {}},  // flat rows of whole blocks: the fast W tiles
    {DType::kQ4_K, Layout::kRowWise, 1, 21, 513, {}},
    {DType::kQ4_K, Layout::kRowWise, 64, 65, 301, {}},
    {DType::kQ4_K, Layout::kRowWise, 3, 3, 1, {}},
    {DType::kQ4_K, Layout::kFlat, 17, 9, 301, {}},
    {DType::kQ4_K, Layout::kFlat, 64, 5, 99, {32, 2, 3, 1, 8}},
    {DType::kQ4_K, Layout::kColumnWise, 1, 300, 37, {}},
    {DType::kQ4_K, Layout::kColumnWise, 3, 257, 65, {}},
    {DType::kQ4_K, Layout::kColumnWise, 17, 513, 21, {}},
    {DType::kQ4_K, Layout::kColumnWise, 70, 300, 40, {}},  // M >= 64: the automatic wide tile
    {DType::kQ4_K, Layout::kColumnWise, 64, 300, 33, {16, 16, 4, 1, 64}},
    {DType::kQ4_K, Layout::kRowWise, 17, 21, 257, {}, 68},  // blocks not 16-byte aligned
    {DType::kQ4_K, Layout::kRowWise, 17, 70, 600, {16, 8, 2, 4, 64}},  // fast tiles of 4 runs per row
    {DType::kQ4_K, Layout::kFlat, 5, 64, 512, {16, 4, 1, 2, 128}},
    {DType::kQ6_K, Layout::kRowWise, 17, 70, 600, {16, 8, 2, 4, 64}},
    // The pass-through types (generic decode): whole and padded rows, flat, unaligned offsets, wide tiles.
    {DType::kQ4_0, Layout::kRowWise, 17, 33, 96, {}},
    {DType::kQ4_0, Layout::kRowWise, 64, 70, 85, {}, 66},
    {DType::kQ4_0, Layout::kFlat, 3, 13, 45, {}},
    {DType::kQ5_0, Layout::kRowWise, 17, 33, 96, {}},
    {DType::kQ5_0, Layout::kRowWise, 65, 70, 85, {8, 4, 1, 2, 16}, 66},
    {DType::kQ5_0, Layout::kFlat, 3, 13, 45, {}},
    {DType::kQ5_K, Layout::kRowWise, 1, 21, 513, {}},
    {DType::kQ5_K, Layout::kRowWise, 65, 130, 300, {}, 68},
    {DType::kQ5_K, Layout::kFlat, 17, 9, 301, {}},
};
INSTANTIATE_TEST_SUITE_P(Shapes, GemmTest, ::testing::ValuesIn(kCases), case_name);

// A device whose binding cap is 16 KiB: every weight below spans several descriptor ranges (row layouts:
// ranges of outputs; column_wise: ranges of inputs added into y).
class GemmSplitTest : public VulkanTest, public ::testing::WithParamInterface<GemmCase> {
 protected:
  runtime::DeviceOptions options() const override {
    runtime::DeviceOptions o = runtime::testing::test_device_options();
    o.max_binding_bytes = 16384;
    return o;
  }
};

TEST_P(GemmSplitTest, SplitBindingsMatchDoubleReference) {
  const GemmCase& c = GetParam();
  ASSERT_GT(runtime::packed_weight_bytes(c.dtype, c.layout, c.n, c.k), dev().binding_limit_bytes());
  const OpOutcome o = testing::run_op_case(dev(), rec(), gemm_case(c, 4000 + c.m + c.n + c.k, kGemmNmse));
  EXPECT_GT(o.dispatches, 1u);
}

const GemmCase kSplitCases[] = {
    {DType::kF32, Layout::kRowWise, 3, 40, 301, {}},
    {DType::kF16, Layout::kRowWise, 3, 40, 301, {}},
    {DType::kQ8_0, Layout::kRowWise, 17, 200, 99, {}},
    {DType::kQ6_K, Layout::kRowWise, 3, 40, 301, {}},
    {DType::kQ4_K, Layout::kRowWise, 3, 61, 513, {}},
    {DType::kQ4_K, Layout::kFlat, 3, 150, 300, {}},  // flat: ranges of 64 outputs (K = 300 = 4 * 75)
    {DType::kQ4_0, Layout::kRowWise, 3, 300, 99, {}},
    {DType::kQ5_0, Layout::kRowWise, 3, 300, 99, {}},
    {DType::kQ5_K, Layout::kRowWise, 3, 61, 513, {}},
    {DType::kQ4_K, Layout::kColumnWise, 3, 300, 151, {}},
};
INSTANTIATE_TEST_SUITE_P(Shapes, GemmSplitTest, ::testing::ValuesIn(kSplitCases), case_name);

// x and y are bound whole (only w is split): beyond one binding they are a clear error.
class GemmSplitErrors : public GemmSplitTest {};

TEST_F(GemmSplitErrors, ActivationsBeyondOneBinding) {
  auto w = alloc(64 * 64 * 4);
  auto x = alloc(80 * 64 * 4);
  auto y = alloc(80 * 64 * 4);
  runtime::GemmArgs a;
  a.w = w.range();
  a.x = x.range();
  a.y = y.range();
  a.n_rows = 64;
  a.k = 64;
  a.m_rows = 80;  // 20480 bytes of x > 16384
  Status s = runtime::record_gemm(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("x range of 20480 bytes > binding limit 16384"), std::string::npos) << s.message();
  EXPECT_EQ(rec().dispatch_count(), 0u);
}
// Cooperative-matrix GEMM (gemm.comp COOPMAT): x and the decoded weights rounded to f16 (relative error
// <= 2^-11 each), products summed in f32, so NMSE ~1e-7 against the double reference; one wrong weight or
// index still gives >= ~1e-5. Registry tile TM 128 x TN 128 over 8 subgroups, TK 64, one shared stage; the
// cases are off the tile in M, N and K (K tails inside a 16-value run and inside an 8-value X group, one and
// two K steps), several past one tile, and cover the tiles record_gemm picks itself (TM 64 x TN 64 for short
// passes, 4 subgroups of 64 x 64 for large grids) and others a tuning can run: TM 64, 2 / 4 / 8 subgroups,
// 1 / 2 / 4 subgroups across N, TK 16 / 32 / 48 / 64, one and two shared stages; X rows not 16-byte aligned
// (K % 4 != 0); F16 whole 16-byte vectors and not (K % 8, offset).
constexpr double kGemmCoopmatNmse = 5e-6;

class GemmCoopmatTest : public VulkanTest, public ::testing::WithParamInterface<GemmCase> {};

TEST_P(GemmCoopmatTest, MatchesDoubleReference) {
  if (!dev().caps().coopmat_f16_16x16) GTEST_SKIP() << "no VK_NV_cooperative_matrix f16 16x16x16 on this device";
  const GemmCase& c = GetParam();
  const OpOutcome o =
      testing::run_op_case(dev(), rec(), gemm_case(c, 5000 + c.m * 131 + c.n * 7 + c.k, kGemmCoopmatNmse));
  EXPECT_EQ(o.dispatches, 1u);
}

// Tunings {local_size_x, local_size_y (subgroups), RM, RN, TK, dbuf (1: one shared stage, 2: two), wn}:
// TM = local_size_y * RM, TN = 32 * RN.
constexpr GemmTuning kCmSmall{0, 4, 16, 2, 32, 2, 2};   // record_gemm's short-pass tile: 32 x 32 per subgroup
constexpr GemmTuning kCmWide{0, 4, 32, 4, 32, 2, 2};    // record_gemm's large-grid tile: 64 x 64 per subgroup
constexpr GemmTuning kCmTm64{0, 4, 16, 4, 32, 2, 2};    // TM 64 x TN 128: 32 x 64 per subgroup
constexpr GemmTuning kCm8SgTk32{0, 8, 16, 4, 32, 2, 2};  // the registry's subgroups, TK 32, two stages
constexpr GemmTuning kCm8SgWn4{0, 8, 16, 4, 0, 0, 4};   // 8 subgroups of 64 x 32
constexpr GemmTuning kCm2Sg{0, 2, 32, 4, 32, 2, 2};     // 2 subgroups side by side across N, 64 x 64 each
constexpr GemmTuning kCmWn1{0, 4, 16, 2, 32, 2, 1};     // TM 64 x TN 64, 4 subgroups stacked along M
constexpr GemmTuning kCm4SgOneStage{0, 4, 32, 4, 32, 1, 2};
constexpr GemmTuning kCm4SgTk64{0, 4, 32, 4, 64, 1, 2};
constexpr GemmTuning kCmTk16{0, 0, 0, 0, 16};
constexpr GemmTuning kCmTk48{0, 0, 0, 0, 48};

const GemmCase kCoopmatCases[] = {
    {DType::kF16, Layout::kRowWise, 3, 37, 301, {}, 64, true},       // value by value (K % 8 != 0)
    {DType::kF16, Layout::kRowWise, 130, 200, 96, {}, 64, true},     // 16-byte vectors
    {DType::kF16, Layout::kRowWise, 70, 130, 96, {}, 66, true},      // offset not 16-byte aligned: value by value
    {DType::kF16, Layout::kRowWise, 200, 300, 264, kCmWide, 64, true},
    {DType::kF16, Layout::kRowWise, 70, 130, 200, kCmSmall, 64, true},
    {DType::kF16, Layout::kRowWise, 150, 260, 296, kCm8SgTk32, 64, true},
    {DType::kQ8_0, Layout::kRowWise, 70, 130, 97, {}, 64, true},
    {DType::kQ8_0, Layout::kFlat, 3, 13, 45, {}, 64, true},
    {DType::kQ8_0, Layout::kRowWise, 70, 130, 97, kCmTk48, 64, true},
    {DType::kQ8_0, Layout::kRowWise, 70, 130, 97, kCmSmall, 64, true},
    {DType::kQ6_K, Layout::kRowWise, 65, 130, 300, {}, 64, true},
    {DType::kQ6_K, Layout::kFlat, 17, 9, 512, {}, 64, true},
    {DType::kQ6_K, Layout::kRowWise, 150, 260, 768, kCmWide, 64, true},
    {DType::kQ6_K, Layout::kRowWise, 70, 130, 600, kCmSmall, 64, true},
    {DType::kQ6_K, Layout::kRowWise, 70, 130, 600, kCm4SgTk64, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 1, 21, 513, {}, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 129, 257, 512, {}, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 300, 300, 1024, {}, 64, true},  // 3 x 3 tiles, 16 K steps
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 20, {}, 64, true},     // one K step
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 100, {}, 64, true},    // two
    {DType::kQ4_K, Layout::kFlat, 64, 5, 99, {}, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 17, 21, 257, {}, 68, true},  // blocks not 16-byte aligned: value by value
    {DType::kQ4_K, Layout::kColumnWise, 3, 257, 65, {}, 64, true},
    {DType::kQ4_K, Layout::kColumnWise, 70, 300, 40, {}, 64, true},
    {DType::kQ4_K, Layout::kColumnWise, 200, 512, 256, {}, 64, true},
    {DType::kQ4_K, Layout::kColumnWise, 150, 300, 130, kCm8SgWn4, 64, true},
    {DType::kQ4_K, Layout::kColumnWise, 150, 300, 99, kCmWide, 64, true},
    {DType::kQ4_K, Layout::kColumnWise, 70, 300, 130, kCmSmall, 64, true},
    {DType::kQ4_K, Layout::kColumnWise, 70, 300, 77, kCmTm64, 68, true},  // not 16-byte aligned: value by value
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 600, kCmTk16, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 600, kCm4SgTk64, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 512, kCm4SgOneStage, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 512, kCmTm64, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 600, kCmSmall, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 130, 260, 1024, kCmWide, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 20, kCmWide, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 150, 260, 512, kCm8SgTk32, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 150, 260, 520, kCm8SgWn4, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 300, kCm2Sg, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 70, 130, 300, kCmWn1, 64, true},
    {DType::kQ4_0, Layout::kRowWise, 70, 130, 97, {}, 66, true},
    {DType::kQ5_0, Layout::kRowWise, 70, 130, 97, {}, 64, true},
    {DType::kQ5_K, Layout::kRowWise, 70, 130, 300, {}, 68, true},
};
INSTANTIATE_TEST_SUITE_P(Shapes, GemmCoopmatTest, ::testing::ValuesIn(kCoopmatCases), case_name);

// The cooperative-matrix kernels over weights split across binding ranges (16 KiB cap, as GemmSplitTest): row
// layouts one dispatch per range of outputs, column_wise one per range of inputs added into y.
class GemmCoopmatSplitTest : public GemmSplitTest {};

TEST_P(GemmCoopmatSplitTest, SplitBindingsMatchDoubleReference) {
  if (!dev().caps().coopmat_f16_16x16) GTEST_SKIP() << "no VK_NV_cooperative_matrix f16 16x16x16 on this device";
  const GemmCase& c = GetParam();
  ASSERT_GT(runtime::packed_weight_bytes(c.dtype, c.layout, c.n, c.k), dev().binding_limit_bytes());
  const OpOutcome o = testing::run_op_case(dev(), rec(), gemm_case(c, 6000 + c.m + c.n + c.k, kGemmCoopmatNmse));
  EXPECT_GT(o.dispatches, 1u);
}

// x and y must fit one 16 KiB binding too: few rows.
const GemmCase kCoopmatSplitCases[] = {
    {DType::kF16, Layout::kRowWise, 13, 40, 304, {}, 64, true},
    {DType::kQ8_0, Layout::kRowWise, 17, 200, 99, {}, 64, true},
    {DType::kQ6_K, Layout::kRowWise, 13, 40, 301, {}, 64, true},
    {DType::kQ4_K, Layout::kRowWise, 7, 61, 513, {}, 64, true},
    {DType::kQ4_K, Layout::kFlat, 13, 150, 300, {}, 64, true},
    {DType::kQ4_K, Layout::kColumnWise, 13, 300, 151, {}, 64, true},
    {DType::kQ4_K, Layout::kColumnWise, 13, 300, 260, kCmWide, 64, true},
};
INSTANTIATE_TEST_SUITE_P(Shapes, GemmCoopmatSplitTest, ::testing::ValuesIn(kCoopmatSplitCases), case_name);

// The automatic choice: the *_cm variant for more than 32 rows, only where the recorder allows it (the pack
// pins it). Seen in the precision: f16 products leave NMSE ~1e-7, the f32 kernel ~1e-14.
class GemmCoopmatChoice : public VulkanTest {};

TEST_F(GemmCoopmatChoice, NeedsMoreThan32RowsAndThePin) {
  if (!dev().caps().coopmat_f16_16x16) GTEST_SKIP() << "no VK_NV_cooperative_matrix f16 16x16x16 on this device";
  auto recorder_allowing = [&](std::initializer_list<std::string> kernels) {
    runtime::RecorderOptions o;
    o.allowed_kernels = std::make_shared<std::set<std::string, std::less<>>>(kernels);
    auto r = runtime::Recorder::create(dev(), o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::move(r).value();
  };
  GemmCase c{DType::kQ4_K, Layout::kRowWise, 33, 130, 512, {}};
  c.automatic_cm = true;
  auto both = recorder_allowing({"gemm_q4_k", "gemm_q4_k_cm"});
  const double cm = testing::run_op_case(dev(), *both, gemm_case(c, 77, kGemmCoopmatNmse)).errors.at(0);
  EXPECT_GT(cm, 1e-10) << "33 rows, variant pinned: the cooperative-matrix kernel (its TM 64 x TN 64 tile)";
  c.m = 130;
  const double cm_wide = testing::run_op_case(dev(), *both, gemm_case(c, 80, kGemmCoopmatNmse)).errors.at(0);
  EXPECT_GT(cm_wide, 1e-10) << "130 rows: the cooperative-matrix kernel (its registry tile)";
  {
    SCOPED_TRACE("32 rows: the f32 kernel");
    c.m = 32;
    testing::run_op_case(dev(), *both, gemm_case(c, 78, kGemmNmse));
  }
  SCOPED_TRACE("variant not pinned: the f32 kernel");
  c.m = 33;
  auto base_only = recorder_allowing({"gemm_q4_k"});
  testing::run_op_case(dev(), *base_only, gemm_case(c, 79, kGemmNmse));
}

class GemmErrors : public VulkanTest {};

// One row through a 30 x 256 row_wise Q4_K weight: the error tests edit one field at a time.
runtime::GemmArgs q4k_args(const runtime::Buffer& w, const runtime::Buffer& x, const runtime::Buffer& y) {
  runtime::GemmArgs a;
  a.w = w.range();
  a.x = x.range();
  a.y = y.range();
  a.dtype = DType::kQ4_K;
  a.layout = Layout::kRowWise;
  a.n_rows = 30;
  a.k = 256;
  a.m_rows = 1;
  return a;
}

// A forced *_cm kernel names what the device lacks (lavapipe: no cooperative matrices), or, where the device
// has it, refuses a tuning its subgroups cannot run (local_size_x other than 32, TK not a multiple of 16,
// fragments that do not divide among the subgroups).
TEST_F(GemmErrors, CoopmatKernelNeedsTheDeviceSupport) {
  auto w = alloc(4320);
  auto x = alloc(2048);
  auto y = alloc(1024);
  runtime::GemmArgs a = q4k_args(w, x, y);
  a.kernel = "gemm_q4_k_cm";
  if (dev().caps().coopmat_f16_16x16) {
    a.tuning = {16, 8, 2, 4, 32};
    Status s = runtime::record_gemm(rec(), a, "q");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("kernel gemm_q4_k_cm runs subgroups of 32 (tuning: local_size_x 32)"), std::string::npos)
        << s.message();
    a.tuning = {0, 0, 0, 0, 24};
    s = runtime::record_gemm(rec(), a, "q");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    a.tuning = {0, 0, 0, 0, 0, 3};
    s = runtime::record_gemm(rec(), a, "q");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("tuning dbuf 3 > 2"), std::string::npos) << s.message();
    a.tuning = {0, 4, 4, 4, 0, 0, 2};  // TM 16 over 2 subgroups along M: 8 rows each
    s = runtime::record_gemm(rec(), a, "q");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("cooperative-matrix tile TM 16 x TN 128 over 4 subgroups, 2 across N: each subgroup "
                               "needs whole 16x16 fragments"),
              std::string::npos)
        << s.message();
    a.tuning = {0, 4, 16, 4, 0, 0, 3};  // 3 does not divide 4 subgroups
    s = runtime::record_gemm(rec(), a, "q");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  } else {
    const Status s = runtime::record_gemm(rec(), a, "q");
    EXPECT_EQ(s.code(), StatusCode::kUnsupported);
    EXPECT_NE(s.message().find("gemm q [Q4_K row_wise M=1 N=30 K=256]: kernel gemm_q4_k_cm needs "
                               "VK_NV_cooperative_matrix"),
              std::string::npos)
        << s.message();
  }
  // dbuf and wn tune only the *_cm kernels.
  a.kernel = "gemm_q4_k";
  for (const GemmTuning& t : {GemmTuning{0, 0, 0, 0, 0, 1}, GemmTuning{0, 0, 0, 0, 0, 0, 2}}) {
    a.tuning = t;
    const Status s = runtime::record_gemm(rec(), a, "q");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("tuning dbuf / wn applies to the *_cm kernels only"), std::string::npos) << s.message();
  }
  EXPECT_EQ(rec().dispatch_count(), 0u);
}

TEST_F(GemmErrors, NamesTheBadField) {
  auto w = alloc(4096);
  auto x = alloc(2048);
  auto y = alloc(1024);
  runtime::GemmArgs a = q4k_args(w, x, y);
  Status s = runtime::record_gemm(rec(), a, "blk.0.ffn_up");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("gemm blk.0.ffn_up [Q4_K row_wise M=1 N=30 K=256]: w range of 4096 bytes < required 4320"),
            std::string::npos)
      << s.message();
  a.n_rows = 4;
  a.k = 300;
  a.m_rows = 2;
  s = runtime::record_gemm(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("x range of 2048 bytes < required 2400"), std::string::npos) << s.message();
  a.k = 200;
  a.n_rows = 200;
  a.layout = Layout::kFlat;
  a.m_rows = 2;
  a.w = w.range().sub(0, 4096);
  s = runtime::record_gemm(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("w range of 4096 bytes < required"), std::string::npos) << s.message();
  a.layout = Layout::kRowWise;
  a.n_rows = 4;
  a.k = 100;
  a.y = y.range().sub(0, 16);
  s = runtime::record_gemm(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("y range of 16 bytes < required 32"), std::string::npos) << s.message();
  a.y = y.range();
  a.w = w.range().sub(2, 2000);
  s = runtime::record_gemm(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("w offset 2 is not a multiple of 4"), std::string::npos) << s.message();
  a.w = w.range();
  a.y = x.range().sub(512, 32);
  a.x = x.range().sub(0, 800);
  s = runtime::record_gemm(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("y overlaps w or x"), std::string::npos) << s.message();
  a.x = x.range();
  a.y = y.range();
  a.m_rows = 0;
  s = runtime::record_gemm(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("empty shape"), std::string::npos) << s.message();
  a.m_rows = 1;
  a.dtype = DType::kQ6_K;
  a.layout = Layout::kColumnWise;
  s = runtime::record_gemm(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("no gemm kernel for this dtype and layout"), std::string::npos) << s.message();
  a.dtype = DType::kF32;
  a.layout = Layout::kRowWise;
  a.n_rows = 2;
  a.k = 4;
  a.tuning = {32, 32, 8, 8, 1024};  // (256 + 256) * 1024 * 4 bytes of shared memory
  s = runtime::record_gemm(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("bytes of shared memory > device limit"), std::string::npos) << s.message();
  EXPECT_EQ(rec().dispatch_count(), 0u);
}

}  // namespace
}  // namespace rdrr::kernels
