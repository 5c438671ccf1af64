// Statement rendering, scopes, macro calls and the render budget.
#include "tokenizer/chat/interpreter.h"

#include <fmt/format.h>

#include "tokenizer/chat/objects.h"

namespace glass::tokenizer::chat {

const Value* Scope::find(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent_.get()) {
    for (const auto& [k, v] : s->vars_) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::set(const std::string& name, Value v) {
  for (auto& [k, old] : vars_) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars_.emplace_back(name, std::move(v));
}

Interpreter::Interpreter(const SourceText& src, const RenderLimits& limits, std::function<std::tm()> clock)
    : src_(src), limits_(limits), clock_(std::move(clock)) {}

Interpreter::~Interpreter() {
  for (const ObjPtr& o : tracked_) o->release();
}

Error Interpreter::error_at(size_t offset, ErrorCode code, const std::string& message) const {
  return make_error(code, fmt::format("chat template:{}: {}", src_.location(offset), message));
}

Error Interpreter::located(size_t offset, Error e) const {
  if (e.message.rfind("chat template:", 0) == 0) return e;
  return error_at(offset, e.code, e.message);
}

Status Interpreter::charge(uint64_t n) {
  steps_ += n;
  if (steps_ > limits_.max_steps) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("rendering took more than {} steps (an endless loop?)", limits_.max_steps));
  }
  if (live_ != nullptr && live_->held() > static_cast<int64_t>(limits_.max_live_bytes)) {
    return make_error(
        ErrorCode::CapacityExceeded,
        fmt::format("the strings and lists made while rendering hold more than {} bytes at once",
                    limits_.max_live_bytes));
  }
  return {};
}

Status Interpreter::charge_size(const Value& v) {
  if (v.is_string()) return charge(v.str().size() / kBytesPerStep);
  // A list or dict by its tree size: comparing, printing or copying it may visit every value inside.
  if (v.is_list() || v.is_dict()) return charge(v.tree_size() / kItemsPerStep);
  return {};
}

Status Interpreter::check_string(size_t bytes) const {
  if (bytes > limits_.max_string_bytes) {
    return make_error(
        ErrorCode::CapacityExceeded,
        fmt::format("a string of {} bytes exceeds the limit of {} bytes", bytes, limits_.max_string_bytes));
  }
  return {};
}

Status Interpreter::check_items(size_t n) const {
  if (n > limits_.max_items) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("a sequence of {} items exceeds the limit of {}", n, limits_.max_items));
  }
  return {};
}

Status Interpreter::check_stack() const {
  // The stack grows down on every platform glass targets; the frame address (not a local's
  // address, which ASan may move to a fake stack) measures how much has been used.
  const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (stack_base_ > here && stack_base_ - here > limits_.max_stack_bytes) {
    return make_error(
        ErrorCode::CapacityExceeded,
        fmt::format("nesting used more than {} bytes of stack (deep recursion?)", limits_.max_stack_bytes));
  }
  return {};
}

std::tm Interpreter::now() const {
  if (clock_) return clock_();
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

Status Interpreter::append(std::string& out, std::string_view text) const {
  if (Status s = check_string(out.size() + text.size()); !s) return s;
  out += text;
  return {};
}

Result<std::string> Interpreter::render(const Body& body, const ScopePtr& globals) {
  stack_base_ = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const LiveBytesScope live;
  live_ = &live;
  root_ = std::make_shared<Scope>(globals);
  std::string out;
  auto flow = render_body(body, root_, out);
  live_ = nullptr;
  if (!flow) {
    Error e = flow.error();
    if (e.message.rfind("chat template:", 0) != 0) e.message = "chat template: " + e.message;
    return e;
  }
  return out;
}

Result<Flow> Interpreter::render_body(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const Stmt& s : body) {
    auto flow = render_stmt(s, scope, out);
    if (!flow) return flow;
    if (*flow != Flow::Normal) return flow;
  }
  return Flow::Normal;
}

Result<Flow> Interpreter::render_stmt(const Stmt& s, const ScopePtr& scope, std::string& out) {
  if (Status st = charge(); !st) return located(s.offset, st.error());
  if (Status st = check_stack(); !st) return located(s.offset, st.error());
  switch (s.kind) {
    case StmtKind::Text:
      if (Status st = append(out, s.text); !st) return located(s.offset, st.error());
      return Flow::Normal;
    case StmtKind::Output: {
      auto v = eval(*s.exprs[0], scope);
      if (!v) return v.error();
      if (Status st = append(out, to_py_str(*v, limits_.max_string_bytes)); !st)
        return located(s.offset, st.error());
      return Flow::Normal;
    }
    case StmtKind::If:
      for (size_t i = 0; i < s.exprs.size(); ++i) {
        auto cond = eval(*s.exprs[i], scope);
        if (!cond) return cond.error();
        if (cond->truthy()) return render_body(s.bodies[i], scope, out);
      }
      if (s.bodies.size() > s.exprs.size()) return render_body(s.bodies.back(), scope, out);
      return Flow::Normal;
    case StmtKind::For: {
      if (Status st = render_for(s, scope, out); !st) return st.error();
      return Flow::Normal;
    }
    case StmtKind::Set: {
      auto v = eval(*s.exprs[0], scope);
      if (!v) return v.error();
      if (Status st = assign(s.target, *v, scope, s.offset); !st) return st.error();
      return Flow::Normal;
    }
    case StmtKind::SetBlock:
    case StmtKind::FilterBlock: {
      std::string text;
      auto flow = render_body(s.bodies[0], std::make_shared<Scope>(scope), text);
      if (!flow) return flow;
      Value v(std::move(text));
      const Expr* chain = s.exprs[0].get();
      if (chain) {
        const Value* saved = filter_input_;
        filter_input_ = &v;
        auto filtered = eval(*chain, scope);
        filter_input_ = saved;
        if (!filtered) return filtered.error();
        v = std::move(*filtered);
      }
      if (s.kind == StmtKind::FilterBlock) {
        if (Status st = append(out, to_py_str(v)); !st) return located(s.offset, st.error());
      } else if (Status st = assign(s.target, v, scope, s.offset); !st) {
        return st.error();
      }
      return Flow::Normal;
    }
    case StmtKind::Macro:
      scope->set(s.text, make_macro(s, s.text, scope));
      return Flow::Normal;
    case StmtKind::CallBlock: {
      if (Status st = render_call_block(s, scope, out); !st) return st.error();
      return Flow::Normal;
    }
    case StmtKind::With: {
      auto inner = std::make_shared<Scope>(scope);
      for (size_t i = 0; i < s.targets.size(); ++i) {
        auto v = eval(*s.exprs[i], scope);
        if (!v) return v.error();
        if (Status st = assign(s.targets[i], *v, inner, s.offset); !st) return st.error();
      }
      return render_body(s.bodies[0], inner, out);
    }
    case StmtKind::Block:  // transformers renders {% generation %} as a call block: its own scope
      return render_body(s.bodies[0], std::make_shared<Scope>(scope), out);
    case StmtKind::Break:
      return Flow::Break;
    case StmtKind::Continue:
      return Flow::Continue;
  }
  return error_at(s.offset, ErrorCode::Internal, "unknown statement kind");
}

Status Interpreter::assign(const Target& t, const Value& v, const ScopePtr& scope, size_t offset) {
  if (t.is_tuple) {
    if (!(v.is_list() || v.is_string() || v.is_dict() || v.is_undefined())) {
      return error_at(offset, ErrorCode::InvalidArgument,
                      fmt::format("TypeError: cannot unpack non-iterable {} object", v.type_name()));
    }
    auto items = iterate(v, limits_.max_items);
    if (!items) return located(offset, items.error());
    if (items->size() != t.items.size()) {
      return error_at(offset, ErrorCode::InvalidArgument,
                      items->size() > t.items.size()
                          ? fmt::format("ValueError: too many values to unpack (expected {})", t.items.size())
                          : fmt::format("ValueError: not enough values to unpack (expected {}, got {})",
                                        t.items.size(), items->size()));
    }
    for (size_t i = 0; i < items->size(); ++i) {
      if (Status s = assign(t.items[i], (*items)[i], scope, offset); !s) return s;
    }
    return {};
  }
  if (!t.attr.empty()) {
    const Value* obj = scope->find(t.name);
    if (!obj || !obj->is_object() || !obj->object()->set_attr(t.attr, v)) {
      return error_at(offset, ErrorCode::InvalidArgument,
                      "TemplateRuntimeError: cannot assign attribute on non-namespace object");
    }
    return {};
  }
  scope->set(t.name, v);
  return {};
}

Status Interpreter::render_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  auto iterable = eval(*s.exprs[0], scope);
  if (!iterable) return iterable.error();
  auto items = iterate(*iterable, limits_.max_items);
  if (!items) return located(s.exprs[0]->offset, items.error());
  auto text = render_loop(s, scope, *items, 1);
  if (!text) return text.error();
  return append(out, *text);
}

Result<std::string> Interpreter::render_loop(const Stmt& s, const ScopePtr& scope,
                                             const std::vector<Value>& all, int depth) {
  if (depth > 1 && call_depth_ >= limits_.max_call_depth) {
    return error_at(s.offset, ErrorCode::CapacityExceeded,
                    fmt::format("recursive loop calls nested deeper than {}", limits_.max_call_depth));
  }
  std::vector<Value> items;
  if (const Expr* filter = s.exprs[1].get()) {
    for (const Value& item : all) {
      if (Status st = charge(); !st) return located(s.offset, st.error());
      auto inner = std::make_shared<Scope>(scope);
      if (Status st = assign(s.target, item, inner, s.offset); !st) return st.error();
      auto keep = eval(*filter, inner);
      if (!keep) return keep.error();
      if (keep->truthy()) items.push_back(item);
    }
  } else {
    items = all;
  }
  std::string out;
  if (items.empty()) {
    auto flow = render_body(s.bodies[1], std::make_shared<Scope>(scope), out);
    if (!flow) return flow.error();
    return out;
  }
  const auto shared = std::make_shared<const std::vector<Value>>(std::move(items));
  const auto loop = std::make_shared<LoopObject>(shared, depth, &s, scope);
  const Value loop_value{ObjPtr(loop)};
  track(loop_value.object());
  const int depth_step = depth > 1 ? 1 : 0;  // only recursive loop(...) calls nest
  call_depth_ += depth_step;
  for (size_t i = 0; i < shared->size(); ++i) {
    if (Status st = charge(); !st) {
      call_depth_ -= depth_step;
      return located(s.offset, st.error());
    }
    loop->index0 = i;
    auto inner = std::make_shared<Scope>(scope);
    inner->set("loop", loop_value);
    Status st = assign(s.target, (*shared)[i], inner, s.offset);
    Result<Flow> flow = st ? render_body(s.bodies[0], inner, out) : Result<Flow>(st.error());
    if (!flow) {
      call_depth_ -= depth_step;
      return flow.error();
    }
    if (*flow == Flow::Break) break;
  }
  call_depth_ -= depth_step;
  // Held only here (loop, loop_value) and in tracked_: no `set x = loop` kept it, so its items go now,
  // not when the render ends (each inner loop of a nested pair kept its list: 100 inner loops over
  // range(100000) held 224 MB).
  if (loop.use_count() == 3) untrack(loop.get());
  return out;
}

void Interpreter::untrack(const Object* obj) {
  for (auto it = tracked_.rbegin(); it != tracked_.rend(); ++it) {
    if (it->get() == obj) {
      tracked_.erase(std::next(it).base());
      return;
    }
  }
}

Status Interpreter::render_call_block(const Stmt& s, const ScopePtr& scope, std::string& out) {
  const Expr& call = *s.exprs[0];
  auto fn = eval(*call.items[0], scope);
  if (!fn) return fn.error();
  auto args = eval_args(call.args, scope);
  if (!args) return args.error();
  args->kw.emplace_back("caller", make_macro(s, "caller", scope));
  auto r = call_value(*fn, *args);
  if (!r) return located(call.offset, r.error());
  if (Status st = append(out, to_py_str(*r)); !st) return located(s.offset, st.error());
  return {};
}

Result<Value> Interpreter::call_macro(const Stmt& m, const std::weak_ptr<Scope>& closure, CallArgs& args) {
  const std::string name = m.kind == StmtKind::Macro ? m.text : "caller";
  if (call_depth_ >= limits_.max_call_depth) {
    return error_at(m.offset, ErrorCode::CapacityExceeded,
                    fmt::format("macro calls nested deeper than {} (a recursive macro?) in '{}'",
                                limits_.max_call_depth, name));
  }
  ScopePtr parent = closure.lock();
  if (!parent) parent = root_;
  auto scope = std::make_shared<Scope>(parent);
  const size_t n = m.params.size();
  for (size_t i = 0; i < n && i < args.pos.size(); ++i) scope->set(m.params[i].name, args.pos[i]);
  // Moves keyword argument `key` out of args.kw into `out`; false when it was not given.
  auto take_kw = [&](const std::string& key, Value& out) {
    for (auto it = args.kw.begin(); it != args.kw.end(); ++it) {
      if (it->first == key) {
        out = std::move(it->second);
        args.kw.erase(it);
        return true;
      }
    }
    return false;
  };
  for (size_t i = args.pos.size(); i < n; ++i) {
    const MacroParam& p = m.params[i];
    Value v;
    if (take_kw(p.name, v)) {
      scope->set(p.name, std::move(v));
    } else if (p.default_value) {
      auto d = eval(*p.default_value, scope);
      if (!d) return d.error();
      scope->set(p.name, std::move(*d));
    } else {
      scope->set(p.name,
                 Value::undefined(fmt::format("UndefinedError: parameter '{}' was not provided", p.name)));
    }
  }
  if (m.uses_caller) {
    Value c;
    if (!take_kw("caller", c)) c = Value::undefined("UndefinedError: No caller defined");
    scope->set("caller", std::move(c));
  }
  if (m.uses_kwargs) {
    std::vector<std::pair<Value, Value>> kw;
    for (auto& [k, v] : args.kw) kw.emplace_back(Value(k), std::move(v));
    scope->set("kwargs", Value::dict(std::move(kw)));
  } else if (!args.kw.empty()) {
    if (args.kw.front().first == "caller") {
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("TypeError: macro '{}' was invoked with two values for the special caller argument. "
                      "This is most likely a bug.",
                      name));
    }
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("TypeError: macro '{}' takes no keyword argument '{}'", name, args.kw.front().first));
  }
  if (m.uses_varargs) {
    std::vector<Value> rest;
    for (size_t i = n; i < args.pos.size(); ++i) rest.push_back(args.pos[i]);
    scope->set("varargs", Value::list(std::move(rest), true));
  } else if (args.pos.size() > n) {
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("TypeError: macro '{}' takes not more than {} argument(s)", name, n));
  }
  std::string out;
  ++call_depth_;
  auto flow = render_body(m.bodies[0], scope, out);
  --call_depth_;
  if (!flow) return flow.error();
  return Value(std::move(out));
}

}  // namespace glass::tokenizer::chat
