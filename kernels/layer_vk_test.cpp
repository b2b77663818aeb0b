// A tiny random model forward on the GPU, recorded into ONE command buffer, vs a double-precision CPU
// reference: embedding gather -> for each of T decode steps: rms_norm -> q / k / v gemv -> [q/k head norm]
// -> rope -> kv append -> attention -> o_proj gemv -> residual add fused with rms_norm -> fused gate_up gemv
// -> split glu -> down gemv -> residual add; then final rms_norm -> lm_head gemv per token -> [softcap] ->
// argmax of the last token. Weights mix every packed dtype / layout the GEMV kernels take. Two variants:
// Llama-like (SiLU, neox RoPE, plain norms) and Gemma-3-like (embedding scale, (1 + w) norms, q/k norm,
// GELU-tanh, interleaved RoPE, sliding window, final logit soft-capping). Activation buffers are reused
// across steps, so the recorder's hazard tracking is exercised too.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kernel_test_ref.h"
#include "quant/f16.h"
#include "runtime/kv_cache.h"
#include "runtime/ops.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr::kernels {
namespace {

using quant::DType;
using quant::Layout;
using runtime::Buffer;
using runtime::BufferRange;
using runtime::testing::VulkanTest;
using Vec = std::vector<double>;

// ~100 chained f32 ops whose errors the norms keep relative; the F16 KV cache rounds GPU K/V (computed in
// f32) where the reference rounds its double K/V, so a few halves may differ by one ulp (~5e-4 relative).
// Measured NMSE ~1e-10 on lavapipe; a wrong op, index or barrier gives >= ~1e-3.
constexpr double kLayerNmse = 1e-7;

struct Variant {
  const char* name;
  bool gemma;
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

constexpr uint32_t kHidden = 128, kHeads = 4, kKvHeads = 2, kHeadDim = 32, kFf = 192, kVocab = 128, kSteps = 5;
constexpr float kEps = 1e-6f;

Vec ref_gemv(const testing::PackedWeight& w, const Vec& x, uint32_t n, uint32_t k) {
  Vec y(n, 0.0);
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t c = 0; c < k; ++c) y[r] += w.w[uint64_t{r} * k + c] * x[c];
  }
  return y;
}

Vec ref_norm(const Vec& x, const std::vector<float>& w, uint32_t d, float offset) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    double ss = 0.0;
    for (uint32_t i = 0; i < d; ++i) ss += x[r * d + i] * x[r * d + i];
    const double s = 1.0 / std::sqrt(ss / d + kEps);
    for (uint32_t i = 0; i < d; ++i) y[r * d + i] = x[r * d + i] * s * (double(w[i]) + offset);
  }
  return y;
}

void ref_rope(Vec& x, uint32_t heads, uint32_t pos, bool interleaved) {
  for (uint32_t h = 0; h < heads; ++h) {
    for (uint32_t i = 0; i < kHeadDim / 2; ++i) {
      const double theta = pos * std::pow(10000.0, -2.0 * i / kHeadDim);
      const uint32_t d0 = h * kHeadDim + (interleaved ? 2 * i : i);
      const uint32_t d1 = h * kHeadDim + (interleaved ? 2 * i + 1 : i + kHeadDim / 2);
      const double a = x[d0], b = x[d1];
      x[d0] = a * std::cos(theta) - b * std::sin(theta);
      x[d1] = a * std::sin(theta) + b * std::cos(theta);
    }
  }
}

double act(double g, bool gelu) {
  return gelu ? 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) : g / (1.0 + std::exp(-g));
}

struct Weights {
  std::vector<uint32_t> tokens;
  testing::PackedWeight embed, wq, wk, wv, wo, gate_up, down, lm_head;
  std::vector<float> attn_norm, ffn_norm, out_norm, q_norm, k_norm;
};

Weights make_weights(bool gemma) {
  std::mt19937 rng(gemma ? 77 : 66);
  Weights w;
  for (uint32_t t = 0; t < kSteps; ++t) w.tokens.push_back(static_cast<uint32_t>(rng() % 200));
  w.embed = testing::random_weight(rng, DType::kQ8_0, Layout::kRowWise, 200, kHidden);
  w.wq = testing::random_weight(rng, DType::kF16, Layout::kRowWise, kHeads * kHeadDim, kHidden);
  w.wk = testing::random_weight(rng, DType::kQ8_0, Layout::kRowWise, kKvHeads * kHeadDim, kHidden);
  w.wv = testing::random_weight(rng, DType::kQ6_K, Layout::kRowWise, kKvHeads * kHeadDim, kHidden);
  w.wo = testing::random_weight(rng, DType::kQ4_K, Layout::kRowWise, kHidden, kHeads * kHeadDim);
  w.gate_up = testing::random_weight(rng, DType::kQ8_0, Layout::kFlat, 2 * kFf, kHidden);
  w.down = testing::random_weight(rng, DType::kQ4_K, Layout::kColumnWise, kHidden, kFf);
  w.lm_head = testing::random_weight(rng, DType::kF32, Layout::kRowWise, kVocab, kHidden);
  // Small norm gains keep the attention logits and activations in a realistic range.
  const float lo = gemma ? -0.97f : 0.02f, hi = gemma ? -0.93f : 0.06f;  // gemma: (1 + w) ~ 0.05
  w.attn_norm = runtime::testing::random_f32(rng, kHidden, lo, hi);
  w.ffn_norm = runtime::testing::random_f32(rng, kHidden, lo, hi);
  w.out_norm = runtime::testing::random_f32(rng, kHidden, gemma ? -0.5f : 0.5f, gemma ? 0.5f : 1.5f);
  w.q_norm = runtime::testing::random_f32(rng, kHeadDim, -0.5f, 0.5f);
  w.k_norm = runtime::testing::random_f32(rng, kHeadDim, -0.5f, 0.5f);
  return w;
}

struct Reference {
  Vec logits;  // [kSteps, kVocab]
};

Reference reference_forward(const Weights& w, bool gemma) {
  const float off = gemma ? 1.0f : 0.0f;
  const uint32_t window = gemma ? 3 : 0;
  const double scale = gemma ? std::sqrt(double(kHidden)) : 1.0;
  std::vector<Vec> x(kSteps, Vec(kHidden));
  for (uint32_t t = 0; t < kSteps; ++t) {
    for (uint32_t i = 0; i < kHidden; ++i) {
      x[t][i] = w.embed.w[uint64_t{w.tokens[t]} * kHidden + i] * double(static_cast<float>(scale));
    }
  }
  std::vector<Vec> kc, vc;  // per position [kv_heads * head_dim], as stored (f16)
  for (uint32_t t = 0; t < kSteps; ++t) {
    const Vec h = ref_norm(x[t], w.attn_norm, kHidden, off);
    Vec q = ref_gemv(w.wq, h, kHeads * kHeadDim, kHidden);
    Vec k = ref_gemv(w.wk, h, kKvHeads * kHeadDim, kHidden);
    Vec v = ref_gemv(w.wv, h, kKvHeads * kHeadDim, kHidden);
    if (gemma) {
      q = ref_norm(q, w.q_norm, kHeadDim, 1.0f);
      k = ref_norm(k, w.k_norm, kHeadDim, 1.0f);
    }
    ref_rope(q, kHeads, t, gemma);
    ref_rope(k, kKvHeads, t, gemma);
    for (double& e : k) e = quant::f16_to_f32(quant::f32_to_f16(static_cast<float>(e)));
    for (double& e : v) e = quant::f16_to_f32(quant::f32_to_f16(static_cast<float>(e)));
    kc.push_back(k);
    vc.push_back(v);
    Vec attn(kHeads * kHeadDim, 0.0);
    const uint32_t lo = (window != 0 && t + 1 > window) ? t + 1 - window : 0;
    for (uint32_t hq = 0; hq < kHeads; ++hq) {
      const uint32_t kvh = hq / (kHeads / kKvHeads);
      Vec s;
      for (uint32_t j = lo; j <= t; ++j) {
        double d = 0.0;
        for (uint32_t i = 0; i < kHeadDim; ++i) d += q[hq * kHeadDim + i] * kc[j][kvh * kHeadDim + i];
        s.push_back(d / std::sqrt(double(kHeadDim)));
      }
      const double m = *std::max_element(s.begin(), s.end());
      double l = 0.0;
      for (double& e : s) l += (e = std::exp(e - m));
      for (uint32_t j = lo; j <= t; ++j) {
        for (uint32_t i = 0; i < kHeadDim; ++i) attn[hq * kHeadDim + i] += s[j - lo] / l * vc[j][kvh * kHeadDim + i];
      }
    }
    const Vec o = ref_gemv(w.wo, attn, kHidden, kHeads * kHeadDim);
    for (uint32_t i = 0; i < kHidden; ++i) x[t][i] += o[i];
    const Vec h2 = ref_norm(x[t], w.ffn_norm, kHidden, off);
    const Vec gu = ref_gemv(w.gate_up, h2, 2 * kFf, kHidden);
    Vec a(kFf);
    for (uint32_t i = 0; i < kFf; ++i) a[i] = act(gu[i], gemma) * gu[kFf + i];
    const Vec d = ref_gemv(w.down, a, kHidden, kFf);
    for (uint32_t i = 0; i < kHidden; ++i) x[t][i] += d[i];
  }
  Reference r;
  for (uint32_t t = 0; t < kSteps; ++t) {
    Vec lg = ref_gemv(w.lm_head, ref_norm(x[t], w.out_norm, kHidden, off), kVocab, kHidden);
    if (gemma) {
      for (double& e : lg) e = 30.0 * std::tanh(e / 30.0);
    }
    r.logits.insert(r.logits.end(), lg.begin(), lg.end());
  }
  return r;
}

class LayerTest : public VulkanTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Buffer up(const testing::PackedWeight& w, const char* name) { return upload_bytes(w.bytes, name); }
};

TEST_P(LayerTest, OneCommandBufferMatchesDoubleReference) {
  const bool gemma = GetParam().gemma;
  const Weights w = make_weights(gemma);
  const float off = gemma ? 1.0f : 0.0f;
  Buffer tok = upload(w.tokens, "tokens");
  Buffer embed = up(w.embed, "embed"), wq = up(w.wq, "wq"), wk = up(w.wk, "wk"), wv = up(w.wv, "wv");
  Buffer wo = up(w.wo, "wo"), gate_up = up(w.gate_up, "gate_up"), down = up(w.down, "down");
  Buffer lm_head = up(w.lm_head, "lm_head");
  Buffer attn_norm = upload(w.attn_norm), ffn_norm = upload(w.ffn_norm), out_norm = upload(w.out_norm);
  Buffer q_norm = upload(w.q_norm), k_norm = upload(w.k_norm);
  // Activations: the residual stream and logits hold every step; the rest is reused by each step.
  Buffer x = alloc(kSteps * kHidden * 4, "x"), xn = alloc(kSteps * kHidden * 4, "x_norm");
  Buffer h = alloc(kHidden * 4, "h"), q = alloc(kHeads * kHeadDim * 4, "q"), k = alloc(kKvHeads * kHeadDim * 4, "k");
  Buffer v = alloc(kKvHeads * kHeadDim * 4, "v"), attn = alloc(kHeads * kHeadDim * 4, "attn"), o = alloc(kHidden * 4);
  Buffer gu = alloc(2 * kFf * 4, "gu"), a = alloc(kFf * 4, "act"), d = alloc(kHidden * 4, "down_out");
  Buffer logits = poisoned_f32(kSteps * kVocab, "logits");
  Buffer scratch = alloc(runtime::attention_scratch_bytes(1, kHeads, kHeadDim, 8), "attn_scratch");
  Buffer sample_scratch = alloc(runtime::sample_scratch_bytes(kVocab), "sample_scratch");
  Buffer token = alloc(4, "token");
  std::vector<int32_t> pos(kSteps * 64, 0);
  for (uint32_t t = 0; t < kSteps; ++t) pos[t * 64] = static_cast<int32_t>(t);  // 256-byte slots
  Buffer pos_b = upload(pos, "pos");
  auto cache = runtime::KvCache::create(dev(), {1, kKvHeads, kHeadDim, 16, DType::kF16}, "kv");
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();

  auto ok = [](const Status& s) { ASSERT_TRUE(s.ok()) << s.to_string(); };
  auto gemv = [&](const Buffer& wb, const testing::PackedWeight& pw, DType dt, Layout l, uint32_t n, uint32_t kk,
                  BufferRange in, BufferRange out, const char* label) {
    runtime::GemvArgs g;
    g.w = wb.range().sub(0, pw.bytes.size());
    g.dtype = dt;
    g.layout = l;
    g.n_rows = n;
    g.k = kk;
    g.x = in;
    g.y = out;
    ok(runtime::record_gemv(rec(), g, label));
  };
  runtime::EmbedArgs e;
  e.table = embed.range();
  e.dtype = DType::kQ8_0;
  e.vocab = 200;
  e.dim = kHidden;
  e.ids = tok.range();
  e.out = x.range();
  e.n_tokens = kSteps;
  e.scale = gemma ? std::sqrt(float(kHidden)) : 1.0f;
  ok(runtime::record_embed(rec(), e));
  for (uint32_t t = 0; t < kSteps; ++t) {
    const BufferRange xt = x.range().sub(t * kHidden * 4, kHidden * 4);
    ok(runtime::record_rms_norm(rec(), {xt, attn_norm.range(), h.range(), kHidden, 1, kEps, off}, "attn_norm"));
    gemv(wq, w.wq, DType::kF16, Layout::kRowWise, kHeads * kHeadDim, kHidden, h.range(), q.range(), "wq");
    gemv(wk, w.wk, DType::kQ8_0, Layout::kRowWise, kKvHeads * kHeadDim, kHidden, h.range(), k.range(), "wk");
    gemv(wv, w.wv, DType::kQ6_K, Layout::kRowWise, kKvHeads * kHeadDim, kHidden, h.range(), v.range(), "wv");
    if (gemma) {
      ok(runtime::record_head_norm(rec(), {q.range(), q_norm.range(), q.range(), 1, kHeads, kHeadDim, kEps, 1.0f}, "q_norm"));
      ok(runtime::record_head_norm(rec(), {k.range(), k_norm.range(), k.range(), 1, kKvHeads, kHeadDim, kEps, 1.0f}, "k_norm"));
    }
    for (auto [buf, heads] : {std::pair<const Buffer*, uint32_t>{&q, kHeads}, {&k, kKvHeads}}) {
      runtime::RopeArgs r;
      r.x = buf->range();
      r.pos = pos_b.range().sub(t * 256, 4);
      r.y = buf->range();
      r.n_tokens = 1;
      r.n_heads = heads;
      r.head_dim = kHeadDim;
      r.mode = gemma ? runtime::RopeMode::kInterleaved : runtime::RopeMode::kNeox;
      ok(runtime::record_rope(rec(), r, "rope"));
    }
    ok(runtime::record_kv_append(rec(), {cache->layer(0), k.range(), v.range(), 1, t, std::nullopt}));
    runtime::AttentionArgs at;
    at.q = q.range();
    at.kv = cache->layer(0);
    at.out = attn.range();
    at.scratch = scratch.range();
    at.n_q = 1;
    at.n_heads = kHeads;
    at.p0 = t;
    at.scale = 1.0f / std::sqrt(float(kHeadDim));
    at.window = gemma ? 3 : 0;
    ok(runtime::record_attention(rec(), at));
    gemv(wo, w.wo, DType::kQ4_K, Layout::kRowWise, kHidden, kHeads * kHeadDim, attn.range(), o.range(), "wo");
    ok(runtime::record_add_rms_norm(rec(), {xt, o.range(), ffn_norm.range(), h.range(), kHidden, 1, kEps, off}));
    gemv(gate_up, w.gate_up, DType::kQ8_0, Layout::kFlat, 2 * kFf, kHidden, h.range(), gu.range(), "gate_up");
    ok(runtime::record_glu_split(rec(), gemma ? runtime::Activation::kGeluTanh : runtime::Activation::kSilu, gu.range(),
                                 a.range(), kFf, 1));
    gemv(down, w.down, DType::kQ4_K, Layout::kColumnWise, kHidden, kFf, a.range(), d.range(), "down");
    ok(runtime::record_add(rec(), xt, d.range(), xt, kHidden, "residual"));
  }
  ok(runtime::record_rms_norm(rec(), {x.range(), out_norm.range(), xn.range(), kHidden, kSteps, kEps, off}, "out_norm"));
  for (uint32_t t = 0; t < kSteps; ++t) {
    gemv(lm_head, w.lm_head, DType::kF32, Layout::kRowWise, kVocab, kHidden, xn.range().sub(t * kHidden * 4, kHidden * 4),
         logits.range().sub(t * kVocab * 4, kVocab * 4), "lm_head");
  }
  if (gemma) ok(runtime::record_softcap(rec(), logits.range(), logits.range(), kSteps * kVocab, 30.0f, "final_softcap"));
  const BufferRange last = logits.range().sub((kSteps - 1) * kVocab * 4, kVocab * 4);
  ok(runtime::record_argmax(rec(), last, sample_scratch.range(), token.range(), kVocab));
  auto submitted = rec().submit_and_wait();
  ASSERT_TRUE(submitted.ok()) << submitted.status().to_string();

  const Reference ref = reference_forward(w, gemma);
  const std::vector<float> got = download_f32(logits.range());
  EXPECT_EQ(runtime::testing::count_non_finite(got), 0u);
  const double err = runtime::testing::nmse(got, ref.logits);
  double rms = 0.0;
  for (double l : ref.logits) rms += l * l / static_cast<double>(ref.logits.size());
  std::printf("  logits NMSE %.3e (rms %.3g) over %u dispatches, %u barriers, one command buffer\n", err,
              std::sqrt(rms), submitted->dispatches, submitted->barriers);
  EXPECT_LT(err, kLayerNmse);
  std::vector<uint32_t> tok_out(1);
  ASSERT_TRUE(dev().download(token.range(), std::as_writable_bytes(std::span(tok_out))).ok());
  const auto last_ref = std::span(ref.logits).subspan((kSteps - 1) * kVocab, kVocab);
  const auto best = std::max_element(last_ref.begin(), last_ref.end());
  EXPECT_EQ(tok_out[0], static_cast<uint32_t>(best - last_ref.begin()));
}

INSTANTIATE_TEST_SUITE_P(Variants, LayerTest, ::testing::Values(Variant{"llama", false}, Variant{"gemma3", true}),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace rdrr::kernels
