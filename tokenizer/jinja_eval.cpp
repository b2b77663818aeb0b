// Jinja subset: evaluation of expressions and rendering of the statement tree.
#include <algorithm>
#include <cmath>

#include "tokenizer/jinja.h"

namespace rdrr::tok::jinja {

namespace {

constexpr size_t kMaxOutputBytes = 64u << 20;
constexpr int64_t kMaxRangeItems = 1 << 20;

Status eval_error(const Expr& e, std::string_view msg) {
  return error(StatusCode::kInvalidArgument, "chat template line " + std::to_string(e.line) + ": " + std::string(msg));
}

class Renderer {
 public:
  explicit Renderer(const Object& globals) { frames_.push_back(globals); }

  Status nodes(const std::vector<Node>& list, std::string& out) {
    for (const Node& n : list) {
      RDRR_RETURN_IF_ERROR(node(n, out));
      if (out.size() > kMaxOutputBytes) return error(StatusCode::kInvalidArgument, "chat template: output too large");
    }
    return Status::Ok();
  }

 private:
  Status node(const Node& n, std::string& out) {
    switch (n.kind) {
      case Node::Kind::kText:
        out += n.text;
        return Status::Ok();
      case Node::Kind::kOutput: {
        RDRR_ASSIGN_OR_RETURN(Value v, eval(*n.expr));
        out += to_text(v);
        return Status::Ok();
      }
      case Node::Kind::kIf:
        for (size_t i = 0; i < n.bodies.size(); ++i) {
          bool take = n.conditions[i] == nullptr;
          if (!take) {
            RDRR_ASSIGN_OR_RETURN(Value c, eval(*n.conditions[i]));
            take = truthy(c);
          }
          if (take) return nodes(n.bodies[i], out);
        }
        return Status::Ok();
      case Node::Kind::kFor:
        return for_loop(n, out);
      case Node::Kind::kSet: {
        RDRR_ASSIGN_OR_RETURN(Value v, eval(*n.expr));
        if (n.targets.size() == 1) {
          object_set(frames_.back(), n.targets[0], std::move(v));
          return Status::Ok();
        }
        const Value target = lookup(n.targets[0]);
        if (target.object() == nullptr) return eval_error(*n.expr, "'" + n.targets[0] + "' is not a namespace");
        object_set(*target.object(), n.targets[1], std::move(v));
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  Status for_loop(const Node& n, std::string& out) {
    RDRR_ASSIGN_OR_RETURN(Value seq, eval(*n.expr));
    Array items;
    if (const Array* a = seq.array()) {
      items = *a;
    } else if (const Object* o = seq.object()) {
      for (const auto& kv : *o) items.push_back(Value(kv.first));
    } else if (const auto* s = seq.str()) {
      for (char c : *s) items.push_back(Value(std::string(1, c)));
    } else if (!seq.is_undefined() && !seq.is_none()) {
      return eval_error(*n.expr, "value is not iterable: " + repr(seq, true));
    }
    if (items.empty()) return n.bodies.size() > 1 ? nodes(n.bodies[1], out) : Status::Ok();
    const auto len = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < len; ++i) {
      Object frame;
      const Value& item = items[static_cast<size_t>(i)];
      if (n.targets.size() == 1) {
        object_set(frame, n.targets[0], item);
      } else {
        const Array* parts = item.array();
        if (parts == nullptr || parts->size() != n.targets.size()) return eval_error(*n.expr, "cannot unpack loop item");
        for (size_t k = 0; k < parts->size(); ++k) object_set(frame, n.targets[k], (*parts)[k]);
      }
      object_set(frame, "loop", make_object({{"index", Value(i + 1)}, {"index0", Value(i)}, {"first", Value(i == 0)},
                                             {"last", Value(i == len - 1)}, {"length", Value(len)},
                                             {"revindex", Value(len - i)}, {"revindex0", Value(len - i - 1)}}));
      frames_.push_back(std::move(frame));
      Status s = nodes(n.bodies[0], out);
      frames_.pop_back();
      RDRR_RETURN_IF_ERROR(s);
    }
    return Status::Ok();
  }

  Value lookup(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      if (const Value* v = object_get(*it, name)) return *v;
    }
    return Value();
  }

  Result<std::vector<Value>> args(const Expr& e, size_t first, Object* kwargs = nullptr) {
    std::vector<Value> out;
    for (size_t i = first; i < e.kids.size(); ++i) {
      const Expr& a = *e.kids[i];
      if (a.kind == Expr::Kind::kLiteral && !a.name.empty()) {  // keyword argument
        RDRR_ASSIGN_OR_RETURN(Value v, eval(*a.kids[0]));
        if (kwargs != nullptr) object_set(*kwargs, a.name, std::move(v));
        continue;
      }
      RDRR_ASSIGN_OR_RETURN(Value v, eval(a));
      out.push_back(std::move(v));
    }
    return out;
  }

  Result<Value> eval(const Expr& e);
  Result<Value> binary(const Expr& e);
  Result<Value> index(const Expr& e, const Value& obj, const Value& key);
  Result<Value> slice(const Expr& e);
  Result<Value> call(const Expr& e);
  Result<Value> filter(const Expr& e) {
    RDRR_ASSIGN_OR_RETURN(Value v, eval(*e.kids[0]));
    RDRR_ASSIGN_OR_RETURN(std::vector<Value> a, args(e, 1));
    return apply_filter(e.line, e.name, v, a);
  }
  Result<Value> test(const Expr& e) {
    RDRR_ASSIGN_OR_RETURN(Value v, eval(*e.kids[0]));
    RDRR_ASSIGN_OR_RETURN(std::vector<Value> a, args(e, 1));
    return apply_test(e.line, e.name, v, a);
  }

  std::vector<Object> frames_;
};

Result<Value> Renderer::eval(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      return e.literal;
    case Expr::Kind::kName:
      return lookup(e.name);
    case Expr::Kind::kList: {
      RDRR_ASSIGN_OR_RETURN(std::vector<Value> items, args(e, 0));
      return make_array(std::move(items));
    }
    case Expr::Kind::kDict: {
      Object o;
      for (size_t i = 0; i + 1 < e.kids.size(); i += 2) {
        RDRR_ASSIGN_OR_RETURN(Value k, eval(*e.kids[i]));
        RDRR_ASSIGN_OR_RETURN(Value v, eval(*e.kids[i + 1]));
        object_set(o, to_text(k), std::move(v));
      }
      return make_object(std::move(o));
    }
    case Expr::Kind::kAttr: {
      RDRR_ASSIGN_OR_RETURN(Value obj, eval(*e.kids[0]));
      return index(e, obj, Value(e.name));
    }
    case Expr::Kind::kIndex: {
      RDRR_ASSIGN_OR_RETURN(Value obj, eval(*e.kids[0]));
      RDRR_ASSIGN_OR_RETURN(Value key, eval(*e.kids[1]));
      return index(e, obj, key);
    }
    case Expr::Kind::kSlice:
      return slice(e);
    case Expr::Kind::kCall:
      return call(e);
    case Expr::Kind::kFilter:
      return filter(e);
    case Expr::Kind::kTest:
      return test(e);
    case Expr::Kind::kUnary: {
      RDRR_ASSIGN_OR_RETURN(Value v, eval(*e.kids[0]));
      if (e.name == "not") return Value(!truthy(v));
      if (const auto* i = std::get_if<int64_t>(&v.v)) return Value(-*i);
      if (const auto* d = std::get_if<double>(&v.v)) return Value(-*d);
      return eval_error(e, "unary '-' on " + repr(v, true));
    }
    case Expr::Kind::kBinary:
      return binary(e);
    case Expr::Kind::kTernary: {
      RDRR_ASSIGN_OR_RETURN(Value c, eval(*e.kids[0]));
      if (truthy(c)) return eval(*e.kids[1]);
      if (e.kids.size() > 2) return eval(*e.kids[2]);
      return Value();
    }
  }
  return Value();
}

Result<Value> Renderer::binary(const Expr& e) {
  const std::string& op = e.name;
  RDRR_ASSIGN_OR_RETURN(Value a, eval(*e.kids[0]));
  if (op == "and" && !truthy(a)) return a;
  if (op == "or" && truthy(a)) return a;
  RDRR_ASSIGN_OR_RETURN(Value b, eval(*e.kids[1]));
  if (op == "and" || op == "or") return b;
  if (op == "==") return Value(equals(a, b));
  if (op == "!=") return Value(!equals(a, b));
  if (op == "~") return Value(to_text(a) + to_text(b));
  if (op == "in" || op == "not in") {
    bool found = false;
    if (const auto* s = b.str()) {
      found = a.str() != nullptr && s->find(*a.str()) != std::string::npos;
    } else if (const Array* arr = b.array()) {
      found = std::any_of(arr->begin(), arr->end(), [&](const Value& x) { return equals(x, a); });
    } else if (const Object* o = b.object()) {
      found = a.str() != nullptr && object_get(*o, *a.str()) != nullptr;
    }
    return Value(op == "in" ? found : !found);
  }
  if (op == "+" && a.str() && b.str()) return Value(*a.str() + *b.str());
  if (op == "+" && a.array() && b.array()) {
    Array out = *a.array();
    out.insert(out.end(), b.array()->begin(), b.array()->end());
    return make_array(std::move(out));
  }
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    int cmp;
    if (a.str() && b.str()) {
      cmp = a.str()->compare(*b.str());
    } else if (number(a) && number(b)) {
      cmp = *number(a) < *number(b) ? -1 : (*number(a) > *number(b) ? 1 : 0);
    } else {
      return eval_error(e, "cannot compare " + repr(a, true) + " " + op + " " + repr(b, true));
    }
    return Value(op == "<" ? cmp < 0 : op == ">" ? cmp > 0 : op == "<=" ? cmp <= 0 : cmp >= 0);
  }
  const auto* ia = std::get_if<int64_t>(&a.v);
  const auto* ib = std::get_if<int64_t>(&b.v);
  if (ia && ib && op != "/") {
    if ((op == "%" || op == "//") && *ib == 0) return eval_error(e, "division by zero");
    if (op == "+") return Value(*ia + *ib);
    if (op == "-") return Value(*ia - *ib);
    if (op == "*") return Value(*ia * *ib);
    const int64_t q = *ia / *ib - ((*ia % *ib != 0) && ((*ia < 0) != (*ib < 0)) ? 1 : 0);  // Python floor division
    if (op == "//") return Value(q);
    if (op == "%") return Value(*ia - q * *ib);
  }
  if (op == "*" && a.str() && ib) {
    std::string out;
    for (int64_t i = 0; i < *ib; ++i) out += *a.str();
    return Value(std::move(out));
  }
  const auto na = number(a);
  const auto nb = number(b);
  if (na && nb && !std::holds_alternative<bool>(a.v) && !std::holds_alternative<bool>(b.v)) {
    if (op == "+") return Value(*na + *nb);
    if (op == "-") return Value(*na - *nb);
    if (op == "*") return Value(*na * *nb);
    if (*nb == 0) return eval_error(e, "division by zero");
    if (op == "/") return Value(*na / *nb);
    if (op == "//") return Value(std::floor(*na / *nb));
    if (op == "%") return Value(*na - std::floor(*na / *nb) * *nb);
  }
  return eval_error(e, "unsupported operands for '" + op + "': " + repr(a, true) + ", " + repr(b, true));
}

Result<Value> Renderer::index(const Expr& e, const Value& obj, const Value& key) {
  if (const Object* o = obj.object()) {
    const Value* v = key.str() ? object_get(*o, *key.str()) : nullptr;
    return v ? *v : Value();
  }
  const auto* i = std::get_if<int64_t>(&key.v);
  if (i != nullptr && (obj.array() || obj.str())) {
    const auto n = static_cast<int64_t>(obj.array() ? obj.array()->size() : obj.str()->size());
    const int64_t k = *i < 0 ? *i + n : *i;
    if (k < 0 || k >= n) return Value();
    if (obj.array()) return (*obj.array())[static_cast<size_t>(k)];
    return Value(std::string(1, (*obj.str())[static_cast<size_t>(k)]));
  }
  if (obj.is_undefined() || obj.is_none() || key.str()) return Value();  // undefined attribute -> undefined
  return eval_error(e, "cannot index " + repr(obj, true) + " with " + repr(key, true));
}

Result<Value> Renderer::slice(const Expr& e) {
  RDRR_ASSIGN_OR_RETURN(Value obj, eval(*e.kids[0]));
  int64_t bounds[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  for (int k = 0; k < 3; ++k) {
    if (!e.kids[static_cast<size_t>(k) + 1]) continue;
    RDRR_ASSIGN_OR_RETURN(Value v, eval(*e.kids[static_cast<size_t>(k) + 1]));
    const auto* i = std::get_if<int64_t>(&v.v);
    if (i == nullptr) return eval_error(e, "slice bounds must be integers");
    bounds[k] = *i;
    given[k] = true;
  }
  const int64_t step = bounds[2];
  if (step == 0) return eval_error(e, "slice step 0");
  if (!obj.array() && !obj.str()) return eval_error(e, "cannot slice " + repr(obj, true));
  const auto n = static_cast<int64_t>(obj.array() ? obj.array()->size() : obj.str()->size());
  auto norm = [&](int64_t x, bool is_given, int64_t dflt) {
    if (!is_given) return dflt;
    if (x < 0) x += n;
    return step > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t start = norm(bounds[0], given[0], step > 0 ? 0 : n - 1);
  const int64_t stop = norm(bounds[1], given[1], step > 0 ? n : -1);
  Array items;
  std::string chars;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (obj.array()) items.push_back((*obj.array())[static_cast<size_t>(i)]);
    else chars += (*obj.str())[static_cast<size_t>(i)];
  }
  return obj.array() ? make_array(std::move(items)) : Value(std::move(chars));
}

Result<Value> Renderer::call(const Expr& e) {
  const Expr& callee = *e.kids[0];
  Object kwargs;
  RDRR_ASSIGN_OR_RETURN(std::vector<Value> a, args(e, 1, &kwargs));
  if (callee.kind == Expr::Kind::kAttr) {
    RDRR_ASSIGN_OR_RETURN(Value self, eval(*callee.kids[0]));
    return call_method(e.line, self, callee.name, a);
  }
  if (callee.kind != Expr::Kind::kName) return eval_error(e, "only named functions and methods can be called");
  if (callee.name == "raise_exception") {
    return error(StatusCode::kInvalidArgument, "chat template line " + std::to_string(e.line) + ": raise_exception: " +
                                                   (a.empty() ? std::string() : to_text(a[0])));
  }
  if (callee.name == "namespace") {
    Object o = kwargs;
    return make_object(std::move(o));
  }
  if (callee.name == "range") {
    int64_t lo = 0, hi = 0, step = 1;
    const auto as_int = [](const Value& v) { const auto* i = std::get_if<int64_t>(&v.v); return i ? *i : 0; };
    if (a.size() == 1) hi = as_int(a[0]);
    if (a.size() >= 2) lo = as_int(a[0]), hi = as_int(a[1]);
    if (a.size() == 3) step = as_int(a[2]);
    if (step == 0 || a.empty() || a.size() > 3) return eval_error(e, "range() takes 1 to 3 integer arguments, step != 0");
    if ((hi - lo) / step > kMaxRangeItems) return eval_error(e, "range() longer than " + std::to_string(kMaxRangeItems));
    Array out;
    for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) out.push_back(Value(i));
    return make_array(std::move(out));
  }
  return error(StatusCode::kUnsupported, "chat template line " + std::to_string(e.line) + ": unknown function '" + callee.name + "'");
}

}  // namespace

Result<std::string> render(const std::vector<Node>& tmpl, const Object& globals) {
  Renderer r(globals);
  std::string out;
  RDRR_RETURN_IF_ERROR(r.nodes(tmpl, out));
  return out;
}

}  // namespace rdrr::tok::jinja

