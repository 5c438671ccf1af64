// Statement grammar, after jinja2/parser.py: if/elif/else, for (with else, a filter condition and
// `recursive`), set (expression, tuple, namespace attribute and block forms), macro, call, filter,
// with, break/continue (jinja2.ext.loopcontrols) and transformers' {% generation %}.
#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/chat/parser_impl.h"

namespace glass::tokenizer::chat {
namespace {

// Jinja tags that exist but need a loader, an extension or autoescaping this engine does not have.
bool is_unsupported_tag(std::string_view tag) {
  static constexpr std::string_view kTags[] = {"extends", "block", "include",   "import",     "from",
                                               "do",      "trans", "pluralize", "autoescape", "debug"};
  return std::find(std::begin(kTags), std::end(kTags), tag) != std::end(kTags);
}

// The tag that closes a block ("endif" of {"elif", "else", "endif"}).
std::string_view closing_tag(std::initializer_list<std::string_view> ends) {
  for (std::string_view e : ends) {
    if (e.rfind("end", 0) == 0) return e;
  }
  return *ends.begin();
}

}  // namespace

Error Parser::fail(size_t offset, const std::string& message) const {
  return make_error(ErrorCode::InvalidArgument,
                    fmt::format("chat template:{}: syntax error: {}", src_.location(offset), message));
}

Error Parser::unsupported(size_t offset, const std::string& what) const {
  return make_error(ErrorCode::Unsupported,
                    fmt::format("chat template:{}: unsupported: {}", src_.location(offset), what));
}

std::string Parser::describe(const Token& t) const {
  switch (t.type) {
    case TokenType::Eof:
      return "end of template";
    case TokenType::Data:
      return "template data";
    case TokenType::VarBegin:
      return "'{{'";
    case TokenType::VarEnd:
      return "end of print statement '}}'";
    case TokenType::BlockBegin:
      return "'{%'";
    case TokenType::BlockEnd:
      return "end of statement block '%}'";
    case TokenType::String:
      return "string literal";
    default:
      return "'" + t.text + "'";
  }
}

bool Parser::tuple_end(std::initializer_list<std::string_view> end_names) const {
  const Token& t = cur();
  if (t.type == TokenType::VarEnd || t.type == TokenType::BlockEnd || t.type == TokenType::Eof ||
      is_op(")")) {
    return true;
  }
  return t.type == TokenType::Name &&
         std::find(end_names.begin(), end_names.end(), t.text) != end_names.end();
}

Status Parser::expect_op(std::string_view op) {
  if (!is_op(op)) return fail(cur().offset, fmt::format("expected '{}', got {}", op, describe(cur())));
  advance();
  return {};
}

Result<std::string> Parser::expect_name() {
  if (cur().type != TokenType::Name)
    return fail(cur().offset, fmt::format("expected a name, got {}", describe(cur())));
  std::string name = cur().text;
  advance();
  return name;
}

Status Parser::expect_block_end(std::string_view tag) {
  if (cur().type != TokenType::BlockEnd) {
    return fail(cur().offset, fmt::format("expected end of '{}' tag '%}}', got {}", tag, describe(cur())));
  }
  advance();
  return {};
}

Result<Body> Parser::parse_root() {
  Body body;
  auto end = parse_body(body, {}, 0, "");
  if (!end) return end.error();
  return body;
}

Result<std::string> Parser::parse_body(Body& out, std::initializer_list<std::string_view> ends,
                                       size_t open_offset, std::string_view open_tag) {
  while (true) {
    const Token& t = cur();
    if (t.type == TokenType::Eof) {
      if (ends.size() == 0) return std::string();
      return fail(open_offset,
                  fmt::format("'{}' tag is never closed (expected '{}')", open_tag, closing_tag(ends)));
    }
    if (t.type == TokenType::Data) {
      Stmt s;
      s.kind = StmtKind::Text;
      s.offset = t.offset;
      s.text = t.text;
      out.push_back(std::move(s));
      advance();
      continue;
    }
    if (t.type == TokenType::VarBegin) {
      const size_t offset = t.offset;
      advance();
      auto e = parse_tuple();
      if (!e) return e.error();
      if (cur().type != TokenType::VarEnd) {
        return fail(cur().offset,
                    fmt::format("expected end of print statement '}}}}', got {}", describe(cur())));
      }
      advance();
      Stmt s;
      s.kind = StmtKind::Output;
      s.offset = offset;
      s.exprs.push_back(std::move(*e));
      out.push_back(std::move(s));
      continue;
    }
    if (t.type != TokenType::BlockBegin) return fail(t.offset, fmt::format("unexpected {}", describe(t)));
    const size_t offset = t.offset;
    advance();
    if (cur().type != TokenType::Name)
      return fail(cur().offset, fmt::format("expected a tag name, got {}", describe(cur())));
    const std::string tag = cur().text;
    const size_t tag_offset = cur().offset;
    if (std::find(ends.begin(), ends.end(), tag) != ends.end()) {
      advance();
      return tag;
    }
    if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else") {
      if (ends.size() == 0) return fail(tag_offset, fmt::format("unexpected '{}' with no open block", tag));
      return fail(tag_offset, fmt::format("unexpected '{}', expected '{}' (the '{}' tag opened at {})", tag,
                                          closing_tag(ends), open_tag, src_.location(open_offset)));
    }
    advance();
    auto s = parse_statement(tag, offset);
    if (!s) return s.error();
    out.push_back(std::move(*s));
  }
}

Result<Stmt> Parser::parse_statement(const std::string& tag, size_t offset) {
  if (block_depth_ >= kMaxBlockNesting) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("chat template:{}: blocks nested deeper than {}", src_.location(offset),
                                  kMaxBlockNesting));
  }
  ++block_depth_;
  Stmt s;
  s.offset = offset;
  Status st;
  if (tag == "if") {
    st = parse_if(s);
  } else if (tag == "for") {
    st = parse_for(s);
  } else if (tag == "set") {
    st = parse_set(s);
  } else if (tag == "macro") {
    st = parse_macro(s);
  } else if (tag == "call") {
    st = parse_call_block(s);
  } else if (tag == "filter") {
    st = parse_filter_block(s);
  } else if (tag == "with") {
    st = parse_with(s);
  } else if (tag == "break" || tag == "continue") {
    s.kind = tag == "break" ? StmtKind::Break : StmtKind::Continue;
    st = expect_block_end(tag);
  } else if (tag == "generation") {
    s.kind = StmtKind::Block;
    st = expect_block_end(tag);
    if (st) {
      s.bodies.emplace_back();
      auto end = parse_body(s.bodies[0], {"endgeneration"}, offset, tag);
      st = end ? expect_block_end("endgeneration") : Status(end.error());
    }
  } else if (is_unsupported_tag(tag)) {
    st = unsupported(offset, fmt::format("the '{{% {} %}}' tag", tag));
  } else {
    st = fail(offset, fmt::format("unknown tag '{}'", tag));
  }
  --block_depth_;
  if (!st) return st.error();
  return s;
}

Status Parser::parse_if(Stmt& s) {
  s.kind = StmtKind::If;
  std::string tag = "if";
  while (true) {
    auto cond = parse_tuple(false);
    if (!cond) return cond.error();
    s.exprs.push_back(std::move(*cond));
    if (Status st = expect_block_end(tag); !st) return st;
    s.bodies.emplace_back();
    auto end = parse_body(s.bodies.back(), {"elif", "else", "endif"}, s.offset, "if");
    if (!end) return end.error();
    if (*end == "elif") {
      tag = "elif";
      continue;
    }
    if (*end == "else") {
      if (Status st = expect_block_end("else"); !st) return st;
      s.bodies.emplace_back();
      auto fin = parse_body(s.bodies.back(), {"endif"}, s.offset, "if");
      if (!fin) return fin.error();
    }
    return expect_block_end("endif");
  }
}

Status Parser::parse_for(Stmt& s) {
  s.kind = StmtKind::For;
  auto target = parse_assign_target(false, {"in"});
  if (!target) return target.error();
  s.target = std::move(*target);
  if (!is_name("in"))
    return fail(cur().offset, fmt::format("expected 'in' in for loop, got {}", describe(cur())));
  advance();
  auto iter = parse_tuple(false, {"recursive"});
  if (!iter) return iter.error();
  s.exprs.push_back(std::move(*iter));
  ExprPtr filter;
  if (is_name("if")) {
    advance();
    auto cond = parse_expression();
    if (!cond) return cond.error();
    filter = std::move(*cond);
  }
  s.exprs.push_back(std::move(filter));
  if (is_name("recursive")) {
    s.recursive = true;
    advance();
  }
  if (Status st = expect_block_end("for"); !st) return st;
  s.bodies.resize(2);
  auto end = parse_body(s.bodies[0], {"endfor", "else"}, s.offset, "for");
  if (!end) return end.error();
  if (*end == "else") {
    if (Status st = expect_block_end("else"); !st) return st;
    auto fin = parse_body(s.bodies[1], {"endfor"}, s.offset, "for");
    if (!fin) return fin.error();
  }
  return expect_block_end("endfor");
}

Status Parser::parse_set(Stmt& s) {
  auto target = parse_assign_target(true, {});
  if (!target) return target.error();
  s.target = std::move(*target);
  if (is_op("=")) {
    s.kind = StmtKind::Set;
    advance();
    auto value = parse_tuple();
    if (!value) return value.error();
    s.exprs.push_back(std::move(*value));
    return expect_block_end("set");
  }
  s.kind = StmtKind::SetBlock;
  if (s.target.is_tuple) return fail(s.offset, "a block {% set %} assigns one name");
  ExprPtr filters;
  if (is_op("|")) {
    auto chain = parse_filter_chain(true);
    if (!chain) return chain.error();
    filters = std::move(*chain);
  }
  s.exprs.push_back(std::move(filters));
  if (Status st = expect_block_end("set"); !st) return st;
  s.bodies.emplace_back();
  auto end = parse_body(s.bodies[0], {"endset"}, s.offset, "set");
  if (!end) return end.error();
  return expect_block_end("endset");
}

Status Parser::parse_signature(std::vector<MacroParam>& params) {
  if (Status st = expect_op("("); !st) return st;
  while (!is_op(")")) {
    if (!params.empty()) {
      if (Status st = expect_op(","); !st) return st;
      if (is_op(")")) break;
    }
    const size_t offset = cur().offset;
    auto name = expect_name();
    if (!name) return name.error();
    MacroParam p;
    p.name = *name;
    if (is_op("=")) {
      advance();
      auto def = parse_expression();
      if (!def) return def.error();
      p.default_value = std::move(*def);
    } else if (!params.empty() && params.back().default_value) {
      return fail(offset, fmt::format("parameter '{}' without a default follows one with a default", p.name));
    }
    params.push_back(std::move(p));
  }
  advance();
  return {};
}

Status Parser::parse_macro(Stmt& s) {
  s.kind = StmtKind::Macro;
  auto name = expect_name();
  if (!name) return name.error();
  s.text = *name;
  if (Status st = parse_signature(s.params); !st) return st;
  if (Status st = expect_block_end("macro"); !st) return st;
  s.bodies.emplace_back();
  macro_stack_.push_back(&s);
  auto end = parse_body(s.bodies[0], {"endmacro"}, s.offset, "macro");
  macro_stack_.pop_back();
  if (!end) return end.error();
  // "{% endmacro name %}" is allowed.
  if (cur().type == TokenType::Name) advance();
  return expect_block_end("endmacro");
}

Status Parser::parse_call_block(Stmt& s) {
  s.kind = StmtKind::CallBlock;
  if (is_op("(")) {
    if (Status st = parse_signature(s.params); !st) return st;
  }
  const size_t offset = cur().offset;
  auto call = parse_expression();
  if (!call) return call.error();
  if ((*call)->kind != ExprKind::Call) return fail(offset, "expected a call after '{% call %}'");
  s.exprs.push_back(std::move(*call));
  if (Status st = expect_block_end("call"); !st) return st;
  s.bodies.emplace_back();
  macro_stack_.push_back(&s);
  auto end = parse_body(s.bodies[0], {"endcall"}, s.offset, "call");
  macro_stack_.pop_back();
  if (!end) return end.error();
  return expect_block_end("endcall");
}

Status Parser::parse_filter_block(Stmt& s) {
  s.kind = StmtKind::FilterBlock;
  auto chain = parse_filter_chain(false);
  if (!chain) return chain.error();
  s.exprs.push_back(std::move(*chain));
  if (Status st = expect_block_end("filter"); !st) return st;
  s.bodies.emplace_back();
  auto end = parse_body(s.bodies[0], {"endfilter"}, s.offset, "filter");
  if (!end) return end.error();
  return expect_block_end("endfilter");
}

Status Parser::parse_with(Stmt& s) {
  s.kind = StmtKind::With;
  while (cur().type != TokenType::BlockEnd) {
    if (!s.targets.empty()) {
      if (Status st = expect_op(","); !st) return st;
    }
    auto target = parse_assign_target(false, {});
    if (!target) return target.error();
    if (Status st = expect_op("="); !st) return st;
    auto value = parse_expression();
    if (!value) return value.error();
    s.targets.push_back(std::move(*target));
    s.exprs.push_back(std::move(*value));
  }
  advance();
  s.bodies.emplace_back();
  auto end = parse_body(s.bodies[0], {"endwith"}, s.offset, "with");
  if (!end) return end.error();
  return expect_block_end("endwith");
}

Result<Body> parse_template(const SourceText& src, const std::vector<Token>& tokens) {
  return Parser(src, tokens).parse_root();
}

}  // namespace glass::tokenizer::chat
