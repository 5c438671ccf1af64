#include "tokenizer/chat/objects.h"

#include <fmt/format.h>

#include "tokenizer/chat/args.h"

namespace glass::tokenizer::chat {

std::optional<Value> NamespaceObject::get_attr(std::string_view name) const {
  for (const auto& [k, v] : attrs_) {
    if (k == name) return v;
  }
  return std::nullopt;
}

bool NamespaceObject::set_attr(const std::string& name, Value v) {
  for (auto& [k, old] : attrs_) {
    if (k == name) {
      old = std::move(v);
      return true;
    }
  }
  attrs_.emplace_back(name, std::move(v));
  return true;
}

void NamespaceObject::write_repr(std::string& out, uint32_t depth, size_t max_bytes) const {
  std::vector<std::pair<Value, Value>> items;
  for (const auto& [k, v] : attrs_) items.emplace_back(Value(k), v);
  out += "<Namespace ";
  chat::write_repr(out, Value::dict(std::move(items)), depth + 1, max_bytes);
  out += ">";
}

std::optional<Value> LoopObject::get_attr(std::string_view name) const {
  const auto n = static_cast<int64_t>(items_->size());
  const auto i = static_cast<int64_t>(index0);
  if (name == "index0") return Value(i);
  if (name == "index") return Value(i + 1);
  if (name == "revindex") return Value(n - i);
  if (name == "revindex0") return Value(n - i - 1);
  if (name == "first") return Value(i == 0);
  if (name == "last") return Value(i == n - 1);
  if (name == "length") return Value(n);
  if (name == "depth") return Value(static_cast<int64_t>(depth_));
  if (name == "depth0") return Value(static_cast<int64_t>(depth_ - 1));
  if (name == "previtem") {
    if (i == 0) return Value::undefined("UndefinedError: there is no previous item");
    return (*items_)[index0 - 1];
  }
  if (name == "nextitem") {
    if (i + 1 >= n) return Value::undefined("UndefinedError: there is no next item");
    return (*items_)[index0 + 1];
  }
  if (name == "cycle") {
    const size_t at = index0;
    return Value::function("cycle", [at](Interpreter&, CallArgs& args) -> Result<Value> {
      if (args.pos.empty()) return type_error("no items for cycling given");
      return args.pos[at % args.pos.size()];
    });
  }
  if (name == "changed") {
    auto last = last_changed_;
    return Value::function("changed", [last](Interpreter&, CallArgs& args) -> Result<Value> {
      Value now = Value::list(args.pos, true);
      if (*last && values_equal(**last, now)) return Value(false);
      *last = std::move(now);
      return Value(true);
    });
  }
  return std::nullopt;
}

void LoopObject::write_repr(std::string& out, uint32_t, size_t) const {
  out += fmt::format("<LoopContext {}/{}>", index0 + 1, items_->size());
}

Result<Value> LoopObject::call(Interpreter& in, CallArgs& args) {
  if (!stmt_ || !stmt_->recursive) {
    return type_error("the loop must have the 'recursive' marker to be called recursively");
  }
  auto a = bind_args("loop", args, {"iterable"}, 1);
  if (!a) return a.error();
  auto items = iterate((*a)[0], in.limits().max_items);
  if (!items) return items.error();
  const ScopePtr scope = scope_.lock();
  if (!scope)
    return make_error(ErrorCode::InvalidArgument, "TypeError: the loop has finished and cannot be called");
  auto text = in.render_loop(*stmt_, scope, *items, depth_ + 1);
  if (!text) return text.error();
  return Value(std::move(*text));
}

Result<Value> JoinerObject::call(Interpreter&, CallArgs& args) {
  if (!args.pos.empty() || !args.kw.empty()) return type_error("joiner() takes no arguments");
  if (!used_) {
    used_ = true;
    return Value("");
  }
  return Value(sep_);
}

std::optional<Value> CyclerObject::get_attr(std::string_view name) const {
  auto pos = pos_;
  const auto items = std::make_shared<const std::vector<Value>>(items_);
  if (name == "current") return items->empty() ? Value::none() : (*items)[*pos % items->size()];
  if (name == "next") {
    return Value::function("next", [pos, items](Interpreter&, CallArgs&) -> Result<Value> {
      if (items->empty()) return Value::none();
      const size_t current = *pos % items->size();
      *pos = (current + 1) % items->size();
      return Result<Value>((*items)[current]);
    });
  }
  if (name == "reset") {
    return Value::function("reset", [pos](Interpreter&, CallArgs&) -> Result<Value> {
      *pos = 0;
      return Value::none();
    });
  }
  return std::nullopt;
}

Value make_macro(const Stmt& s, const std::string& name, const ScopePtr& scope) {
  const Stmt* stmt = &s;
  std::weak_ptr<Scope> closure = scope;
  return Value::function(
      name, [stmt, closure](Interpreter& in, CallArgs& args) { return in.call_macro(*stmt, closure, args); });
}

}  // namespace glass::tokenizer::chat
