// The streaming reference engine against the double-precision oracle (ReferenceModel) on every fixture: logits
// within f32 rounding, the same top-1 except near-ties, the same greedy continuations (batched, KV-cached) up to
// the first near-tie; packs in every Q4_K layout read in chunks as small as their row alignment allows; the same
// bits at 1 and 2 threads; requests it must refuse.
#include "verify/stream_reference.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "rdrr/test_temp_dir.h"
#include "verify/reference_model.h"
#include "verify/reference_weights.h"
#include "verify/splitmix.h"

namespace rdrr::verify {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = RDRR_FIXTURES_DIR;

// Tolerance. The engine rounds the activations to f32 before each matmul and sums in f32: per dot product a
// relative error of about sqrt(K) * 2^-24 ~ 2e-6 at K = 512 (the fixtures' widest input), ~4e-12 in squared
// terms; through two to four layers and the head it grows by well under 100x, so logits NMSE <= 1e-9.
constexpr double kMaxNmse = 1e-9;
// Top-1 may differ only where the double reference's top-1 margin is below this (logit units).
constexpr double kNearTie = 1e-3;

std::vector<std::vector<int32_t>> prompts(size_t vocab) {
  std::vector<std::vector<int32_t>> out;
  uint64_t state = 0x5eed;
  for (size_t len : {1u, 7u, 16u, 23u}) {  // different lengths in one batch
    std::vector<int32_t> p;
    for (size_t t = 0; t < len; ++t) p.push_back(static_cast<int32_t>(splitmix64(state) % vocab));
    out.push_back(std::move(p));
  }
  return out;
}

struct Compared {
  double nmse = 0;
  size_t top1_diff_hard = 0;  // differing top-1 where the margin is clear
};

Compared compare(const std::vector<float>& want, const std::vector<float>& got, size_t vocab) {
  EXPECT_EQ(want.size(), got.size());
  Compared c;
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    err += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    ref += static_cast<double>(want[i]) * want[i];
  }
  c.nmse = err / ref;
  for (size_t r = 0; r * vocab < want.size(); ++r) {
    const float* w = want.data() + r * vocab;
    const float* g = got.data() + r * vocab;
    size_t wb = 0, gb = 0;
    for (size_t i = 1; i < vocab; ++i) {
      if (w[i] > w[wb]) wb = i;
      if (g[i] > g[gb]) gb = i;
    }
    double second = -INFINITY;
    for (size_t i = 0; i < vocab; ++i) {
      if (i != wb) second = std::max(second, static_cast<double>(w[i]));
    }
    if (wb != gb && w[wb] - second >= kNearTie) ++c.top1_diff_hard;
  }
  return c;
}

// Every prompt's logits and an 8-step greedy continuation, all prompts in one job, vs the double reference.
void expect_matches(const ReferenceModel& oracle, const StreamingReference& engine, const std::string& what) {
  const auto ps = prompts(oracle.vocab_size());
  std::vector<StreamRequest> reqs;
  for (const auto& p : ps) {
    StreamRequest r{.tokens = p, .positions = {}, .greedy_steps = 8};
    for (uint32_t i = 0; i < p.size(); ++i) r.positions.push_back(i);
    reqs.push_back(std::move(r));
  }
  Result<std::vector<StreamResponse>> got = engine.run(reqs);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
  for (size_t i = 0; i < ps.size(); ++i) {
    Result<std::vector<float>> want = oracle.logits(ps[i]);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    const Compared c = compare(*want, (*got)[i].logits, oracle.vocab_size());
    std::printf("  %s prompt %zu: NMSE %.3g vs the double reference\n", what.c_str(), i, c.nmse);
    EXPECT_LE(c.nmse, kMaxNmse) << what << " prompt " << i;
    EXPECT_EQ(c.top1_diff_hard, 0u) << what << " prompt " << i;
    Result<GreedyResult> g = oracle.greedy(ps[i], 8);
    ASSERT_TRUE(g.ok());
    const GreedyResult& have = (*got)[i].greedy;
    ASSERT_EQ(have.token_ids.size(), 8u);
    for (size_t s = 0; s < 8; ++s) {
      EXPECT_NEAR(have.top1_margins[s], g->top1_margins[s], 1e-3 + 1e-4 * std::abs(g->top1_margins[s]));
      if (g->top1_margins[s] < kNearTie) break;
      ASSERT_EQ(have.token_ids[s], g->token_ids[s]) << what << " prompt " << i << " greedy step " << s;
    }
  }
}

class StreamReference : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamReference, HfSourceMatchesTheDoubleReference) {
  const fs::path hf = kFixtures / GetParam() / "hf";
  Result<ReferenceModel> oracle = ReferenceModel::load_hf(hf);
  ASSERT_TRUE(oracle.ok()) << oracle.status().to_string();
  for (uint64_t chunk : {uint64_t{2} << 20, uint64_t{1}}) {  // whole tensors per task / one row per task
    Result<StreamingReference> engine = StreamingReference::open_source(hf, {.chunk_bytes = chunk});
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    EXPECT_EQ(engine->vocab_size(), oracle->vocab_size());
    expect_matches(*oracle, *engine, GetParam() + " hf, chunk " + std::to_string(chunk));
  }
}

TEST_P(StreamReference, GgufSourceMatchesTheDoubleReference) {
  const fs::path gguf = kFixtures / GetParam() / "gguf" / (GetParam() + "-q4_k_m.gguf");
  Result<ReferenceModel> oracle = ReferenceModel::load_gguf(gguf);
  ASSERT_TRUE(oracle.ok()) << oracle.status().to_string();
  Result<StreamingReference> engine = StreamingReference::open_source(gguf, {.chunk_bytes = 4096});
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  expect_matches(*oracle, *engine, GetParam() + " gguf");
}

TEST_P(StreamReference, PacksInEveryLayoutMatchTheDoubleReference) {
  test::TempDir tmp("stream-ref");
  for (quant::Layout layout : {quant::Layout::kColumnWise, quant::Layout::kRowWise, quant::Layout::kFlat}) {
    convert::ConvertOptions o;
    o.src = kFixtures / GetParam() / "hf";
    o.out = tmp.path() / std::string(quant::layout_name(layout));
    o.preset = convert::Preset::kQ4_K_M;
    o.q4k_layout = layout;
    o.sync_to_disk = false;
    Result<convert::ConvertReport> r = convert::convert_model(o);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    Result<ReferenceModel> oracle = ReferenceModel::load_pack(o.out);
    ASSERT_TRUE(oracle.ok()) << oracle.status().to_string();
    // 1 byte: every task decodes one alignment unit (256 rows of a column_wise tensor, one row otherwise).
    Result<StreamingReference> engine = StreamingReference::open_pack(o.out, {.chunk_bytes = 1});
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    expect_matches(*oracle, *engine, GetParam() + " pack " + std::string(quant::layout_name(layout)));
  }
}

TEST_P(StreamReference, SameBitsAtAnyThreadCount) {
  const fs::path hf = kFixtures / GetParam() / "hf";
  Result<StreamingReference> engine = StreamingReference::open_source(hf, {.chunk_bytes = 8192});
  ASSERT_TRUE(engine.ok());
  std::vector<StreamRequest> reqs;
  for (const auto& p : prompts(engine->vocab_size())) reqs.push_back({.tokens = p, .positions = {0}, .greedy_steps = 3});
  std::vector<std::vector<float>> by_threads;
  for (int threads : {1, 2}) {
    tbb::task_arena arena(threads);
    Result<std::vector<StreamResponse>> out = arena.execute([&] { return engine->run(reqs); });
    ASSERT_TRUE(out.ok());
    std::vector<float> flat;
    for (const StreamResponse& r : *out) {
      flat.insert(flat.end(), r.logits.begin(), r.logits.end());
      for (double m : r.greedy.top1_margins) flat.push_back(static_cast<float>(m));
    }
    by_threads.push_back(std::move(flat));
  }
  ASSERT_EQ(by_threads[0].size(), by_threads[1].size());
  EXPECT_EQ(0, std::memcmp(by_threads[0].data(), by_threads[1].data(), by_threads[0].size() * sizeof(float)));
}

// The layer pass (calibration) sees the same linear inputs as the double reference's forward pass, within f32
// rounding, whether the sequences go through a layer in one group or in several; past the last layer it refuses.
TEST_P(StreamReference, LayerPassSeesTheDoubleReferencesLinearInputs) {
  const fs::path src = kFixtures / GetParam() / "hf";
  Result<ReferenceModel> oracle = ReferenceModel::load_source(src);
  ASSERT_TRUE(oracle.ok()) << oracle.status().to_string();
  Result<StreamingReference> engine = StreamingReference::open_source(src);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const std::vector<std::vector<int32_t>> seqs = prompts(engine->vocab_size());
  const size_t layers = engine->config().architecture.num_layers;
  // want[layer][input]: every sequence's rows stacked in order.
  std::vector<std::array<std::vector<double>, kLinearInputs>> want(layers);
  for (const std::vector<int32_t>& seq : seqs) {
    ASSERT_TRUE(oracle->observe_linear_inputs(seq, [&](size_t layer, LinearInput which, const Matrix& x) {
      auto& w = want[layer][static_cast<size_t>(which)];
      w.insert(w.end(), x.data.begin(), x.data.end());
    }).ok());
  }
  for (size_t group_rows : {size_t{1000}, size_t{20}}) {  // one group; several (23 rows: a group alone)
    Result<StreamingReference::LayerPass> pass = engine->start_layer_pass(seqs, group_rows);
    ASSERT_TRUE(pass.ok()) << pass.status().to_string();
    for (size_t layer = 0; layer < layers; ++layer) {
      std::array<std::vector<double>, kLinearInputs> got;
      ASSERT_EQ(pass->next_layer(), layer);
      ASSERT_TRUE(pass->run_layer([&](LinearInput which, const Matrix& x) {
        auto& g = got[static_cast<size_t>(which)];
        g.insert(g.end(), x.data.begin(), x.data.end());
      }).ok());
      for (size_t i = 0; i < kLinearInputs; ++i) {
        ASSERT_EQ(got[i].size(), want[layer][i].size()) << "layer " << layer << " input " << i;
        double err = 0, ref = 0;
        for (size_t j = 0; j < got[i].size(); ++j) {
          err += (got[i][j] - want[layer][i][j]) * (got[i][j] - want[layer][i][j]);
          ref += want[layer][i][j] * want[layer][i][j];
        }
        EXPECT_LE(err / ref, kMaxNmse) << "layer " << layer << " input " << i << " groups of " << group_rows;
      }
    }
    EXPECT_EQ(pass->run_layer({}).code(), StatusCode::kInvalidArgument);
  }
}

// Sampling: sequence i depends only on its seed (seed + i), not on the batch or the thread count; lengths and
// ids as asked; a start outside the vocabulary is refused.
TEST_P(StreamReference, SamplesDependOnlyOnTheirSeed) {
  Result<StreamingReference> engine = StreamingReference::open_source(kFixtures / GetParam() / "hf");
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const std::vector<int32_t> starts = {1, 1, 5, 9};
  std::vector<std::vector<std::vector<int32_t>>> runs;
  for (int threads : {1, 2}) {
    tbb::task_arena arena(threads);
    Result<std::vector<std::vector<int32_t>>> s = arena.execute([&] { return engine->sample(starts, 12, 77); });
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    runs.push_back(*s);
  }
  EXPECT_EQ(runs[0], runs[1]);
  ASSERT_EQ(runs[0].size(), starts.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSERT_EQ(runs[0][i].size(), 12u);
    EXPECT_EQ(runs[0][i][0], starts[i]);
    for (int32_t t : runs[0][i]) EXPECT_LT(static_cast<size_t>(t), engine->vocab_size());
  }
  EXPECT_NE(runs[0][0], runs[0][1]);  // the same start, another stream
  // Sequence 2 alone, with the seed it had in the batch (77 + 2): the same tokens.
  const std::vector<int32_t> one = {5};
  Result<std::vector<std::vector<int32_t>>> alone = engine->sample(one, 12, 79);
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ((*alone)[0], runs[0][2]);
  const std::vector<int32_t> bad = {static_cast<int32_t>(engine->vocab_size())};
  EXPECT_EQ(engine->sample(bad, 4, 1).status().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StreamReference, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-gemma3"));

// Mixture of experts: each expert a row range of the stacked tensors, streamed like any other linear map.
TEST(StreamReferenceMoe, HfSourcesMatchTheDoubleReference) {
  for (const char* model : {"families/tiny-mixtral", "families/tiny-qwen3-moe", "families/tiny-qwen2-moe"}) {
    const fs::path hf = kFixtures / model / "hf";
    Result<ReferenceModel> oracle = ReferenceModel::load_hf(hf);
    ASSERT_TRUE(oracle.ok()) << oracle.status().to_string();
    for (uint64_t chunk : {uint64_t{2} << 20, uint64_t{1}}) {
      Result<StreamingReference> engine = StreamingReference::open_source(hf, {.chunk_bytes = chunk});
      ASSERT_TRUE(engine.ok()) << engine.status().to_string();
      expect_matches(*oracle, *engine, std::string(model) + " hf, chunk " + std::to_string(chunk));
    }
  }
}

// A source that, like a column_wise tensor, decodes only ranges aligned to 4 rows.
class AlignedOnly final : public ReferenceWeights {
 public:
  bool has(const std::string&) const override { return true; }
  Result<std::vector<int64_t>> shape(const std::string&) const override { return std::vector<int64_t>{10, 3}; }
  Result<std::vector<float>> read_f32(const std::string&) const override {
    std::vector<float> v(30);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
    return v;
  }
  uint64_t row_alignment(const std::string&) const override { return 4; }
  Status read_rows_f32(const std::string& name, uint64_t row_begin, uint64_t rows, std::span<float> out,
                       RowScratch&) const override {
    if (row_begin % 4 != 0 || (rows % 4 != 0 && row_begin + rows != 10)) {
      return error(StatusCode::kInvalidArgument, "not aligned");
    }
    RDRR_ASSIGN_OR_RETURN(const std::vector<float> all, read_f32(name));
    std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(row_begin * 3), out.size(), out.begin());
    return Status::Ok();
  }
  std::string config_origin() const override { return "test"; }
};

// The rows of a fused map need not be aligned (e.g. the up rows of a column_wise gate_up_proj whose intermediate
// size is not a multiple of 256): the plain row read widens to the aligned range and copies the rows out.
TEST(ReferenceWeightsRows, AnyRangeIsReadThroughTheAlignedRangeAroundIt) {
  const AlignedOnly w;
  for (const auto& [begin, rows] : {std::pair<uint64_t, uint64_t>{5, 3}, {1, 9}, {8, 2}, {0, 10}, {6, 1}}) {
    std::vector<float> out(rows * 3, NAN);
    const Status st = static_cast<const ReferenceWeights&>(w).read_rows_f32("t", begin, rows, out);
    ASSERT_TRUE(st.ok()) << st.to_string();
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], static_cast<float>(begin * 3 + i)) << begin << "+" << rows;
  }
}

TEST(StreamReferenceErrors, RefusesBadRequests) {
  Result<StreamingReference> engine = StreamingReference::open_source(kFixtures / "tiny-llama" / "hf");
  ASSERT_TRUE(engine.ok());
  const int32_t vocab = static_cast<int32_t>(engine->vocab_size());
  const StreamRequest empty{};
  Status s = engine->run(std::span(&empty, 1)).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("request 0: empty"), std::string::npos) << s.to_string();
  const StreamRequest bad_id{.tokens = {1, vocab}, .positions = {}, .greedy_steps = 0};
  s = engine->run(std::span(&bad_id, 1)).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("token 1 id " + std::to_string(vocab)), std::string::npos) << s.to_string();
  const StreamRequest bad_pos{.tokens = {1, 2}, .positions = {1, 1}, .greedy_steps = 0};
  EXPECT_EQ(engine->run(std::span(&bad_pos, 1)).status().code(), StatusCode::kInvalidArgument);
  const StreamRequest past_end{.tokens = {1, 2}, .positions = {2}, .greedy_steps = 0};
  EXPECT_EQ(engine->run(std::span(&past_end, 1)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StreamingReference::open_source(kFixtures / "no-such-model").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace rdrr::verify
