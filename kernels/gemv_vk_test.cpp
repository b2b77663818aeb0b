// GEMV differential tests: GPU y = W x with W packed (F32, F16, Q8_0, Q6_K, Q4_K in every layout the kernels
// accept) against y = W_dequantized x in double on the CPU. Shapes are off the tile sizes, K is odd or not a
// block multiple (padding inside blocks), outputs are NaN-poisoned first, and a few elements past N must
// stay poisoned (no stray writes).
#include <cmath>
#include <cstring>

#include "kernels/kernel_test_ref.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;
using runtime::GemvTuning;
using runtime::testing::VulkanTest;

// NMSE bounds vs the double-precision reference on the exactly-dequantized weights. All paths accumulate in
// f32, so the error is f32 rounding only (measured: about 1e-14 .. 1e-12 on lavapipe); 1e-9 leaves margin
// for other devices' FMA contraction and summation orders while still catching any wrong weight or index
// (a single wrong element among ~10^4 gives NMSE >= ~1e-5).
constexpr double kGemvNmse = 1e-9;

struct GemvCase {
  DType dtype;
  Layout layout;
  uint32_t n;
  uint32_t k;
  GemvTuning tuning;
};

std::string case_text(const GemvCase& c) {
  std::string s = std::string(quant::dtype_name(c.dtype)) + "_" + std::string(quant::layout_name(c.layout)) + "_N" +
                  std::to_string(c.n) + "_K" + std::to_string(c.k);
  if (c.tuning.local_size_x) s += "_wg" + std::to_string(c.tuning.local_size_x);
  if (c.tuning.num_rows) s += "_rows" + std::to_string(c.tuning.num_rows);
  if (c.tuning.k_split) s += "_ks" + std::to_string(c.tuning.k_split);
  return s;
}
std::string case_name(const ::testing::TestParamInfo<GemvCase>& info) { return case_text(info.param); }
void PrintTo(const GemvCase& c, std::ostream* os) { *os << case_text(c); }

struct GemvOutcome {
  double nmse = INFINITY;
  uint32_t dispatches = 0;
};

// Runs one case on the fixture's device.
GemvOutcome run_gemv_case(runtime::Device& dev, runtime::Recorder& rec, const GemvCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const testing::PackedWeight w = testing::random_weight(rng, c.dtype, c.layout, c.n, c.k);
  const std::vector<float> x = runtime::testing::random_f32(rng, c.k);
  constexpr uint32_t kGuard = 7;  // elements past N that must stay poisoned
  std::vector<std::byte> wbytes(64 + w.bytes.size(), std::byte{0x33});  // tensor at a non-zero offset
  std::memcpy(wbytes.data() + 64, w.bytes.data(), w.bytes.size());
  auto wb = dev.allocate(wbytes.size(), "w");
  // x is bound with a tail of large values past K: a kernel reading beyond its row picks them up.
  std::vector<float> x_guarded = x;
  x_guarded.resize(x.size() + 61, 1000.0f);
  auto xb = dev.allocate(x_guarded.size() * 4, "x");
  auto yb = dev.allocate((c.n + kGuard) * 4, "y");
  EXPECT_TRUE(wb.ok() && xb.ok() && yb.ok());
  EXPECT_TRUE(dev.upload(wb->range(), wbytes).ok());
  EXPECT_TRUE(dev.upload(xb->range(), std::as_bytes(std::span(x_guarded))).ok());
  EXPECT_TRUE(dev.fill(yb->range(), runtime::testing::kPoisonBits).ok());
  runtime::GemvArgs args;
  args.w = wb->range().sub(64, w.bytes.size());
  args.dtype = c.dtype;
  args.layout = c.layout;
  args.n_rows = c.n;
  args.k = c.k;
  args.x = xb->range();
  args.y = yb->range().sub(0, c.n * 4);
  args.tuning = c.tuning;
  const Status s = runtime::record_gemv(rec, args);
  EXPECT_TRUE(s.ok()) << s.to_string();
  auto r = rec.submit_and_wait();
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  GemvOutcome out;
  out.dispatches = r.ok() ? r->dispatches : 0;
  std::vector<float> y(c.n + kGuard);
  EXPECT_TRUE(dev.download(yb->range(), std::as_writable_bytes(std::span(y))).ok());
  for (uint32_t i = c.n; i < c.n + kGuard; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &y[i], 4);
    EXPECT_EQ(bits, runtime::testing::kPoisonBits) << "stray write at y[" << i << "]";
  }
  y.resize(c.n);
  EXPECT_EQ(runtime::testing::count_non_finite(y), 0u) << "unwritten or non-finite outputs";
  const std::vector<double> ref = testing::reference_gemv(w, x, c.n, c.k);
  out.nmse = runtime::testing::nmse(y, ref);
  return out;
}

class GemvTest : public VulkanTest, public ::testing::WithParamInterface<GemvCase> {};

TEST_P(GemvTest, MatchesDoubleReference) {
  const GemvCase& c = GetParam();
  const GemvOutcome o = run_gemv_case(dev(), rec(), c, 1000 + c.n * 7 + c.k);
  std::printf("  NMSE %.3e\n", o.nmse);
  EXPECT_LT(o.nmse, kGemvNmse);
  EXPECT_EQ(o.dispatches, 1u);
}

const GemvCase kCases[] = {
    {DType::kF32, Layout::kRowWise, 37, 301, {}},
    {DType::kF32, Layout::kRowWise, 1, 5, {}},
    {DType::kF32, Layout::kRowWise, 130, 64, {32, 3, 0}},
    {DType::kF16, Layout::kRowWise, 37, 301, {}},
    {DType::kF16, Layout::kRowWise, 64, 7, {128, 1, 0}},
    {DType::kQ8_0, Layout::kRowWise, 33, 96, {}},
    {DType::kQ8_0, Layout::kRowWise, 17, 85, {}},
    {DType::kQ8_0, Layout::kFlat, 13, 45, {32, 3, 0}},
    {DType::kQ6_K, Layout::kRowWise, 19, 512, {}},
    {DType::kQ6_K, Layout::kRowWise, 7, 300, {128, 1, 0}},
    {DType::kQ6_K, Layout::kFlat, 9, 300, {}},
    {DType::kQ4_K, Layout::kRowWise, 21, 512, {}},
    {DType::kQ4_K, Layout::kRowWise, 11, 300, {32, 3, 0}},
    {DType::kQ4_K, Layout::kRowWise, 3, 1, {}},
    {DType::kQ4_K, Layout::kFlat, 9, 300, {}},
    {DType::kQ4_K, Layout::kFlat, 5, 100, {64, 1, 0}},
    {DType::kQ4_K, Layout::kColumnWise, 300, 37, {}},
    {DType::kQ4_K, Layout::kColumnWise, 256, 64, {32, 0, 1}},
    {DType::kQ4_K, Layout::kColumnWise, 1, 5, {}},
    {DType::kQ4_K, Layout::kColumnWise, 513, 20, {64, 0, 3}},
};
INSTANTIATE_TEST_SUITE_P(Shapes, GemvTest, ::testing::ValuesIn(kCases), case_name);

// A device whose binding cap is 16 KiB: every weight below is split into several descriptor ranges
// (row ranges; for column_wise, input ranges accumulated into y).
class GemvSplitTest : public VulkanTest, public ::testing::WithParamInterface<GemvCase> {
 protected:
  runtime::DeviceOptions options() const override {
    runtime::DeviceOptions o = runtime::testing::test_device_options();
    o.max_binding_bytes = 16384;
    return o;
  }
};

TEST_P(GemvSplitTest, SplitBindingsMatchDoubleReference) {
  const GemvCase& c = GetParam();
  ASSERT_GT(runtime::packed_weight_bytes(c.dtype, c.layout, c.n, c.k), dev().binding_limit_bytes());
  const GemvOutcome o = run_gemv_case(dev(), rec(), c, 2000 + c.n + c.k);
  std::printf("  NMSE %.3e over %u dispatches\n", o.nmse, o.dispatches);
  EXPECT_LT(o.nmse, kGemvNmse);
  EXPECT_GT(o.dispatches, 1u);
}

const GemvCase kSplitCases[] = {
    {DType::kF32, Layout::kRowWise, 40, 301, {}},
    {DType::kF16, Layout::kRowWise, 40, 301, {}},
    {DType::kQ8_0, Layout::kRowWise, 200, 100, {}},
    {DType::kQ6_K, Layout::kRowWise, 40, 300, {}},
    {DType::kQ4_K, Layout::kRowWise, 61, 512, {}},
    {DType::kQ4_K, Layout::kFlat, 150, 300, {}},
    {DType::kQ4_K, Layout::kColumnWise, 300, 150, {}},
};
INSTANTIATE_TEST_SUITE_P(Shapes, GemvSplitTest, ::testing::ValuesIn(kSplitCases), case_name);

class GemvErrors : public VulkanTest {};

TEST_F(GemvErrors, NamesTheBadField) {
  auto w = alloc(4096);
  auto x = alloc(2048);
  auto y = alloc(1024);
  runtime::GemvArgs a;
  a.w = w.range();
  a.x = x.range();
  a.y = y.range();
  a.dtype = DType::kQ4_K;
  a.layout = Layout::kRowWise;
  a.n_rows = 30;
  a.k = 256;
  Status s = runtime::record_gemv(rec(), a, "blk.0.ffn_up");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("gemv blk.0.ffn_up [Q4_K row_wise N=30 K=256]: w range of 4096 bytes < required 4320"),
            std::string::npos)
      << s.message();
  a.n_rows = 4;
  a.k = 300;
  a.x = x.range().sub(0, 1000);
  s = runtime::record_gemv(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("x range of 1000 bytes < required 1200"), std::string::npos) << s.message();
  a.x = x.range();
  a.w = w.range().sub(2, 2000);
  s = runtime::record_gemv(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("w offset"), std::string::npos) << s.message();
  a.w = w.range();
  a.dtype = DType::kQ6_K;
  a.layout = Layout::kColumnWise;
  s = runtime::record_gemv(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("no gemv kernel for this dtype and layout"), std::string::npos) << s.message();
  EXPECT_EQ(rec().dispatch_count(), 0u);
}

}  // namespace
}  // namespace rdrr::kernels
