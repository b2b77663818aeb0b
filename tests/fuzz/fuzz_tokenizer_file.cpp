// libFuzzer target, built once per tokenizer file kind (RDRR_FUZZ_TOKENIZER_FILE: tokenizer.json,
// tokenizer.model through libsentencepiece, tokenizer.gguf.json): the input is the file; an accepted
// tokenizer then encodes fixed texts, decodes them back (whole and streamed) and maps pieces.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "tokenizer/tokenizer.h"

#ifndef RDRR_FUZZ_TOKENIZER_FILE
#error "RDRR_FUZZ_TOKENIZER_FILE names the tokenizer file kind"
#endif

namespace {

constexpr std::string_view kTexts[] = {
    "Once upon a time, there was a little girl.",
    "  leading spaces, tabs\tand\nnew lines\n\n",
    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 12345 <s></s><|im_start|>",
    "",
};

void exercise(const rdrr::tok::Tokenizer& tok) {
  for (std::string_view text : kTexts) {
    auto ids = tok.encode(text);
    if (!ids.ok()) continue;
    (void)tok.decode(*ids);
    rdrr::tok::StreamDecoder stream(tok, {.skip_special = true});
    for (rdrr::tok::TokenId id : *ids) (void)stream.push(id);
    (void)stream.flush();
  }
  const size_t n = tok.vocab_size();
  std::vector<rdrr::tok::TokenId> all;
  for (size_t id = 0; id < n && id < 512; ++id) all.push_back(static_cast<rdrr::tok::TokenId>(id));
  all.push_back(-1);
  all.push_back(static_cast<rdrr::tok::TokenId>(n));
  (void)tok.decode(all);
  for (rdrr::tok::TokenId id : all) (void)tok.piece_to_token(tok.token_to_piece(id));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = rdrr::fuzz::scratch_dir() / RDRR_FUZZ_TOKENIZER_FILE;
  rdrr::fuzz::write_bytes(path, rdrr::fuzz::as_view(data, size));
  auto tok = rdrr::tok::load_tokenizer_file(path);
  if (tok.ok()) exercise(**tok);
  return 0;
}
