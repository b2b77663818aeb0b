// Unicode normalization forms (tokenizer.json NFC/NFD/NFKC/NFKD normalizers) through ICU.
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

#include "tokenizer/pipeline.h"

namespace rdrr::tok {

Result<std::string> unicode_normalize(std::string_view text, const std::string& form) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);  // every form leaves ASCII unchanged
  UErrorCode err = U_ZERO_ERROR;
  const UNormalizer2* norm = nullptr;
  if (form == "NFC") {
    norm = unorm2_getNFCInstance(&err);
  } else if (form == "NFD") {
    norm = unorm2_getNFDInstance(&err);
  } else if (form == "NFKC") {
    norm = unorm2_getNFKCInstance(&err);
  } else if (form == "NFKD") {
    norm = unorm2_getNFKDInstance(&err);
  } else {
    return error(StatusCode::kInvalidArgument, "unicode normalization form '" + form + "' is unknown");
  }
  if (U_FAILURE(err)) return error(StatusCode::kInternal, std::string("ICU ") + form + ": " + u_errorName(err));
  const auto fail = [&](const char* what) {
    return error(StatusCode::kInvalidArgument, std::string("ICU ") + form + " " + what + ": " + u_errorName(err));
  };
  int32_t n16 = 0;
  u_strFromUTF8(nullptr, 0, &n16, text.data(), static_cast<int32_t>(text.size()), &err);
  if (err != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(err)) return fail("UTF-8 -> UTF-16");
  err = U_ZERO_ERROR;
  std::vector<UChar> src(static_cast<size_t>(n16) + 1);
  u_strFromUTF8(src.data(), n16 + 1, &n16, text.data(), static_cast<int32_t>(text.size()), &err);
  if (U_FAILURE(err)) return fail("UTF-8 -> UTF-16");
  std::vector<UChar> dst(static_cast<size_t>(n16) * 4 + 16);  // NFKD grows at most ~18x; retry below
  int32_t n_out = unorm2_normalize(norm, src.data(), n16, dst.data(), static_cast<int32_t>(dst.size()), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    err = U_ZERO_ERROR;
    dst.resize(static_cast<size_t>(n_out) + 1);
    n_out = unorm2_normalize(norm, src.data(), n16, dst.data(), static_cast<int32_t>(dst.size()), &err);
  }
  if (U_FAILURE(err)) return fail("normalize");
  int32_t n8 = 0;
  u_strToUTF8(nullptr, 0, &n8, dst.data(), n_out, &err);
  if (err != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(err)) return fail("UTF-16 -> UTF-8");
  err = U_ZERO_ERROR;
  std::string out(static_cast<size_t>(n8) + 1, '\0');
  u_strToUTF8(out.data(), n8 + 1, &n8, dst.data(), n_out, &err);
  if (U_FAILURE(err)) return fail("UTF-16 -> UTF-8");
  out.resize(static_cast<size_t>(n8));
  return out;
}

}  // namespace rdrr::tok
