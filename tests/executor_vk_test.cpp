// The graph executor end to end on a real device (lavapipe in CI): the fixture models converted to packs
// (f32 with an F32 KV cache; q4_k_m column_wise and row_wise with the default F16 KV cache), run from
// their execution graph, against the HF float32 goldens: every prompt position's logits (KL divergence,
// top-1 agreement) and the greedy continuation (decode with GPU sampling). Plus the fail-closed paths:
// a tampered kernel digest, an unknown op, a missing weight, an unpinned kernel.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "rdrr/manifest_json.h"
#include "rdrr/test_temp_dir.h"
#include "runtime/executor.h"
#include "runtime/pack.h"
#include "runtime/vk_test_fixture.h"

namespace rdrr {
namespace {

namespace fs = std::filesystem;
using runtime::Executor;
using runtime::LogitsMode;
using runtime::Pack;

struct Variant {
  const char* model;
  convert::Preset preset;
  quant::Layout layout;
  quant::DType kv;
  const char* name;
  bool gguf = false;  // convert the fixture's llama.cpp Q4_K_M GGUF (row_wise: its blocks passed through)
};
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

// Scratch folder for the converted packs of this process, removed at exit (by the creating process only).
const fs::path& scratch_root() {
  static const test::TempDir root("executor_test");
  return root.path();
}

// The pack folder of a variant, converted once per process by the converter, which writes the
// execution graph (KV cache precision of the variant).
Result<fs::path> pack_for(const Variant& v) {
  static std::map<std::string, fs::path> done;
  if (auto it = done.find(v.name); it != done.end()) return it->second;
  const fs::path out = scratch_root() / v.name;
  convert::ConvertOptions o;
  o.src = v.gguf ? fs::path(RDRR_FIXTURES_DIR) / v.model / "gguf" / (std::string(v.model) + "-q4_k_m.gguf")
                 : fs::path(RDRR_FIXTURES_DIR) / v.model / "hf";
  o.out = out;
  o.preset = v.preset;
  o.q4k_layout = v.layout;
  o.kv_dtype = kv_dtype_of(v.kv).value();
  o.threads = 2;
  o.sync_to_disk = false;
  RDRR_RETURN_IF_ERROR(convert::convert_model(o).status());
  done[v.name] = out;
  return out;
}

struct Prompt {
  std::vector<uint32_t> ids;
  std::vector<float> logits;  // [n, vocab]
  std::vector<uint32_t> greedy;
  std::vector<double> margins;
};

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

// The HF float32 golden's prompts (logits, greedy continuation and margins).
std::vector<Prompt> golden_prompts(const std::string& model, uint64_t vocab) {
  const fs::path dir = fs::path(RDRR_FIXTURES_DIR) / model / "golden";
  const nlohmann::json j = read_json(dir / "hf-f32.json");
  std::vector<Prompt> out;
  for (const auto& p : j.at("prompts")) {
    Prompt pr;
    pr.ids = p.at("token_ids").get<std::vector<uint32_t>>();
    pr.greedy = p.at("greedy_token_ids").get<std::vector<uint32_t>>();
    pr.margins = p.at("greedy_top1_margin").get<std::vector<double>>();
    pr.logits.resize(pr.ids.size() * vocab);
    std::ifstream lf(dir / p.at("logits_file").get<std::string>(), std::ios::binary);
    lf.read(reinterpret_cast<char*>(pr.logits.data()), static_cast<std::streamsize>(pr.logits.size() * 4));
    EXPECT_TRUE(lf.good()) << "golden logits of " << model;
    out.push_back(std::move(pr));
  }
  return out;
}

// KL(P_ref || P_got) of one row (natural log, softmax in double).
double kld(std::span<const float> ref, std::span<const float> got) {
  auto log_softmax = [](std::span<const float> x) {
    const double mx = *std::max_element(x.begin(), x.end());
    double s = 0.0;
    for (float v : x) s += std::exp(double(v) - mx);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = double(x[i]) - mx - std::log(s);
    return out;
  };
  const std::vector<double> lp = log_softmax(ref), lq = log_softmax(got);
  double k = 0.0;
  for (size_t i = 0; i < lp.size(); ++i) k += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(0.0, k);
}

size_t argmax(std::span<const float> x) { return static_cast<size_t>(std::max_element(x.begin(), x.end()) - x.begin()); }

class ExecutorGoldenTest : public runtime::testing::VulkanTest, public ::testing::WithParamInterface<Variant> {};

TEST_P(ExecutorGoldenTest, LogitsAndGreedyTokensMatchTheHfGolden) {
  const Variant& v = GetParam();
  auto dir = pack_for(v);
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  auto pack = Pack::load(dev(), *dir);
  ASSERT_TRUE(pack.ok()) << pack.status().to_string();
  uint64_t shard_bytes = 0;
  for (const ShardInfo& s : (*pack)->manifest().shards) shard_bytes += s.size_bytes;
  EXPECT_LE((*pack)->tensor_bytes(), shard_bytes);
  EXPECT_LE((*pack)->device_bytes(), shard_bytes + 256 * (*pack)->tensor_count());
  auto exec = Executor::create(dev(), **pack, {});
  ASSERT_TRUE(exec.ok()) << exec.status().to_string();
  EXPECT_EQ((*exec)->kv_dtype(), v.kv);
  const uint64_t vocab = (*exec)->vocab_size();
  const std::vector<Prompt> prompts = golden_prompts(v.model, vocab);
  const nlohmann::json llamacpp_json =
      read_json(fs::path(RDRR_FIXTURES_DIR) / v.model / "golden" / "llamacpp-q4_k_m.json");
  std::vector<std::vector<uint32_t>> llamacpp_greedy;
  std::vector<std::vector<double>> llamacpp_margins;
  for (const auto& p : llamacpp_json.at("prompts")) {
    llamacpp_greedy.push_back(p.at("greedy_token_ids").get<std::vector<uint32_t>>());
    llamacpp_margins.push_back(p.at("greedy_top1_margin").get<std::vector<double>>());
  }
  const nlohmann::json& anchor = llamacpp_json.at("summary_vs_hf_f32");
  const double llamacpp_kld = anchor.at("kld_mean_all_positions").get<double>();
  const double llamacpp_top1 = anchor.at("top1_agreement_all_positions").get<double>();
  double kld_sum = 0.0, kld_max = 0.0;
  size_t rows = 0, top1 = 0, greedy_checked = 0, greedy_equal = 0;
  for (const Prompt& p : prompts) {
    (*exec)->reset();
    auto pre = (*exec)->prefill(p.ids, LogitsMode::kAll);
    ASSERT_TRUE(pre.ok()) << pre.status().to_string();
    ASSERT_EQ(pre->logits_rows, p.ids.size());
    for (size_t r = 0; r < p.ids.size(); ++r) {
      const std::span<const float> ref = std::span(p.logits).subspan(r * vocab, vocab);
      const std::span<const float> got = std::span(pre->logits).subspan(r * vocab, vocab);
      const double k = kld(ref, got);
      kld_sum += k;
      kld_max = std::max(kld_max, k);
      top1 += argmax(ref) == argmax(got);
      ++rows;
    }
    EXPECT_EQ(pre->next_token, argmax(std::span(pre->logits).subspan((p.ids.size() - 1) * vocab, vocab)));
    // Greedy continuation, compared up to the first fragile step (margin < 1e-3) of the golden: the HF
    // float32 one, or for a GGUF pack llama.cpp's own greedy run on the same blocks. Quantized packs from
    // HF weights are compared on the first prompt only (reported, not asserted: Q4_K_M diverges from f32).
    const bool llamacpp = v.gguf;
    if (v.preset != convert::Preset::kF32 && !llamacpp && &p != &prompts.front()) continue;
    const std::vector<uint32_t>& want = llamacpp ? llamacpp_greedy[&p - prompts.data()] : p.greedy;
    const std::vector<double>& margins = llamacpp ? llamacpp_margins[&p - prompts.data()] : p.margins;
    std::vector<uint32_t> got{pre->next_token};
    while (got.size() < want.size()) {
      auto t = (*exec)->decode();
      ASSERT_TRUE(t.ok()) << t.status().to_string();
      got.push_back(*t);
    }
    size_t same = 0;
    while (same < got.size() && got[same] == want[same]) ++same;
    size_t fragile = 0;
    while (fragile < margins.size() && margins[fragile] >= 1e-3) ++fragile;
    greedy_checked += std::min(fragile, want.size());
    greedy_equal += std::min(same, fragile);
    if (v.preset == convert::Preset::kF32) {
      EXPECT_GE(same, std::min(fragile, want.size())) << "greedy tokens diverge at step " << same;
    }
  }
  const double kld_mean = kld_sum / double(rows);
  const double top1_rate = double(top1) / double(rows);
  std::printf("  %s: %zu positions, KLD mean %.3e max %.3e, top-1 %.4f (llama.cpp Q4_K_M: KLD mean %.3e, top-1 "
              "%.4f), greedy %zu/%zu tokens equal to the %s golden before its first fragile step\n",
              v.name, rows, kld_mean, kld_max, top1_rate, llamacpp_kld, llamacpp_top1, greedy_equal, greedy_checked,
              v.gguf ? "llama.cpp" : "HF");
  if (v.preset == convert::Preset::kF32) {
    EXPECT_EQ(top1, rows);
    EXPECT_LT(kld_mean, 1e-6);
    EXPECT_LT(kld_max, 1e-5);
  } else {
    // In llama.cpp's class (golden/llamacpp-q4_k_m.json). Not closer: even on the GGUF's own blocks llama.cpp's
    // CPU backend quantizes activations to Q8_K for its Q4_K / Q6_K dot products where we keep f32, so its
    // greedy runs diverge from ours after a few steps (reported above, not asserted).
    EXPECT_LT(kld_mean, 1.5 * llamacpp_kld);
    EXPECT_GT(top1_rate, llamacpp_top1 - 0.05);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, ExecutorGoldenTest,
    ::testing::Values(
        Variant{"tiny-llama", convert::Preset::kF32, quant::Layout::kColumnWise, quant::DType::kF32, "llama_f32"},
        Variant{"tiny-qwen2", convert::Preset::kF32, quant::Layout::kColumnWise, quant::DType::kF32, "qwen2_f32"},
        Variant{"tiny-gemma3", convert::Preset::kF32, quant::Layout::kColumnWise, quant::DType::kF32, "gemma3_f32"},
        Variant{"tiny-llama", convert::Preset::kQ4_K_M, quant::Layout::kColumnWise, quant::DType::kF16, "llama_q4km_col"},
        Variant{"tiny-llama", convert::Preset::kQ4_K_M, quant::Layout::kRowWise, quant::DType::kF16, "llama_q4km_row"},
        Variant{"tiny-qwen2", convert::Preset::kQ4_K_M, quant::Layout::kColumnWise, quant::DType::kF16, "qwen2_q4km_col"},
        Variant{"tiny-qwen2", convert::Preset::kQ4_K_M, quant::Layout::kRowWise, quant::DType::kF16, "qwen2_q4km_row"},
        Variant{"tiny-gemma3", convert::Preset::kQ4_K_M, quant::Layout::kColumnWise, quant::DType::kF16, "gemma3_q4km_col"},
        Variant{"tiny-gemma3", convert::Preset::kQ4_K_M, quant::Layout::kRowWise, quant::DType::kF16, "gemma3_q4km_row"},
        Variant{"tiny-llama", convert::Preset::kQ4_K_M, quant::Layout::kRowWise, quant::DType::kF32, "llama_gguf_q4km", true},
        Variant{"tiny-gemma3", convert::Preset::kQ4_K_M, quant::Layout::kRowWise, quant::DType::kF32, "gemma3_gguf_q4km",
                true}),
    [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

class ExecutorFailClosedTest : public runtime::testing::VulkanTest {
 protected:
  const Variant kVariant{"tiny-qwen2", convert::Preset::kQ4_K_M, quant::Layout::kColumnWise, quant::DType::kF16,
                         "qwen2_q4km_col"};
  // Loads the variant's pack with `edit` applied to its manifest in memory, then creates an executor.
  template <typename Edit>
  Status create_with(Edit edit) {
    auto dir = pack_for(kVariant);
    if (!dir.ok()) return dir.status();
    auto m = read_manifest_file(*dir);
    if (!m.ok()) return m.status();
    edit(*m);
    runtime::PackLoadOptions o;
    o.manifest = *m;
    auto pack = Pack::load(dev(), *dir, o);
    if (!pack.ok()) return pack.status();
    return Executor::create(dev(), **pack, {}).status();
  }
};

TEST_F(ExecutorFailClosedTest, TamperedDigestNamesStepKernelDigestsAndTheFix) {
  std::string pinned;
  const Status s = create_with([&](Manifest& m) {
    KernelSpec& k = m.inference.execution->kernels.at("add_bias");
    pinned = k.digest;
    k.digest = "sha256:" + std::string(64, 'a');
  });
  ASSERT_EQ(s.code(), StatusCode::kIntegrity) << s.to_string();
  for (const std::string& frag : {std::string("add_bias"), std::string("q_bias"), "sha256:" + std::string(64, 'a'),
                                 pinned, std::string("rdrr-digests repin")}) {
    EXPECT_NE(s.message().find(frag), std::string::npos) << "missing '" << frag << "' in: " << s.message();
  }
}

TEST_F(ExecutorFailClosedTest, UnknownOpIsRejected) {
  const Status s = create_with([](Manifest& m) {
    for (LayerEntry& e : m.inference.execution->decode) {  // the first plain step
      if (auto* st = std::get_if<ExecStep>(&e); st != nullptr) {
        st->op = "frobnicate";
        break;
      }
    }
  });
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.to_string();
  EXPECT_NE(s.message().find("frobnicate"), std::string::npos) << s.message();
}

TEST_F(ExecutorFailClosedTest, MissingWeightIsRejected) {
  const Status s = create_with([](Manifest& m) {
    for (LayerEntry& e : m.inference.execution->prefill) {
      if (auto* st = std::get_if<ExecStep>(&e); st != nullptr && st->op == "o_proj") {
        st->weight_ref = "model.layers.{L}.self_attn.out_proj.weight";
      }
    }
  });
  EXPECT_EQ(s.code(), StatusCode::kValidation) << s.to_string();
  EXPECT_NE(s.message().find("model.layers.0.self_attn.out_proj.weight"), std::string::npos) << s.message();
}

TEST_F(ExecutorFailClosedTest, KernelMissingFromTheGraphIsRejected) {
  // gemv_reduce is a companion of gemv_q4_k_col_split: without it the graph does not pin every kernel the
  // runtime may dispatch.
  const Status s = create_with([](Manifest& m) { m.inference.execution->kernels.erase("gemv_reduce"); });
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gemv_reduce"), std::string::npos) << s.message();
}

TEST_F(ExecutorFailClosedTest, GenerateIsDeterministicAndSamplingIsSeeded) {
  auto dir = pack_for(kVariant);
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  auto pack = Pack::load(dev(), *dir);
  ASSERT_TRUE(pack.ok()) << pack.status().to_string();
  runtime::ExecutorOptions eo;
  eo.context_length = 64;
  eo.max_batch_tokens = 5;  // the 12-token prompt runs as 3 prefill submits
  eo.profile = true;
  auto exec = Executor::create(dev(), **pack, eo);
  ASSERT_TRUE(exec.ok()) << exec.status().to_string();
  const std::vector<uint32_t> prompt = golden_prompts(kVariant.model, (*exec)->vocab_size()).front().ids;
  auto a = (*exec)->generate(prompt, 8);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  auto b = (*exec)->generate(prompt, 8);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);
  const runtime::SampleOptions hot{1.0f, 40, 7};
  auto c = (*exec)->generate(prompt, 8, hot);
  auto d = (*exec)->generate(prompt, 8, hot);
  ASSERT_TRUE(c.ok() && d.ok());
  EXPECT_EQ(*c, *d);
  EXPECT_FALSE((*exec)->op_timings().empty());
  EXPECT_EQ((*exec)->position(), prompt.size() + 7);
  // Past the context length.
  std::vector<uint32_t> longp(65, 5);
  auto e = (*exec)->generate(longp, 1);
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
}

// tiny-qwen2 q4_k_m with an F16 KV cache in a row layout or column_wise.
Variant qwen2_q4km(quant::Layout layout) {
  return {"tiny-qwen2", convert::Preset::kQ4_K_M, layout, quant::DType::kF16,
          layout == quant::Layout::kColumnWise ? "qwen2_q4km_col" : "qwen2_q4km_row"};
}

// A column_wise decode step needs no more barriers than the row_wise one: q, k and v (and the other
// matmuls) take turns on the split-K scratch lanes (runtime/executor.cpp), so the lanes' writes do not order
// matmuls that read the same input; every lane's tickets are zeroed beside the first steps.
TEST_F(ExecutorFailClosedTest, ColumnDecodeHasTheRowWiseBarrierCount) {
  runtime::SubmitCounts counts[2];
  const quant::Layout layouts[2] = {quant::Layout::kRowWise, quant::Layout::kColumnWise};
  for (int i = 0; i < 2; ++i) {
    const Variant v = qwen2_q4km(layouts[i]);
    auto dir = pack_for(v);
    ASSERT_TRUE(dir.ok()) << dir.status().to_string();
    auto pack = Pack::load(dev(), *dir);
    ASSERT_TRUE(pack.ok()) << pack.status().to_string();
    runtime::ExecutorOptions eo;
    eo.context_length = 64;
    auto exec = Executor::create(dev(), **pack, eo);
    ASSERT_TRUE(exec.ok()) << exec.status().to_string();
    const std::vector<uint32_t> prompt = golden_prompts(v.model, (*exec)->vocab_size()).front().ids;
    ASSERT_TRUE((*exec)->generate(prompt, 3).ok());
    counts[i] = (*exec)->last_submit_counts();  // the last decode step
    EXPECT_GT(counts[i].dispatches, 0u) << v.name;
  }
  EXPECT_GT(counts[1].dispatches, counts[0].dispatches) << "column_wise zeroes its lanes' tickets";
  EXPECT_EQ(counts[1].barriers, counts[0].barriers);
}

// Short prompts run each prefill GEMM matmul as one GEMV dispatch per row, with the kernel the decode phase
// pins for the same weight (ExecutorOptions::gemv_prefill_rows): the same logits as the pinned GEMM within
// f32 rounding, more dispatches for the matmuls; a prompt of more rows runs the GEMM.
TEST_F(ExecutorFailClosedTest, ShortPrefillRunsTheDecodeGemvPerRow) {
  for (const quant::Layout layout : {quant::Layout::kRowWise, quant::Layout::kColumnWise}) {
    const Variant v = qwen2_q4km(layout);
    auto dir = pack_for(v);
    ASSERT_TRUE(dir.ok()) << dir.status().to_string();
    auto pack = Pack::load(dev(), *dir);
    ASSERT_TRUE(pack.ok()) << pack.status().to_string();
    const uint32_t rows = runtime::kDefaultGemvPrefillRows;
    ASSERT_GE(rows, 2u);
    std::vector<uint32_t> prompt = golden_prompts(v.model, 0).front().ids;  // ids only
    ASSERT_GT(prompt.size(), rows) << v.name;
    struct Run {
      std::vector<float> logits;
      uint32_t next = 0;
      runtime::SubmitCounts counts;
    };
    auto run = [&](uint32_t gemv_rows, size_t n_tokens) -> Run {
      runtime::ExecutorOptions eo;
      eo.context_length = 64;
      eo.gemv_prefill_rows = gemv_rows;
      eo.cooperative_matrix = false;  // the f32 GEMM: the comparison below is at f32 rounding
      auto exec = Executor::create(dev(), **pack, eo);
      EXPECT_TRUE(exec.ok()) << exec.status().to_string();
      if (!exec.ok()) return {};
      auto pre = (*exec)->prefill(std::span(prompt).first(n_tokens), LogitsMode::kAll);
      EXPECT_TRUE(pre.ok()) << pre.status().to_string();
      if (!pre.ok()) return {};
      return {pre->logits, pre->next_token, (*exec)->last_submit_counts()};
    };
    const Run gemm = run(0, rows), gemv = run(rows, rows);
    ASSERT_EQ(gemm.logits.size(), gemv.logits.size()) << v.name;
    double err = 0, ref = 0;
    for (size_t i = 0; i < gemm.logits.size(); ++i) {
      err += (double(gemv.logits[i]) - gemm.logits[i]) * (double(gemv.logits[i]) - gemm.logits[i]);
      ref += double(gemm.logits[i]) * gemm.logits[i];
    }
    EXPECT_LT(err / ref, 1e-8) << v.name;
    EXPECT_EQ(gemv.next, gemm.next) << v.name;
    EXPECT_GT(gemv.counts.dispatches, gemm.counts.dispatches) << v.name << ": one GEMV dispatch per row";
    // One row more than the limit: the GEMM, as with the option off.
    const Run longer = run(rows, rows + 1), longer_gemm = run(0, rows + 1);
    EXPECT_EQ(longer.counts.dispatches, longer_gemm.counts.dispatches) << v.name;
    EXPECT_EQ(longer.logits, longer_gemm.logits) << v.name;
  }
}

// Prompts of more than 32 tokens run the pinned cooperative-matrix GEMMs where the device has them (f16
// products): logits within f16 rounding of the f32 GEMM and the same greedy next token. Without the device
// support (lavapipe) the option changes nothing: identical logits.
TEST_F(ExecutorFailClosedTest, CoopmatPrefillMatchesTheF32Gemm) {
  const Variant v = qwen2_q4km(quant::Layout::kRowWise);
  auto dir = pack_for(v);
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  auto pack = Pack::load(dev(), *dir);
  ASSERT_TRUE(pack.ok()) << pack.status().to_string();
  const std::vector<uint32_t> ids = golden_prompts(v.model, 0).front().ids;
  ASSERT_FALSE(ids.empty());
  std::vector<uint32_t> prompt;
  while (prompt.size() < 40) prompt.push_back(ids[prompt.size() % ids.size()]);
  auto run = [&](bool coopmat) -> std::pair<std::vector<float>, uint32_t> {
    runtime::ExecutorOptions eo;
    eo.context_length = 64;
    eo.cooperative_matrix = coopmat;
    auto exec = Executor::create(dev(), **pack, eo);
    EXPECT_TRUE(exec.ok()) << exec.status().to_string();
    if (!exec.ok()) return {};
    auto pre = (*exec)->prefill(prompt, LogitsMode::kAll);
    EXPECT_TRUE(pre.ok()) << pre.status().to_string();
    if (!pre.ok()) return {};
    return {pre->logits, pre->next_token};
  };
  const auto [cm_logits, cm_next] = run(true);
  const auto [f32_logits, f32_next] = run(false);
  ASSERT_EQ(cm_logits.size(), f32_logits.size());
  ASSERT_FALSE(cm_logits.empty());
  if (!dev().caps().coopmat_f16_16x16) {
    EXPECT_EQ(cm_logits, f32_logits) << "no cooperative matrices: the option must change nothing";
    return;
  }
  double err = 0, ref = 0;
  for (size_t i = 0; i < cm_logits.size(); ++i) {
    err += (double(cm_logits[i]) - f32_logits[i]) * (double(cm_logits[i]) - f32_logits[i]);
    ref += double(f32_logits[i]) * f32_logits[i];
  }
  std::printf("  coopmat vs f32 prefill logits NMSE %.3e\n", err / ref);
  EXPECT_GT(err, 0.0) << "the cooperative-matrix kernels did not run";
  EXPECT_LT(err / ref, 1e-5);
  EXPECT_EQ(cm_next, f32_next);
}

// decode() submits the next step before waiting for its own (run ahead on the GPU's sampled token). A call
// with other options drops that step and runs it again: greedy tokens with a seed that changes every call
// (greedy ignores it, the run-ahead check does not) match the uninterrupted run, up to the context end; a
// sampled run matches itself after a prefill that dropped a step in flight.
TEST_F(ExecutorFailClosedTest, RunAheadStepsAreDroppedCleanly) {
  auto dir = pack_for(kVariant);
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  auto pack = Pack::load(dev(), *dir);
  ASSERT_TRUE(pack.ok()) << pack.status().to_string();
  runtime::ExecutorOptions eo;
  eo.context_length = 24;
  auto exec = Executor::create(dev(), **pack, eo);
  ASSERT_TRUE(exec.ok()) << exec.status().to_string();
  Executor& ex = **exec;
  const std::vector<uint32_t> prompt = golden_prompts(kVariant.model, ex.vocab_size()).front().ids;
  ASSERT_LT(prompt.size(), 20u);
  auto run = [&](bool alternate) -> std::vector<uint32_t> {
    ex.reset();
    auto first = ex.prefill(prompt);
    EXPECT_TRUE(first.ok()) << first.status().to_string();
    std::vector<uint32_t> out{first.ok() ? first->next_token : 0u};
    for (uint64_t i = 0; ex.position() < ex.context_length(); ++i) {
      runtime::SampleOptions greedy;
      greedy.seed = alternate ? i : 0;
      auto t = ex.decode(greedy);
      EXPECT_TRUE(t.ok()) << t.status().to_string();
      if (!t.ok()) break;
      out.push_back(*t);
    }
    return out;
  };
  const std::vector<uint32_t> straight = run(false);
  EXPECT_EQ(straight.size(), 24 - prompt.size() + 1);
  EXPECT_EQ(ex.position(), 24u);
  EXPECT_EQ(run(true), straight);
  auto past = ex.decode();
  EXPECT_EQ(past.status().code(), StatusCode::kInvalidArgument);
  // A sampled run, stopped after 2 tokens (a step left in flight), then the same run in full.
  const runtime::SampleOptions hot{1.0f, 40, 11};
  auto full = ex.generate(prompt, 5, hot);
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  auto part = ex.generate(prompt, 2, hot);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(ex.position(), prompt.size() + 1);
  auto again = ex.generate(prompt, 5, hot);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *full);
  EXPECT_EQ(std::vector<uint32_t>(full->begin(), full->begin() + 2), *part);
}

// rdrr-bench: one row per test and depth, mean / sd over the repetitions of wall and GPU tokens per second, in
// llama-bench's JSON fields and as a markdown table; usage and missing-pack errors with their exit codes.
TEST_F(ExecutorFailClosedTest, RdrrBenchReportsEveryTestAndDepth) {
  auto dir = pack_for(kVariant);
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  const fs::path out = scratch_root() / "bench.json";
  const std::string bench = std::string(RDRR_BENCH_BIN) + " -m " + dir->string() + " -p 8 -n 4 -d 0,4 -r 2";
  ASSERT_EQ(std::system((bench + " -o json > " + out.string() + " 2>/dev/null").c_str()), 0);
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j.size(), 4u);
  const char* names[] = {"pp8", "tg4", "pp8 @ d4", "tg4 @ d4"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(j[i].at("test"), names[i]);
    EXPECT_EQ(j[i].at("samples_ts").size(), 2u);
    EXPECT_GT(j[i].at("avg_ts").get<double>(), 0.0);
    EXPECT_GE(j[i].at("stddev_ts").get<double>(), 0.0);
    EXPECT_GT(j[i].at("gpu_avg_ts").get<double>(), 0.0) << "timestamps: one pair per submission";
    EXPECT_GT(j[i].at("model_n_params").get<uint64_t>(), 0u);
  }
  EXPECT_EQ(j[1].at("n_gen"), 4);
  EXPECT_EQ(j[2].at("n_depth"), 4);
  const fs::path md = scratch_root() / "bench.md";
  ASSERT_EQ(std::system((bench + " > " + md.string() + " 2>/dev/null").c_str()), 0);
  std::ifstream mdin(md);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(mdin, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "| model | size | params | backend | test | t/s | GPU t/s |");
  EXPECT_NE(lines[5].find("| tg4 @ d4 | "), std::string::npos) << lines[5];
  EXPECT_EQ(WEXITSTATUS(std::system((std::string(RDRR_BENCH_BIN) + " -m " + dir->string() + " -p x 2>/dev/null").c_str())), 2);
  EXPECT_EQ(WEXITSTATUS(std::system((std::string(RDRR_BENCH_BIN) + " -m /no/such/pack 2>/dev/null").c_str())), 4);
}

// rdrr-run end to end: generated ids on stdout, --logits file, exit code of a pack with a stale pin.
TEST_F(ExecutorFailClosedTest, RdrrRunPrintsTokensWritesLogitsAndFailsClosed) {
  auto dir = pack_for(kVariant);
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  auto pack = Pack::load(dev(), *dir);
  ASSERT_TRUE(pack.ok());
  auto exec = Executor::create(dev(), **pack, {});
  ASSERT_TRUE(exec.ok());
  const std::vector<uint32_t> prompt = golden_prompts(kVariant.model, (*exec)->vocab_size()).front().ids;
  auto want = (*exec)->generate(prompt, 6);
  ASSERT_TRUE(want.ok());
  (*exec)->reset();
  auto pre = (*exec)->prefill(prompt, LogitsMode::kAll);
  ASSERT_TRUE(pre.ok());
  std::string ids, want_line;
  for (uint32_t t : prompt) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  for (uint32_t t : *want) want_line += (want_line.empty() ? "" : " ") + std::to_string(t);
  const fs::path logits = scratch_root() / "run_logits.f32";
  const fs::path out = scratch_root() / "run_stdout.txt";
  const std::string cmd = std::string(RDRR_RUN_BIN) + " " + dir->string() + " --tokens " + ids + " -n 6 --logits " +
                          logits.string() + " --profile > " + out.string() + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream o(out);
  std::string first_line;
  std::getline(o, first_line);
  EXPECT_EQ(first_line, want_line);
  ASSERT_EQ(fs::file_size(logits), pre->logits.size() * 4);
  std::vector<float> got(pre->logits.size());
  std::ifstream lf(logits, std::ios::binary);
  lf.read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(got.size() * 4));
  EXPECT_EQ(got, pre->logits);
  // A stale pin: exit code 8 (integrity), the fix named on stderr.
  const fs::path stale = scratch_root() / "stale_pack";
  fs::remove_all(stale);
  fs::copy(*dir, stale, fs::copy_options::recursive);
  auto m = read_manifest_file(stale);
  ASSERT_TRUE(m.ok());
  m->inference.execution->kernels.at("rms_norm").digest = "sha256:" + std::string(64, 'b');
  std::ofstream(stale / "manifest.json", std::ios::binary | std::ios::trunc) << serialize_manifest(*m);
  const std::string bad = std::string(RDRR_RUN_BIN) + " " + stale.string() + " --tokens 1,2 -n 1 > " + out.string() +
                          " 2>&1";
  const int rc = std::system(bad.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 8);
  std::ifstream e(out);
  const std::string err((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("rdrr-digests repin"), std::string::npos) << err;
}

}  // namespace
}  // namespace rdrr
