#include "rdrr/json_strict.h"

#include <set>
#include <vector>

namespace rdrr {
namespace {

using nlohmann::json;

// Thrown from the parser callback to stop at the first violation; caught in parse_json_strict.
struct ParseAbort {
  std::string message;
};

// Tracks where the parser is (one frame per open object/array) to name duplicate keys precisely.
class StrictWatch {
 public:
  bool on_event(int depth, json::parse_event_t event, const json& parsed) {
    using E = json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (depth >= kMaxJsonDepth) {
          throw ParseAbort{"nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
        }
        frames_.push_back(Frame{event == E::array_start, 0, {}, {}});
        break;
      case E::key:
        on_key(parsed);
        break;
      case E::object_end:
      case E::array_end:
        if (!frames_.empty()) frames_.pop_back();
        element_done();
        break;
      case E::value:
        element_done();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_array;
    size_t index;
    std::string key;  // objects: the key whose value is being parsed
    std::set<std::string> keys;
  };

  void on_key(const json& parsed) {
    if (frames_.empty() || !parsed.is_string()) return;
    Frame& top = frames_.back();
    top.key = parsed.get<std::string>();
    if (top.keys.insert(top.key).second) return;
    std::string where;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      where = json_pointer_child(where, f.is_array ? std::to_string(f.index) : f.key);
    }
    throw ParseAbort{"duplicate JSON key '" + top.key + "' in object " + (where.empty() ? "(root)" : where)};
  }
  void element_done() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
  }

  std::vector<Frame> frames_;
};

}  // namespace

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
    uint64_t len = 0;
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
    if (n - i < len) return i;
    for (uint64_t k = 1; k < len; ++k) {
      const unsigned char cc = s[i + k];
      if ((cc & 0xc0u) != 0x80u) return i;
      cp = (cp << 6) | (cc & 0x3fu);
    }
    if (cp < min_cp || cp > 0x10ffffu || (cp >= 0xd800u && cp <= 0xdfffu)) return i;
    i += len;
  }
  return std::nullopt;
}

std::string json_pointer_child(std::string_view parent, std::string_view token) {
  std::string out(parent);
  out += '/';
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Result<nlohmann::json> parse_json_strict(std::string_view text, std::string_view source_name) {
  const std::string where(source_name);
  if (text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF && static_cast<unsigned char>(text[1]) == 0xBB &&
      static_cast<unsigned char>(text[2]) == 0xBF) {
    return error(StatusCode::kParse, where + ": starts with a UTF-8 byte-order mark");
  }
  if (const auto bad = find_invalid_utf8(text)) {
    return error(StatusCode::kParse, where + ": not valid UTF-8 at byte " + std::to_string(*bad));
  }
  StrictWatch watch;
  const json::parser_callback_t callback = [&watch](int depth, json::parse_event_t event, json& parsed) {
    return watch.on_event(depth, event, parsed);
  };
  json value;
  try {
    value = json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                        /*ignore_comments=*/false);
  } catch (const ParseAbort& a) {
    return error(StatusCode::kParse, where + ": " + a.message);
  } catch (const json::out_of_range& e) {
    if (e.id == 406) return error(StatusCode::kNonFinite, where + ": number is not finite: " + e.what());
    return error(StatusCode::kParse, where + ": invalid JSON: " + e.what());
  } catch (const json::exception& e) {
    return error(StatusCode::kParse, where + ": invalid JSON: " + e.what());
  } catch (const std::exception& e) {
    return error(StatusCode::kInternal, where + ": JSON parser failed: " + e.what());
  }
  return value;
}

std::string json_brief(const nlohmann::json& j) {
  constexpr size_t kMaxChars = 80;
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > kMaxChars) s = s.substr(0, kMaxChars) + "...";
  return s;
}

}  // namespace rdrr
