// The golden format (verify/golden.h): prompts, storage budget, encode / read round trip and the read errors.
#include "verify/golden.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "rdrr/test_temp_dir.h"

namespace rdrr::verify {
namespace {

namespace fs = std::filesystem;

Manifest small_manifest(uint64_t vocab) {
  Manifest m;
  m.architecture.vocab_size = vocab;
  m.tokenizer.bos_token_id = 1;
  m.tokenizer.eos_token_ids = {2};
  m.tokenizer.add_bos_token = true;
  return m;
}

GoldenSet sample_set(uint64_t vocab, GoldenValueType type) {
  GoldenSet g;
  g.vocab_size = vocab;
  g.greedy_steps = 3;
  g.value_type = type;
  g.source = {"test", "safetensors"};
  g.pack = {"test", "pack"};
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int p = 0; p < 2; ++p) {
    GoldenPrompt gp;
    gp.token_ids = {1, 5, 9, 11 + p};
    gp.positions = {2, 3};
    for (GoldenRun* r : {&gp.source, &gp.pack}) {
      r->logits.resize(gp.positions.size() * vocab);
      for (float& v : r->logits) v = dist(rng);
      r->greedy_token_ids = {3, 4, 5};
      r->greedy_top1_margins = {0.5, 0.25, 1.0 / 3.0};
    }
    g.prompts.push_back(std::move(gp));
  }
  return g;
}

// Writes the blobs into `dir` (an empty folder) and returns the manifest listing them.
Manifest write_blobs(const fs::path& dir, const std::vector<GoldenBlob>& blobs, uint64_t vocab) {
  fs::create_directories(dir / "golden");
  Manifest m = small_manifest(vocab);
  for (const GoldenBlob& b : blobs) {
    std::ofstream(dir / b.name, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.bytes.data()), static_cast<std::streamsize>(b.bytes.size()));
    m.goldens.push_back({b.name, b.bytes.size(), std::string(64, '0'), b.kind});
  }
  return m;
}

TEST(GoldenPrompts, DeterministicInRangeWithBosAndNoSpecials) {
  const Manifest m = small_manifest(50);
  GoldenOptions o;
  o.prompts = 3;
  o.tokens_per_prompt = 12;
  auto a = golden_prompts(m, o);
  auto b = golden_prompts(m, o);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_EQ(*a, *b);
  ASSERT_EQ(a->size(), 3u);
  EXPECT_NE((*a)[0], (*a)[1]);
  for (const auto& p : *a) {
    ASSERT_EQ(p.size(), 12u);
    EXPECT_EQ(p[0], 1);
    for (size_t i = 1; i < p.size(); ++i) {
      EXPECT_GE(p[i], 0);
      EXPECT_LT(p[i], 50);
      EXPECT_NE(p[i], 1);
      EXPECT_NE(p[i], 2);
    }
  }
  o.tokens_per_prompt = 0;
  EXPECT_EQ(golden_prompts(m, o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(golden_prompts(small_manifest(2), {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(GoldenStorage, SmallModelKeepsEverythingInF32) {
  const GoldenStorage s = choose_golden_storage(1024, {16, 16, 16, 16}, kDefaultGoldenBudgetBytes);
  EXPECT_EQ(s.value_type, GoldenValueType::kF32);
  ASSERT_EQ(s.positions.size(), 4u);
  for (const auto& p : s.positions) EXPECT_EQ(p.size(), 16u);
}

TEST(GoldenStorage, LargeVocabFitsTheBudgetInF16LastPositions) {
  const uint64_t vocab = 128256;
  const GoldenStorage s = choose_golden_storage(vocab, {16, 16, 16, 16}, kDefaultGoldenBudgetBytes);
  EXPECT_EQ(s.value_type, GoldenValueType::kF16);
  uint64_t positions = 0;
  for (const auto& p : s.positions) {
    ASSERT_FALSE(p.empty());
    EXPECT_EQ(p.back(), 15u);  // the last positions are kept
    positions += p.size();
  }
  EXPECT_LE(2 * positions * vocab * 2, kDefaultGoldenBudgetBytes);
  EXPECT_EQ(s.positions[0].size(), 8u);
  // A budget below one position still keeps one per prompt.
  const GoldenStorage tiny = choose_golden_storage(vocab, {16}, 1000);
  EXPECT_EQ(tiny.positions[0], std::vector<uint32_t>{15});
}

TEST(GoldenFormat, RoundTripF32IsExactAndDeterministic) {
  const GoldenSet g = sample_set(64, GoldenValueType::kF32);
  auto blobs = encode_golden(g);
  ASSERT_TRUE(blobs.ok()) << blobs.status().to_string();
  auto again = encode_golden(g);
  ASSERT_EQ(blobs->size(), 5u);  // index + 2 prompts x 2 references
  for (size_t i = 0; i < blobs->size(); ++i) EXPECT_EQ((*blobs)[i].bytes, (*again)[i].bytes);
  EXPECT_EQ((*blobs)[0].name, "golden/golden.json");
  EXPECT_EQ((*blobs)[0].kind, "reference");
  EXPECT_EQ((*blobs)[1].name, "golden/source.p0.logits.f32.zst");
  EXPECT_EQ((*blobs)[1].kind, "logits");
  const test::TempDir tmp;
  const fs::path& dir = tmp.path();
  const Manifest m = write_blobs(dir, *blobs, 64);
  auto back = read_golden(m, dir);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  ASSERT_EQ(back->prompts.size(), 2u);
  EXPECT_EQ(back->greedy_steps, 3u);
  EXPECT_EQ(back->source.weights, "safetensors");
  for (size_t p = 0; p < 2; ++p) {
    EXPECT_EQ(back->prompts[p].token_ids, g.prompts[p].token_ids);
    EXPECT_EQ(back->prompts[p].positions, g.prompts[p].positions);
    EXPECT_EQ(back->prompts[p].source.logits, g.prompts[p].source.logits);
    EXPECT_EQ(back->prompts[p].pack.logits, g.prompts[p].pack.logits);
    EXPECT_EQ(back->prompts[p].pack.greedy_top1_margins, g.prompts[p].pack.greedy_top1_margins);
  }
}

TEST(GoldenFormat, F16ValuesWithinHalfPrecision) {
  const GoldenSet g = sample_set(64, GoldenValueType::kF16);
  auto blobs = encode_golden(g);
  ASSERT_TRUE(blobs.ok());
  EXPECT_EQ((*blobs)[1].name, "golden/source.p0.logits.f16.zst");
  const test::TempDir tmp;
  const fs::path& dir = tmp.path();
  auto back = read_golden(write_blobs(dir, *blobs, 64), dir);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const auto& a = g.prompts[1].source.logits;
  const auto& b = back->prompts[1].source.logits;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], std::abs(a[i]) * 1e-3 + 1e-4);
}

TEST(GoldenFormat, EncodeRejectsWrongLogitsSize) {
  GoldenSet g = sample_set(64, GoldenValueType::kF32);
  g.prompts[1].pack.logits.pop_back();
  const Status s = encode_golden(g).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("golden prompt 1 pack"), std::string::npos) << s.to_string();
}

TEST(GoldenFormat, ReadErrors) {
  const GoldenSet g = sample_set(64, GoldenValueType::kF32);
  auto blobs = encode_golden(g);
  ASSERT_TRUE(blobs.ok());
  const test::TempDir tmp;
  const fs::path& dir = tmp.path();
  Manifest m = write_blobs(dir, *blobs, 64);

  {  // a logits file not listed in the manifest
    Manifest unlisted = m;
    unlisted.goldens.erase(unlisted.goldens.begin() + 2);
    const Status s = read_golden(unlisted, dir).status();
    EXPECT_EQ(s.code(), StatusCode::kValidation);
    EXPECT_NE(s.message().find("not listed"), std::string::npos) << s.to_string();
  }
  {  // vocabulary differs from the manifest
    Manifest other = m;
    other.architecture.vocab_size = 65;
    const Status s = read_golden(other, dir).status();
    EXPECT_EQ(s.code(), StatusCode::kValidation);
    EXPECT_NE(s.message().find("vocabSize 64"), std::string::npos) << s.to_string();
  }
  {  // no index listed
    Manifest none = m;
    none.goldens.clear();
    EXPECT_EQ(read_golden(none, dir).status().code(), StatusCode::kNotFound);
  }
  {  // a corrupt zstd frame
    fs::path f = dir / (*blobs)[3].name;
    std::vector<char> bytes((*blobs)[3].bytes.size(), 'x');
    std::ofstream(f, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    const Status s = read_golden(m, dir).status();
    EXPECT_EQ(s.code(), StatusCode::kIntegrity) << s.to_string();
    EXPECT_NE(s.message().find((*blobs)[3].name), std::string::npos) << s.to_string();
  }
  {  // a missing file
    fs::remove(dir / (*blobs)[3].name);
    EXPECT_EQ(read_golden(m, dir).status().code(), StatusCode::kNotFound);
  }
  {  // a malformed index
    std::ofstream(dir / "golden/golden.json", std::ios::trunc) << "{\"format\": \"rdrr-golden\"}";
    const Status s = read_golden(m, dir).status();
    EXPECT_EQ(s.code(), StatusCode::kSchema);
    EXPECT_NE(s.message().find("version"), std::string::npos) << s.to_string();
  }
}

TEST(Zstd, DecompressChecksTheSize) {
  std::vector<std::byte> data(1000, std::byte{42});
  const std::vector<std::byte> frame = zstd_compress(data);
  EXPECT_LT(frame.size(), data.size());
  auto ok = zstd_decompress(frame, 1000);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, data);
  EXPECT_EQ(zstd_decompress(frame, 999).status().code(), StatusCode::kValidation);
}

}  // namespace
}  // namespace rdrr::verify
