// Jinja subset: recursive-descent parser with Jinja's operator precedence, and the statement tree.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "tokenizer/jinja.h"
#include "tokenizer/jinja_lex.h"

namespace rdrr::tok::jinja {

namespace {

// ---- expression parser ----
class ExprParser {
 public:
  ExprParser(std::vector<Tok> toks, int line) : t_(std::move(toks)), line_(line) {}

  Result<ExprPtr> expression() {
    if (++depth_ > kMaxDepth) return fail("expression nested too deeply");
    auto e = ternary();
    --depth_;
    return e;
  }
  bool at_end() const { return t_[i_].kind == Tok::Kind::kEnd; }
  bool peek_name(std::string_view n) const { return t_[i_].kind == Tok::Kind::kName && t_[i_].text == n; }
  bool peek_op(std::string_view o) const { return t_[i_].kind == Tok::Kind::kOp && t_[i_].text == o; }
  bool accept_name(std::string_view n) { return peek_name(n) ? (++i_, true) : false; }
  bool accept_op(std::string_view o) { return peek_op(o) ? (++i_, true) : false; }
  Result<std::string> name() {
    if (t_[i_].kind != Tok::Kind::kName) return fail("expected a name, got '" + t_[i_].text + "'");
    return t_[i_++].text;
  }
  Status expect_op(std::string_view o) {
    if (!accept_op(o)) return fail("expected '" + std::string(o) + "', got '" + t_[i_].text + "'");
    return Status::Ok();
  }
  Status expect_end() { return at_end() ? Status::Ok() : fail("unexpected '" + t_[i_].text + "'"); }
  // An integer (int64) or float (finite double) literal; out of range is a parse error, not an exception.
  Result<Value> number_literal(const Tok& t) const {
    const char* first = t.text.data();
    const char* last = first + t.text.size();
    if (t.kind == Tok::Kind::kInt) {
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(first, last, v);
      if (ec != std::errc() || end != last) return fail("integer literal " + t.text + " is out of range (int64)");
      return Value(v);
    }
    double d = 0.0;
    const auto [end, ec] = std::from_chars(first, last, d);
    if (ec != std::errc() || end != last || !std::isfinite(d)) {
      return fail("float literal " + t.text + " is out of range (double)");
    }
    return Value(d);
  }
  Status fail(std::string_view msg) const { return parse_error(line_, msg); }

 private:
  ExprPtr node(Expr::Kind k, std::string name = {}) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->name = std::move(name);
    e->line = line_;
    return e;
  }
  Result<ExprPtr> binary(std::string op, ExprPtr a, ExprPtr b) {
    auto e = node(Expr::Kind::kBinary, std::move(op));
    e->kids.push_back(std::move(a));
    e->kids.push_back(std::move(b));
    return bounded(std::move(e));
  }
  // Sets e's depth from its kids and refuses a tree deeper than kMaxTreeDepth: operator, filter and postfix
  // chains ("1+1+1+...", "x|trim|trim|...", "a.b.c...") are parsed by loops, but evaluating and destroying the
  // tree recurse once per level, so an unbounded chain in an untrusted template would overflow the stack.
  Result<ExprPtr> bounded(ExprPtr e) {
    for (const ExprPtr& k : e->kids) {
      if (k) e->depth = std::max(e->depth, k->depth + 1);
    }
    if (e->depth > kMaxTreeDepth) return fail("expression nested too deeply");
    return e;
  }
  // One self-recursive step of the grammar ("- - x", "not not x", "a if b else c if d else ..."), under the same
  // nesting bound as expression(): each level costs parser stack before any node exists.
  template <typename Step>
  Result<ExprPtr> deeper(Step step) {
    if (++depth_ > kMaxDepth) return fail("expression nested too deeply");
    Result<ExprPtr> e = step();
    --depth_;
    return e;
  }

  Result<ExprPtr> ternary() {
    RDRR_ASSIGN_OR_RETURN(ExprPtr a, or_expr());
    if (!accept_name("if")) return a;
    RDRR_ASSIGN_OR_RETURN(ExprPtr cond, or_expr());
    auto e = node(Expr::Kind::kTernary);
    e->kids.push_back(std::move(cond));
    e->kids.push_back(std::move(a));
    if (accept_name("else")) {
      RDRR_ASSIGN_OR_RETURN(ExprPtr b, deeper([this] { return ternary(); }));
      e->kids.push_back(std::move(b));
    }
    return bounded(std::move(e));
  }
  Result<ExprPtr> or_expr() {
    RDRR_ASSIGN_OR_RETURN(ExprPtr a, and_expr());
    while (accept_name("or")) {
      RDRR_ASSIGN_OR_RETURN(ExprPtr b, and_expr());
      RDRR_ASSIGN_OR_RETURN(a, binary("or", std::move(a), std::move(b)));
    }
    return a;
  }
  Result<ExprPtr> and_expr() {
    RDRR_ASSIGN_OR_RETURN(ExprPtr a, not_expr());
    while (accept_name("and")) {
      RDRR_ASSIGN_OR_RETURN(ExprPtr b, not_expr());
      RDRR_ASSIGN_OR_RETURN(a, binary("and", std::move(a), std::move(b)));
    }
    return a;
  }
  Result<ExprPtr> not_expr() {
    if (!accept_name("not")) return compare();
    RDRR_ASSIGN_OR_RETURN(ExprPtr a, deeper([this] { return not_expr(); }));
    auto e = node(Expr::Kind::kUnary, "not");
    e->kids.push_back(std::move(a));
    return bounded(std::move(e));
  }
  Result<ExprPtr> compare() {
    RDRR_ASSIGN_OR_RETURN(ExprPtr a, math1());
    while (true) {
      std::string op;
      for (std::string_view o : {"==", "!=", "<=", ">=", "<", ">"}) {
        if (op.empty() && accept_op(o)) op = std::string(o);
      }
      if (op.empty() && accept_name("in")) op = "in";
      if (op.empty() && peek_name("not") && t_[i_ + 1].kind == Tok::Kind::kName && t_[i_ + 1].text == "in") {
        i_ += 2;
        op = "not in";
      }
      if (op.empty()) return a;
      RDRR_ASSIGN_OR_RETURN(ExprPtr b, math1());
      RDRR_ASSIGN_OR_RETURN(a, binary(op, std::move(a), std::move(b)));
    }
  }
  Result<ExprPtr> math1() {
    RDRR_ASSIGN_OR_RETURN(ExprPtr a, concat());
    while (peek_op("+") || peek_op("-")) {
      std::string op = t_[i_++].text;
      RDRR_ASSIGN_OR_RETURN(ExprPtr b, concat());
      RDRR_ASSIGN_OR_RETURN(a, binary(op, std::move(a), std::move(b)));
    }
    return a;
  }
  Result<ExprPtr> concat() {
    RDRR_ASSIGN_OR_RETURN(ExprPtr a, math2());
    while (accept_op("~")) {
      RDRR_ASSIGN_OR_RETURN(ExprPtr b, math2());
      RDRR_ASSIGN_OR_RETURN(a, binary("~", std::move(a), std::move(b)));
    }
    return a;
  }
  Result<ExprPtr> math2() {
    RDRR_ASSIGN_OR_RETURN(ExprPtr a, unary());
    while (peek_op("*") || peek_op("/") || peek_op("//") || peek_op("%")) {
      std::string op = t_[i_++].text;
      RDRR_ASSIGN_OR_RETURN(ExprPtr b, unary());
      RDRR_ASSIGN_OR_RETURN(a, binary(op, std::move(a), std::move(b)));
    }
    return a;
  }
  Result<ExprPtr> unary() {
    if (accept_op("-")) {
      RDRR_ASSIGN_OR_RETURN(ExprPtr a, deeper([this] { return unary(); }));
      auto e = node(Expr::Kind::kUnary, "-");
      e->kids.push_back(std::move(a));
      return bounded(std::move(e));
    }
    RDRR_ASSIGN_OR_RETURN(ExprPtr a, primary());
    RDRR_ASSIGN_OR_RETURN(a, postfix(std::move(a)));
    return filters(std::move(a));
  }
  Status call_args(Expr& e) {
    if (accept_op(")")) return Status::Ok();
    do {
      if (t_[i_].kind == Tok::Kind::kName && t_[i_ + 1].kind == Tok::Kind::kOp && t_[i_ + 1].text == "=") {
        auto kw = node(Expr::Kind::kLiteral, t_[i_].text);  // keyword argument: name set, value in kids[0]
        i_ += 2;
        RDRR_ASSIGN_OR_RETURN(ExprPtr v, expression());
        kw->kids.push_back(std::move(v));
        e.kids.push_back(std::move(kw));
        continue;
      }
      RDRR_ASSIGN_OR_RETURN(ExprPtr v, expression());
      e.kids.push_back(std::move(v));
    } while (accept_op(","));
    return expect_op(")");
  }
  Result<ExprPtr> postfix(ExprPtr a) {
    while (true) {
      if (accept_op(".")) {
        RDRR_ASSIGN_OR_RETURN(std::string attr, name());
        auto e = node(Expr::Kind::kAttr, attr);
        e->kids.push_back(std::move(a));
        RDRR_ASSIGN_OR_RETURN(a, bounded(std::move(e)));
      } else if (accept_op("[")) {
        RDRR_ASSIGN_OR_RETURN(a, subscript(std::move(a)));
      } else if (accept_op("(")) {
        auto e = node(Expr::Kind::kCall);
        e->kids.push_back(std::move(a));
        RDRR_RETURN_IF_ERROR(call_args(*e));
        RDRR_ASSIGN_OR_RETURN(a, bounded(std::move(e)));
      } else {
        return a;
      }
    }
  }
  Result<ExprPtr> subscript(ExprPtr obj) {
    std::vector<ExprPtr> parts(1);
    bool slice = false;
    while (!peek_op("]")) {
      if (accept_op(":")) {
        slice = true;
        parts.emplace_back();
        continue;
      }
      if (parts.back()) return fail("bad subscript");
      RDRR_ASSIGN_OR_RETURN(parts.back(), expression());
    }
    RDRR_RETURN_IF_ERROR(expect_op("]"));
    if (!slice) {
      if (!parts[0]) return fail("empty subscript");
      auto e = node(Expr::Kind::kIndex);
      e->kids.push_back(std::move(obj));
      e->kids.push_back(std::move(parts[0]));
      return bounded(std::move(e));
    }
    if (parts.size() > 3) return fail("bad slice");
    parts.resize(3);
    auto e = node(Expr::Kind::kSlice);
    e->kids.push_back(std::move(obj));
    for (auto& p : parts) e->kids.push_back(std::move(p));
    return bounded(std::move(e));
  }
  Result<ExprPtr> filters(ExprPtr a) {
    while (true) {
      if (accept_op("|")) {
        RDRR_ASSIGN_OR_RETURN(std::string f, name());
        auto e = node(Expr::Kind::kFilter, f);
        e->kids.push_back(std::move(a));
        if (accept_op("(")) RDRR_RETURN_IF_ERROR(call_args(*e));
        RDRR_ASSIGN_OR_RETURN(a, bounded(std::move(e)));
      } else if (accept_name("is")) {
        const bool negate = accept_name("not");
        RDRR_ASSIGN_OR_RETURN(std::string test, name());
        auto e = node(Expr::Kind::kTest, test);
        e->kids.push_back(std::move(a));
        if (accept_op("(")) {
          RDRR_RETURN_IF_ERROR(call_args(*e));
        } else if (t_[i_].kind == Tok::Kind::kString || t_[i_].kind == Tok::Kind::kInt) {
          RDRR_ASSIGN_OR_RETURN(ExprPtr arg, primary());  // "is equalto 3", "is sameas 'x'"
          e->kids.push_back(std::move(arg));
        }
        RDRR_ASSIGN_OR_RETURN(a, bounded(std::move(e)));
        if (negate) {
          auto n = node(Expr::Kind::kUnary, "not");
          n->kids.push_back(std::move(a));
          RDRR_ASSIGN_OR_RETURN(a, bounded(std::move(n)));
        }
      } else {
        return a;
      }
    }
  }
  Result<ExprPtr> primary() {
    const Tok t = t_[i_];
    if (t.kind == Tok::Kind::kEnd) return fail("unexpected end of expression");
    ++i_;
    if (t.kind == Tok::Kind::kString) {
      auto e = node(Expr::Kind::kLiteral);
      std::string s = t.text;
      while (t_[i_].kind == Tok::Kind::kString) s += t_[i_++].text;  // adjacent literals concatenate
      e->literal = Value(std::move(s));
      return e;
    }
    if (t.kind == Tok::Kind::kInt || t.kind == Tok::Kind::kFloat) {
      auto e = node(Expr::Kind::kLiteral);
      RDRR_ASSIGN_OR_RETURN(e->literal, number_literal(t));
      return e;
    }
    if (t.kind == Tok::Kind::kName) {
      auto e = node(Expr::Kind::kLiteral);
      if (t.text == "true" || t.text == "True") e->literal = Value(true);
      else if (t.text == "false" || t.text == "False") e->literal = Value(false);
      else if (t.text == "none" || t.text == "None") e->literal = Value(None{});
      else e = node(Expr::Kind::kName, t.text);
      return e;
    }
    if (t.text == "(") {
      RDRR_ASSIGN_OR_RETURN(ExprPtr e, expression());
      RDRR_RETURN_IF_ERROR(expect_op(")"));
      return e;
    }
    if (t.text == "[") {
      auto e = node(Expr::Kind::kList);
      while (!accept_op("]")) {
        RDRR_ASSIGN_OR_RETURN(ExprPtr v, expression());
        e->kids.push_back(std::move(v));
        if (!accept_op(",")) {
          RDRR_RETURN_IF_ERROR(expect_op("]"));
          break;
        }
      }
      return bounded(std::move(e));
    }
    if (t.text == "{") {
      auto e = node(Expr::Kind::kDict);
      while (!accept_op("}")) {
        RDRR_ASSIGN_OR_RETURN(ExprPtr k, expression());
        RDRR_RETURN_IF_ERROR(expect_op(":"));
        RDRR_ASSIGN_OR_RETURN(ExprPtr v, expression());
        e->kids.push_back(std::move(k));
        e->kids.push_back(std::move(v));
        if (!accept_op(",")) {
          RDRR_RETURN_IF_ERROR(expect_op("}"));
          break;
        }
      }
      return bounded(std::move(e));
    }
    return fail("unexpected '" + t.text + "'");
  }

  static constexpr int kMaxDepth = 100;
  static constexpr int kMaxTreeDepth = 256;
  std::vector<Tok> t_;
  size_t i_ = 0;
  int line_;
  int depth_ = 0;
};

// ---- statements ----
class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Item> items) : items_(std::move(items)) {}

  // Parses nodes until a statement whose keyword is in `enders` (returned in `ender`, its parser in `rest`).
  Status block(std::vector<Node>& out, std::initializer_list<std::string_view> enders, std::string& ender,
               std::unique_ptr<ExprParser>& rest) {
    if (++depth_ > kMaxDepth) return parse_error(pos_ < items_.size() ? items_[pos_].line : 0, "blocks nested too deeply");
    Status s = block_items(out, enders, ender, rest);
    --depth_;
    return s;
  }

 private:
  Status block_items(std::vector<Node>& out, std::initializer_list<std::string_view> enders, std::string& ender,
                     std::unique_ptr<ExprParser>& rest) {
    while (pos_ < items_.size()) {
      const Item& it = items_[pos_++];
      if (it.kind == Item::Kind::kText) {
        out.push_back(Node{Node::Kind::kText, it.body, nullptr, {}, {}, {}, it.line});
        continue;
      }
      RDRR_ASSIGN_OR_RETURN(auto toks, lex(it.body, it.line));
      auto p = std::make_unique<ExprParser>(std::move(toks), it.line);
      if (it.kind == Item::Kind::kExpr) {
        RDRR_ASSIGN_OR_RETURN(ExprPtr e, p->expression());
        RDRR_RETURN_IF_ERROR(p->expect_end());
        out.push_back(Node{Node::Kind::kOutput, "", std::move(e), {}, {}, {}, it.line});
        continue;
      }
      RDRR_ASSIGN_OR_RETURN(std::string kw, p->name());
      for (std::string_view e : enders) {
        if (kw == e) {
          ender = kw;
          rest = std::move(p);
          return Status::Ok();
        }
      }
      if (kw == "if") {
        RDRR_RETURN_IF_ERROR(if_stmt(*p, out, it.line));
      } else if (kw == "for") {
        RDRR_RETURN_IF_ERROR(for_stmt(*p, out, it.line));
      } else if (kw == "set") {
        RDRR_RETURN_IF_ERROR(set_stmt(*p, out, it.line));
      } else {
        return parse_error(it.line, "unsupported statement '" + kw + "'");
      }
    }
    if (enders.size() > 0) return parse_error(items_.empty() ? 1 : items_.back().line, "missing '{% " + std::string(*enders.begin()) + " %}'");
    return Status::Ok();
  }

  Status if_stmt(ExprParser& p, std::vector<Node>& out, int line) {
    Node n{Node::Kind::kIf, "", nullptr, {}, {}, {}, line};
    RDRR_ASSIGN_OR_RETURN(ExprPtr cond, p.expression());
    RDRR_RETURN_IF_ERROR(p.expect_end());
    n.conditions.push_back(std::move(cond));
    while (true) {
      std::vector<Node> body;
      std::string ender;
      std::unique_ptr<ExprParser> rest;
      RDRR_RETURN_IF_ERROR(block(body, {"endif", "elif", "else"}, ender, rest));
      n.bodies.push_back(std::move(body));
      if (ender == "endif") break;
      if (ender == "elif") {
        RDRR_ASSIGN_OR_RETURN(ExprPtr c, rest->expression());
        n.conditions.push_back(std::move(c));
      } else {
        n.conditions.push_back(nullptr);
      }
      RDRR_RETURN_IF_ERROR(rest->expect_end());
    }
    out.push_back(std::move(n));
    return Status::Ok();
  }

  Status for_stmt(ExprParser& p, std::vector<Node>& out, int line) {
    Node n{Node::Kind::kFor, "", nullptr, {}, {}, {}, line};
    do {
      RDRR_ASSIGN_OR_RETURN(std::string v, p.name());
      n.targets.push_back(std::move(v));
    } while (p.accept_op(","));
    if (!p.accept_name("in")) return p.fail("expected 'in' in for loop");
    RDRR_ASSIGN_OR_RETURN(n.expr, p.expression());
    RDRR_RETURN_IF_ERROR(p.expect_end());
    std::vector<Node> body;
    std::string ender;
    std::unique_ptr<ExprParser> rest;
    RDRR_RETURN_IF_ERROR(block(body, {"endfor", "else"}, ender, rest));
    n.bodies.push_back(std::move(body));
    if (ender == "else") {
      std::vector<Node> otherwise;
      RDRR_RETURN_IF_ERROR(block(otherwise, {"endfor"}, ender, rest));
      n.bodies.push_back(std::move(otherwise));
    }
    out.push_back(std::move(n));
    return Status::Ok();
  }

  Status set_stmt(ExprParser& p, std::vector<Node>& out, int line) {
    Node n{Node::Kind::kSet, "", nullptr, {}, {}, {}, line};
    RDRR_ASSIGN_OR_RETURN(std::string target, p.name());
    n.targets.push_back(std::move(target));
    if (p.accept_op(".")) {
      RDRR_ASSIGN_OR_RETURN(std::string attr, p.name());
      n.targets.push_back(std::move(attr));
    }
    if (!p.accept_op("=")) return p.fail("block assignments ({% set x %}...{% endset %}) are not supported");
    RDRR_ASSIGN_OR_RETURN(n.expr, p.expression());
    RDRR_RETURN_IF_ERROR(p.expect_end());
    out.push_back(std::move(n));
    return Status::Ok();
  }

  static constexpr int kMaxDepth = 100;
  std::vector<Item> items_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<std::vector<Node>> parse(std::string_view source) {
  RDRR_ASSIGN_OR_RETURN(std::vector<Item> items, segment(source));
  TemplateParser parser(std::move(items));
  std::vector<Node> out;
  std::string ender;
  std::unique_ptr<ExprParser> rest;
  RDRR_RETURN_IF_ERROR(parser.block(out, {}, ender, rest));
  return out;
}

}  // namespace rdrr::tok::jinja
