// Validation errors of the embedding, KV cache, attention, norm, activation, rope and sampling ops not
// covered next to their differential tests: each rule's StatusCode and message fragment, and nothing is
// recorded for a rejected call.
#include <cmath>
#include <functional>
#include <limits>

#include "runtime/kv_cache.h"
#include "runtime/ops.h"
#include "kernels/error_case_test_util.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;
using runtime::Buffer;
using runtime::testing::VulkanTest;

using testing::ErrorCase;
class OpsErrorsTest : public testing::ErrorCasesTest {};

TEST_F(OpsErrorsTest, EmbedRules) {
  Buffer big = alloc(1 << 16);
  auto args = [&] {
    runtime::EmbedArgs a;
    a.table = big.range();
    a.dtype = DType::kF16;
    a.vocab = 16;
    a.dim = 64;
    a.ids = big.range();
    a.out = big.range();
    a.n_tokens = 4;
    return a;
  };
  const float inf = std::numeric_limits<float>::infinity();
  expect_all({
      {"vocab 0", [&] { auto a = args(); a.vocab = 0; return runtime::record_embed(rec(), a, "e"); },
       StatusCode::kInvalidArgument, "embed e [F16 row_wise vocab=0 dim=64 tokens=4]: vocab is 0"},
      {"dim 0", [&] { auto a = args(); a.dim = 0; return runtime::record_embed(rec(), a, "e"); },
       StatusCode::kInvalidArgument, "dim is 0"},
      {"scale", [&] { auto a = args(); a.scale = inf; return runtime::record_embed(rec(), a, "e"); },
       StatusCode::kInvalidArgument, "scale is not finite"},
      {"out", [&] { auto a = args(); a.out = big.range().sub(0, 100); return runtime::record_embed(rec(), a, "e"); },
       StatusCode::kValidation, "out range of 100 bytes < required 1024"},
      {"offset", [&] { auto a = args(); a.table = big.range().sub(2, 8000); a.dtype = DType::kF32;
                       return runtime::record_embed(rec(), a, "e"); },
       StatusCode::kValidation, "table offset 2 is not a multiple of 4"},
      {"32-bit", [&] { auto a = args(); a.vocab = 1u << 20; a.dim = 1u << 13; return runtime::record_embed(rec(), a, "e"); },
       StatusCode::kUnsupported, "32-bit element indexing"},
  });
}

TEST_F(OpsErrorsTest, KvCacheAndAttentionRules) {
  Buffer big = alloc(1 << 16);
  auto cache = runtime::KvCache::create(dev(), {1, 2, 8, 16, DType::kF16}, "kv");
  ASSERT_TRUE(cache.ok());
  auto layer = [&] { return cache->layer(0); };
  auto attn = [&] {
    runtime::AttentionArgs a;
    a.q = big.range().sub(0, 4096);
    a.out = big.range().sub(4096, 4096);
    a.kv = layer();
    a.n_q = 2;
    a.n_heads = 4;
    a.p0 = 3;
    a.scale = 0.3f;
    return a;
  };
  auto append = [&](runtime::KvLayer kv) {
    return runtime::record_kv_append(rec(), {kv, big.range(), big.range(), 1, 0, std::nullopt}, "a");
  };
  expect_all({
      {"kv dtype", [&] { auto kv = layer(); kv.dtype = DType::kQ8_0; return append(kv); },
       StatusCode::kUnsupported, "kv dtype Q8_0 is not F16 or F32"},
      {"kv heads 0", [&] { auto kv = layer(); kv.n_kv_heads = 0; return append(kv); },
       StatusCode::kInvalidArgument, "kv n_kv_heads is 0"},
      {"head_dim", [&] { auto kv = layer(); kv.head_dim = 514; return append(kv); },
       StatusCode::kInvalidArgument, "head_dim 514 must be even and <= 512"},
      {"k cache short", [&] { auto kv = layer(); kv.k = kv.k.sub(0, 64); return append(kv); },
       StatusCode::kValidation, "k cache range of 64 bytes < required 512"},
      {"append 0 tokens", [&] { return runtime::record_kv_append(rec(), {layer(), big.range(), big.range(), 0, 0, std::nullopt}, "a"); },
       StatusCode::kInvalidArgument, "n_tokens is 0"},
      {"n_q 0", [&] { auto a = attn(); a.n_q = 0; return runtime::record_attention(rec(), a); },
       StatusCode::kInvalidArgument, "n_q is 0"},
      {"capacity", [&] { auto a = attn(); a.p0 = 15; return runtime::record_attention(rec(), a, "l0"); },
       StatusCode::kInvalidArgument, "attention l0 [q=2 heads=4/2 head_dim=8 p0=15]: positions up to 17 exceed the cache capacity 16"},
      {"softcap", [&] { auto a = attn(); a.softcap = -1.0f; return runtime::record_attention(rec(), a); },
       StatusCode::kInvalidArgument, "softcap -1.000000 must be >= 0"},
      {"q short", [&] { auto a = attn(); a.q = a.q.sub(0, 128); return runtime::record_attention(rec(), a); },
       StatusCode::kValidation, "q range of 128 bytes < required 256"},
      {"scratch for splits", [&] { auto a = attn(); a.scratch = big.range().sub(8192, 64); a.tuning.n_splits = 3;
                                   return runtime::record_attention(rec(), a); },
       StatusCode::kValidation, "scratch range of 64 bytes < required 960 for 3 splits"},
  });
  auto bad_dtype = runtime::KvCache::create(dev(), {1, 2, 8, 16, DType::kBF16}, "kv");
  EXPECT_EQ(bad_dtype.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_dtype.status().message().find("dtype BF16 is not F16 or F32"), std::string::npos);
  auto empty = runtime::KvCache::create(dev(), {0, 2, 8, 16, DType::kF16}, "kv");
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty shape"), std::string::npos);
  auto huge = runtime::KvCache::create(dev(), {1, 64, 512, 1u << 16, DType::kF32}, "kv");
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(huge.status().message().find("bytes > binding limit"), std::string::npos) << huge.status().message();
}

TEST_F(OpsErrorsTest, NormActivationRopeAndSampleRules) {
  Buffer big = alloc(1 << 16);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_all({
      {"head_norm w", [&] { return runtime::record_head_norm(rec(), {big.range(), big.range().sub(0, 16), big.range(), 2, 4, 64, 1e-6f, 0.0f}, "q_norm"); },
       StatusCode::kValidation, "head_norm q_norm [tokens=2 heads=4 head_dim=64]: w range of 16 bytes < required 256"},
      {"head_norm empty", [&] { return runtime::record_head_norm(rec(), {big.range(), big.range(), big.range(), 0, 4, 64, 1e-6f, 0.0f}); },
       StatusCode::kInvalidArgument, "empty shape"},
      {"add_rms_norm eps", [&] { return runtime::record_add_rms_norm(rec(), {big.range().sub(0, 256), big.range().sub(256, 256), big.range().sub(512, 256), big.range().sub(1024, 256), 64, 1, -1.0f, 0.0f}); },
       StatusCode::kInvalidArgument, "eps -1.000000 < 0"},
      {"add_rms_norm res", [&] { return runtime::record_add_rms_norm(rec(), {big.range().sub(0, 256), big.range().sub(256, 16), big.range().sub(512, 256), big.range().sub(1024, 256), 64, 1, 1e-6f, 0.0f}); },
       StatusCode::kValidation, "res range of 16 bytes < required 256"},
      {"glu_split short", [&] { return runtime::record_glu_split(rec(), runtime::Activation::kSilu, big.range().sub(0, 256), big.range().sub(1024, 256), 64, 1); },
       StatusCode::kValidation, "gate_up range of 256 bytes < required 512"},
      {"glu_split n_ff 0", [&] { return runtime::record_glu_split(rec(), runtime::Activation::kSilu, big.range().sub(0, 256), big.range().sub(1024, 256), 0, 1); },
       StatusCode::kInvalidArgument, "n_ff is 0"},
      {"softcap n 0", [&] { return runtime::record_softcap(rec(), big.range(), big.range(), 0, 30.0f); },
       StatusCode::kInvalidArgument, "n is 0"},
      {"rope mscale", [&] { runtime::RopeArgs r; r.x = r.pos = r.y = big.range(); r.n_tokens = r.n_heads = 1; r.head_dim = 8;
                            r.mscale = nan; return runtime::record_rope(rec(), r, "q"); },
       StatusCode::kInvalidArgument, "mscale is not finite"},
      {"sample T", [&] { runtime::SampleArgs a; a.logits = big.range().sub(0, 4096); a.scratch = big.range().sub(4096, 256);
                         a.token = big.range().sub(8192, 256); a.n = 100; a.temperature = nan;
                         return runtime::record_sample(rec(), a); },
       StatusCode::kInvalidArgument, "temperature is not finite"},
      {"sample overlap", [&] { runtime::SampleArgs a; a.logits = big.range().sub(0, 4096); a.scratch = big.range().sub(4096, 256);
                               a.token = big.range().sub(4096, 256); a.n = 100; return runtime::record_sample(rec(), a); },
       StatusCode::kInvalidArgument, "scratch overlaps logits or token"},
      {"sample token", [&] { return runtime::record_argmax(rec(), big.range().sub(0, 4096), big.range().sub(4096, 256), big.range().sub(8192, 0), 100); },
       StatusCode::kValidation, "token range of 0 bytes < required 4"},
  });
}

}  // namespace
}  // namespace rdrr::kernels
