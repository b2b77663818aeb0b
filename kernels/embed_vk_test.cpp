// Embedding gather differential tests: GPU rows of a packed table (F32, F16, Q8_0 / Q6_K / Q4_K flat and
// row_wise, Q4_K column_wise) times a scale, against the exactly dequantized table in double. Ids repeat,
// include the first and last rows and one id past the vocabulary (a zero row); outputs are NaN-poisoned and
// a guard past the end must stay poisoned. Split tests force several binding ranges (16 KiB cap).
#include <cmath>
#include <cstring>

#include "kernels/kernel_test_ref.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;
using runtime::testing::VulkanTest;

// Each output is one exact decode times the scale in f32: relative error <= 2^-24 per element, so NMSE
// <= ~1e-14 (measured 0 .. 1e-16 on lavapipe); any wrong element gives >= ~1e-4.
constexpr double kEmbedNmse = 1e-12;

struct EmbedCase {
  DType dtype;
  Layout layout;
  uint32_t vocab;
  uint32_t dim;
  float scale;
};

std::string case_text(const EmbedCase& c) {
  return std::string(quant::dtype_name(c.dtype)) + "_" + std::string(quant::layout_name(c.layout)) + "_V" +
         std::to_string(c.vocab) + "_D" + std::to_string(c.dim) + (c.scale != 1.0f ? "_scaled" : "");
}
std::string case_name(const ::testing::TestParamInfo<EmbedCase>& info) { return case_text(info.param); }
void PrintTo(const EmbedCase& c, std::ostream* os) { *os << case_text(c); }

struct EmbedOutcome {
  double nmse = INFINITY;
  uint32_t dispatches = 0;
};

EmbedOutcome run_embed_case(runtime::Device& dev, runtime::Recorder& rec, const EmbedCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const testing::PackedWeight w = testing::random_weight(rng, c.dtype, c.layout, c.vocab, c.dim);
  std::vector<uint32_t> ids = {0, c.vocab - 1, c.vocab / 2, 0, c.vocab + 5};
  for (int i = 0; i < 4; ++i) ids.push_back(static_cast<uint32_t>(rng() % c.vocab));
  const uint32_t n_tokens = static_cast<uint32_t>(ids.size());
  const uint64_t n_out = uint64_t{n_tokens} * c.dim;
  constexpr uint32_t kGuard = 5;
  std::vector<std::byte> tbytes(256 + w.bytes.size(), std::byte{0x3c});  // table at a non-zero offset
  std::memcpy(tbytes.data() + 256, w.bytes.data(), w.bytes.size());
  auto tb = dev.allocate(tbytes.size(), "table");
  auto ib = dev.allocate(ids.size() * 4, "ids");
  auto ob = dev.allocate((n_out + kGuard) * 4, "out");
  EXPECT_TRUE(tb.ok() && ib.ok() && ob.ok());
  EXPECT_TRUE(dev.upload(tb->range(), tbytes).ok());
  EXPECT_TRUE(dev.upload(ib->range(), std::as_bytes(std::span(ids))).ok());
  EXPECT_TRUE(dev.fill(ob->range(), runtime::testing::kPoisonBits).ok());
  runtime::EmbedArgs a;
  a.table = tb->range().sub(256, w.bytes.size());
  a.dtype = c.dtype;
  a.layout = c.layout;
  a.vocab = c.vocab;
  a.dim = c.dim;
  a.ids = ib->range();
  a.out = ob->range().sub(0, n_out * 4);
  a.n_tokens = n_tokens;
  a.scale = c.scale;
  const Status s = runtime::record_embed(rec, a);
  EXPECT_TRUE(s.ok()) << s.to_string();
  auto r = rec.submit_and_wait();
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  EmbedOutcome out;
  out.dispatches = r.ok() ? r->dispatches : 0;
  std::vector<float> y(n_out + kGuard);
  EXPECT_TRUE(dev.download(ob->range(), std::as_writable_bytes(std::span(y))).ok());
  for (uint64_t i = n_out; i < n_out + kGuard; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &y[i], 4);
    EXPECT_EQ(bits, runtime::testing::kPoisonBits) << "stray write at out[" << i << "]";
  }
  y.resize(n_out);
  EXPECT_EQ(runtime::testing::count_non_finite(y), 0u) << "unwritten or non-finite outputs";
  std::vector<double> ref(n_out, 0.0);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    if (ids[t] >= c.vocab) continue;  // zero row
    for (uint32_t i = 0; i < c.dim; ++i) ref[uint64_t{t} * c.dim + i] = w.w[uint64_t{ids[t]} * c.dim + i] * double(c.scale);
  }
  for (uint32_t i = 0; i < c.dim; ++i) EXPECT_EQ(y[4 * uint64_t{c.dim} + i], 0.0f) << "id past vocab, element " << i;
  out.nmse = runtime::testing::nmse(y, ref);
  return out;
}

class EmbedTest : public VulkanTest, public ::testing::WithParamInterface<EmbedCase> {};

TEST_P(EmbedTest, MatchesDoubleReference) {
  const EmbedCase& c = GetParam();
  const EmbedOutcome o = run_embed_case(dev(), rec(), c, 300 + c.vocab * 3 + c.dim);
  std::printf("  NMSE %.3e\n", o.nmse);
  EXPECT_LT(o.nmse, kEmbedNmse);
  EXPECT_EQ(o.dispatches, 1u);
}

const EmbedCase kCases[] = {
    {DType::kF32, Layout::kRowWise, 37, 301, 1.0f},
    {DType::kF16, Layout::kRowWise, 50, 64, 8.0f},  // Gemma: sqrt(hidden)
    {DType::kQ8_0, Layout::kRowWise, 40, 96, 1.0f},
    {DType::kQ8_0, Layout::kFlat, 13, 45, 1.0f},
    {DType::kQ6_K, Layout::kRowWise, 19, 512, 1.0f},
    {DType::kQ6_K, Layout::kRowWise, 7, 300, 1.5f},
    {DType::kQ4_K, Layout::kFlat, 9, 300, 1.0f},
    {DType::kQ4_K, Layout::kRowWise, 21, 512, 1.0f},
    {DType::kQ4_K, Layout::kRowWise, 11, 300, 2.0f},
    {DType::kQ4_K, Layout::kColumnWise, 300, 37, 1.0f},
    {DType::kQ4_K, Layout::kColumnWise, 513, 20, 3.0f},
};
INSTANTIATE_TEST_SUITE_P(Shapes, EmbedTest, ::testing::ValuesIn(kCases), case_name);

class EmbedSplitTest : public VulkanTest, public ::testing::WithParamInterface<EmbedCase> {
 protected:
  runtime::DeviceOptions options() const override {
    runtime::DeviceOptions o = runtime::testing::test_device_options();
    o.max_binding_bytes = 16384;
    return o;
  }
};

TEST_P(EmbedSplitTest, SplitBindingsMatchDoubleReference) {
  const EmbedCase& c = GetParam();
  ASSERT_GT(runtime::packed_weight_bytes(c.dtype, c.layout, c.vocab, c.dim), dev().binding_limit_bytes());
  const EmbedOutcome o = run_embed_case(dev(), rec(), c, 400 + c.vocab + c.dim);
  std::printf("  NMSE %.3e over %u dispatches\n", o.nmse, o.dispatches);
  EXPECT_LT(o.nmse, kEmbedNmse);
  EXPECT_GT(o.dispatches, 1u);
}

const EmbedCase kSplitCases[] = {
    {DType::kF16, Layout::kRowWise, 200, 64, 1.0f},
    {DType::kQ8_0, Layout::kFlat, 200, 100, 1.0f},
    {DType::kQ6_K, Layout::kRowWise, 40, 300, 1.0f},
    {DType::kQ4_K, Layout::kRowWise, 61, 512, 1.0f},
    {DType::kQ4_K, Layout::kColumnWise, 300, 150, 1.0f},
};
INSTANTIATE_TEST_SUITE_P(Shapes, EmbedSplitTest, ::testing::ValuesIn(kSplitCases), case_name);

TEST_F(VulkanTest, EmbedNamesTheBadField) {
  auto t = alloc(4096);
  auto ids = alloc(64);
  auto out = alloc(4096);
  runtime::EmbedArgs a;
  a.table = t.range();
  a.dtype = DType::kQ4_K;
  a.layout = Layout::kRowWise;
  a.vocab = 30;
  a.dim = 256;
  a.ids = ids.range();
  a.out = out.range();
  a.n_tokens = 2;
  Status s = runtime::record_embed(rec(), a, "tok_embd");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("embed tok_embd [Q4_K row_wise vocab=30 dim=256 tokens=2]: table range of 4096 bytes < "
                             "required 4320"),
            std::string::npos)
      << s.message();
  a.vocab = 4;
  a.n_tokens = 20;
  s = runtime::record_embed(rec(), a, "tok_embd");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("ids range of 64 bytes < required 80"), std::string::npos) << s.message();
  a.n_tokens = 0;
  s = runtime::record_embed(rec(), a, "tok_embd");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("n_tokens is 0"), std::string::npos) << s.message();
  a.n_tokens = 2;
  a.dtype = DType::kQ6_K;
  a.layout = Layout::kColumnWise;
  s = runtime::record_embed(rec(), a, "tok_embd");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("no embed kernel for this dtype and layout"), std::string::npos) << s.message();
  EXPECT_EQ(rec().dispatch_count(), 0u);
}

}  // namespace
}  // namespace rdrr::kernels
