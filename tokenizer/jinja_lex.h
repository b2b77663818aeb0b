// Internal to tokenizer/: the Jinja subset's template segmentation and expression lexer (jinja_lex.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "quant/status.h"

namespace rdrr::tok::jinja {

// Template text cut into literal text and tag bodies, whitespace control and trim_blocks/lstrip_blocks
// already applied; comments dropped.
struct Item {
  enum class Kind { kText, kExpr, kStmt } kind;
  std::string body;
  int line;
};

struct Tok {
  enum class Kind { kName, kString, kInt, kFloat, kOp, kEnd } kind = Kind::kEnd;
  std::string text;
};

// kParse "chat template line N: msg".
Status parse_error(int line, std::string_view msg);

Result<std::vector<Item>> segment(std::string_view src);

// Tokens of one tag body, ending with a kEnd token.
Result<std::vector<Tok>> lex(std::string_view s, int line);

}  // namespace rdrr::tok::jinja
