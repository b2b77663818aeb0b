// Fail-closed pinning and forced kernels on a real device: the recorder's allowed-kernel set, the ops'
// kernel overrides (GemvArgs / GemmArgs / EmbedArgs::kernel), and the add_bias broadcast kernel.
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "kernels/kernel_choice.h"
#include "kernels/kernel_test_ref.h"
#include "runtime/kv_cache.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::runtime {
namespace {

using quant::DType;
using quant::Layout;
using testing::VulkanTest;

class PinTest : public VulkanTest {};

TEST_F(PinTest, AddBiasBroadcastsOverRows) {
  const uint32_t n_b = 300, rows = 7;
  std::mt19937 rng(11);
  const std::vector<float> x = testing::random_f32(rng, n_b * rows);
  const std::vector<float> b = testing::random_f32(rng, n_b);
  std::vector<double> ref(x.size());
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t j = 0; j < n_b; ++j) ref[r * n_b + j] = double(x[r * n_b + j]) + b[j];
  }
  Buffer xb = upload(x, "x"), bb = upload(b, "bias");
  Buffer out = poisoned_f32(x.size());
  ASSERT_TRUE(record_add_bias(rec(), xb.range(), bb.range(), out.range(), n_b, rows, "q_bias").ok());
  run();
  const std::vector<float> y = download_f32(out.range());
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], static_cast<float>(ref[i])) << i;
  // In place, as the executor runs it (q += b).
  ASSERT_TRUE(record_add_bias(rec(), xb.range(), bb.range(), xb.range(), n_b, rows, "q_bias").ok());
  run();
  EXPECT_EQ(download_f32(xb.range()), y);
  const Status s = record_add_bias(rec(), xb.range(), bb.range().sub(0, 16), xb.range(), n_b, rows, "k_bias");
  EXPECT_EQ(s.code(), StatusCode::kValidation);
  EXPECT_NE(s.message().find("add_bias k_bias [n_b=300 rows=7]: bias range of 16 bytes < required 1200"),
            std::string::npos)
      << s.message();
}

// attention_prefill_f16 is an optional variant of attention_f16: a graph that does not pin it runs attention.comp
// (packs pinned before it stay valid); one that pins only the variant runs it for prefill.
TEST_F(PinTest, PrefillAttentionRunsOnlyWherePinned) {
  auto cache = KvCache::create(dev(), {1, 2, 64, 32, DType::kF16}, "kv");
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  Buffer q = upload(std::vector<float>(4 * 4 * 64, 0.5f), "q");
  Buffer out = alloc(4 * 4 * 64 * 4, "out");
  AttentionArgs a;
  a.q = q.range();
  a.kv = cache->layer(0);
  a.out = out.range();
  a.n_q = 4;
  a.n_heads = 4;
  a.scale = 0.125f;
  const auto pinned_recorder = [&](std::set<std::string, std::less<>> allowed) {
    RecorderOptions opts;
    opts.allowed_kernels = std::make_shared<const std::set<std::string, std::less<>>>(std::move(allowed));
    return Recorder::create(dev(), opts);
  };
  auto base_only = pinned_recorder({"attention_f16", "attention_split_f16", "attn_merge"});
  ASSERT_TRUE(base_only.ok());
  EXPECT_TRUE(record_attention(**base_only, a).ok());  // attention.comp
  a.tuning.prefill = 2;
  Status s = record_attention(**base_only, a);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("the graph does not pin attention_prefill_f16 (an optional variant)"), std::string::npos)
      << s.message();
  a.tuning.prefill = 0;
  auto variant_only = pinned_recorder({"attention_prefill_f16"});
  ASSERT_TRUE(variant_only.ok());
  EXPECT_TRUE(record_attention(**variant_only, a).ok());  // attention_prefill.comp: the only kernel it may run
  a.tuning.prefill = 1;
  s = record_attention(**variant_only, a);
  EXPECT_EQ(s.code(), StatusCode::kIntegrity) << s.to_string();
  EXPECT_EQ(kernels::kernel_variants("attention_f16").size(), 1u);
  EXPECT_TRUE(kernels::kernel_companions("attention_f16").size() == 4u);
  ASSERT_TRUE((*base_only)->submit_and_wait().ok());
  ASSERT_TRUE((*variant_only)->submit_and_wait().ok());
}

TEST_F(PinTest, RecorderRejectsKernelsOutsideThePinnedSet) {
  RecorderOptions opts;
  opts.allowed_kernels = std::make_shared<const std::set<std::string, std::less<>>>(std::set<std::string, std::less<>>{"softcap"});
  auto pinned = Recorder::create(dev(), opts);
  ASSERT_TRUE(pinned.ok()) << pinned.status().to_string();
  Buffer a = upload(std::vector<float>(64, 1.0f), "a");
  EXPECT_TRUE(record_softcap(**pinned, a.range(), a.range(), 64, 30.0f).ok());
  const Status s = record_add(**pinned, a.range(), a.range(), a.range(), 64, "residual");
  EXPECT_EQ(s.code(), StatusCode::kIntegrity);
  EXPECT_NE(s.message().find("dispatch add (residual): kernel add is not pinned"), std::string::npos) << s.message();
  ASSERT_TRUE((*pinned)->submit_and_wait().ok());
}

struct Weight {
  kernels::testing::PackedWeight w;
  Buffer buf;
};

class ForcedKernelTest : public VulkanTest {
 protected:
  // y for a forced gemv kernel (empty = automatic), or the error status.
  Result<std::vector<float>> gemv(const Buffer& w, const kernels::testing::PackedWeight& pw, Layout layout, uint32_t n,
                                  uint32_t k, std::string_view kernel, bool with_scratch) {
    std::mt19937 rng(3);
    Buffer x = upload(testing::random_f32(rng, k), "x");
    Buffer y = poisoned_f32(n, "y");
    Buffer scratch = alloc(std::max<uint64_t>(gemv_scratch_bytes(DType::kQ4_K, layout, n, k), 256), "scratch");
    GemvArgs g;
    g.w = w.range().sub(0, pw.bytes.size());
    g.dtype = DType::kQ4_K;
    g.layout = layout;
    g.n_rows = n;
    g.k = k;
    g.x = x.range();
    g.y = y.range();
    if (with_scratch) g.scratch = scratch.range();
    g.kernel = kernel;
    RecorderOptions opts;
    // The forced kernel and its companions (kernels/kernel_choice.h), as a graph pins them.
    std::set<std::string, std::less<>> allowed{std::string(kernel.empty() ? "none" : kernel)};
    for (std::string_view c : kernels::kernel_companions(kernel)) allowed.emplace(c);
    opts.allowed_kernels = std::make_shared<const std::set<std::string, std::less<>>>(std::move(allowed));
    RDRR_ASSIGN_OR_RETURN(auto r, Recorder::create(dev(), opts));
    RDRR_RETURN_IF_ERROR(record_gemv(*r, g, "forced"));
    RDRR_RETURN_IF_ERROR(r->submit_and_wait().status());
    return download_f32(y.range());
  }
};

TEST_F(ForcedKernelTest, GemvOverridesRunTheNamedKernelOrFail) {
  std::mt19937 rng(9);
  const uint32_t n = 512, k = 512;
  auto row = kernels::testing::random_weight(rng, DType::kQ4_K, Layout::kRowWise, n, k);
  auto col = kernels::testing::random_weight(rng, DType::kQ4_K, Layout::kColumnWise, n, k);
  Buffer rowb = upload_bytes(row.bytes, "row"), colb = upload_bytes(col.bytes, "col");
  // Each forced kernel runs alone under a recorder that pins only it, and all agree.
  auto generic = gemv(rowb, row, Layout::kRowWise, n, k, "gemv_q4_k", false);
  ASSERT_TRUE(generic.ok()) << generic.status().to_string();
  auto vec = gemv(rowb, row, Layout::kRowWise, n, k, "gemv_q4_k_vec", false);
  ASSERT_TRUE(vec.ok()) << vec.status().to_string();
  auto colg = gemv(colb, col, Layout::kColumnWise, n, k, "gemv_q4_k_col", true);
  ASSERT_TRUE(colg.ok()) << colg.status().to_string();
  auto split = gemv(colb, col, Layout::kColumnWise, n, k, "gemv_q4_k_col_split", true);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  double worst = 0.0;
  for (uint32_t i = 0; i < n; ++i) {
    const double scale = std::max(1.0, std::abs(double((*generic)[i])));
    worst = std::max(worst, std::abs(double((*vec)[i]) - (*generic)[i]) / scale);
    worst = std::max(worst, std::abs(double((*split)[i]) - (*colg)[i]) / scale);
  }
  EXPECT_LT(worst, 1e-4);
  // The split kernel without scratch cannot run: an error, not the generic kernel.
  auto no_scratch = gemv(colb, col, Layout::kColumnWise, n, k, "gemv_q4_k_col_split", false);
  ASSERT_FALSE(no_scratch.ok());
  EXPECT_EQ(no_scratch.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(no_scratch.status().message().find("forced kernel gemv_q4_k_col_split cannot run"), std::string::npos)
      << no_scratch.status().message();
  // A kernel for another layout / op / an unknown name.
  auto wrong = gemv(rowb, row, Layout::kRowWise, n, k, "gemv_q4_k_col", false);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(wrong.status().message().find("forced kernel gemv_q4_k_col (op gemv) cannot run op gemv on Q4_K row_wise"),
            std::string::npos)
      << wrong.status().message();
  auto unknown = gemv(rowb, row, Layout::kRowWise, n, k, "gemv_q9", false);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  // Automatic choice under a pin set that lacks it: the recorder refuses.
  auto unpinned = gemv(rowb, row, Layout::kRowWise, n, k, "", false);
  ASSERT_FALSE(unpinned.ok());
  EXPECT_EQ(unpinned.status().code(), StatusCode::kIntegrity);
}

TEST_F(ForcedKernelTest, GemmAndEmbedOverridesAreChecked) {
  std::mt19937 rng(4);
  auto w = kernels::testing::random_weight(rng, DType::kQ8_0, Layout::kRowWise, 64, 64);
  Buffer wb = upload_bytes(w.bytes, "w");
  Buffer x = upload(testing::random_f32(rng, 2 * 64), "x");
  Buffer y = poisoned_f32(2 * 64, "y");
  GemmArgs g;
  g.w = wb.range().sub(0, w.bytes.size());
  g.dtype = DType::kQ8_0;
  g.n_rows = 64;
  g.k = 64;
  g.m_rows = 2;
  g.x = x.range();
  g.y = y.range();
  g.kernel = "gemm_q8_0";
  EXPECT_TRUE(record_gemm(rec(), g).ok());
  run();
  g.kernel = "gemm_q4_k";
  const Status s = record_gemm(rec(), g, "q_proj");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("forced kernel gemm_q4_k (op gemm) cannot run op gemm on Q8_0"), std::string::npos)
      << s.message();
  Buffer ids = upload(std::vector<uint32_t>{1, 2}, "ids");
  EmbedArgs e;
  e.table = g.w;
  e.dtype = DType::kQ8_0;
  e.vocab = 64;
  e.dim = 64;
  e.ids = ids.range();
  e.out = y.range();
  e.n_tokens = 2;
  e.kernel = "gemv_q8_0";
  const Status se = record_embed(rec(), e);
  EXPECT_EQ(se.code(), StatusCode::kUnsupported);
  EXPECT_NE(se.message().find("forced kernel gemv_q8_0 (op gemv) cannot run op embed"), std::string::npos)
      << se.message();
}

}  // namespace
}  // namespace rdrr::runtime
