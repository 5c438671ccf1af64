// Postfix expressions (attribute, subscript, slice, call), filters, tests, call arguments and
// assignment targets, after jinja2/parser.py.
#include <fmt/format.h>

#include "tokenizer/chat/parser_impl.h"

namespace glass::tokenizer::chat {
namespace {

// Where the source text of a postfix chain starts ("a" of a.b[0]).
size_t leftmost(const Expr& e) {
  const Expr* p = &e;
  while ((p->kind == ExprKind::GetAttr || p->kind == ExprKind::GetItem || p->kind == ExprKind::Slice ||
          p->kind == ExprKind::Call) &&
         !p->items.empty() && p->items[0]) {
    p = p->items[0].get();
  }
  return p->offset;
}

}  // namespace

Result<ExprPtr> Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      auto next = parse_subscript(std::move(node));
      if (!next) return next;
      node = std::move(*next);
    } else if (is_op("(")) {
      const size_t offset = leftmost(*node);  // errors point at the start of the callee
      auto args = parse_call_args();
      if (!args) return args.error();
      std::vector<ExprPtr> items;
      items.push_back(std::move(node));
      auto call = std::make_unique<Expr>();
      call->kind = ExprKind::Call;
      call->offset = offset;
      call->items = std::move(items);
      call->args = std::move(*args);
      auto done = finish(std::move(call));
      if (!done) return done;
      node = std::move(*done);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    Result<ExprPtr> next = ExprPtr();
    if (is_op("|")) {
      next = parse_filter(std::move(node));
    } else if (is_name("is")) {
      next = parse_test(std::move(node));
    } else if (is_op("(")) {
      next = parse_postfix(std::move(node));
    } else {
      return node;
    }
    if (!next) return next;
    node = std::move(*next);
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr node) {
  const size_t offset = cur().offset;
  if (is_op(".")) {
    advance();
    std::vector<ExprPtr> items;
    items.push_back(std::move(node));
    if (cur().type == TokenType::Name) {
      std::string attr = cur().text;
      advance();
      return make(ExprKind::GetAttr, offset, std::move(items), std::move(attr));
    }
    if (cur().type == TokenType::Int) {
      auto key = std::make_unique<Expr>();
      key->offset = cur().offset;
      key->value = Value(cur().int_value);
      advance();
      items.push_back(std::move(key));
      return make(ExprKind::GetItem, offset, std::move(items));
    }
    return fail(cur().offset, fmt::format("expected a name or number after '.', got {}", describe(cur())));
  }
  advance();  // '['
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) {
      if (Status s = expect_op(","); !s) return s.error();
      if (is_op("]")) break;
    }
    auto arg = parse_subscribed();
    if (!arg) return arg;
    args.push_back(std::move(*arg));
  }
  advance();
  if (args.empty()) return fail(offset, "expected a subscript inside '[]'");
  ExprPtr key;
  if (args.size() == 1) {
    key = std::move(args[0]);
  } else {
    auto tuple = make(ExprKind::Tuple, offset, std::move(args));
    if (!tuple) return tuple;
    key = std::move(*tuple);
  }
  if (key->kind == ExprKind::Slice && !key->items.empty() && !key->items[0]) {
    key->items[0] = std::move(node);  // the slice placeholder takes the object
    return finish(std::move(key));
  }
  std::vector<ExprPtr> items;
  items.push_back(std::move(node));
  items.push_back(std::move(key));
  return make(ExprKind::GetItem, offset, std::move(items));
}

// One subscript: an expression, or a slice "a:b:c" with any part absent. A slice is returned as a
// Slice node whose object (items[0]) is still null.
Result<ExprPtr> Parser::parse_subscribed() {
  const size_t offset = cur().offset;
  std::vector<ExprPtr> parts;
  if (is_op(":")) {
    advance();
    parts.push_back(nullptr);
  } else {
    auto first = parse_expression();
    if (!first) return first;
    if (!is_op(":")) return first;
    advance();
    parts.push_back(std::move(*first));
  }
  for (int k = 0; k < 2; ++k) {
    if (k == 1) {
      if (!is_op(":")) {
        parts.push_back(nullptr);
        break;
      }
      advance();
    }
    if (is_op("]") || is_op(",") || is_op(":")) {
      parts.push_back(nullptr);
    } else {
      auto e = parse_expression();
      if (!e) return e;
      parts.push_back(std::move(*e));
    }
  }
  std::vector<ExprPtr> items;
  items.push_back(nullptr);
  for (auto& p : parts) items.push_back(std::move(p));
  return make(ExprKind::Slice, offset, std::move(items));
}

Result<ArgExprs> Parser::parse_call_args() {
  const size_t open = cur().offset;
  if (Status s = expect_op("("); !s) return s.error();
  ArgExprs args;
  bool seen_keyword = false;
  while (!is_op(")")) {
    if (!args.values.empty() || args.star || args.star_star) {
      if (Status s = expect_op(","); !s) return s.error();
      if (is_op(")")) break;
    }
    if (is_op("*") || is_op("**")) {
      const bool kw = is_op("**");
      advance();
      auto e = parse_expression();
      if (!e) return e.error();
      (kw ? args.star_star : args.star) = std::move(*e);
      continue;
    }
    std::string name;
    if (cur().type == TokenType::Name && peek().type == TokenType::Op && peek().text == "=") {
      name = cur().text;
      advance();
      advance();
      seen_keyword = true;
    } else if (seen_keyword || args.star || args.star_star) {
      return fail(cur().offset, "positional argument follows keyword argument");
    }
    auto e = parse_expression();
    if (!e) return e.error();
    args.values.push_back(std::move(*e));
    args.names.push_back(std::move(name));
    if (cur().type == TokenType::Eof) break;
  }
  if (Status s = expect_op(")"); !s) return fail(open, "unclosed '(' in call");
  return args;
}

Result<std::string> Parser::parse_dotted_name() {
  auto name = expect_name();
  if (!name) return name;
  std::string full = *name;
  while (is_op(".") && peek().type == TokenType::Name) {
    advance();
    full += "." + cur().text;
    advance();
  }
  return full;
}

Result<ExprPtr> Parser::parse_filter(ExprPtr node) {
  const size_t offset = cur().offset;
  advance();  // '|'
  return parse_filter_call(std::move(node), offset);
}

// "name" or "name(args)" applied to `node`, the "|" (if any) already consumed.
Result<ExprPtr> Parser::parse_filter_call(ExprPtr node, size_t offset) {
  auto name = parse_dotted_name();
  if (!name) return name.error();
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Filter;
  e->offset = offset;
  e->name = *name;
  e->items.push_back(std::move(node));
  if (is_op("(")) {
    auto args = parse_call_args();
    if (!args) return args.error();
    e->args = std::move(*args);
  }
  return finish(std::move(e));
}

Result<ExprPtr> Parser::parse_filter_chain(bool leading_pipe) {
  ExprPtr node;  // null: the block's rendered text
  if (!leading_pipe) {
    auto first = parse_filter_call(nullptr, cur().offset);
    if (!first) return first;
    node = std::move(*first);
  }
  while (is_op("|")) {
    auto next = parse_filter(std::move(node));
    if (!next) return next;
    node = std::move(*next);
  }
  return node;
}

Result<ExprPtr> Parser::parse_test(ExprPtr node) {
  const size_t offset = cur().offset;
  advance();  // 'is'
  bool negated = false;
  if (is_name("not")) {
    negated = true;
    advance();
  }
  auto name = parse_dotted_name();
  if (!name) return name.error();
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Test;
  e->offset = offset;
  e->name = *name;
  e->negated = negated;
  e->items.push_back(std::move(node));
  const Token& t = cur();
  if (is_op("(")) {
    auto args = parse_call_args();
    if (!args) return args.error();
    e->args = std::move(*args);
  } else if ((t.type == TokenType::Name || t.type == TokenType::String || t.type == TokenType::Int ||
              t.type == TokenType::Float || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) return fail(t.offset, "you cannot chain multiple tests with 'is'");
    auto arg = parse_primary();
    if (!arg) return arg;
    auto post = parse_postfix(std::move(*arg));
    if (!post) return post;
    e->args.values.push_back(std::move(*post));
    e->args.names.emplace_back();
  }
  return finish(std::move(e));
}

Result<Target> Parser::parse_assign_target(bool with_namespace,
                                           std::initializer_list<std::string_view> end_names) {
  auto one = [&]() -> Result<Target> {
    Target t;
    if (is_op("(")) {
      RecursionGuard guard(recursion_);
      if (guard.exceeded(kMaxBlockNesting)) return fail(cur().offset, "assignment target nested too deeply");
      advance();
      auto inner = parse_assign_target(false, {});
      if (!inner) return inner;
      if (Status s = expect_op(")"); !s) return s.error();
      return inner;
    }
    const size_t offset = cur().offset;
    auto name = expect_name();
    if (!name) return name.error();
    if (*name == "true" || *name == "false" || *name == "none" || *name == "True" || *name == "False" ||
        *name == "None") {
      return fail(offset, fmt::format("cannot assign to '{}'", *name));
    }
    t.name = *name;
    if (with_namespace && is_op(".")) {
      advance();
      auto attr = expect_name();
      if (!attr) return attr.error();
      t.attr = *attr;
    }
    return t;
  };
  auto first = one();
  if (!first) return first;
  if (!is_op(",")) return first;
  Target tuple;
  tuple.is_tuple = true;
  tuple.items.push_back(std::move(*first));
  while (is_op(",")) {
    advance();
    if (tuple_end(end_names) || is_op("=")) break;
    auto next = one();
    if (!next) return next;
    tuple.items.push_back(std::move(*next));
  }
  return tuple;
}

}  // namespace glass::tokenizer::chat
