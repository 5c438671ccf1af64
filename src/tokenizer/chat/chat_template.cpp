#include "tokenizer/chat/chat_template.h"

#include <fmt/format.h>

#include "tokenizer/chat/builtins.h"
#include "tokenizer/chat/filters.h"
#include "tokenizer/chat/jinja_tests.h"
#include "tokenizer/chat/json_value.h"
#include "tokenizer/chat/lexer.h"
#include "tokenizer/chat/parser.h"

namespace glass::tokenizer::chat {
namespace {

constexpr size_t kMaxTemplateBytes = 4u << 20;

// Checks what Jinja checks when it compiles a template: break / continue sit inside a loop body,
// and every filter and test exists. As in Jinja, a filter or test name unknown to Jinja itself is
// only a runtime error where it sits in a "soft" frame (directly inside an if statement or an
// inline if-expression), so a template may name one (e.g. a server's custom filter) on a branch a
// conversation never takes. A Jinja builtin this engine does not implement fails here wherever it
// sits: an unsupported capability is named when the template loads, not when a branch is taken.
class Validator {
 public:
  explicit Validator(const SourceText& src) : src_(src) {}

  Status body(const Body& b, bool in_loop, bool soft) {
    for (const Stmt& s : b) {
      if (Status st = stmt(s, in_loop, soft); !st) return st;
    }
    return {};
  }

 private:
  Error fail(ErrorCode code, size_t offset, const std::string& message) const {
    return make_error(code, fmt::format("chat template:{}: {}", src_.location(offset), message));
  }

  Status stmt(const Stmt& s, bool in_loop, bool soft) {
    if ((s.kind == StmtKind::Break || s.kind == StmtKind::Continue) && !in_loop) {
      return fail(
          ErrorCode::InvalidArgument, s.offset,
          fmt::format("syntax error: '{}' outside loop", s.kind == StmtKind::Break ? "break" : "continue"));
    }
    // Which expressions and bodies Jinja compiles in a soft frame (see jinja2/compiler.py).
    bool exprs_soft = soft;
    switch (s.kind) {
      case StmtKind::If:
        exprs_soft = true;
        break;
      case StmtKind::SetBlock:
      case StmtKind::FilterBlock:
        exprs_soft = false;
        break;
      default:
        break;
    }
    for (size_t i = 0; i < s.exprs.size(); ++i) {
      const bool loop_test = s.kind == StmtKind::For && i == 1;  // `for x in y if test`
      if (Status st = expr(s.exprs[i].get(), loop_test ? false : exprs_soft); !st) return st;
    }
    for (const auto& p : s.params) {
      if (Status st = expr(p.default_value.get(), false); !st) return st;
    }
    for (size_t i = 0; i < s.bodies.size(); ++i) {
      bool inner_loop = in_loop;
      bool inner_soft = false;
      if (s.kind == StmtKind::If) inner_soft = true;
      if (s.kind == StmtKind::For) inner_loop = i == 0;  // the else body is outside the loop
      if (s.kind == StmtKind::Macro || s.kind == StmtKind::CallBlock || s.kind == StmtKind::Block)
        inner_loop = false;
      if (Status st = body(s.bodies[i], inner_loop, inner_soft); !st) return st;
    }
    return {};
  }

  Status expr(const Expr* e, bool soft) {
    if (!e) return {};
    if (e->kind == ExprKind::Cond) soft = true;
    if (e->kind == ExprKind::Filter && !find_filter(e->name)) {
      if (is_unsupported_filter(e->name)) {
        return fail(ErrorCode::Unsupported, e->offset, fmt::format("unsupported: filter '{}'", e->name));
      }
      if (!soft)
        return fail(ErrorCode::InvalidArgument, e->offset, fmt::format("unknown filter '{}'", e->name));
    }
    if (e->kind == ExprKind::Test && !find_test(e->name) && !soft) {
      return fail(ErrorCode::InvalidArgument, e->offset, fmt::format("unknown test '{}'", e->name));
    }
    for (const auto& c : e->items) {
      if (Status st = expr(c.get(), soft); !st) return st;
    }
    for (const auto& c : e->args.values) {
      if (Status st = expr(c.get(), soft); !st) return st;
    }
    if (Status st = expr(e->args.star.get(), soft); !st) return st;
    return expr(e->args.star_star.get(), soft);
  }

  const SourceText& src_;
};

}  // namespace

struct ChatTemplate::Impl {
  explicit Impl(std::string_view source) : src(source) {}
  SourceText src;
  Body body;
};

Result<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  if (source.size() > kMaxTemplateBytes) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("chat template: {} bytes exceeds the limit of {} bytes", source.size(),
                                  kMaxTemplateBytes));
  }
  auto impl = std::make_shared<Impl>(source);
  auto tokens = tokenize(impl->src);
  if (!tokens) return tokens.error();
  auto body = parse_template(impl->src, *tokens);
  if (!body) return body.error();
  impl->body = std::move(*body);
  if (Status st = Validator(impl->src).body(impl->body, false, false); !st) return st.error();
  return ChatTemplate(std::move(impl));
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& variables,
                                         const RenderOptions& options) const {
  if (!variables.is_object()) {
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("chat template: variables must be a JSON object, got {}", variables.type_name()));
  }
  auto globals = std::make_shared<Scope>(nullptr);
  add_builtins(*globals);
  auto vars = std::make_shared<Scope>(globals);
  for (const auto& [name, j] : variables.items()) {
    auto v = value_from_json(j);
    if (!v)
      return make_error(v.error().code,
                        fmt::format("chat template: variable '{}': {}", name, v.error().message));
    vars->set(name, std::move(*v));
  }
  Interpreter in(impl_->src, options.limits, options.clock);
  return in.render(impl_->body, vars);
}

}  // namespace glass::tokenizer::chat
