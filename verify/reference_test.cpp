// The CPU reference forward pass against the HF transformers float32 goldens of the fixture models.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "rdrr/test_temp_dir.h"
#include "verify/metrics.h"
#include "verify/reference_model.h"

namespace rdrr::verify {
namespace {

const std::filesystem::path kFixtures = RDRR_FIXTURES_DIR;

nlohmann::json read_golden(const std::string& model) {
  std::ifstream in(kFixtures / model / "golden" / "hf-f32.json");
  return nlohmann::json::parse(in);
}

std::vector<float> read_logits(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> out(std::filesystem::file_size(path) / sizeof(float));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(float)));
  return out;
}

class ReferenceVsHf : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceVsHf, LogitsAndGreedyMatchTransformers) {
  const std::string model = GetParam();
  Result<ReferenceModel> ref = ReferenceModel::load_hf(kFixtures / model / "hf");
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const nlohmann::json golden = read_golden(model);
  const size_t vocab = golden.at("vocab_size").get<size_t>();
  ASSERT_EQ(ref->vocab_size(), vocab);
  for (const nlohmann::json& prompt : golden.at("prompts")) {
    SCOPED_TRACE(model + " p" + std::to_string(prompt.at("index").get<int>()));
    const auto tokens = prompt.at("token_ids").get<std::vector<int32_t>>();
    Result<std::vector<float>> logits = ref->logits(tokens);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    const std::vector<float> hf = read_logits(kFixtures / model / "golden" / prompt.at("logits_file").get<std::string>());
    Result<LogitsComparison> cmp = compare_logits(hf, *logits, vocab);
    ASSERT_TRUE(cmp.ok()) << cmp.status().to_string();
    std::printf("%s p%d: %zu positions, KLD mean %.3g max %.3g, top-1 %zu/%zu\n", model.c_str(),
                prompt.at("index").get<int>(), cmp->positions, cmp->kld_mean, cmp->kld_max, cmp->top1_matches,
                cmp->positions);
    EXPECT_EQ(cmp->positions, tokens.size());
    EXPECT_LT(cmp->kld_mean, 1e-6);
    EXPECT_EQ(cmp->top1_matches, cmp->positions);

    const auto want = prompt.at("greedy_token_ids").get<std::vector<int32_t>>();
    const auto margins = prompt.at("greedy_top1_margin").get<std::vector<double>>();
    Result<GreedyResult> greedy = ref->greedy(tokens, want.size());
    ASSERT_TRUE(greedy.ok()) << greedy.status().to_string();
    // Compare up to (and including) the first fragile step: past it a tie may legitimately break either way.
    size_t steps = 0;
    while (steps < want.size() && margins[steps] >= 1e-3) ++steps;
    steps = std::min(steps + 1, want.size());
    for (size_t s = 0; s < steps; ++s) EXPECT_EQ(greedy->token_ids[s], want[s]) << "greedy step " << s;
    std::printf("%s p%d: greedy %zu/%zu steps compared\n", model.c_str(), prompt.at("index").get<int>(), steps,
                want.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReferenceVsHf, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-gemma3"));
// Mixture of experts (fixtures/families/README.md): Mixtral (renormalized top-2), Qwen3-MoE (renormalized, layer 1
// dense), Qwen2-MoE (not renormalized, gated shared expert, q/k/v biases); per-expert HF tensors stacked by the
// converter's source reader.
INSTANTIATE_TEST_SUITE_P(Moe, ReferenceVsHf,
                         ::testing::Values("families/tiny-mixtral", "families/tiny-qwen3-moe", "families/tiny-qwen2-moe"));

// The router: softmax, the top k with ties to the lower expert, renormalized on request.
TEST(ReferenceModel, MoeRouting) {
  const std::vector<double> logits = {0.5, 2.0, 2.0, -1.0};
  Routing r = route(logits, MoeParams{.experts = 4, .top_k = 2, .normalize = false});
  ASSERT_EQ(r.experts, (std::vector<uint32_t>{1, 2}));
  const double z = std::exp(0.5) + 2 * std::exp(2.0) + std::exp(-1.0);
  EXPECT_NEAR(r.weights[0], std::exp(2.0) / z, 1e-15);
  EXPECT_NEAR(r.weights[1], std::exp(2.0) / z, 1e-15);
  r = route(logits, MoeParams{.experts = 4, .top_k = 3, .normalize = true});
  ASSERT_EQ(r.experts, (std::vector<uint32_t>{1, 2, 0}));
  EXPECT_NEAR(r.weights[0] + r.weights[1] + r.weights[2], 1.0, 1e-15);
  EXPECT_NEAR(r.weights[2], std::exp(0.5) / (std::exp(0.5) + 2 * std::exp(2.0)), 1e-15);
}

TEST(ReferenceModel, RejectsBadTokens) {
  Result<ReferenceModel> ref = ReferenceModel::load_hf(kFixtures / "tiny-llama" / "hf");
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const std::vector<int32_t> empty;
  EXPECT_EQ(ref->logits(empty).status().code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> out_of_range = {1, 1024};
  const Status s = ref->logits(out_of_range).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("token 1 id 1024 outside [0, 1024)"), std::string::npos) << s.message();
  const std::vector<int32_t> negative = {-1};
  EXPECT_EQ(ref->greedy(negative, 1).status().code(), StatusCode::kInvalidArgument);
}

TEST(ReferenceModel, SameLogitsAtAnyThreadCount) {
  Result<ReferenceModel> ref = ReferenceModel::load_hf(kFixtures / "tiny-gemma3" / "hf");
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const std::vector<int32_t> tokens = {1, 474, 941, 322, 591, 266, 261, 634};
  Result<std::vector<float>> parallel = ref->logits(tokens);
  ASSERT_TRUE(parallel.ok());
  tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
  Result<std::vector<float>> serial = ref->logits(tokens);
  ASSERT_TRUE(serial.ok());
  EXPECT_EQ(*parallel, *serial);  // bitwise
}

// A copy of tiny-llama's config and tokenizer with a model.safetensors holding only the given F32 tensors
// (zeros), to exercise the loader's checks.
std::filesystem::path make_broken_checkpoint(const test::TempDir& tmp,
                                             const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  const std::filesystem::path& dir = tmp.path();
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"}) {
    std::filesystem::copy_file(kFixtures / "tiny-llama" / "hf" / f, dir / f);
  }
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [tensor, shape] : tensors) {
    uint64_t bytes = 4;
    for (int64_t d : shape) bytes *= static_cast<uint64_t>(d);
    header[tensor] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  const uint64_t header_bytes = text.size();
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  out.write(reinterpret_cast<const char*>(&header_bytes), sizeof(header_bytes));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  const std::vector<char> zeros(offset, 0);
  out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  return dir;
}

// extend() with a KV cache, fed in uneven pieces, gives logits() of the whole sequence bit for bit (gemma3:
// sliding-window layers and q/k norms; the window is 32, so 40 tokens cross it).
TEST(ReferenceModel, KvCacheExtendMatchesTheWholeSequence) {
  Result<ReferenceModel> ref = ReferenceModel::load_hf(kFixtures / "tiny-gemma3" / "hf");
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  std::vector<int32_t> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back(1 + (i * 37) % 1000);
  Result<std::vector<float>> whole = ref->logits(tokens);
  ASSERT_TRUE(whole.ok());
  const size_t vocab = ref->vocab_size();
  ReferenceModel::KvCache cache;
  size_t done = 0;
  for (size_t piece : {3, 1, 30, 6}) {
    Result<std::vector<float>> last = ref->extend(cache, std::span<const int32_t>(tokens).subspan(done, piece));
    ASSERT_TRUE(last.ok()) << last.status().to_string();
    done += piece;
    ASSERT_EQ(last->size(), vocab);
    const std::vector<float> want(whole->begin() + static_cast<std::ptrdiff_t>((done - 1) * vocab),
                                  whole->begin() + static_cast<std::ptrdiff_t>(done * vocab));
    EXPECT_EQ(*last, want) << "after " << done << " tokens";
  }
  EXPECT_EQ(cache.length, tokens.size());
}

TEST(ReferenceModel, WrongTensorShapeIsValidationError) {
  const test::TempDir tmp;
  const auto dir = make_broken_checkpoint(tmp, {{"model.embed_tokens.weight", {1024, 255}}});
  const Status s = ReferenceModel::load_hf(dir).status();
  EXPECT_EQ(s.code(), StatusCode::kValidation) << s.to_string();
  EXPECT_NE(s.message().find("tensor model.embed_tokens.weight: shape [1024, 255], expected [1024, 256]"),
            std::string::npos)
      << s.message();
}

TEST(ReferenceModel, MissingTensorIsNotFound) {
  const test::TempDir tmp;
  const auto dir = make_broken_checkpoint(tmp, {{"model.embed_tokens.weight", {1024, 256}}});
  const Status s = ReferenceModel::load_hf(dir).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.to_string();
  EXPECT_NE(s.message().find("model.norm.weight"), std::string::npos) << s.message();
}

TEST(ReferenceModel, MissingFolderIsNotFound) {
  Result<ReferenceModel> ref = ReferenceModel::load_hf(kFixtures / "no-such-model");
  EXPECT_EQ(ref.status().code(), StatusCode::kNotFound) << ref.status().to_string();
}

TEST(Metrics, KldOfIdenticalRowsIsZeroAndPositiveOtherwise) {
  const std::vector<float> a = {1.0f, 2.0f, 3.0f, 0.5f, 0.5f, 0.5f};
  const std::vector<float> b = {1.0f, 2.0f, 3.5f, 0.5f, 0.5f, 0.5f};
  Result<LogitsComparison> same = compare_logits(a, a, 3);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->kld_max, 0.0);
  EXPECT_EQ(same->top1_matches, 2u);
  Result<LogitsComparison> diff = compare_logits(a, b, 3);
  ASSERT_TRUE(diff.ok());
  EXPECT_GT(diff->kld_per_position[0], 0.0);
  EXPECT_EQ(diff->kld_per_position[1], 0.0);
  // Shift invariance: adding a constant to a row changes nothing.
  const std::vector<float> shifted = {11.0f, 12.0f, 13.0f};
  EXPECT_NEAR(kl_divergence(std::span(a).first(3), shifted), 0.0, 1e-15);
}

TEST(Metrics, RejectsMismatchedSizes) {
  const std::vector<float> a(6), b(3);
  const Status s = compare_logits(a, b, 3).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("sizes 6 and 3 for vocab 3"), std::string::npos) << s.message();
  EXPECT_EQ(compare_logits(a, a, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(compare_logits(a, a, 4).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rdrr::verify
