// Internal to tokenizer/: Unicode-aware regular expressions for pre-tokenizers and normalizers, through
// PCRE2 in UTF + UCP mode (\p{L}, \p{N}, \s are Unicode-aware, lookahead works), which accepts the
// Oniguruma/Rust patterns that tokenizer.json files carry (GPT-2, Llama-3, Qwen2 splits).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "quant/status.h"

namespace rdrr::tok {

class Regex {
 public:
  // Errors: kParse with PCRE2's message and the offset in the pattern.
  static Result<Regex> compile(std::string_view pattern);

  // Every non-overlapping match [begin, end) in byte offsets, left to right. Empty matches are skipped.
  // `text` must be valid UTF-8. Errors: kInternal on a PCRE2 match failure (e.g. match limit).
  Result<std::vector<std::pair<size_t, size_t>>> find_all(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::shared_ptr<const Code> code_;  // immutable once compiled: copies share it
  std::string pattern_;
};

}  // namespace rdrr::tok
