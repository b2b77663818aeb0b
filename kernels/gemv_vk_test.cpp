// GEMV differential tests: GPU y = W x with W packed (F32, F16, Q8_0, Q6_K, Q4_K in every layout the kernels
// accept) against y = W_dequantized x in double on the CPU. Shapes are off the tile sizes, K is odd or not a
// block multiple (padding inside blocks), outputs are NaN-poisoned first, and guard words past N must stay
// poisoned (no stray writes): the parametrized cases are OpCases (op_test_util.h). Q4_K runs the vectorized
// kernels (gemv_q4k.comp) when its blocks are 16-byte aligned (w offset 64 below; 68 forces the generic
// gemv.comp path) and, for column_wise, when a split-K scratch is given (NaN-poisoned too, so a missing
// partial shows).
#include <cmath>
#include <cstring>

#include "kernels/kernel_test_ref.h"
#include "kernels/op_test_util.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;
using runtime::GemvTuning;
using runtime::testing::VulkanTest;
using testing::OpBindings;
using testing::OpCase;
using testing::OpOutcome;
using testing::Tolerance;

// NMSE bounds vs the double-precision reference on the exactly-dequantized weights. All paths accumulate in
// f32, so the error is f32 rounding only (measured: about 1e-14 .. 1e-12 on lavapipe); 1e-9 leaves margin
// for other devices' FMA contraction and summation orders while still catching any wrong weight or index
// (a single wrong element among ~10^4 gives NMSE >= ~1e-5).
constexpr double kGemvNmse = 1e-9;
// gemv_q4_k_dot stages x as 16-bit codes per 16 values (error <= max|x| / 65534 per value): for x uniform in
// (-1, 1) the expected NMSE is (1 / 32767)^2 / 12 / (1 / 3) = 2.3e-10; 5e-9 is 20x that and still 2000x under
// what one wrong weight or index gives.
constexpr double kGemvDotNmse = 5e-9;

struct GemvCase {
  DType dtype;
  Layout layout;
  uint32_t n;
  uint32_t k;
  GemvTuning tuning;
  uint64_t scratch_bytes = 0;  // split-K scratch (column_wise); kAutoScratch = gemv_scratch_bytes
  uint32_t w_offset = 64;      // byte offset of the tensor in its buffer
};
constexpr uint64_t kAutoScratch = ~uint64_t{0};

std::string case_text(const GemvCase& c) {
  std::string s = std::string(quant::dtype_name(c.dtype)) + "_" + std::string(quant::layout_name(c.layout)) + "_N" +
                  std::to_string(c.n) + "_K" + std::to_string(c.k);
  if (c.tuning.local_size_x) s += "_wg" + std::to_string(c.tuning.local_size_x);
  if (c.tuning.num_rows) s += "_rows" + std::to_string(c.tuning.num_rows);
  if (c.tuning.k_split) s += "_ks" + std::to_string(c.tuning.k_split);
  if (c.tuning.k_chunk) s += "_kc" + std::to_string(c.tuning.k_chunk);
  if (c.tuning.unroll) s += "_unroll" + std::to_string(c.tuning.unroll);
  if (c.tuning.decode) s += c.tuning.decode == 2 ? "_dot" : "_f32";
  if (c.tuning.row_groups) s += "_rg" + std::to_string(c.tuning.row_groups);
  if (c.scratch_bytes == kAutoScratch) s += "_scratch";
  if (c.scratch_bytes != 0 && c.scratch_bytes != kAutoScratch) s += "_scratch" + std::to_string(c.scratch_bytes);
  if (c.w_offset != 64) s += "_off" + std::to_string(c.w_offset);
  return s;
}
std::string case_name(const ::testing::TestParamInfo<GemvCase>& info) { return case_text(info.param); }
void PrintTo(const GemvCase& c, std::ostream* os) { *os << case_text(c); }

// The bound for a case: the integer-dot kernel runs Q4_K rows when forced or, by default, where the device's
// packed 8-bit dot products are native.
double nmse_bound(const runtime::Device& dev, const GemvCase& c) {
  const bool rows = c.dtype == DType::kQ4_K && c.layout != Layout::kColumnWise;
  const bool dot = c.tuning.decode == 2 || (c.tuning.decode == 0 && dev.caps().integer_dot_4x8_accelerated);
  return rows && dot ? kGemvDotNmse : kGemvNmse;
}

// One case on the device: w at c.w_offset in its buffer, x bound with a tail of large values past K (a kernel
// reading beyond its row picks them up), the split-K scratch NaN-poisoned.
OpCase gemv_case(const runtime::Device& dev, const GemvCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const testing::PackedWeight w = testing::random_weight(rng, c.dtype, c.layout, c.n, c.k);
  const std::vector<float> x = runtime::testing::random_f32(rng, c.k);
  std::vector<float> x_guarded = x;
  x_guarded.resize(x.size() + 61, 1000.0f);
  const uint64_t scratch_bytes = c.scratch_bytes == kAutoScratch
                                     ? runtime::gemv_scratch_bytes(c.dtype, c.layout, c.n, c.k)
                                     : c.scratch_bytes;
  OpCase oc;
  oc.name = std::string("gemv ") + case_text(c);
  oc.inputs = {testing::packed_input("w", c.dtype, c.layout, c.n, c.k, w.bytes, c.w_offset, std::byte{0x33}),
               testing::f32_input("x", {x_guarded.size()}, x_guarded)};
  if (scratch_bytes != 0) oc.inputs.push_back(testing::poisoned_scratch("scratch", scratch_bytes));
  oc.outputs = {
      testing::f32_output("y", {c.n}, testing::reference_gemv(w, x, c.n, c.k), Tolerance::nmse(nmse_bound(dev, c)))};
  oc.record = [c, scratch_bytes](runtime::Recorder& rec, const OpBindings& b) {
    runtime::GemvArgs args;
    args.w = b["w"];
    args.dtype = c.dtype;
    args.layout = c.layout;
    args.n_rows = c.n;
    args.k = c.k;
    args.x = b["x"];
    args.y = b["y"];
    args.tuning = c.tuning;
    if (scratch_bytes != 0) args.scratch = b["scratch"];
    return runtime::record_gemv(rec, args);
  };
  return oc;
}

class GemvTest : public VulkanTest, public ::testing::WithParamInterface<GemvCase> {};

TEST_P(GemvTest, MatchesDoubleReference) {
  const GemvCase& c = GetParam();
  const OpOutcome o = testing::run_op_case(dev(), rec(), gemv_case(dev(), c, 1000 + c.n * 7 + c.k));
  // The column split path merges in the same dispatch; a merging call is preceded by the zeroing of its
  // scratch's tickets (once per recording).
  const bool split = c.layout == Layout::kColumnWise && c.scratch_bytes != 0;
  if (split) {
    EXPECT_GE(o.dispatches, 1u);
    EXPECT_LE(o.dispatches, 2u);
  } else {
    EXPECT_EQ(o.dispatches, 1u);
  }
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
    // Vectorized Q6_K rows (gemv_q6k.comp): 3 blocks per row (block starts alternate between 4-byte aligned
    // and 2 bytes past), a tensor 2 bytes past a word (every parity flipped), row padding, rows not dividing
    // NUM_ROWS, flat with K % 256 == 0, a long row, and K % 4 != 0 (generic kernel).
    {DType::kQ6_K, Layout::kRowWise, 37, 768, {}},
    {DType::kQ6_K, Layout::kRowWise, 37, 768, {}, 0, 66},
    {DType::kQ6_K, Layout::kRowWise, 5, 300, {32, 4, 0}},
    {DType::kQ6_K, Layout::kFlat, 13, 512, {}},
    {DType::kQ6_K, Layout::kRowWise, 21, 4096, {64, 4, 0}},
    {DType::kQ6_K, Layout::kRowWise, 3, 301, {}},
    // Q8_0 rows: odd blocks per row, a tensor 2 bytes past a word, row padding, flat with K % 32 == 0, a long
    // row, K % 4 != 0.
    {DType::kQ8_0, Layout::kRowWise, 37, 96, {}},
    {DType::kQ8_0, Layout::kRowWise, 37, 96, {}, 0, 66},
    {DType::kQ8_0, Layout::kRowWise, 5, 300, {32, 4, 0}},
    {DType::kQ8_0, Layout::kFlat, 13, 64, {}},
    {DType::kQ8_0, Layout::kRowWise, 21, 4096, {64, 4, 0}},
    {DType::kQ8_0, Layout::kRowWise, 3, 301, {}},
    {DType::kQ4_K, Layout::kRowWise, 21, 512, {}},
    {DType::kQ4_K, Layout::kRowWise, 11, 300, {32, 3, 0}},
    {DType::kQ4_K, Layout::kRowWise, 3, 1, {}},
    {DType::kQ4_K, Layout::kFlat, 9, 300, {}},
    {DType::kQ4_K, Layout::kFlat, 5, 100, {64, 1, 0}},
    {DType::kQ4_K, Layout::kColumnWise, 300, 37, {}},
    {DType::kQ4_K, Layout::kColumnWise, 256, 64, {32, 0, 1}},
    {DType::kQ4_K, Layout::kColumnWise, 1, 5, {}},
    {DType::kQ4_K, Layout::kColumnWise, 513, 20, {64, 0, 3}},
    // Vectorized rows path: several blocks per row, padding in the last block, NUM_ROWS not dividing N,
    // flat with K % 256 == 0, and an unaligned tensor (generic fallback).
    {DType::kQ4_K, Layout::kRowWise, 37, 1000, {}},
    {DType::kQ4_K, Layout::kRowWise, 45, 2304, {128, 8, 0}},
    {DType::kQ4_K, Layout::kRowWise, 13, 777, {32, 2, 0}},
    {DType::kQ4_K, Layout::kRowWise, 29, 1800, {32, 4, 0, 0, 0, 2}},
    {DType::kQ4_K, Layout::kRowWise, 30, 4864, {64, 4, 0, 0, 0, 4}},
    {DType::kQ4_K, Layout::kFlat, 19, 768, {}},
    {DType::kQ4_K, Layout::kRowWise, 8195, 300, {}},  // >= 2048 workgroups: the automatic 32-invocation groups
    {DType::kQ4_K, Layout::kRowWise, 21, 512, {}, 0, 68},
    // Integer-dot rows kernel (gemv_q4k_dot.comp), forced: rows not dividing the workgroup's 16, K with row
    // padding (zeros staged past K), several x chunks (K > XCHUNK on lavapipe's 32 KiB shared memory), one
    // row group, flat, and the f32 decode forced for comparison.
    {DType::kQ4_K, Layout::kRowWise, 37, 1000, {0, 0, 0, 0, 0, 0, 2}},
    {DType::kQ4_K, Layout::kRowWise, 3, 1, {0, 0, 0, 0, 0, 0, 2}},
    {DType::kQ4_K, Layout::kRowWise, 21, 30000, {0, 0, 0, 0, 0, 0, 2}},
    {DType::kQ4_K, Layout::kRowWise, 45, 2304, {64, 2, 0, 0, 0, 0, 2, 1}},
    {DType::kQ4_K, Layout::kFlat, 19, 768, {0, 0, 0, 0, 0, 0, 2}},
    {DType::kQ4_K, Layout::kRowWise, 37, 1000, {0, 0, 0, 0, 0, 0, 1}},
    {DType::kQ4_K, Layout::kRowWise, 99, 512, {64, 2, 0, 0, 0, 0, 2, 2}},
    // Column split path: one split (writes y directly), many splits merged, N not a multiple of 256,
    // k_chunk not a multiple of the slices, tuned shapes, a scratch that forces longer splits, one too small
    // for any split (generic fallback) and an unaligned tensor (generic fallback).
    {DType::kQ4_K, Layout::kColumnWise, 300, 37, {}, kAutoScratch},
    {DType::kQ4_K, Layout::kColumnWise, 513, 777, {}, kAutoScratch},
    {DType::kQ4_K, Layout::kColumnWise, 1000, 300, {64, 0, 4, 0}, kAutoScratch},
    {DType::kQ4_K, Layout::kColumnWise, 256, 1000, {8, 0, 8, 48}, kAutoScratch},
    {DType::kQ4_K, Layout::kColumnWise, 700, 501, {16, 0, 16, 0}, kAutoScratch},
    {DType::kQ4_K, Layout::kColumnWise, 1, 300, {}, kAutoScratch},
    {DType::kQ4_K, Layout::kColumnWise, 300, 1000, {}, 4096 + 2 * 300 * 4},
    {DType::kQ4_K, Layout::kColumnWise, 300, 100, {}, 100},
    {DType::kQ4_K, Layout::kColumnWise, 300, 400, {}, kAutoScratch, 68},
    // The pass-through types (a GGUF's Q4_0 / Q5_0 / Q5_K blocks): rows of whole blocks, padded rows, flat
    // blocks across rows, tuned shapes, unaligned offsets (2-byte / 4-byte units).
    {DType::kQ4_0, Layout::kRowWise, 37, 96, {}},
    {DType::kQ4_0, Layout::kRowWise, 17, 85, {}, 0, 66},
    {DType::kQ4_0, Layout::kFlat, 13, 45, {32, 3, 0}},
    {DType::kQ4_0, Layout::kRowWise, 21, 4096, {64, 4, 0}},
    {DType::kQ5_0, Layout::kRowWise, 37, 96, {}},
    {DType::kQ5_0, Layout::kRowWise, 17, 85, {}, 0, 66},
    {DType::kQ5_0, Layout::kFlat, 13, 45, {32, 3, 0}},
    {DType::kQ5_0, Layout::kRowWise, 21, 4096, {64, 4, 0}},
    {DType::kQ5_K, Layout::kRowWise, 21, 512, {}},
    {DType::kQ5_K, Layout::kRowWise, 11, 300, {32, 3, 0}, 0, 68},
    {DType::kQ5_K, Layout::kFlat, 9, 300, {}},
    {DType::kQ5_K, Layout::kRowWise, 45, 2304, {128, 8, 0}},
    // Vectorized Q5_K rows (gemv_q4k.comp ROWS Q5K, the automatic choice where blocks are 16-byte aligned): padding
    // in the last block, NUM_ROWS not dividing N, UNROLL 2, flat with K % 256 == 0, >= 2048 workgroups.
    {DType::kQ5_K, Layout::kRowWise, 37, 1000, {}},
    {DType::kQ5_K, Layout::kRowWise, 13, 777, {32, 2, 0}},
    {DType::kQ5_K, Layout::kRowWise, 29, 1800, {32, 4, 0, 0, 0, 2}},
    {DType::kQ5_K, Layout::kFlat, 19, 768, {}},
    {DType::kQ5_K, Layout::kRowWise, 8195, 300, {}},
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
  const OpOutcome o = testing::run_op_case(dev(), rec(), gemv_case(dev(), c, 2000 + c.n + c.k));
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
    {DType::kQ4_K, Layout::kColumnWise, 300, 150, {}, kAutoScratch},
    {DType::kQ4_K, Layout::kColumnWise, 900, 100, {16, 0, 4, 8}, 20 * 900 * 4},
    {DType::kQ4_K, Layout::kRowWise, 40, 1024, {64, 4, 0}},
    {DType::kQ4_K, Layout::kRowWise, 61, 512, {0, 0, 0, 0, 0, 0, 2}},
    {DType::kQ4_0, Layout::kRowWise, 300, 99, {}},
    {DType::kQ5_0, Layout::kRowWise, 300, 99, {}},
    {DType::kQ5_K, Layout::kRowWise, 61, 512, {}},
};
INSTANTIATE_TEST_SUITE_P(Shapes, GemvSplitTest, ::testing::ValuesIn(kSplitCases), case_name);

// Several column_wise split-K calls sharing one scratch (tickets left by earlier calls, in the same command
// buffer and in a later submission) each match their own reference, from a zero-filled or a poisoned scratch:
// the tickets are zeroed once per recording (one extra dispatch).
class GemvScratchReuse : public VulkanTest {};

TEST_F(GemvScratchReuse, CallsSharingScratchStayCorrect) {
  constexpr uint32_t kN = 700, kK = 900, kCalls = 3;
  std::mt19937 rng(77);
  const uint64_t scratch_bytes = runtime::gemv_scratch_bytes(DType::kQ4_K, Layout::kColumnWise, kN, kK);
  auto sb = alloc(scratch_bytes);
  for (uint32_t fill : {0u, runtime::testing::kPoisonBits}) {
    ASSERT_TRUE(dev().fill(sb.range(), fill).ok());
    for (int submit = 0; submit < 2; ++submit) {
      std::vector<testing::PackedWeight> ws;
      std::vector<std::vector<float>> xs;
      std::vector<runtime::Buffer> bufs;
      for (uint32_t c = 0; c < kCalls; ++c) {
        ws.push_back(testing::random_weight(rng, DType::kQ4_K, Layout::kColumnWise, kN, kK));
        xs.push_back(runtime::testing::random_f32(rng, kK));
        auto wb = alloc(ws[c].bytes.size());
        auto xb = alloc(kK * 4);
        auto yb = alloc(kN * 4);
        ASSERT_TRUE(dev().upload(wb.range(), ws[c].bytes).ok());
        ASSERT_TRUE(dev().upload(xb.range(), std::as_bytes(std::span(xs[c]))).ok());
        ASSERT_TRUE(dev().fill(yb.range(), runtime::testing::kPoisonBits).ok());
        runtime::GemvArgs a;
        a.w = wb.range();
        a.dtype = DType::kQ4_K;
        a.layout = Layout::kColumnWise;
        a.n_rows = kN;
        a.k = kK;
        a.x = xb.range();
        a.y = yb.range();
        a.scratch = sb.range();
        const Status s = runtime::record_gemv(rec(), a, "reuse");
        ASSERT_TRUE(s.ok()) << s.to_string();
        bufs.push_back(std::move(wb));
        bufs.push_back(std::move(xb));
        bufs.push_back(std::move(yb));
      }
      auto r = rec().submit_and_wait();
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ(r->dispatches, kCalls + 1);
      for (uint32_t c = 0; c < kCalls; ++c) {
        std::vector<float> y(kN);
        ASSERT_TRUE(dev().download(bufs[3 * c + 2].range(), std::as_writable_bytes(std::span(y))).ok());
        EXPECT_EQ(runtime::testing::count_non_finite(y), 0u);
        const double e = runtime::testing::nmse(y, testing::reference_gemv(ws[c], xs[c], kN, kK));
        EXPECT_LT(e, kGemvNmse) << "fill " << fill << " submit " << submit << " call " << c;
      }
    }
  }
}

// A scratch written by something else between two split-K calls of one recording (against the contract in
// runtime/ops.h) leaves tickets that are not at rest: the call writes NaN, never a plausible wrong sum.
TEST_F(GemvScratchReuse, ClobberedTicketsGiveNaN) {
  constexpr uint32_t kN = 700, kK = 900;
  std::mt19937 rng(78);
  const testing::PackedWeight w = testing::random_weight(rng, DType::kQ4_K, Layout::kColumnWise, kN, kK);
  const std::vector<float> xv = runtime::testing::random_f32(rng, kK);
  auto sb = alloc(runtime::gemv_scratch_bytes(DType::kQ4_K, Layout::kColumnWise, kN, kK));
  auto wb = alloc(w.bytes.size());
  auto xb = alloc(kK * 4);
  auto y1 = alloc(kN * 4);
  auto y2 = alloc(kN * 4);
  auto fives = alloc(4096);
  ASSERT_TRUE(dev().upload(wb.range(), w.bytes).ok());
  ASSERT_TRUE(dev().upload(xb.range(), std::as_bytes(std::span(xv))).ok());
  ASSERT_TRUE(dev().fill(fives.range(), 0x40a00000u).ok());  // 5.0f
  runtime::GemvArgs a;
  a.w = wb.range();
  a.dtype = DType::kQ4_K;
  a.layout = Layout::kColumnWise;
  a.n_rows = kN;
  a.k = kK;
  a.x = xb.range();
  a.y = y1.range();
  a.scratch = sb.range();
  ASSERT_TRUE(runtime::record_gemv(rec(), a, "first").ok());
  // 10.0f over the ticket words: counts far past any split count.
  ASSERT_TRUE(runtime::record_add(rec(), fives.range(), fives.range(), sb.range().sub(0, 4096), 1024).ok());
  a.y = y2.range();
  ASSERT_TRUE(runtime::record_gemv(rec(), a, "second").ok());
  auto r = rec().submit_and_wait();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::vector<float> first(kN), second(kN);
  ASSERT_TRUE(dev().download(y1.range(), std::as_writable_bytes(std::span(first))).ok());
  ASSERT_TRUE(dev().download(y2.range(), std::as_writable_bytes(std::span(second))).ok());
  EXPECT_EQ(runtime::testing::count_non_finite(first), 0u);
  EXPECT_LT(runtime::testing::nmse(first, testing::reference_gemv(w, xv, kN, kK)), kGemvNmse);
  EXPECT_EQ(runtime::testing::count_non_finite(second), kN);
}

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
  a.dtype = DType::kQ4_K;
  a.layout = Layout::kColumnWise;
  a.n_rows = 4;
  a.k = 20;
  a.scratch = y.range().sub(512, 512);
  s = runtime::record_gemv(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("scratch overlaps w, x or y"), std::string::npos) << s.message();
  auto scratch = alloc(8192);
  a.scratch = scratch.range();
  a.tuning.local_size_x = 4;  // half a block per item group
  s = runtime::record_gemv(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("column split local_size_x 4 is not a multiple of 8 (whole blocks)"), std::string::npos)
      << s.message();
  a.tuning = {};
  a.scratch = {};
  // gemv_q6_k_vec forced where K % 4 != 0 (its x reads are 4-value vectors): an error, not the generic kernel.
  a.dtype = DType::kQ6_K;
  a.layout = Layout::kRowWise;
  a.n_rows = 2;
  a.k = 30;
  a.kernel = "gemv_q6_k_vec";
  s = runtime::record_gemv(rec(), a, "output");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("gemv output [Q6_K row_wise N=2 K=30]: forced kernel gemv_q6_k_vec cannot run these "
                             "args (rows not whole blocks or K not a multiple of 4)"),
            std::string::npos)
      << s.message();
  a.kernel = {};
  a.layout = Layout::kColumnWise;
  a.n_rows = 4;
  a.k = 20;
  a.dtype = DType::kQ6_K;
  s = runtime::record_gemv(rec(), a, "q");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("no gemv kernel for this dtype and layout"), std::string::npos) << s.message();
  EXPECT_EQ(rec().dispatch_count(), 0u);
}

}  // namespace
}  // namespace rdrr::kernels
