#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

namespace rdrr::tok {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int err) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(err, buf, sizeof(buf));
  if (n < 0) return "PCRE2 error " + std::to_string(err);
  return std::string(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

struct MatchData {
  pcre2_match_data* md;
  explicit MatchData(const pcre2_code* code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(md); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
};

}  // namespace

Result<Regex> Regex::compile(std::string_view pattern) {
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
  if (code == nullptr) {
    return error(StatusCode::kParse, "regex '" + std::string(pattern) + "': " + pcre2_message(err) +
                                         " at offset " + std::to_string(err_offset));
  }
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: the interpreter is the fallback
  auto owned = std::make_shared<Code>();
  owned->code = code;
  Regex r;
  r.code_ = std::move(owned);
  r.pattern_ = std::string(pattern);
  return r;
}

Result<std::vector<std::pair<size_t, size_t>>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  MatchData data(code_->code);
  if (data.md == nullptr) return error(StatusCode::kInternal, "regex: out of memory");
  size_t pos = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                               PCRE2_NO_UTF_CHECK, data.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) return error(StatusCode::kInternal, "regex '" + pattern_ + "': " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
    const size_t begin = ov[0];
    const size_t end = ov[1];
    if (end > begin) {
      out.emplace_back(begin, end);
      pos = end;
    } else {
      // Empty match: step over one character.
      if (begin >= text.size()) break;
      size_t step = 1;
      while (begin + step < text.size() && (static_cast<unsigned char>(text[begin + step]) & 0xC0) == 0x80) ++step;
      pos = begin + step;
    }
  }
  return out;
}

}  // namespace rdrr::tok
