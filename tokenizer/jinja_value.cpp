// Jinja subset: values (truthiness, equality, printing, tojson) and the built-in filters, tests and
// methods.
#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "tokenizer/jinja.h"

namespace rdrr::tok::jinja {

Value make_array(Array a) { return Value(std::make_shared<Array>(std::move(a))); }
Value make_object(Object o) { return Value(std::make_shared<Object>(std::move(o))); }

const Value* object_get(const Object& o, std::string_view key) {
  for (const auto& [k, v] : o) {
    if (k == key) return &v;
  }
  return nullptr;
}

void object_set(Object& o, std::string_view key, Value v) {
  for (auto& [k, old] : o) {
    if (k == key) {
      old = std::move(v);
      return;
    }
  }
  o.emplace_back(std::string(key), std::move(v));
}

Status line_error(int line, std::string_view msg) {
  return error(StatusCode::kInvalidArgument, "chat template line " + std::to_string(line) + ": " + std::string(msg));
}

bool truthy(const Value& v) {
  return std::visit([](const auto& x) -> bool {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, Undefined> || std::is_same_v<T, None>) return false;
    else if constexpr (std::is_same_v<T, bool>) return x;
    else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) return x != 0;
    else if constexpr (std::is_same_v<T, std::string>) return !x.empty();
    else return x && !x->empty();
  }, v.v);
}

std::optional<double> number(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v.v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v.v)) return *d;
  if (const auto* b = std::get_if<bool>(&v.v)) return *b ? 1.0 : 0.0;
  return std::nullopt;
}

std::string to_text(const Value& v) { return repr(v, false); }

std::string repr(const Value& v, bool quote_strings) {
  if (v.is_undefined()) return "";
  if (v.is_none()) return "None";
  if (const auto* b = std::get_if<bool>(&v.v)) return *b ? "True" : "False";
  if (const auto* i = std::get_if<int64_t>(&v.v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v.v)) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof(buf), *d);
    std::string s(buf, r.ptr);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
  }
  if (const auto* s = v.str()) return quote_strings ? "'" + *s + "'" : *s;
  std::string out;
  if (const Array* a = v.array()) {
    out = "[";
    for (size_t i = 0; i < a->size(); ++i) out += (i ? ", " : "") + repr((*a)[i], true);
    return out + "]";
  }
  const Object* o = v.object();
  out = "{";
  for (size_t i = 0; i < o->size(); ++i) out += (i ? ", '" : "'") + (*o)[i].first + "': " + repr((*o)[i].second, true);
  return out + "}";
}

// A JSON string; bytes that are not valid UTF-8 (a slice through a multi-byte character, say) become U+FFFD
// instead of throwing.
std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string to_json(const Value& v) {
  if (v.is_undefined() || v.is_none()) return "null";
  if (const auto* b = std::get_if<bool>(&v.v)) return *b ? "true" : "false";
  if (const auto* s = v.str()) return json_string(*s);
  if (const Array* a = v.array()) {
    std::string out = "[";
    for (size_t i = 0; i < a->size(); ++i) out += (i ? ", " : "") + to_json((*a)[i]);
    return out + "]";
  }
  if (const Object* o = v.object()) {
    std::string out = "{";
    for (size_t i = 0; i < o->size(); ++i) {
      out += (i ? ", " : "") + json_string((*o)[i].first) + ": " + to_json((*o)[i].second);
    }
    return out + "}";
  }
  return repr(v, false);
}

bool equals(const Value& a, const Value& b) {
  const auto na = number(a);
  const auto nb = number(b);
  if (na && nb) return *na == *nb;
  if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
  if (a.str() && b.str()) return *a.str() == *b.str();
  if (a.array() && b.array()) {
    if (a.array()->size() != b.array()->size()) return false;
    for (size_t i = 0; i < a.array()->size(); ++i) if (!equals((*a.array())[i], (*b.array())[i])) return false;
    return true;
  }
  if (a.is_undefined() && b.is_undefined()) return true;
  return false;
}

std::string strip_chars(const std::string& s, bool left, bool right, std::string_view chars) {
  size_t b = 0;
  size_t e = s.size();
  if (left) while (b < e && chars.find(s[b]) != std::string_view::npos) ++b;
  if (right) while (e > b && chars.find(s[e - 1]) != std::string_view::npos) --e;
  return s.substr(b, e - b);
}

Result<Value> call_method(int line, const Value& self, const std::string& name, const std::vector<Value>& a) {
  const auto arg_str = [&](size_t i) -> std::string { return i < a.size() && a[i].str() ? *a[i].str() : std::string(); };
  if (const auto* s = self.str()) {
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const std::string chars = a.empty() ? std::string(" \t\n\r\f\v") : arg_str(0);
      return Value(strip_chars(*s, name != "rstrip", name != "lstrip", chars));
    }
    if (name == "startswith") return Value(s->rfind(arg_str(0), 0) == 0);
    if (name == "endswith") return Value(s->size() >= arg_str(0).size() && s->compare(s->size() - arg_str(0).size(), std::string::npos, arg_str(0)) == 0);
    if (name == "upper" || name == "lower") {
      std::string out = *s;
      for (char& c : out) c = static_cast<char>(name == "upper" ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
      return Value(std::move(out));
    }
    if (name == "replace" && a.size() == 2 && !arg_str(0).empty()) {
      std::string out;
      const std::string from = arg_str(0);
      size_t pos = 0;
      for (size_t hit; (hit = s->find(from, pos)) != std::string::npos; pos = hit + from.size()) out += s->substr(pos, hit - pos) + arg_str(1);
      return Value(out + s->substr(pos));
    }
    if (name == "split") {
      Array parts;
      const std::string sep = a.empty() ? std::string(" ") : arg_str(0);
      size_t pos = 0;
      for (size_t hit; !sep.empty() && (hit = s->find(sep, pos)) != std::string::npos; pos = hit + sep.size()) parts.push_back(Value(s->substr(pos, hit - pos)));
      parts.push_back(Value(s->substr(pos)));
      return make_array(std::move(parts));
    }
  }
  if (const Object* o = self.object()) {
    if (name == "get") {
      const Value* v = a.empty() || !a[0].str() ? nullptr : object_get(*o, *a[0].str());
      return v ? *v : (a.size() > 1 ? a[1] : Value(None{}));
    }
    if (name == "items" || name == "keys" || name == "values") {
      Array out;
      for (const auto& [k, v] : *o) {
        if (name == "items") out.push_back(make_array({Value(k), v}));
        else out.push_back(name == "keys" ? Value(k) : v);
      }
      return make_array(std::move(out));
    }
  }
  return error(StatusCode::kUnsupported, "chat template line " + std::to_string(line) + ": unsupported method '" + name +
                                             "' on " + repr(self, true));
}

Result<Value> apply_filter(int line, const std::string& f, const Value& v, const std::vector<Value>& a) {
  if (f == "trim") return Value(strip_chars(to_text(v), true, true));
  if (f == "upper" || f == "lower") return call_method(line, Value(to_text(v)), f, {});
  if (f == "length" || f == "count") {
    if (const auto* s = v.str()) return Value(static_cast<int64_t>(s->size()));
    if (const Array* arr = v.array()) return Value(static_cast<int64_t>(arr->size()));
    if (const Object* o = v.object()) return Value(static_cast<int64_t>(o->size()));
    return Value(int64_t{0});
  }
  if (f == "string") return Value(to_text(v));
  if (f == "tojson") return Value(to_json(v));
  if (f == "default" || f == "d") {
    const bool use_default = v.is_undefined() || (a.size() > 1 && truthy(a[1]) && !truthy(v));
    return use_default ? (a.empty() ? Value(std::string()) : a[0]) : v;
  }
  if (f == "first" || f == "last") {
    const Array* arr = v.array();
    if (arr == nullptr || arr->empty()) return Value();
    return f == "first" ? arr->front() : arr->back();
  }
  if (f == "join") {
    const Array* arr = v.array();
    std::string out;
    const std::string sep = a.empty() ? std::string() : to_text(a[0]);
    for (size_t i = 0; arr != nullptr && i < arr->size(); ++i) out += (i ? sep : std::string()) + to_text((*arr)[i]);
    return Value(std::move(out));
  }
  if (f == "list") {
    if (v.array()) return v;
    return make_array({});
  }
  return error(StatusCode::kUnsupported, "chat template line " + std::to_string(line) + ": unknown filter '" + f + "'");
}

Result<Value> apply_test(int line, const std::string& t, const Value& v, const std::vector<Value>& a) {
  if (t == "defined") return Value(!v.is_undefined());
  if (t == "undefined") return Value(v.is_undefined());
  if (t == "none") return Value(v.is_none());
  if (t == "string") return Value(v.str() != nullptr);
  if (t == "boolean") return Value(std::holds_alternative<bool>(v.v));
  if (t == "true" || t == "false") return Value(std::holds_alternative<bool>(v.v) && std::get<bool>(v.v) == (t == "true"));
  if (t == "integer") return Value(std::holds_alternative<int64_t>(v.v));
  if (t == "number") return Value(std::holds_alternative<int64_t>(v.v) || std::holds_alternative<double>(v.v));
  if (t == "mapping") return Value(v.object() != nullptr);
  if (t == "sequence" || t == "iterable") return Value(v.array() != nullptr || v.str() != nullptr || (t == "iterable" && v.object()));
  if (t == "even" || t == "odd") {
    const auto* i = std::get_if<int64_t>(&v.v);
    if (i == nullptr) return line_error(line, "'" + t + "' needs an integer");
    return Value((*i % 2 == 0) == (t == "even"));
  }
  if (t == "equalto" || t == "eq" || t == "sameas") return Value(!a.empty() && equals(v, a[0]));
  return error(StatusCode::kUnsupported, "chat template line " + std::to_string(line) + ": unknown test '" + t + "'");
}

}  // namespace rdrr::tok::jinja
