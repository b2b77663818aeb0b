// libFuzzer target: chat templates (the Jinja subset: lexer, parser, evaluator). Input: the template, then
// the messages' role and content alternately, separated by kPartSeparator; an even number of parts asks
// for the generation prompt.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "tokenizer/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = rdrr::fuzz::split_parts(rdrr::fuzz::as_view(data, size), 17);
  std::vector<rdrr::tok::ChatMessage> messages;
  for (size_t i = 1; i + 1 < parts.size(); i += 2) {
    messages.push_back({std::string(parts[i]), std::string(parts[i + 1])});
  }
  rdrr::tok::ChatTemplateOptions opts;
  opts.add_generation_prompt = parts.size() % 2 == 0;
  opts.bos_token = "<s>";
  opts.eos_token = "</s>";
  auto text = rdrr::tok::apply_chat_template(parts[0], messages, opts);
  (void)text;
  return 0;
}
