// Internal to tokenizer/: the Jinja subset that chat templates use (README.md "Chat templates" documents
// it), rendered as transformers does: trim_blocks and lstrip_blocks on.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "quant/status.h"

namespace rdrr::tok::jinja {

struct Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion order, as Python dicts

struct Undefined {};
struct None {};

struct Value {
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> v;

  Value() = default;
  Value(None n) : v(n) {}                                  // NOLINT
  Value(bool b) : v(b) {}                                  // NOLINT
  Value(int64_t i) : v(i) {}                               // NOLINT
  Value(double d) : v(d) {}                                // NOLINT
  Value(std::string s) : v(std::move(s)) {}                // NOLINT
  Value(std::shared_ptr<Array> a) : v(std::move(a)) {}     // NOLINT
  Value(std::shared_ptr<Object> o) : v(std::move(o)) {}    // NOLINT

  bool is_undefined() const { return std::holds_alternative<Undefined>(v); }
  bool is_none() const { return std::holds_alternative<None>(v); }
  const std::string* str() const { return std::get_if<std::string>(&v); }
  const Array* array() const { auto p = std::get_if<std::shared_ptr<Array>>(&v); return p ? p->get() : nullptr; }
  Object* object() const { auto p = std::get_if<std::shared_ptr<Object>>(&v); return p ? p->get() : nullptr; }
};

Value make_array(Array a);
Value make_object(Object o);
const Value* object_get(const Object& o, std::string_view key);
void object_set(Object& o, std::string_view key, Value v);

bool truthy(const Value& v);
std::optional<double> number(const Value& v);  // ints, floats and bools
bool equals(const Value& a, const Value& b);
std::string to_text(const Value& v);                   // as {{ v }} prints it (None, True, 1.5, ...)
std::string repr(const Value& v, bool quote_strings);  // Python-like repr inside lists/dicts
std::string to_json(const Value& v);                   // json.dumps(v, ensure_ascii=False) separators
std::string strip_chars(const std::string& s, bool left, bool right, std::string_view chars = " \t\n\r\f\v");
Status line_error(int line, std::string_view msg);     // kInvalidArgument "chat template line N: msg"

// Built-ins on evaluated values; unknown names are kUnsupported.
Result<Value> call_method(int line, const Value& self, const std::string& name, const std::vector<Value>& args);
Result<Value> apply_filter(int line, const std::string& name, const Value& v, const std::vector<Value>& args);
Result<Value> apply_test(int line, const std::string& name, const Value& v, const std::vector<Value>& args);

// ---- syntax tree ----
struct Expr {
  enum class Kind { kLiteral, kName, kList, kDict, kAttr, kIndex, kSlice, kCall, kFilter, kTest, kUnary, kBinary, kTernary };
  Kind kind = Kind::kLiteral;
  Value literal;
  std::string name;  // variable, attribute, filter, test, operator, function
  std::vector<std::unique_ptr<Expr>> kids;  // operands / arguments (kSlice: object, start, stop, step; absent = null)
  int line = 0;
  int depth = 1;  // levels of this subtree; the parser bounds it (evaluating and destroying a tree recurse)
};
using ExprPtr = std::unique_ptr<Expr>;

struct Node {
  enum class Kind { kText, kOutput, kIf, kFor, kSet };
  Kind kind = Kind::kText;
  std::string text;                    // kText
  ExprPtr expr;                        // kOutput, kSet value, kFor iterable
  std::vector<ExprPtr> conditions;     // kIf: one per branch (null for else)
  std::vector<std::vector<Node>> bodies;  // kIf: one per branch; kFor: body [, else]
  std::vector<std::string> targets;    // kFor loop variables; kSet: name [, attribute]
  int line = 0;
};

// Parses a template. Errors: kParse "chat template line N: ...".
Result<std::vector<Node>> parse(std::string_view source);

// Renders with the given global variables. Errors: kInvalidArgument for raise_exception (its message)
// and type errors, kUnsupported for unknown filters/tests/functions, each with the line.
Result<std::string> render(const std::vector<Node>& tmpl, const Object& globals);

}  // namespace rdrr::tok::jinja
