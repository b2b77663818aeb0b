#include "convert/json_util.h"

#include <set>
#include <vector>

namespace rdrr::convert {

std::optional<uint64_t> find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const uint64_t n = text.size();
  uint64_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len = 0;
    uint32_t cp = 0;
    uint32_t min_cp = 0;
    if ((c & 0xe0u) == 0xc0u) {
      len = 2, cp = c & 0x1fu, min_cp = 0x80;
    } else if ((c & 0xf0u) == 0xe0u) {
      len = 3, cp = c & 0x0fu, min_cp = 0x800;
    } else if ((c & 0xf8u) == 0xf0u) {
      len = 4, cp = c & 0x07u, min_cp = 0x10000;
    } else {
      return i;
    }
    if (n - i < static_cast<uint64_t>(len)) return i;
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = s[i + static_cast<uint64_t>(k)];
      if ((cc & 0xc0u) != 0x80u) return i;
      cp = (cp << 6) | (cc & 0x3fu);
    }
    if (cp < min_cp || cp > 0x10ffffu || (cp >= 0xd800u && cp <= 0xdfffu)) return i;
    i += static_cast<uint64_t>(len);
  }
  return std::nullopt;
}

Result<nlohmann::json> parse_json_strict(std::string_view text, std::string_view what) {
  const std::string where(what);
  if (const auto bad = find_invalid_utf8(text)) {
    return error(StatusCode::kParse, where + ": not valid UTF-8 at byte " + std::to_string(*bad));
  }
  // nlohmann keeps one of two equal keys silently: watch the key events, one key set per open object.
  // The callback aborts the parse (by throwing a private type) on the first duplicate or on nesting deeper
  // than kMaxJsonDepth (nlohmann's dump() and our walkers recurse).
  struct Abort {
    std::string message;
  };
  std::vector<std::set<std::string>> open_objects;
  const nlohmann::json::parser_callback_t watch = [&](int depth, nlohmann::json::parse_event_t event,
                                                      nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if ((event == E::object_start || event == E::array_start) && depth >= kMaxJsonDepth) {
      throw Abort{"nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
    }
    if (event == E::object_start) {
      open_objects.emplace_back();
    } else if (event == E::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == E::key && !open_objects.empty() && parsed.is_string()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) throw Abort{"duplicate JSON key '" + key + "'"};
    }
    return true;
  };
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text.begin(), text.end(), watch, /*allow_exceptions=*/true,
                                  /*ignore_comments=*/false);
  } catch (const Abort& a) {
    return error(StatusCode::kParse, where + ": " + a.message);
  } catch (const nlohmann::json::exception& e) {
    return error(StatusCode::kParse, where + ": invalid JSON: " + e.what());
  }
  return value;
}

std::string json_brief(const nlohmann::json& j) {
  constexpr size_t kMaxChars = 80;
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > kMaxChars) s = s.substr(0, kMaxChars) + "...";
  return s;
}

}  // namespace rdrr::convert
