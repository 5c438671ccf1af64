// Expression grammar, after jinja2/parser.py (parse_condexpr ... parse_primary), with the same
// precedence: conditional < or < and < not < comparison < + - < ~ < * / // % < ** < unary <
// postfix (. [] ()) and filters / tests.
#include <fmt/format.h>

#include "tokenizer/chat/parser_impl.h"

namespace glass::tokenizer::chat {
namespace {

constexpr int kMaxRecursion = 3 * kMaxBlockNesting + 96;

bool is_compare_op(const Token& t) {
  return t.type == TokenType::Op && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" ||
                                     t.text == ">" || t.text == ">=");
}

}  // namespace

Result<ExprPtr> Parser::finish(ExprPtr node) {
  int depth = 0;
  auto visit = [&depth](const ExprPtr& e) {
    if (e) depth = std::max(depth, e->depth);
  };
  for (const auto& e : node->items) visit(e);
  for (const auto& e : node->args.values) visit(e);
  visit(node->args.star);
  visit(node->args.star_star);
  node->depth = depth + 1;
  if (node->depth > kMaxExpressionDepth) {
    return fail(node->offset, fmt::format("expression nested deeper than {} levels", kMaxExpressionDepth));
  }
  return node;
}

Result<ExprPtr> Parser::make(ExprKind kind, size_t offset, std::vector<ExprPtr> items, std::string name) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->offset = offset;
  e->items = std::move(items);
  e->name = std::move(name);
  return finish(std::move(e));
}

void Parser::note_name(const std::string& name) {
  if (name != "varargs" && name != "kwargs" && name != "caller") return;
  for (Stmt* m : macro_stack_) {
    if (name == "varargs") m->uses_varargs = true;
    if (name == "kwargs") m->uses_kwargs = true;
    if (name == "caller") m->uses_caller = true;
  }
}

Result<ExprPtr> Parser::parse_expression(bool with_condexpr) {
  return with_condexpr ? parse_condexpr() : parse_or();
}

Result<ExprPtr> Parser::parse_condexpr() {
  RecursionGuard guard(recursion_);
  if (guard.exceeded(kMaxRecursion)) return fail(cur().offset, "expression nested too deeply");
  auto value = parse_or();
  if (!value) return value;
  ExprPtr node = std::move(*value);
  while (is_name("if")) {
    const size_t offset = cur().offset;
    advance();
    auto cond = parse_or();
    if (!cond) return cond;
    ExprPtr otherwise;
    if (is_name("else")) {
      advance();
      auto e = parse_condexpr();
      if (!e) return e;
      otherwise = std::move(*e);
    }
    std::vector<ExprPtr> items;
    items.push_back(std::move(node));
    items.push_back(std::move(*cond));
    items.push_back(std::move(otherwise));
    auto made = make(ExprKind::Cond, offset, std::move(items));
    if (!made) return made;
    node = std::move(*made);
  }
  return node;
}

Result<ExprPtr> Parser::parse_or() {
  auto left = parse_and();
  if (!left) return left;
  while (is_name("or")) {
    const size_t offset = cur().offset;
    advance();
    auto right = parse_and();
    if (!right) return right;
    std::vector<ExprPtr> items;
    items.push_back(std::move(*left));
    items.push_back(std::move(*right));
    left = make(ExprKind::Binary, offset, std::move(items), "or");
    if (!left) return left;
  }
  return left;
}

Result<ExprPtr> Parser::parse_and() {
  auto left = parse_not();
  if (!left) return left;
  while (is_name("and")) {
    const size_t offset = cur().offset;
    advance();
    auto right = parse_not();
    if (!right) return right;
    std::vector<ExprPtr> items;
    items.push_back(std::move(*left));
    items.push_back(std::move(*right));
    left = make(ExprKind::Binary, offset, std::move(items), "and");
    if (!left) return left;
  }
  return left;
}

Result<ExprPtr> Parser::parse_not() {
  if (!is_name("not")) return parse_compare();
  RecursionGuard guard(recursion_);
  if (guard.exceeded(kMaxRecursion)) return fail(cur().offset, "expression nested too deeply");
  const size_t offset = cur().offset;
  advance();
  auto operand = parse_not();
  if (!operand) return operand;
  std::vector<ExprPtr> items;
  items.push_back(std::move(*operand));
  return make(ExprKind::Not, offset, std::move(items));
}

Result<ExprPtr> Parser::parse_compare() {
  const size_t offset = cur().offset;
  auto first = parse_math1();
  if (!first) return first;
  std::vector<ExprPtr> items;
  std::vector<std::string> ops;
  items.push_back(std::move(*first));
  while (true) {
    std::string op;
    if (is_compare_op(cur())) {
      op = cur().text;
      advance();
    } else if (is_name("in")) {
      op = "in";
      advance();
    } else if (is_name("not") && peek().type == TokenType::Name && peek().text == "in") {
      op = "not in";
      advance();
      advance();
    } else {
      break;
    }
    auto operand = parse_math1();
    if (!operand) return operand;
    ops.push_back(std::move(op));
    items.push_back(std::move(*operand));
  }
  if (ops.empty()) return std::move(items[0]);
  auto node = make(ExprKind::Compare, offset, std::move(items));
  if (node) (*node)->ops = std::move(ops);
  return node;
}

Result<ExprPtr> Parser::parse_math1() {
  auto left = parse_concat();
  if (!left) return left;
  while (is_op("+") || is_op("-")) {
    const Token op = cur();
    advance();
    auto right = parse_concat();
    if (!right) return right;
    std::vector<ExprPtr> items;
    items.push_back(std::move(*left));
    items.push_back(std::move(*right));
    left = make(ExprKind::Binary, op.offset, std::move(items), op.text);
    if (!left) return left;
  }
  return left;
}

Result<ExprPtr> Parser::parse_concat() {
  const size_t offset = cur().offset;
  auto first = parse_math2();
  if (!first) return first;
  if (!is_op("~")) return first;
  std::vector<ExprPtr> items;
  items.push_back(std::move(*first));
  while (is_op("~")) {
    advance();
    auto next = parse_math2();
    if (!next) return next;
    items.push_back(std::move(*next));
  }
  return make(ExprKind::Concat, offset, std::move(items));
}

Result<ExprPtr> Parser::parse_math2() {
  auto left = parse_pow();
  if (!left) return left;
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token op = cur();
    advance();
    auto right = parse_pow();
    if (!right) return right;
    std::vector<ExprPtr> items;
    items.push_back(std::move(*left));
    items.push_back(std::move(*right));
    left = make(ExprKind::Binary, op.offset, std::move(items), op.text);
    if (!left) return left;
  }
  return left;
}

Result<ExprPtr> Parser::parse_pow() {
  auto left = parse_unary(true);
  if (!left) return left;
  while (is_op("**")) {
    const size_t offset = cur().offset;
    advance();
    auto right = parse_unary(true);
    if (!right) return right;
    std::vector<ExprPtr> items;
    items.push_back(std::move(*left));
    items.push_back(std::move(*right));
    left = make(ExprKind::Binary, offset, std::move(items), "**");
    if (!left) return left;
  }
  return left;
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
  RecursionGuard guard(recursion_);
  if (guard.exceeded(kMaxRecursion)) return fail(cur().offset, "expression nested too deeply");
  const size_t offset = cur().offset;
  Result<ExprPtr> node = ExprPtr();
  if (is_op("-") || is_op("+")) {
    const ExprKind kind = is_op("-") ? ExprKind::Neg : ExprKind::Pos;
    advance();
    auto operand = parse_unary(false);
    if (!operand) return operand;
    std::vector<ExprPtr> items;
    items.push_back(std::move(*operand));
    node = make(kind, offset, std::move(items));
  } else {
    node = parse_primary();
  }
  if (!node) return node;
  node = parse_postfix(std::move(*node));
  if (!node || !with_filter) return node;
  return parse_filter_expr(std::move(*node));
}

Result<ExprPtr> Parser::parse_primary() {
  const Token& t = cur();
  const size_t offset = t.offset;
  if (t.type == TokenType::Name) {
    auto e = std::make_unique<Expr>();
    e->offset = offset;
    if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
      e->value = Value(t.text == "true" || t.text == "True");
    } else if (t.text == "none" || t.text == "None") {
      e->value = Value::none();
    } else {
      e->kind = ExprKind::Name;
      e->name = t.text;
      note_name(t.text);
    }
    advance();
    return e;
  }
  if (t.type == TokenType::String) {
    std::string s;
    while (cur().type == TokenType::String) {  // adjacent literals concatenate, as in Python
      s += cur().text;
      advance();
    }
    auto e = std::make_unique<Expr>();
    e->offset = offset;
    e->value = Value(std::move(s));
    return e;
  }
  if (t.type == TokenType::Int || t.type == TokenType::Float) {
    auto e = std::make_unique<Expr>();
    e->offset = offset;
    e->value = t.type == TokenType::Int ? Value(t.int_value) : Value(t.float_value);
    advance();
    return e;
  }
  if (is_op("(")) {
    advance();
    auto inner = parse_tuple(true, {}, true);
    if (!inner) return inner;
    if (Status s = expect_op(")"); !s) return s.error();
    return inner;
  }
  if (is_op("[")) return parse_list_or_dict(false);
  if (is_op("{")) return parse_list_or_dict(true);
  return fail(offset, fmt::format("unexpected {}", describe(t)));
}

Result<ExprPtr> Parser::parse_list_or_dict(bool is_dict) {
  const size_t offset = cur().offset;
  const std::string_view close = is_dict ? "}" : "]";
  advance();
  std::vector<ExprPtr> items;
  while (!is_op(close)) {
    if (!items.empty()) {
      if (Status s = expect_op(","); !s) return s.error();
      if (is_op(close)) break;
    }
    auto item = parse_expression();
    if (!item) return item;
    items.push_back(std::move(*item));
    if (is_dict) {
      if (Status s = expect_op(":"); !s) return s.error();
      auto value = parse_expression();
      if (!value) return value;
      items.push_back(std::move(*value));
    }
  }
  advance();
  return make(is_dict ? ExprKind::Dict : ExprKind::List, offset, std::move(items));
}

Result<ExprPtr> Parser::parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> end_names,
                                    bool explicit_parens) {
  const size_t offset = cur().offset;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) {
      if (Status s = expect_op(","); !s) return s.error();
    }
    if (tuple_end(end_names)) break;
    auto item = parse_expression(with_condexpr);
    if (!item) return item;
    items.push_back(std::move(*item));
    if (!is_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens)
      return fail(cur().offset, fmt::format("expected an expression, got {}", describe(cur())));
  }
  return make(ExprKind::Tuple, offset, std::move(items));
}

}  // namespace glass::tokenizer::chat
