// Hand-built tokenizers for what the fixtures do not cover: byte-level BPE with the Qwen2 and Llama-3
// regex splits (tokenizer.json and tokenizer.gguf.json), NFC, added tokens, Metaspace, streaming across a
// multi-byte character, and every load/encode error. Expected ids are worked out by hand in comments.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "rdrr/test_temp_dir.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace rdrr::tok {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

using test::TempDir;

// Writes `text` to dir/name; returns the path.
fs::path write_text(const TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name, std::ios::binary) << text;
  return dir / name;
}

// Byte-level vocabulary: ids 0..255 are the GPT-2 alphabet characters of bytes 0..255 (so a lone byte's id
// is the byte), then 256 "he", 257 "Ġt", 258 "Ġthe", 259 "Ġc", 260 "at", 261 "Ġcat", 262 "Ġsat" (no merge
// leads to it). Merges by rank: h+e, Ġ+t, Ġt+he, Ġ+c, a+t, Ġc+at.
json byte_level_vocab() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[std::string(byte_level_char(static_cast<uint8_t>(b)))] = b;
  const char* extra[] = {"he", "\xC4\xA0t", "\xC4\xA0the", "\xC4\xA0" "c", "at", "\xC4\xA0" "cat", "\xC4\xA0sat"};
  for (int i = 0; i < 7; ++i) vocab[extra[i]] = 256 + i;
  return vocab;
}

json byte_level_merges() {
  return json::array({"h e", "\xC4\xA0 t", "\xC4\xA0t he", "\xC4\xA0 c", "a t", "\xC4\xA0" "c at"});
}

json qwen2_tokenizer_json() {
  return {{"version", "1.0"},
          {"added_tokens", json::array({{{"id", 263}, {"content", "<|endoftext|>"}, {"special", true}},
                                        {{"id", 264}, {"content", "<|im_start|>"}, {"special", true}},
                                        {{"id", 265}, {"content", "<|im_end|>"}, {"special", true}}})},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer", {{"type", "Sequence"},
                             {"pretokenizers", json::array({{{"type", "Split"}, {"pattern", {{"Regex", kQwen2Split}}},
                                                             {"behavior", "Isolated"}, {"invert", false}},
                                                            {{"type", "ByteLevel"}, {"add_prefix_space", false},
                                                             {"trim_offsets", false}, {"use_regex", false}}})}}},
          {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
          {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"byte_fallback", false},
                     {"vocab", byte_level_vocab()}, {"merges", byte_level_merges()}}}};
}

constexpr const char* kText = "the cat sat\n<|im_end|>x 1234 \xC3\xA9";  // "... é"
// the -> t + he (no t+he merge) = [116, 256]; " cat" -> Ġc, at, Ġcat = [261]; " sat" -> Ġ, s, at = [32, 115, 260];
// "\n" = [10]; <|im_end|> = 265; "x" = [120]; " " = [32] (\s+ alone: the digits are not letters);
// each digit alone (\p{N}) = 49..52; " é" -> bytes 20 C3 A9 = [32, 195, 169].
const std::vector<TokenId> kQwen2Ids = {116, 256, 261, 32, 115, 260, 10, 265, 120, 32, 49, 50, 51, 52, 32, 195, 169};

TEST(ByteLevelBpe, Qwen2StyleTokenizerJson) {
  TempDir dir;
  write_text(dir, "tokenizer.json", qwen2_tokenizer_json().dump());
  auto tok = load_tokenizer(dir.path());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  auto ids = (*tok)->encode(kText);
  ASSERT_TRUE(ids.ok()) << ids.status().to_string();
  EXPECT_EQ(*ids, kQwen2Ids);
  EXPECT_EQ((*tok)->decode(*ids), kText);
  EXPECT_EQ((*tok)->decode(*ids, {.skip_special = true}), "the cat sat\nx 1234 \xC3\xA9");
  // NFC: "e" + U+0301 (combining acute) composes to é, the same ids.
  auto decomposed = (*tok)->encode("x 1234 e\xCC\x81", {.add_special = false});
  ASSERT_TRUE(decomposed.ok());
  EXPECT_EQ(*decomposed, std::vector<TokenId>(kQwen2Ids.begin() + 8, kQwen2Ids.end()));
  // parse_special = false: the special token text is encoded as plain text.
  auto literal = (*tok)->encode("<|im_end|>", {.add_special = false, .parse_special = false});
  ASSERT_TRUE(literal.ok());
  EXPECT_EQ(literal->size(), 10u);  // splits "<|", "im", "_end", "|>": 10 single-byte ids
}

TEST(ByteLevelBpe, StreamHoldsBackSplitCharacters) {
  TempDir dir;
  write_text(dir, "tokenizer.json", qwen2_tokenizer_json().dump());
  auto tok = load_tokenizer(dir.path());
  ASSERT_TRUE(tok.ok());
  StreamDecoder stream(**tok);
  std::vector<std::string> pieces;
  for (TokenId id : kQwen2Ids) pieces.push_back(stream.push(id));
  const size_t n = kQwen2Ids.size();
  EXPECT_EQ(pieces[n - 3], " ");
  EXPECT_EQ(pieces[n - 2], "");  // 0xC3 alone is held back
  EXPECT_EQ(pieces[n - 1], "\xC3\xA9");
  std::string all;
  for (const auto& p : pieces) {
    EXPECT_EQ(utf8_sanitize(p), p);
    all += p;
  }
  EXPECT_EQ(all + stream.flush(), kText);
  // A character cut short at the end: flush() emits U+FFFD, never a broken byte.
  StreamDecoder cut(**tok);
  EXPECT_EQ(cut.push(120), "x");
  EXPECT_EQ(cut.push(195), "");
  EXPECT_EQ(cut.flush(), std::string(kReplacementChar));
}

json gguf_json(const std::string& model, const std::string& pre) {
  json tokens = json::array();
  json types = json::array();
  const json vocab = byte_level_vocab();
  std::vector<std::string> by_id(263);
  for (const auto& [piece, id] : vocab.items()) by_id[id.get<size_t>()] = piece;
  for (const auto& p : by_id) {
    tokens.push_back(p);
    types.push_back(1);
  }
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    tokens.push_back(s);
    types.push_back(3);
  }
  return {{"format", "rdrr-gguf-tokenizer"},
          {"version", 1},
          {"metadata", {{"tokenizer.ggml.model", model}, {"tokenizer.ggml.pre", pre}, {"tokenizer.ggml.tokens", tokens},
                        {"tokenizer.ggml.token_type", types}, {"tokenizer.ggml.merges", byte_level_merges()},
                        {"tokenizer.ggml.bos_token_id", 263}, {"tokenizer.ggml.eos_token_id", 265},
                        {"tokenizer.ggml.add_bos_token", false}}}};
}

TEST(ByteLevelBpe, GgufGpt2Qwen2AndLlama3Splits) {
  TempDir dir;
  write_text(dir, "tokenizer.gguf.json", gguf_json("gpt2", "qwen2").dump());
  auto qwen = load_tokenizer(dir.path());
  ASSERT_TRUE(qwen.ok()) << qwen.status().to_string();
  EXPECT_EQ((*qwen)->model_kind(), "gguf-gpt2");
  EXPECT_EQ((*qwen)->eos_ids(), std::vector<TokenId>{265});
  auto ids = (*qwen)->encode(kText);
  ASSERT_TRUE(ids.ok()) << ids.status().to_string();
  EXPECT_EQ(*ids, kQwen2Ids);
  EXPECT_EQ((*qwen)->decode(*ids), kText);

  // llama-bpe: ignore_merges takes " sat" whole (262); digits go in threes: "123", "4" -> still single bytes.
  write_text(dir, "tokenizer.gguf.json", gguf_json("gpt2", "llama-bpe").dump());
  auto llama3 = load_tokenizer(dir.path());
  ASSERT_TRUE(llama3.ok()) << llama3.status().to_string();
  auto ids3 = (*llama3)->encode("the sat 1234");
  ASSERT_TRUE(ids3.ok());
  EXPECT_EQ(*ids3, (std::vector<TokenId>{116, 256, 262, 32, 49, 50, 51, 52}));

  // Manifest info turns BOS insertion on.
  TokenizerInfo info;
  info.add_bos_token = true;
  info.bos_token_id = 263;
  info.eos_token_ids = {265, 263};
  auto with_bos = load_tokenizer(dir.path(), &info);
  ASSERT_TRUE(with_bos.ok());
  auto ids4 = (*with_bos)->encode("x");
  ASSERT_TRUE(ids4.ok());
  EXPECT_EQ(*ids4, (std::vector<TokenId>{263, 120}));
  EXPECT_EQ((*with_bos)->eos_ids(), (std::vector<TokenId>{265, 263}));
}

// Metaspace (Llama-2 legacy=false / Gemma style) with prepend_scheme "first" and a Metaspace decoder.
TEST(MetaspaceBpe, PrependFirstOnly) {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"\xE2\x96\x81", 2}, {"a", 3}, {"b", 4}, {"\xE2\x96\x81" "a", 5}};
  json t = {{"added_tokens", json::array({{{"id", 1}, {"content", "<s>"}, {"special", true}}})},
            {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", false}}},
            {"post_processor", {{"type", "TemplateProcessing"},
                                {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                                {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
            {"decoder", {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", false}}},
            {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"vocab", vocab},
                       {"merges", json::array({json::array({"\xE2\x96\x81", "a"})})}}}};
  TempDir dir;
  write_text(dir, "tokenizer.json", t.dump());
  auto tok = load_tokenizer(dir.path());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // "a b<s>a": first segment "▁a▁b" -> ▁a, ▁, b; after <s> no prepend (not at offset 0): a.
  auto ids = (*tok)->encode("a b<s>a");
  ASSERT_TRUE(ids.ok()) << ids.status().to_string();
  EXPECT_EQ(*ids, (std::vector<TokenId>{1, 5, 2, 4, 1, 3}));
  // "xy" is unknown: fused into one <unk>.
  auto unk = (*tok)->encode("axy", {.add_special = false});
  ASSERT_TRUE(unk.ok());
  EXPECT_EQ(*unk, (std::vector<TokenId>{5, 0}));
  EXPECT_EQ((*tok)->decode(std::vector<TokenId>{5, 2, 4}), "a b");
}

// ---- errors ----

TEST(TokenizerErrors, MissingFile) {
  TempDir dir;
  auto tok = load_tokenizer(dir.path());
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tok.status().message().find("tokenizer.json"), std::string::npos);
  EXPECT_NE(tok.status().message().find("tokenizer.gguf.json"), std::string::npos);
  auto missing = load_tokenizer(dir.path() / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto other = load_tokenizer_file(write_text(dir, "vocab.txt", "x"));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kUnsupported);
}

Status load_json_error(const json& j) {
  TempDir dir;
  write_text(dir, "tokenizer.json", j.dump());
  auto tok = load_tokenizer(dir.path());
  return tok.status();
}

TEST(TokenizerErrors, MalformedTokenizerJsonNamesTheField) {
  TempDir dir;
  write_text(dir, "tokenizer.json", "{\"model\": ");
  auto syntax = load_tokenizer(dir.path());
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.status().code(), StatusCode::kParse);
  EXPECT_NE(syntax.status().message().find("tokenizer.json"), std::string::npos);

  const json vocab = {{"a", 0}, {"b", 1}, {"ab", 2}};
  Status s = load_json_error({{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a b", 7})}}}});
  EXPECT_EQ(s.code(), StatusCode::kSchema);
  EXPECT_NE(s.message().find("tokenizer.json: /model/merges/1"), std::string::npos) << s.message();

  s = load_json_error({{"model", {{"type", "BPE"}, {"vocab", vocab}}}});
  EXPECT_EQ(s.code(), StatusCode::kSchema);
  EXPECT_NE(s.message().find("/model/merges: missing"), std::string::npos) << s.message();

  s = load_json_error({{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a c"})}}}});
  EXPECT_EQ(s.code(), StatusCode::kSchema);
  EXPECT_NE(s.message().find("/model/merges/0"), std::string::npos) << s.message();

  s = load_json_error({{"added_tokens", json::array({{{"content", "<x>"}}})},
                       {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}});
  EXPECT_EQ(s.code(), StatusCode::kSchema);
  EXPECT_NE(s.message().find("/added_tokens/0/id: missing"), std::string::npos) << s.message();

  s = load_json_error({{"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}}},
                       {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}});
  EXPECT_EQ(s.code(), StatusCode::kParse);
  EXPECT_NE(s.message().find("/pre_tokenizer/pattern/Regex"), std::string::npos) << s.message();
}

TEST(TokenizerErrors, UnknownTypesAreUnsupported) {
  const json bpe = {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array()}};
  Status s = load_json_error({{"model", {{"type", "WordPiece"}, {"vocab", {{"a", 0}}}}}});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("/model/type"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("WordPiece"), std::string::npos);

  s = load_json_error({{"normalizer", {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "Lowercase"}}})}}}, {"model", bpe}});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("/normalizer/normalizers/0/type"), std::string::npos) << s.message();

  s = load_json_error({{"decoder", {{"type", "WordPiece"}}}, {"model", bpe}});
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("/decoder/type"), std::string::npos) << s.message();

  TempDir dir;
  json g = gguf_json("bert", "default");
  write_text(dir, "tokenizer.gguf.json", g.dump());
  auto tok = load_tokenizer(dir.path());
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(tok.status().message().find("tokenizer.ggml.model"), std::string::npos) << tok.status().message();
  for (const char* name : {"deepseek-coder", "default"}) {
    write_text(dir, "tokenizer.gguf.json", gguf_json("gpt2", name).dump());
    auto pre = load_tokenizer(dir.path());
    ASSERT_FALSE(pre.ok());
    EXPECT_EQ(pre.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(pre.status().message().find(std::string("'") + name + "'"), std::string::npos) << pre.status().message();
  }
}

TEST(TokenizerErrors, InvalidUtf8AndUnknownCharacters) {
  TempDir dir;
  write_text(dir, "tokenizer.json", qwen2_tokenizer_json().dump());
  auto tok = load_tokenizer(dir.path());
  ASSERT_TRUE(tok.ok());
  auto bad = (*tok)->encode("ab\xC3");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("byte 2"), std::string::npos);
  // A BPE without byte fallback or unk cannot encode a character outside its vocabulary.
  const json t = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array()}}}};
  write_text(dir, "tokenizer.json", t.dump());
  auto small = load_tokenizer(dir.path());
  ASSERT_TRUE(small.ok()) << small.status().to_string();
  auto unk = (*small)->encode("ab");
  ASSERT_FALSE(unk.ok());
  EXPECT_EQ(unk.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unk.status().message().find("'b'"), std::string::npos);
}

// Fuzzer reproducers (tests/fuzz, fuzz_tokenizer_model): tokenizer.model protos holding an empty piece made
// libsentencepiece throw darts_clone's "zero-length key" exception out of Load (std::terminate in rdrr-run); it
// is a kParse error naming the file.
TEST(SentencePiece, MalformedModelThatThrowsIsAParseError) {
  TempDir dir;
  const std::string reproducers[] = {
      std::string("\x0a\x0e\x0a\x05\xfe\x01\x00\x00\x3e\x15\x00\x00\x00\x00\x18\x02\x0a\x0c\x0a\x03\xc3\xa9\x20\x15"
                  "\x00\x00\x00\x00\x18\x3e\x0a\x0d\x0a\x04\x9c\x7e\xe8\xaa\x15\x00\x00\x00\x00\x18\x03\x0a\x0f"
                  "\x0a\x06\x3c\x30\x78\x30\x0a\x0e\x0a\x05\x00\x00\x75\x6e\x6b",
                  62),
      std::string("\x0a\x0e\x0a\x05\x3c\x75\x6e\x6b\x3e\x15\x00\x00\x00\x00\x18\x02\x0a\x0c\x0a\x03\xc3\xa9\x20\x15"
                  "\x00\x00\x00\x00\x18\x03\x0a\x0d\x0a\x04\x9c\xac\xe8\x8a\x15\x00\x00\x00\x00\x18\x03\x0a\x0f"
                  "\x0a\x06\x3c\x30\x78\x30\x0a\x0e\x0a\x05\x00\x23\xc3\x0a\x0b",
                  62),
  };
  for (const std::string& bytes : reproducers) {
    const fs::path file = write_text(dir, "tokenizer.model", bytes);
    auto tok = load_tokenizer_file(file);
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.status().code(), StatusCode::kParse) << tok.status().to_string();
    EXPECT_NE(tok.status().message().find("tokenizer.model: SentencePiece"), std::string::npos)
        << tok.status().to_string();
  }
}

}  // namespace
}  // namespace rdrr::tok
