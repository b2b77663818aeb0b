// The fixture models' golden prompts (fixtures/*/golden/hf-f32.json: text + HF token_ids) through
// tokenizer.json and tokenizer.model (the GGUF vocabulary: gguf_vocab_test.cpp).
#include <random>

#include "tokenizer/fixture_test_util.h"

namespace rdrr::tok {
namespace {

using namespace rdrr::tok::testing;

class FixtureTokenizer : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  std::unique_ptr<Tokenizer> load() {
    const auto& [model, source] = GetParam();
    auto tok = load_tokenizer_file(fixture(model) / "hf" / source);
    EXPECT_TRUE(tok.ok()) << tok.status().to_string();
    if (!tok.ok()) return nullptr;
    EXPECT_EQ((*tok)->source_file(), source);
    EXPECT_EQ((*tok)->vocab_size(), 1024u);
    return std::move(tok).value();
  }
};

TEST_P(FixtureTokenizer, EncodesGoldenPromptsExactly) {
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  expect_golden_encodings(*tok, std::get<0>(GetParam()));
}

TEST_P(FixtureTokenizer, DecodeRoundTripsAndStreamsValidUtf8) {
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  expect_golden_decodes(*tok, std::get<0>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(AllSources, FixtureTokenizer,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen2", "tiny-gemma3"),
                                            ::testing::Values("tokenizer.json", "tokenizer.model")),
                         [](const auto& param_info) {
                           std::string name = std::get<0>(param_info.param) + "_" + std::get<1>(param_info.param);
                           for (char& c : name) {
                             if (c == '-' || c == '.') c = '_';
                           }
                           return name;
                         });

// Random text (ASCII without '<', Latin-1 letters, CJK, emoji, newlines, runs of spaces; fixed seed):
// decode(encode(x)) == x, and streaming the ids gives x in valid UTF-8 pieces. Byte fallback covers every
// character outside the 1024-piece vocabulary.
TEST_P(FixtureTokenizer, RandomTextRoundTrips) {
  auto tok = load();
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(1234);
  const std::pair<uint32_t, uint32_t> ranges[] = {{0x20, 0x3B}, {0x3D, 0x7E}, {0x0A, 0x0A}, {0xC0, 0xFF},
                                                  {0x4E00, 0x9FFF}, {0x1F600, 0x1F64F}};
  for (int n = 0; n < 100; ++n) {
    std::string text;
    const int len = static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) {
      const auto& [lo, hi] = ranges[rng() % (rng() % 3 == 0 ? 6 : 2)];
      utf8_append(text, lo + static_cast<uint32_t>(rng() % (hi - lo + 1)));
    }
    auto ids = tok->encode(text, {.add_special = false});
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    EXPECT_EQ(tok->decode(*ids), text);
    StreamDecoder stream(*tok);
    std::string streamed;
    for (TokenId id : *ids) {
      const std::string piece = stream.push(id);
      EXPECT_TRUE(valid_utf8(piece));
      streamed += piece;
    }
    EXPECT_EQ(streamed + stream.flush(), text);
  }
}

// load_tokenizer on a checkpoint folder prefers tokenizer.json, and takes EOS ids from the manifest.
TEST(LoadTokenizer, PrefersTokenizerJsonAndTakesManifestIds) {
  TokenizerInfo info;
  info.bos_token_id = 1;
  info.eos_token_ids = {2, 7};
  auto tok = load_tokenizer(fixture("tiny-llama") / "hf", &info);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->source_file(), "tokenizer.json");
  EXPECT_EQ((*tok)->eos_ids(), (std::vector<TokenId>{2, 7}));
  EXPECT_TRUE((*tok)->is_eos(7));
  EXPECT_FALSE((*tok)->is_eos(1));
}

TEST(LoadTokenizer, IdsFromTokenizerConfigWithoutManifest) {
  auto tok = load_tokenizer(fixture("tiny-qwen2") / "hf");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->bos_id(), std::optional<TokenId>(1));                   // "<s>"
  EXPECT_EQ((*tok)->eos_ids(), (std::vector<TokenId>{2}));                  // "</s>"
  EXPECT_EQ((*tok)->token_to_piece(267), "\xE2\x96\x81the");                // "▁the"
  EXPECT_EQ((*tok)->piece_to_token("\xE2\x96\x81the"), std::optional<TokenId>(267));
  EXPECT_TRUE((*tok)->is_special(2));
  EXPECT_FALSE((*tok)->is_special(267));
}

}  // namespace
}  // namespace rdrr::tok
