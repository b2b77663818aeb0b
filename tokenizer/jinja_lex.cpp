// Jinja subset: template segmentation (whitespace control, trim_blocks, lstrip_blocks) and the
// expression lexer.
#include <cctype>

#include "tokenizer/jinja_lex.h"

namespace rdrr::tok::jinja {

Status parse_error(int line, std::string_view msg) {
  return error(StatusCode::kParse, "chat template line " + std::to_string(line) + ": " + std::string(msg));
}

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Finds the closer of a tag whose body starts at `pos`, skipping quoted strings.
size_t find_closer(std::string_view src, size_t pos, std::string_view closer) {
  char quote = 0;
  for (size_t i = pos; i < src.size(); ++i) {
    const char c = src[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (src.compare(i, closer.size(), closer) == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Result<std::vector<Item>> segment(std::string_view src) {
  std::vector<Item> items;
  size_t pos = 0;
  int line = 1;
  bool strip_next = false;  // the previous tag ended with '-'
  bool trim_next = false;   // the previous tag was a block/comment (trim_blocks)
  auto count_lines = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) line += src[i] == '\n';
  };
  while (pos <= src.size()) {
    size_t open = src.find('{', pos);
    while (open != std::string_view::npos && open + 1 < src.size() &&
           src[open + 1] != '{' && src[open + 1] != '%' && src[open + 1] != '#') {
      open = src.find('{', open + 1);
    }
    if (open + 1 >= src.size()) open = std::string_view::npos;
    std::string text(src.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos));
    const int text_line = line;
    count_lines(pos, open == std::string_view::npos ? src.size() : open);
    if (strip_next) {
      size_t b = 0;
      while (b < text.size() && is_ws(text[b])) ++b;
      text.erase(0, b);
    } else if (trim_next && !text.empty() && text[0] == '\n') {
      text.erase(0, 1);
    } else if (trim_next && text.size() >= 2 && text[0] == '\r' && text[1] == '\n') {
      text.erase(0, 2);
    }
    if (open == std::string_view::npos) {
      if (!text.empty()) items.push_back({Item::Kind::kText, std::move(text), text_line});
      break;
    }
    const char kind = src[open + 1];
    const std::string_view closer = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    size_t body_begin = open + 2;
    const bool strip_before = body_begin < src.size() && src[body_begin] == '-';
    const bool keep_before = body_begin < src.size() && src[body_begin] == '+';
    if (strip_before || keep_before) ++body_begin;
    const size_t close = kind == '#' ? src.find(closer, body_begin) : find_closer(src, body_begin, closer);
    if (close == std::string_view::npos) return parse_error(line, "unterminated '{" + std::string(1, kind) + "'");
    size_t body_end = close;
    strip_next = body_end > body_begin && src[body_end - 1] == '-';
    if (strip_next) --body_end;
    const bool is_block = kind != '{';
    if (strip_before) {
      while (!text.empty() && is_ws(text.back())) text.pop_back();
    } else if (is_block && !keep_before) {  // lstrip_blocks: only spaces/tabs between line start and the tag
      size_t j = open;
      while (j > 0 && (src[j - 1] == ' ' || src[j - 1] == '\t')) --j;
      if (j == 0 || src[j - 1] == '\n') {
        for (size_t n = open - j; n > 0 && !text.empty() && (text.back() == ' ' || text.back() == '\t'); --n) text.pop_back();
      }
    }
    if (!text.empty()) items.push_back({Item::Kind::kText, std::move(text), text_line});
    const int tag_line = line;
    count_lines(open, close + 2);
    trim_next = is_block;
    if (kind != '#') {
      items.push_back({kind == '{' ? Item::Kind::kExpr : Item::Kind::kStmt,
                       std::string(src.substr(body_begin, body_end - body_begin)), tag_line});
    }
    pos = close + 2;
  }
  return items;
}

Result<std::vector<Tok>> lex(std::string_view s, int line) {
  std::vector<Tok> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (is_ws(c)) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Tok::Kind::kName, std::string(s.substr(i, j - i))});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || (s[j] == '.' && !is_float && j + 1 < s.size() &&
                                                                                   std::isdigit(static_cast<unsigned char>(s[j + 1]))))) {
        is_float = is_float || s[j] == '.';
        ++j;
      }
      out.push_back({is_float ? Tok::Kind::kFloat : Tok::Kind::kInt, std::string(s.substr(i, j - i))});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          v += s[j];
          continue;
        }
        const char e = s[++j];
        v += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      }
      if (j >= s.size()) return parse_error(line, "unterminated string literal");
      out.push_back({Tok::Kind::kString, std::move(v)});
      i = j + 1;
    } else {
      static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">=", "//", "**"};
      std::string op(1, c);
      for (std::string_view t : kTwo) {
        if (s.compare(i, 2, t) == 0) op = std::string(t);
      }
      if (op.size() == 1 && std::string_view("()[]{}.,:|~+-*/%<>=!").find(c) == std::string_view::npos) {
        return parse_error(line, "unexpected character '" + op + "'");
      }
      out.push_back({Tok::Kind::kOp, op});
      i += op.size();
    }
  }
  out.push_back({Tok::Kind::kEnd, ""});
  return out;
}

}  // namespace rdrr::tok::jinja
