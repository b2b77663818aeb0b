#include "rdrr/json_strict.h"

#include <vector>

namespace rdrr {
namespace {

using nlohmann::json;

// Builds the DOM itself (nlohmann's parser_callback_t parser rescans the whole parent object at every
// object_end, quadratic in its member count: #26 finding 6) and stops at the first strictness violation.
// A duplicate key is found by the object's own map (one lookup per key); frames name where it is.
class StrictDomBuilder {
 public:
  explicit StrictDomBuilder(json& root) : root_(root) {}

  bool null() { return put(nullptr) != nullptr; }
  bool boolean(bool v) { return put(v) != nullptr; }
  bool number_integer(json::number_integer_t v) { return put(v) != nullptr; }
  bool number_unsigned(json::number_unsigned_t v) { return put(v) != nullptr; }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return put(v) != nullptr; }
  bool string(json::string_t& v) { return put(std::move(v)) != nullptr; }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))) != nullptr; }
  bool start_object(std::size_t /*size*/) { return open(json::value_t::object); }
  bool start_array(std::size_t /*size*/) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    Frame& top = frames_.back();
    auto [it, inserted] = top.value->get_ref<json::object_t&>().try_emplace(k);
    if (!inserted) return fail(StatusCode::kParse, "duplicate JSON key '" + k + "' in object " + pointer());
    top.key = &it->first;
    member_ = &it->second;
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    if (e.id == 406) return fail(StatusCode::kNonFinite, std::string("number is not finite: ") + e.what());
    return fail(StatusCode::kParse, std::string("invalid JSON: ") + e.what());
  }

  const std::optional<Status>& failure() const { return failure_; }

 private:
  struct Frame {
    json* value;
    const std::string* key;  // objects: the key whose value is being parsed
  };

  // Stores `v` where the parser is (root, next array element, or the value of the last key).
  template <typename V>
  json* put(V&& v) {
    if (frames_.empty()) {
      root_ = json(std::forward<V>(v));
      return &root_;
    }
    json& parent = *frames_.back().value;
    if (parent.is_array()) {
      parent.get_ref<json::array_t&>().emplace_back(std::forward<V>(v));
      return &parent.get_ref<json::array_t&>().back();
    }
    *member_ = json(std::forward<V>(v));
    return member_;
  }
  bool open(json::value_t type) {
    if (frames_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      return fail(StatusCode::kParse, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    frames_.push_back(Frame{put(type), nullptr});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return true;
  }
  // JSON Pointer of the innermost open object ("(root)" for the document itself).
  std::string pointer() const {
    std::string where;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      where = json_pointer_child(where, f.key != nullptr ? *f.key : std::to_string(f.value->size() - 1));
    }
    return where.empty() ? "(root)" : where;
  }
  bool fail(StatusCode code, std::string message) {
    failure_ = error(code, std::move(message));
    return false;
  }

  json& root_;
  std::vector<Frame> frames_;
  json* member_ = nullptr;
  std::optional<Status> failure_;
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
  json value;
  StrictDomBuilder builder(value);
  try {
    const bool ok = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                                    /*strict=*/true, /*ignore_comments=*/false);
    if (!ok || builder.failure()) {
      const Status& f = builder.failure() ? *builder.failure() : error(StatusCode::kParse, "invalid JSON");
      return error(f.code(), where + ": " + f.message());
    }
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
