// Chat templates: the published templates of Meta-Llama-3-8B-Instruct, Qwen2-7B-Instruct (ChatML) and
// gemma-3-1b-it (copied verbatim from their tokenizer_config.json files; the fixture models carry none),
// rendered over two-message conversations. Expected strings are written from the template semantics
// under transformers' settings (trim_blocks, lstrip_blocks), not taken from our output.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "rdrr/test_temp_dir.h"
#include "tokenizer/tokenizer.h"

namespace rdrr::tok {
namespace {

constexpr std::string_view kLlama3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 "
    "%}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

constexpr std::string_view kQwen2 =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou "
    "are a helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' "
    "}}{% endif %}";

constexpr std::string_view kGemma3 = R"({{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '

' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '

' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '
' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>
' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model
'}}
{%- endif -%}
)";

const std::vector<ChatMessage> kSystemUser = {{"system", "You are terse."}, {"user", " What is 2+2? "}};
const std::vector<ChatMessage> kUserAssistant = {{"user", "Hi"}, {"assistant", "Hello."}};

std::string render(std::string_view tmpl, const std::vector<ChatMessage>& msgs, bool gen, std::string bos) {
  auto out = apply_chat_template(tmpl, msgs, {.add_generation_prompt = gen, .bos_token = std::move(bos), .eos_token = ""});
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? *out : "";
}

TEST(ChatTemplate, Llama3) {
  EXPECT_EQ(render(kLlama3, kSystemUser, true, "<|begin_of_text|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render(kLlama3, kUserAssistant, false, "<|begin_of_text|>"),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>");
}

TEST(ChatTemplate, Qwen2ChatML) {
  EXPECT_EQ(render(kQwen2, kSystemUser, true, ""),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\n What is 2+2? <|im_end|>\n"
            "<|im_start|>assistant\n");
  // Without a system message the template inserts the default one.
  EXPECT_EQ(render(kQwen2, kUserAssistant, false, ""),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n");
}

TEST(ChatTemplate, Gemma3) {
  // The system message becomes a prefix of the first user turn; assistant is called "model".
  EXPECT_EQ(render(kGemma3, kSystemUser, true, "<bos>"),
            "<bos><start_of_turn>user\nYou are terse.\n\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(render(kGemma3, kUserAssistant, false, "<bos>"),
            "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n");
}

TEST(ChatTemplate, RaiseExceptionIsAnError) {
  const std::vector<ChatMessage> wrong = {{"assistant", "Hello."}, {"user", "Hi"}};
  auto out = apply_chat_template(kGemma3, wrong, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("Conversation roles must alternate"), std::string::npos) << out.status().message();
}

// trim_blocks + lstrip_blocks: block tags on their own lines leave no trace; expression tags keep theirs.
TEST(ChatTemplate, TrimAndLstripBlocks) {
  const std::string tmpl =
      "{% for m in messages %}\n"
      "  {% if m.role == 'user' %}\n"
      "U: {{ m.content }}\n"
      "  {% else %}\n"
      "A: {{ m.content }}\n"
      "  {% endif %}\n"
      "{% endfor %}\n";
  EXPECT_EQ(render(tmpl, kUserAssistant, false, ""), "U: Hi\nA: Hello.\n");
}

TEST(ChatTemplate, ExpressionSubset) {
  const std::string tmpl =
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}"
      "{{ ns.n }}|{{ messages | length }}|{{ messages[-1]['content'] | upper }}|{{ messages[1:] | length }}"
      "|{{ 'x' ~ 7 % 4 }}|{{ 'a' if messages[0].role in ['user', 'system'] else 'b' }}"
      "|{{ messages[0].content.startswith('H') }}|{{ undefined_var is defined }}|{{ '  pad ' | trim }}"
      "|{{ [1, 2, 3] | join('-') }}|{{ {'k': 'v'} | tojson }}|{{ messages[0]['content'][::-1] }}";
  EXPECT_EQ(render(tmpl, kUserAssistant, false, ""), "2|2|HELLO.|1|x3|a|True|False|pad|1-2-3|{\"k\": \"v\"}|iH");
}

TEST(ChatTemplate, SyntaxErrorsNameTheLine) {
  auto unterminated = apply_chat_template("ok\n{% if x %}never closed", {}, {});
  ASSERT_FALSE(unterminated.ok());
  EXPECT_EQ(unterminated.status().code(), StatusCode::kParse);
  EXPECT_NE(unterminated.status().message().find("endif"), std::string::npos) << unterminated.status().message();
  auto bad = apply_chat_template("line1\nline2 {{ 1 + }}", {}, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kParse);
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();
  auto unknown = apply_chat_template("{{ 'x' | frobnicate }}", {}, {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(unknown.status().message().find("frobnicate"), std::string::npos);
  auto deep = apply_chat_template("{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}", {}, {});
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), StatusCode::kParse);
  EXPECT_NE(deep.status().message().find("too deeply"), std::string::npos);
  auto macro = apply_chat_template("{% macro f() %}{% endmacro %}", {}, {});
  ASSERT_FALSE(macro.ok());
  EXPECT_NE(macro.status().message().find("macro"), std::string::npos);
}

// Fuzzer reproducers (issue: chat templates crashed rdrr-run --chat): untrusted templates and messages end in
// an error value or valid output, never an exception.
TEST(ChatTemplate, OutOfRangeLiteralsAreParseErrors) {
  auto big = apply_chat_template("{% if 77777777777777777777 %}x{% endif %}", {}, {});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kParse);
  EXPECT_NE(big.status().message().find("integer literal 77777777777777777777 is out of range"), std::string::npos)
      << big.status().message();
  const std::string e400 = "1" + std::string(400, '0') + ".0";  // 1e400: past double's range
  auto huge = apply_chat_template("{{ " + e400 + " }}", {}, {});
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kParse);
  EXPECT_NE(huge.status().message().find("float literal 1000"), std::string::npos)
      << huge.status().message();
  auto fine = apply_chat_template("{{ 9223372036854775807 }}|{{ 2.5 }}", {}, {});
  ASSERT_TRUE(fine.ok()) << fine.status().to_string();
  EXPECT_EQ(*fine, "9223372036854775807|2.5");
}

// Fuzzer reproducers (tests/fuzz, fuzz_chat_template: ASan stack-overflow in ExprParser::unary on
// "{% for m in messages %}...{{ ---------(-------W----...", 1,800 unary minus signs): nesting that recursion or
// operator/filter/postfix chains make arbitrarily deep is a kParse error, never a stack overflow while parsing,
// evaluating or destroying the expression tree.
TEST(ChatTemplate, DeepNestingIsAParseErrorNotAStackOverflow) {
  const std::vector<ChatMessage> msgs = {{"user", "Hi"}};
  // "{{ " + head + `n` times `repeat` + tail + " }}", built by appending (GCC 12 warns on operator+ chains here).
  const auto output = [](std::string_view head, std::string_view repeat, int n, std::string_view tail) {
    std::string t = "{{ ";
    t += head;
    for (int i = 0; i < n; ++i) t += repeat;
    t += tail;
    t += " }}";
    return t;
  };
  const auto expect_too_deep = [&](const std::string& tmpl) {
    auto out = apply_chat_template(tmpl, msgs, {});
    ASSERT_FALSE(out.ok()) << tmpl.substr(0, 60);
    EXPECT_EQ(out.status().code(), StatusCode::kParse) << out.status().to_string();
    EXPECT_NE(out.status().message().find("nested too deeply"), std::string::npos) << out.status().to_string();
  };
  std::string reproducer = "{% for m in messages %}";
  reproducer += output("", "-", 1800, "1");
  reproducer += "{% endfor %}";
  expect_too_deep(reproducer);
  expect_too_deep(output("", "not ", 100000, "true"));
  expect_too_deep(output("", "1+", 100000, "1"));
  expect_too_deep(output("'x'", "|trim", 100000, ""));
  expect_too_deep(output("messages", ".a", 100000, ""));
  expect_too_deep(output("", "1 if false else ", 100000, "2"));
  expect_too_deep(output(std::string(100000, '['), "]", 100000, ""));
  // Chains up to the bound still render.
  auto fine = apply_chat_template(output("", "1+", 200, "1") + "|" + output("", "-", 50, "1"), msgs, {});
  ASSERT_TRUE(fine.ok()) << fine.status().to_string();
  EXPECT_EQ(*fine, "201|1");
}

TEST(ChatTemplate, TojsonOfInvalidUtf8ReplacesTheBytes) {
  const std::vector<ChatMessage> cafe = {{"user", "caf\xc3\xa9"}};
  // A byte slice through the two-byte e-acute leaves a lone 0xC3.
  auto out = apply_chat_template("{{ messages[0].content[:-1] | tojson }}|{{ {messages[0].content[:-1]: 1} | tojson }}",
                                 cafe, {});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "\"caf\xef\xbf\xbd\"|{\"caf\xef\xbf\xbd\": 1}");
}

TEST(ChatTemplate, LoadFromTokenizerConfig) {
  namespace fs = std::filesystem;
  const test::TempDir tmp;
  const fs::path& dir = tmp.path();
  // The fixture checkpoints have no chat template: kNotFound naming where it looked.
  auto none = load_chat_template(fs::path(RDRR_FIXTURES_DIR) / "tiny-llama" / "hf");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("tokenizer_config.json"), std::string::npos);
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>", "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}"})";
  auto cfg = load_chat_template(dir);
  ASSERT_TRUE(cfg.ok()) << cfg.status().to_string();
  EXPECT_EQ(cfg->bos_token, "<s>");
  EXPECT_EQ(cfg->eos_token, "</s>");
  auto text = apply_chat_template(cfg->chat_template, kUserAssistant, {.add_generation_prompt = false, .bos_token = cfg->bos_token, .eos_token = cfg->eos_token});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "<s>[user]Hi</s>[assistant]Hello.</s>");
  // transformers 5 layout: the template in chat_template.jinja.
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": "<s>", "eos_token": "</s>"})";
  std::ofstream(dir / "chat_template.jinja") << "{% for m in messages %}{{ m.role }}:{{ m.content }}{{ eos_token }}{% endfor %}";
  auto jinja_file = load_chat_template(dir);
  ASSERT_TRUE(jinja_file.ok()) << jinja_file.status().to_string();
  EXPECT_EQ(jinja_file->source, "chat_template.jinja");
  auto text2 = apply_chat_template(jinja_file->chat_template, kUserAssistant, {.add_generation_prompt = false, .bos_token = jinja_file->bos_token, .eos_token = jinja_file->eos_token});
  ASSERT_TRUE(text2.ok());
  EXPECT_EQ(*text2, "user:Hi</s>assistant:Hello.</s>");
  std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": 3})";
  auto bad = load_chat_template(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kSchema);
  EXPECT_NE(bad.status().message().find("/chat_template"), std::string::npos);
}

// encode_chat: the template writes BOS; encoding adds none, so "<s>" appears once, and "</s>" in the
// rendered text becomes the EOS id. Fixture tokenizer (tiny-llama tokenizer.json).
TEST(ChatTemplate, EncodeChatDoesNotDoubleBos) {
  auto tok = load_tokenizer(std::filesystem::path(RDRR_FIXTURES_DIR) / "tiny-llama" / "hf");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  ChatTemplateConfig cfg{"{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}", "<s>", "</s>", "test"};
  const std::vector<ChatMessage> msgs = {{"user", "Once upon a time"}};
  auto ids = encode_chat(**tok, cfg, msgs);
  ASSERT_TRUE(ids.ok()) << ids.status().to_string();
  auto plain = (*tok)->encode("Once upon a time");  // BOS + text
  ASSERT_TRUE(plain.ok());
  std::vector<TokenId> expected = *plain;
  expected.push_back(2);
  EXPECT_EQ(*ids, expected);
}

}  // namespace
}  // namespace rdrr::tok
