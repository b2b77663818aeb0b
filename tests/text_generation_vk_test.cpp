// Text in, text out on a real device (lavapipe in CI): every fixture model converted to an f32 pack (F32 KV
// cache), its bundled tokenizer encoding the golden prompt texts to the HF token ids, greedy generation from
// the text prompt against the HF greedy continuation (up to the golden's first fragile step, margin < 1e-3),
// stop on EOS, streamed text equal to the decoded ids, and rdrr-run --prompt / --chat end to end with its
// usage and missing-tokenizer / missing-template errors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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
#include "rdrr/sha256.h"
#include "rdrr/test_temp_dir.h"
#include "runtime/executor.h"
#include "runtime/pack.h"
#include "runtime/vk_test_fixture.h"
#include "tokenizer/chat_template.h"
#include "tools/text_generation.h"

extern char** environ;

namespace rdrr {
namespace {

namespace fs = std::filesystem;
using runtime::Executor;
using runtime::Pack;

// Scratch folder of this process, removed at exit (by the creating process only).
const fs::path& scratch_root() {
  static const test::TempDir root("textgen_test");
  return root.path();
}

// The fixture model as an f32 pack with an F32 KV cache, converted once per process.
fs::path pack_dir(const std::string& model) {
  static std::map<std::string, fs::path> done;
  if (auto it = done.find(model); it != done.end()) return it->second;
  convert::ConvertOptions o;
  o.src = fs::path(RDRR_FIXTURES_DIR) / model / "hf";
  o.out = scratch_root() / model;
  o.preset = convert::Preset::kF32;
  o.kv_dtype = KvDtype::kF32;
  o.threads = 2;
  o.sync_to_disk = false;
  auto r = convert::convert_model(o);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return done[model] = o.out;
}

struct GoldenPrompt {
  std::string text;
  std::vector<uint32_t> ids;
  std::vector<uint32_t> greedy;
  std::vector<double> margins;
  // Golden steps before the first one whose top-1 margin is below 1e-3 (ties a float32 run may break
  // either way).
  size_t stable_steps() const {
    size_t n = 0;
    while (n < margins.size() && n < greedy.size() && margins[n] >= 1e-3) ++n;
    return n;
  }
};

std::vector<GoldenPrompt> golden_prompts(const std::string& model) {
  std::ifstream f(fs::path(RDRR_FIXTURES_DIR) / model / "golden" / "hf-f32.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  std::vector<GoldenPrompt> out;
  for (const auto& p : j.at("prompts")) {
    out.push_back({p.at("text").get<std::string>(), p.at("token_ids").get<std::vector<uint32_t>>(),
                   p.at("greedy_token_ids").get<std::vector<uint32_t>>(),
                   p.at("greedy_top1_margin").get<std::vector<double>>()});
  }
  return out;
}

// A loaded pack: manifest, tokenizer, device upload and executor.
struct Loaded {
  Manifest manifest;
  std::unique_ptr<tok::Tokenizer> tok;
  std::unique_ptr<Pack> pack;
  std::unique_ptr<Executor> exec;
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs rdrr-run with `args` (no shell: prompt texts go through verbatim), stdout / stderr captured.
CliResult run_cli(const std::vector<std::string>& args) {
  const fs::path out = scratch_root() / "cli.out", err = scratch_root() / "cli.err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all{RDRR_RUN_BIN};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  CliResult r;
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, RDRR_RUN_BIN, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (spawned != 0) return r;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return r;
  r.exit_code = WEXITSTATUS(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

// A copy of a pack folder (for editing its files and manifest).
fs::path copy_pack(const fs::path& src, const std::string& name) {
  const fs::path dst = scratch_root() / name;
  fs::remove_all(dst);
  fs::copy(src, dst, fs::copy_options::recursive);
  return dst;
}

class TextGenTest : public runtime::testing::VulkanTest {
 protected:
  // Cleared before the shared device goes away (DeviceEnvironment::TearDown).
  static void TearDownTestSuite() { loaded().clear(); }
  static std::map<std::string, std::unique_ptr<Loaded>>& loaded() {
    static std::map<std::string, std::unique_ptr<Loaded>> m;
    return m;
  }
  // The model's pack loaded once per suite (nullptr after a failed assertion).
  Loaded* load(const std::string& model) {
    if (auto it = loaded().find(model); it != loaded().end()) return it->second.get();
    auto l = std::make_unique<Loaded>();
    const fs::path dir = pack_dir(model);
    auto m = read_manifest_file(dir);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (!m.ok()) return nullptr;
    l->manifest = *m;
    auto t = tools::load_pack_tokenizer(dir, l->manifest);
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    auto p = Pack::load(dev(), dir);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    if (!t.ok() || !p.ok()) return nullptr;
    l->tok = std::move(*t);
    l->pack = std::move(*p);
    auto e = Executor::create(dev(), *l->pack, {});
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    if (!e.ok()) return nullptr;
    l->exec = std::move(*e);
    return (loaded()[model] = std::move(l)).get();
  }
};

class TextGenModelTest : public TextGenTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(TextGenModelTest, PackTokenizerEncodesGoldenPromptTexts) {
  const std::string model = GetParam();
  Loaded* l = load(model);
  ASSERT_NE(l, nullptr);
  for (const GoldenPrompt& p : golden_prompts(model)) {
    auto ids = tools::encode_prompt(*l->tok, pack_dir(model), {.text = p.text});
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    EXPECT_EQ(*ids, p.ids) << p.text;
  }
}

// Greedy generation from the text prompt, streamed through generate_text: the HF greedy tokens up to the
// golden's first fragile step; the streamed text is the decode of the generated ids.
TEST_P(TextGenModelTest, GreedyFromTextMatchesHfGolden) {
  const std::string model = GetParam();
  Loaded* l = load(model);
  ASSERT_NE(l, nullptr);
  size_t matched = 0, checked = 0;
  std::string per_prompt;
  for (const GoldenPrompt& p : golden_prompts(model)) {
    auto ids = tools::encode_prompt(*l->tok, pack_dir(model), {.text = p.text});
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    char* buf = nullptr;
    size_t len = 0;
    std::FILE* mem = open_memstream(&buf, &len);
    ASSERT_NE(mem, nullptr);
    tools::GenerationOptions opts;
    opts.max_new_tokens = static_cast<uint32_t>(p.greedy.size());  // no stop ids: the whole golden length
    auto r = tools::generate_text(*l->exec, *l->tok, *ids, opts, mem);
    std::fclose(mem);
    const std::string streamed(buf, len);
    std::free(buf);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_EQ(r->tokens.size(), p.greedy.size());
    EXPECT_FALSE(r->stopped);
    size_t same = 0;
    while (same < r->tokens.size() && r->tokens[same] == p.greedy[same]) ++same;
    const size_t stable = p.stable_steps();
    EXPECT_GE(same, stable) << model << " '" << p.text << "': greedy diverges at step " << same;
    matched += std::min(same, stable);
    checked += stable;
    char figure[48];
    std::snprintf(figure, sizeof figure, " %zu/%zu", std::min(same, stable), stable);
    per_prompt += figure;
    std::vector<tok::TokenId> gen(r->tokens.begin(), r->tokens.end());
    EXPECT_EQ(streamed, l->tok->decode(gen, {.skip_special = true}));
    EXPECT_EQ(r->prompt_tokens, p.ids.size());
    EXPECT_GT(r->prefill_tok_per_s(), 0.0);
    EXPECT_GT(r->decode_tok_per_s(), 0.0);
  }
  std::printf("  %s: greedy from text %zu/%zu tokens equal to the HF golden before its first fragile step "
              "(per prompt:%s)\n", model.c_str(), matched, checked, per_prompt.c_str());
}

// Generation ends right after the first stop id: a token of the golden continuation made a stop id, and
// the manifest's EOS where the golden continuation produces one before its first fragile step.
TEST_P(TextGenModelTest, StopsAtTheFirstStopId) {
  const std::string model = GetParam();
  Loaded* l = load(model);
  ASSERT_NE(l, nullptr);
  const std::vector<GoldenPrompt> prompts = golden_prompts(model);
  const GoldenPrompt& p0 = prompts[0];
  ASSERT_GE(p0.stable_steps(), 4u);
  tools::GenerationOptions opts;
  opts.max_new_tokens = 24;
  opts.stop_ids = {p0.greedy[3]};
  auto r = tools::generate_tokens(*l->exec, p0.ids, opts);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->stopped);
  const auto first = std::find(p0.greedy.begin(), p0.greedy.end(), p0.greedy[3]);
  EXPECT_EQ(r->tokens, std::vector<uint32_t>(p0.greedy.begin(), first + 1));
  const std::vector<uint32_t> eos = tools::eos_stop_ids(l->manifest);
  ASSERT_FALSE(eos.empty());
  opts.stop_ids = eos;
  for (const GoldenPrompt& p : prompts) {
    const auto hit = std::find_first_of(p.greedy.begin(), p.greedy.end(), eos.begin(), eos.end());
    if (hit == p.greedy.end() || size_t(hit - p.greedy.begin()) >= p.stable_steps()) continue;
    auto e = tools::generate_tokens(*l->exec, p.ids, opts);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    EXPECT_TRUE(e->stopped) << p.text;
    EXPECT_EQ(e->tokens, std::vector<uint32_t>(p.greedy.begin(), hit + 1)) << p.text;
    std::printf("  %s: stopped at EOS after %zu tokens, as the HF golden\n", model.c_str(), e->tokens.size());
  }
}

// rdrr-run --prompt TEXT -n 8: stdout is exactly the decode of the ids generate_tokens produces for the
// same prompt (greedy, EOS stops), stderr has the counts and tok/s.
TEST_P(TextGenModelTest, RdrrRunPromptStreamsDecodedText) {
  const std::string model = GetParam();
  Loaded* l = load(model);
  ASSERT_NE(l, nullptr);
  const std::vector<GoldenPrompt> prompts = golden_prompts(model);
  for (const GoldenPrompt* p : {&prompts[0], &prompts[2]}) {  // plain ASCII; curly quotes, accents, newline
    tools::GenerationOptions opts;
    opts.max_new_tokens = 8;
    opts.stop_ids = tools::eos_stop_ids(l->manifest);
    auto want = tools::generate_tokens(*l->exec, p->ids, opts);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    const CliResult r = run_cli({pack_dir(model).string(), "--prompt", p->text, "-n", "8"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<tok::TokenId> gen(want->tokens.begin(), want->tokens.end());
    EXPECT_EQ(r.out, l->tok->decode(gen, {.skip_special = true})) << p->text;
    const std::string counts = "prompt " + std::to_string(p->ids.size()) + " tokens, generated " +
                               std::to_string(want->tokens.size()) + " tokens";
    EXPECT_NE(r.err.find(counts), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("prefill "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tok/s), decode "), std::string::npos) << r.err;
    std::printf("  %s %s", model.c_str(), r.err.substr(r.err.rfind("rdrr-run: prompt")).c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TextGenModelTest, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-gemma3"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

class RdrrRunTextTest : public TextGenTest {};

TEST_F(RdrrRunTextTest, StopsAtEosOnTheCommandLine) {
  // tiny-llama's third golden prompt: EOS (id 2) at step 18 of the HF greedy continuation.
  Loaded* l = load("tiny-llama");
  ASSERT_NE(l, nullptr);
  const GoldenPrompt p = golden_prompts("tiny-llama")[2];
  const auto eos = std::find(p.greedy.begin(), p.greedy.end(), 2u);
  ASSERT_NE(eos, p.greedy.end());
  ASSERT_LT(size_t(eos - p.greedy.begin()), p.stable_steps());
  const CliResult r = run_cli({pack_dir("tiny-llama").string(), "--prompt", p.text, "-n", "24"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<tok::TokenId> gen(p.greedy.begin(), eos + 1);
  EXPECT_EQ(r.out, l->tok->decode(gen, {.skip_special = true}));
  EXPECT_NE(r.err.find("generated " + std::to_string(gen.size()) + " tokens (stop token)"), std::string::npos) << r.err;
  // --ignore-eos runs the full -n.
  const CliResult all = run_cli({pack_dir("tiny-llama").string(), "--prompt", p.text, "-n", "24", "--ignore-eos"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.err.find("generated 24 tokens;"), std::string::npos) << all.err;
}

// A full KV cache ends generation (not an error): a 12-token prompt in 16 positions leaves room for the
// token sampled by the prefill and 4 decode steps.
TEST_F(RdrrRunTextTest, StopsWhenTheContextIsFull) {
  Loaded* l = load("tiny-llama");
  ASSERT_NE(l, nullptr);
  const GoldenPrompt p = golden_prompts("tiny-llama")[0];
  ASSERT_EQ(p.ids.size(), 12u);
  ASSERT_GE(p.stable_steps(), 5u);
  const CliResult r =
      run_cli({pack_dir("tiny-llama").string(), "--prompt", p.text, "-n", "24", "--ctx", "16", "--ignore-eos"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<tok::TokenId> gen(p.greedy.begin(), p.greedy.begin() + 5);
  EXPECT_EQ(r.out, l->tok->decode(gen, {.skip_special = true}));
  EXPECT_NE(r.err.find("generated 5 tokens (context full)"), std::string::npos) << r.err;
}

TEST_F(RdrrRunTextTest, UsageErrorsExitTwo) {
  const std::string dir = pack_dir("tiny-qwen2").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{dir, "--prompt", "hi", "--tokens", "1,2"}, std::vector<std::string>{dir},
        std::vector<std::string>{dir, "--tokens", "1,2", "--chat"},
        std::vector<std::string>{dir, "--prompt", "hi", "--logits", "x.f32"},
        std::vector<std::string>{dir, "--prompt", "hi", "--system", "Be kind."}}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args.size() << " args: " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  EXPECT_NE(run_cli({dir, "--prompt", "hi", "--tokens", "1,2"}).err.find("excludes"), std::string::npos);
}

// Tokenizer files missing from the pack folder: exit 4 naming the pack and the files looked for; --tokens
// cannot load such a pack either (the manifest lists the files), and a manifest listing none is invalid.
TEST_F(RdrrRunTextTest, PackWithoutTokenizerIsAClearError) {
  const fs::path dir = copy_pack(pack_dir("tiny-qwen2"), "no_tokenizer");
  fs::remove(dir / "tokenizer.json");
  fs::remove(dir / "tokenizer.model");
  const CliResult r = run_cli({dir.string(), "--prompt", "hi", "-n", "2"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  for (const std::string& frag : {"pack " + dir.string(), std::string("no usable tokenizer"),
                                 std::string("tokenizer.json, tokenizer.model, tokenizer.gguf.json")}) {
    EXPECT_NE(r.err.find(frag), std::string::npos) << "missing '" << frag << "' in: " << r.err;
  }
  EXPECT_TRUE(r.out.empty());
  auto m = read_manifest_file(dir);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  std::erase_if(m->tokenizer.files, [](const FileRecord& f) { return f.name != "tokenizer_config.json"; });
  std::ofstream(dir / "manifest.json", std::ios::binary | std::ios::trunc) << serialize_manifest(*m);
  const CliResult unlisted = run_cli({dir.string(), "--prompt", "hi"});
  EXPECT_EQ(unlisted.exit_code, 3) << unlisted.err;
  EXPECT_NE(unlisted.err.find("must include tokenizer.json or tokenizer.model"), std::string::npos) << unlisted.err;
}

TEST_F(RdrrRunTextTest, ChatWithoutTemplateIsAClearError) {
  const CliResult r = run_cli({pack_dir("tiny-gemma3").string(), "--prompt", "hi", "--chat"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("--chat"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no chat template"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chat_template.jinja"), std::string::npos) << r.err;
}

// A pack given a chat_template.jinja (listed in its manifest): --chat renders the system and user turns
// with the generation prompt, BOS written by the template through bos_token, and rdrr-run streams the
// continuation of exactly those ids.
TEST_F(RdrrRunTextTest, ChatTemplateFromThePack) {
  const fs::path dir = copy_pack(pack_dir("tiny-llama"), "with_chat_template");
  const std::string tmpl =
      "{{ bos_token }}{% for m in messages %}[{{ m.role | upper }}] {{ m.content | trim }}\n{% endfor %}"
      "{% if add_generation_prompt %}[ASSISTANT]{% endif %}";
  std::ofstream(dir / "chat_template.jinja", std::ios::binary) << tmpl;
  auto m = read_manifest_file(dir);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  m->tokenizer.files.push_back({"chat_template.jinja", tmpl.size(), sha256_hex(std::string_view(tmpl))});
  std::ofstream(dir / "manifest.json", std::ios::binary | std::ios::trunc) << serialize_manifest(*m);
  Loaded* l = load("tiny-llama");
  ASSERT_NE(l, nullptr);
  auto ids = tools::encode_prompt(*l->tok, dir, {.text = " Once upon a time ", .chat = true, .system = "Be kind."});
  ASSERT_TRUE(ids.ok()) << ids.status().to_string();
  auto want = l->tok->encode("<s>[SYSTEM] Be kind.\n[USER] Once upon a time\n[ASSISTANT]", {.add_special = false});
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(*ids, std::vector<uint32_t>(want->begin(), want->end()));
  EXPECT_EQ(ids->front(), 1u);  // BOS once, from the template
  EXPECT_NE(ids->at(1), 1u);
  tools::GenerationOptions opts;
  opts.max_new_tokens = 6;
  opts.stop_ids = tools::eos_stop_ids(l->manifest);
  auto gen = tools::generate_tokens(*l->exec, *ids, opts);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  const CliResult r =
      run_cli({dir.string(), "--prompt", " Once upon a time ", "--chat", "--system", "Be kind.", "-n", "6"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<tok::TokenId> g(gen->tokens.begin(), gen->tokens.end());
  EXPECT_EQ(r.out, l->tok->decode(g, {.skip_special = true}));
  EXPECT_NE(r.err.find("prompt " + std::to_string(ids->size()) + " tokens"), std::string::npos) << r.err;
}

// A chat template that renders nothing: the prompt has no tokens (kInvalidArgument), caught before the
// executor sees it.
TEST_F(RdrrRunTextTest, PromptWithoutTokensIsRejected) {
  Loaded* l = load("tiny-qwen2");
  ASSERT_NE(l, nullptr);
  const fs::path dir = scratch_root() / "empty_chat_template";
  fs::create_directories(dir);
  std::ofstream(dir / "chat_template.jinja", std::ios::binary) << "{% if add_generation_prompt and false %}x{% endif %}";
  auto ids = tools::encode_prompt(*l->tok, dir, {.text = "hi", .chat = true});
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ids.status().message().find("encodes to no tokens"), std::string::npos) << ids.status().to_string();
}

}  // namespace
}  // namespace rdrr
