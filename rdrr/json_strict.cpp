#include "rdrr/json_strict.h"

#include <optional>
#include <set>
#include <vector>

namespace rdrr {
namespace {

using nlohmann::json;

// Tracks where the parser is (one frame per open object/array) to name duplicate keys precisely.
class DuplicateKeyWatch {
 public:
  bool on_event(json::parse_event_t event, const json& parsed) {
    using E = json::parse_event_t;
    switch (event) {
      case E::object_start:
        frames_.push_back(Frame{false, 0, {}, {}});
        break;
      case E::array_start:
        frames_.push_back(Frame{true, 0, {}, {}});
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
    return true;  // keep every value; the duplicate is reported after the parse
  }
  const std::optional<std::string>& duplicate() const { return duplicate_; }

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
    if (!top.keys.insert(top.key).second && !duplicate_) {
      std::string where;
      for (size_t i = 0; i + 1 < frames_.size(); ++i) {
        const Frame& f = frames_[i];
        where = json_pointer_child(where, f.is_array ? std::to_string(f.index) : f.key);
      }
      duplicate_ = "duplicate key \"" + top.key + "\" in object " + (where.empty() ? "(root)" : where);
    }
  }
  void element_done() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
  }

  std::vector<Frame> frames_;
  std::optional<std::string> duplicate_;
};

}  // namespace

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
  DuplicateKeyWatch watch;
  const json::parser_callback_t callback = [&watch](int /*depth*/, json::parse_event_t event, json& parsed) {
    return watch.on_event(event, parsed);
  };
  json value;
  try {
    value = json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                        /*ignore_comments=*/false);
  } catch (const json::out_of_range& e) {
    if (e.id == 406) return error(StatusCode::kNonFinite, where + ": number is not finite: " + e.what());
    return error(StatusCode::kParse, where + ": invalid JSON: " + e.what());
  } catch (const json::exception& e) {
    return error(StatusCode::kParse, where + ": invalid JSON: " + e.what());
  } catch (const std::exception& e) {
    return error(StatusCode::kInternal, where + ": JSON parser failed: " + e.what());
  }
  if (watch.duplicate()) return error(StatusCode::kParse, where + ": " + *watch.duplicate());
  return value;
}

}  // namespace rdrr
