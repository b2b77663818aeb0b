// Internal to tokenizer/ tests: the fixture models' golden prompts (fixtures/*/golden/hf-f32.json).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace rdrr::tok::testing {

struct Prompt {
  std::string text;
  std::vector<TokenId> ids;
};

inline std::filesystem::path fixture(const std::string& model) { return std::filesystem::path(RDRR_FIXTURES_DIR) / model; }

inline std::vector<Prompt> golden_prompts(const std::string& model) {
  std::ifstream in(fixture(model) / "golden" / "hf-f32.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<Prompt> out;
  for (const auto& p : j.at("prompts")) {
    out.push_back({p.at("text").get<std::string>(), p.at("token_ids").get<std::vector<TokenId>>()});
  }
  return out;
}

inline bool valid_utf8(std::string_view s) { return utf8_sanitize(s) == s; }

// Encoding every golden prompt gives the HF token ids (with and without BOS).
inline void expect_golden_encodings(const Tokenizer& tok, const std::string& model) {
  ASSERT_TRUE(tok.bos_id().has_value());
  EXPECT_EQ(*tok.bos_id(), 1);
  const auto prompts = golden_prompts(model);
  ASSERT_EQ(prompts.size(), 4u);
  for (const Prompt& p : prompts) {
    auto ids = tok.encode(p.text);
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    EXPECT_EQ(*ids, p.ids) << p.text;
    auto bare = tok.encode(p.text, {.add_special = false});
    ASSERT_TRUE(bare.ok());
    EXPECT_EQ(*bare, std::vector<TokenId>(p.ids.begin() + 1, p.ids.end())) << p.text;
  }
}

// decode() gives the prompt text back; the streaming decoder emits only valid UTF-8 and adds up to it.
inline void expect_golden_decodes(const Tokenizer& tok, const std::string& model) {
  for (const Prompt& p : golden_prompts(model)) {
    EXPECT_EQ(tok.decode(p.ids, {.skip_special = true}), p.text);
    StreamDecoder stream(tok, {.skip_special = true});
    std::string streamed;
    for (TokenId id : p.ids) {
      const std::string piece = stream.push(id);
      EXPECT_TRUE(valid_utf8(piece)) << "after token " << id;
      streamed += piece;
    }
    streamed += stream.flush();
    EXPECT_EQ(streamed, p.text);
  }
}

}  // namespace rdrr::tok::testing
