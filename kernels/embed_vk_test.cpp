// Embedding gather differential tests: GPU rows of a packed table (F32, F16, Q8_0 / Q6_K / Q4_K flat and
// row_wise, Q4_K column_wise) times a scale, against the exactly dequantized table in double. Ids repeat,
// include the first and last rows and one id past the vocabulary (a zero row); outputs are NaN-poisoned and
// guards past the end must stay poisoned (op_test_util.h). Split tests force several binding ranges (16 KiB cap).
#include <cmath>
#include <string>

#include "kernels/kernel_test_ref.h"
#include "kernels/op_test_util.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;
using runtime::testing::VulkanTest;
using testing::OpBindings;
using testing::OpCase;
using testing::Tolerance;

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

constexpr uint32_t kPastVocabToken = 4;  // ids[4] = vocab + 5: a zero row

OpCase embed_case(const EmbedCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const testing::PackedWeight w = testing::random_weight(rng, c.dtype, c.layout, c.vocab, c.dim);
  std::vector<uint32_t> ids = {0, c.vocab - 1, c.vocab / 2, 0, c.vocab + 5};
  for (int i = 0; i < 4; ++i) ids.push_back(static_cast<uint32_t>(rng() % c.vocab));
  const uint32_t n_tokens = static_cast<uint32_t>(ids.size());
  std::vector<double> ref(uint64_t{n_tokens} * c.dim, 0.0);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    if (ids[t] >= c.vocab) continue;  // zero row
    for (uint32_t i = 0; i < c.dim; ++i) ref[uint64_t{t} * c.dim + i] = w.w[uint64_t{ids[t]} * c.dim + i] * double(c.scale);
  }
  OpCase oc;
  oc.name = std::string("embed ") + case_text(c);
  // The table at a non-zero offset in its buffer.
  oc.inputs = {testing::packed_input("table", c.dtype, c.layout, c.vocab, c.dim, w.bytes, 256, std::byte{0x3c}),
               testing::u32_input("ids", ids)};
  const uint32_t dim = c.dim;
  oc.outputs = {testing::f32_output("out", {n_tokens, c.dim}, std::move(ref), Tolerance::nmse(kEmbedNmse))};
  oc.outputs[0].check = [dim](std::span<const float> y) {
    for (uint32_t i = 0; i < dim; ++i) {
      EXPECT_EQ(y[kPastVocabToken * uint64_t{dim} + i], 0.0f) << "id past vocab, element " << i;
    }
  };
  oc.record = [c, n_tokens](runtime::Recorder& rec, const OpBindings& b) {
    runtime::EmbedArgs a;
    a.table = b["table"];
    a.dtype = c.dtype;
    a.layout = c.layout;
    a.vocab = c.vocab;
    a.dim = c.dim;
    a.ids = b["ids"];
    a.out = b["out"];
    a.n_tokens = n_tokens;
    a.scale = c.scale;
    return runtime::record_embed(rec, a);
  };
  return oc;
}

class EmbedTest : public VulkanTest, public ::testing::WithParamInterface<EmbedCase> {};

TEST_P(EmbedTest, MatchesDoubleReference) {
  const EmbedCase& c = GetParam();
  const testing::OpOutcome o = testing::run_op_case(dev(), rec(), embed_case(c, 300 + c.vocab * 3 + c.dim));
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
    {DType::kQ4_0, Layout::kRowWise, 40, 96, 1.0f},
    {DType::kQ4_0, Layout::kFlat, 13, 45, 2.0f},
    {DType::kQ5_0, Layout::kRowWise, 40, 85, 1.0f},
    {DType::kQ5_0, Layout::kFlat, 13, 45, 1.0f},
    {DType::kQ5_K, Layout::kRowWise, 21, 512, 1.0f},
    {DType::kQ5_K, Layout::kRowWise, 11, 300, 2.0f},
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
  const testing::OpOutcome o = testing::run_op_case(dev(), rec(), embed_case(c, 400 + c.vocab + c.dim));
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
