// The fixture GGUFs' vocabularies: convert::gguf_tokenizer_json writes tokenizer.gguf.json as the
// converter bundles it; encoding the golden prompts through it gives the HF token ids. And packs converted
// from each fixture (HF folder and GGUF): load_tokenizer(pack, &manifest.tokenizer), as rdrr-run will.
#include <random>

#include "convert/converter.h"
#include "convert/gguf.h"
#include "convert/model_config.h"
#include "rdrr/manifest_json.h"
#include "rdrr/test_temp_dir.h"
#include "tokenizer/fixture_test_util.h"

namespace rdrr::tok {
namespace {

using namespace rdrr::tok::testing;
namespace fs = std::filesystem;

std::unique_ptr<Tokenizer> load_gguf_vocab(const std::string& model) {
  const test::TempDir tmp("tok_" + model);
  const fs::path& dir = tmp.path();
  auto gguf = convert::GgufFile::open(fixture(model) / "gguf" / (model + "-q4_k_m.gguf"));
  EXPECT_TRUE(gguf.ok()) << gguf.status().to_string();
  if (!gguf.ok()) return nullptr;
  auto text = convert::gguf_tokenizer_json(*gguf);
  EXPECT_TRUE(text.ok()) << text.status().to_string();
  if (!text.ok()) return nullptr;
  std::ofstream(dir / "tokenizer.gguf.json", std::ios::binary) << *text;
  auto tok = load_tokenizer(dir);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  if (!tok.ok()) return nullptr;
  EXPECT_EQ((*tok)->source_file(), "tokenizer.gguf.json");
  EXPECT_EQ((*tok)->model_kind(), "gguf-llama");
  EXPECT_EQ((*tok)->vocab_size(), 1024u);
  EXPECT_EQ((*tok)->eos_ids(), (std::vector<TokenId>{2}));
  return std::move(tok).value();
}

class GgufVocab : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufVocab, EncodesGoldenPromptsExactly) {
  auto tok = load_gguf_vocab(GetParam());
  ASSERT_NE(tok, nullptr);
  expect_golden_encodings(*tok, GetParam());
}

TEST_P(GgufVocab, DecodeRoundTripsAndStreamsValidUtf8) {
  auto tok = load_gguf_vocab(GetParam());
  ASSERT_NE(tok, nullptr);
  expect_golden_decodes(*tok, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufVocab, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-gemma3"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// Differential: tokenizer.json (HF BPE by merge rank), tokenizer.model (libsentencepiece) and the GGUF
// vocabulary (merge by piece score, as llama.cpp) give the same ids on random text (fixed seed).
TEST_P(GgufVocab, AllSourcesAgreeOnRandomText) {
  auto gguf = load_gguf_vocab(GetParam());
  ASSERT_NE(gguf, nullptr);
  auto hf = load_tokenizer_file(fixture(GetParam()) / "hf" / "tokenizer.json");
  auto spm = load_tokenizer_file(fixture(GetParam()) / "hf" / "tokenizer.model");
  ASSERT_TRUE(hf.ok() && spm.ok());
  std::mt19937 rng(99);
  const char* words[] = {"the", " ", "  ", "cat", "ing", "\n", "caf\xC3\xA9", "\xE2\x80\x9C", "1984", ",", ".", "he", "re", "x"};
  for (int n = 0; n < 200; ++n) {
    std::string text;
    const int len = static_cast<int>(rng() % 30);
    for (int i = 0; i < len; ++i) text += words[rng() % std::size(words)];
    auto a = (*hf)->encode(text);
    auto b = (*spm)->encode(text);
    auto c = gguf->encode(text);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(*a, *b) << "tokenizer.model differs on '" << text << "'";
    EXPECT_EQ(*a, *c) << "tokenizer.gguf.json differs on '" << text << "'";
  }
}

class ConvertedPack : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(ConvertedPack, LoadsBundledTokenizerWithManifestIds) {
  const auto& [model, from_gguf] = GetParam();
  const test::TempDir tmp;
  const fs::path out = tmp / "pack";
  convert::ConvertOptions opts;
  opts.src = from_gguf ? fixture(model) / "gguf" / (model + "-q4_k_m.gguf") : fixture(model) / "hf";
  opts.out = out;
  opts.preset = convert::Preset::kF32;
  opts.force = true;
  opts.sync_to_disk = false;
  opts.threads = 1;
  auto report = convert::convert_model(opts);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  auto manifest = read_manifest_file(out);
  ASSERT_TRUE(manifest.ok()) << manifest.status().to_string();
  auto tok = load_tokenizer(out, &manifest->tokenizer);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->source_file(), from_gguf ? "tokenizer.gguf.json" : "tokenizer.json");
  std::vector<TokenId> eos;
  for (uint64_t e : manifest->tokenizer.eos_token_ids) eos.push_back(static_cast<TokenId>(e));
  EXPECT_EQ((*tok)->eos_ids(), eos);
  expect_golden_encodings(**tok, model);
  expect_golden_decodes(**tok, model);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConvertedPack,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen2", "tiny-gemma3"),
                                            ::testing::Bool()),
                         [](const auto& param_info) {
                           std::string name = std::get<0>(param_info.param) + (std::get<1>(param_info.param) ? "_gguf" : "_hf");
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace rdrr::tok
