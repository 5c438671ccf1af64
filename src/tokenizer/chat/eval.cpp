// Expression evaluation, and attribute / item access and calls as Jinja's sandbox performs them.
#include <fmt/format.h>

#include "tokenizer/chat/interpreter.h"
#include "tokenizer/chat/methods.h"
#include "tokenizer/chat/operators.h"

namespace glass::tokenizer::chat {
namespace {

std::string object_desc(const Value& obj) {
  if (obj.is_none()) return "'None'";
  return fmt::format("'{} object'", obj.type_name());
}

}  // namespace

Error undefined_error(const Value& v) { return make_error(ErrorCode::InvalidArgument, v.undefined_hint()); }

Result<Value> Interpreter::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (auto m = find_method(obj, name)) return std::move(*m);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(std::string_view(name))) return *v;
  } else if (obj.is_object()) {
    if (auto v = obj.object()->get_attr(name)) return std::move(*v);
  }
  return Value::undefined(fmt::format("UndefinedError: {} has no attribute '{}'", object_desc(obj), name));
}

Result<Value> Interpreter::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    return index_value(obj, *as_integer(key));
  }
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined(
      fmt::format("UndefinedError: {} has no element {}", object_desc(obj), to_py_repr(key)));
}

Result<Value> Interpreter::call_value(const Value& fn, CallArgs& args) {
  if (Status s = charge(); !s) return s.error();
  if (fn.is_callable()) return fn.callable().fn(*this, args);
  if (fn.is_object()) return fn.object()->call(*this, args);
  if (fn.is_undefined()) return undefined_error(fn);
  return make_error(ErrorCode::InvalidArgument,
                    fmt::format("TypeError: '{}' object is not callable", fn.type_name()));
}

Result<CallArgs> Interpreter::eval_args(const ArgExprs& a, const ScopePtr& scope) {
  CallArgs args;
  for (size_t i = 0; i < a.values.size(); ++i) {
    auto v = eval(*a.values[i], scope);
    if (!v) return v.error();
    if (a.names[i].empty()) {
      args.pos.push_back(std::move(*v));
    } else {
      args.kw.emplace_back(a.names[i], std::move(*v));
    }
  }
  if (a.star) {
    auto v = eval(*a.star, scope);
    if (!v) return v.error();
    auto items = iterate(*v, limits_.max_items);
    if (!items) return located(a.star->offset, items.error());
    for (auto& item : *items) args.pos.push_back(std::move(item));
  }
  if (a.star_star) {
    auto v = eval(*a.star_star, scope);
    if (!v) return v.error();
    if (!v->is_dict()) {
      return error_at(a.star_star->offset, ErrorCode::InvalidArgument,
                      fmt::format("TypeError: argument after ** must be a mapping, not {}", v->type_name()));
    }
    for (const auto& [k, val] : v->dict().items) {
      if (!k.is_string()) {
        return error_at(a.star_star->offset, ErrorCode::InvalidArgument,
                        "TypeError: keywords must be strings");
      }
      args.kw.emplace_back(k.str(), val);
    }
  }
  return args;
}

Status Interpreter::charge_operands(const Value& a, const Value& b) {
  if (Status s = charge_size(a); !s) return s;
  return charge_size(b);
}

Status Interpreter::charge_args(const CallArgs& args) {
  for (const Value& v : args.pos)
    if (Status s = charge_size(v); !s) return s;
  for (const auto& [name, v] : args.kw)
    if (Status s = charge_size(v); !s) return s;
  return {};
}

Result<Value> Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  if (e.depth > 1) {  // leaves cannot recurse
    if (Status st = check_stack(); !st) return located(e.offset, st.error());
  }
  switch (e.kind) {
    case ExprKind::Literal:
      return e.value;
    case ExprKind::Name: {
      if (const Value* v = scope->find(e.name)) return *v;
      return Value::undefined(fmt::format("UndefinedError: '{}' is undefined", e.name));
    }
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      items.reserve(e.items.size());
      for (const auto& item : e.items) {
        auto v = eval(*item, scope);
        if (!v) return v;
        items.push_back(std::move(*v));
      }
      return nested_ok(e.offset, Value::list(std::move(items), e.kind == ExprKind::Tuple));
    }
    case ExprKind::Dict: {
      std::vector<std::pair<Value, Value>> items;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        auto k = eval(*e.items[i], scope);
        if (!k) return k;
        if (!(k->is_string() || k->is_number() || k->is_none() || (k->is_list() && k->list().tuple))) {
          return error_at(e.items[i]->offset, ErrorCode::InvalidArgument,
                          fmt::format("TypeError: unhashable type: '{}'", k->type_name()));
        }
        auto v = eval(*e.items[i + 1], scope);
        if (!v) return v;
        bool replaced = false;
        for (auto& kv : items) {
          if (values_equal(kv.first, *k)) {
            kv.second = std::move(*v);
            replaced = true;
            break;
          }
        }
        if (!replaced) items.emplace_back(std::move(*k), std::move(*v));
      }
      return nested_ok(e.offset, Value::dict(std::move(items)));
    }
    case ExprKind::GetAttr: {
      auto obj = eval(*e.items[0], scope);
      if (!obj) return obj;
      auto r = get_attr(*obj, e.name);
      if (!r) return located(e.offset, r.error());
      // A method (s.replace, l.count, ...) works on its receiver: the call pays for it here.
      if (r->is_callable())
        if (Status st = charge_size(*obj); !st) return located(e.offset, st.error());
      return r;
    }
    case ExprKind::GetItem: {
      auto obj = eval(*e.items[0], scope);
      if (!obj) return obj;
      auto key = eval(*e.items[1], scope);
      if (!key) return key;
      auto r = get_item(*obj, *key);
      if (!r) return located(e.offset, r.error());
      return r;
    }
    case ExprKind::Slice:
      return eval_slice(e, scope);
    case ExprKind::Call:
      return eval_call(e, scope);
    case ExprKind::Filter:
      return eval_filter(e, scope);
    case ExprKind::Test:
      return eval_test(e, scope);
    case ExprKind::Not: {
      auto v = eval(*e.items[0], scope);
      if (!v) return v;
      return Value(!v->truthy());
    }
    case ExprKind::Neg:
    case ExprKind::Pos: {
      auto v = eval(*e.items[0], scope);
      if (!v) return v;
      auto r = negate(*v, e.kind == ExprKind::Neg);
      if (!r) return located(e.offset, r.error());
      return r;
    }
    case ExprKind::Binary:
      return eval_binary(e, scope);
    case ExprKind::Concat: {
      std::string out;
      for (const auto& item : e.items) {
        auto v = eval(*item, scope);
        if (!v) return v;
        out += to_py_str(*v, limits_.max_string_bytes);
        if (Status s = check_string(out.size()); !s) return located(e.offset, s.error());
      }
      Value joined(std::move(out));
      if (Status s = charge_size(joined); !s) return located(e.offset, s.error());
      return joined;
    }
    case ExprKind::Compare:
      return eval_compare(e, scope);
    case ExprKind::Cond: {
      auto cond = eval(*e.items[1], scope);
      if (!cond) return cond;
      if (cond->truthy()) return eval(*e.items[0], scope);
      if (e.items[2]) return eval(*e.items[2], scope);
      return Value::undefined(
          "UndefinedError: the inline if-expression on line evaluated to false and no else section was "
          "defined.");
    }
  }
  return error_at(e.offset, ErrorCode::Internal, "unknown expression kind");
}

Result<Value> Interpreter::eval_binary(const Expr& e, const ScopePtr& scope) {
  auto left = eval(*e.items[0], scope);
  if (!left) return left;
  if (e.name == "and") return left->truthy() ? eval(*e.items[1], scope) : left;
  if (e.name == "or") return left->truthy() ? left : eval(*e.items[1], scope);
  auto right = eval(*e.items[1], scope);
  if (!right) return right;
  if (Status st = charge_operands(*left, *right); !st) return located(e.offset, st.error());
  auto r = binary_op(*this, e.name, *left, *right);
  if (!r) return located(e.offset, r.error());
  if (Status st = charge_size(*r); !st) return located(e.offset, st.error());
  return r;
}

Result<Value> Interpreter::eval_compare(const Expr& e, const ScopePtr& scope) {
  auto left = eval(*e.items[0], scope);
  if (!left) return left;
  Value a = std::move(*left);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    auto right = eval(*e.items[i + 1], scope);
    if (!right) return right;
    if (Status st = charge_operands(a, *right); !st) return located(e.items[i + 1]->offset, st.error());
    const std::string& op = e.ops[i];
    Result<bool> r = false;
    if (op == "==") {
      r = values_equal(a, *right);
    } else if (op == "!=") {
      r = !values_equal(a, *right);
    } else if (op == "<") {
      r = value_less(a, *right, op);
    } else if (op == ">") {
      r = value_less(*right, a, op);
    } else if (op == "<=") {
      r = values_equal(a, *right) ? Result<bool>(true) : value_less(a, *right, op);
    } else if (op == ">=") {
      r = values_equal(a, *right) ? Result<bool>(true) : value_less(*right, a, op);
    } else if (op == "in" || op == "not in") {
      r = contains(*right, a);
      if (r && op == "not in") r = !*r;
    }
    if (!r) {
      // Python names the operands in their written order for '>' and '>=' as well.
      Error err = r.error();
      if ((op == ">" || op == ">=") && (!a.is_number() || !right->is_number())) {
        err.message = fmt::format("TypeError: '{}' not supported between instances of '{}' and '{}'", op,
                                  a.type_name(), right->type_name());
      }
      return located(e.items[i + 1]->offset, err);
    }
    if (!*r) return Value(false);
    a = std::move(*right);
  }
  return Value(true);
}

Result<Value> Interpreter::eval_slice(const Expr& e, const ScopePtr& scope) {
  if (!e.items[0])
    return error_at(e.offset, ErrorCode::Unsupported, "unsupported: a slice inside a tuple subscript");
  auto obj = eval(*e.items[0], scope);
  if (!obj) return obj;
  Value parts[3];
  for (int i = 0; i < 3; ++i) {
    if (!e.items[static_cast<size_t>(i) + 1]) continue;
    auto v = eval(*e.items[static_cast<size_t>(i) + 1], scope);
    if (!v) return v;
    parts[i] = std::move(*v);
  }
  if (obj->is_undefined()) return located(e.offset, undefined_error(*obj));
  if (Status st = charge_size(*obj); !st) return located(e.offset, st.error());
  auto r = slice_value(*obj, parts[0], parts[1], parts[2]);
  if (!r) return located(e.offset, r.error());
  return r;
}

Result<Value> Interpreter::eval_call(const Expr& e, const ScopePtr& scope) {
  auto fn = eval(*e.items[0], scope);
  if (!fn) return fn;
  auto args = eval_args(e.args, scope);
  if (!args) return args.error();
  if (Status st = charge_args(*args); !st) return located(e.offset, st.error());
  auto r = call_value(*fn, *args);
  if (!r) return located(e.offset, r.error());
  if (Status st = charge_size(*r); !st) return located(e.offset, st.error());
  return nested_ok(e.offset, std::move(*r));
}

Result<Value> Interpreter::eval_filter(const Expr& e, const ScopePtr& scope) {
  Value operand;
  if (e.items[0]) {
    auto v = eval(*e.items[0], scope);
    if (!v) return v;
    operand = std::move(*v);
  } else if (filter_input_) {
    operand = *filter_input_;
  }
  auto args = eval_args(e.args, scope);
  if (!args) return args.error();
  if (Status st = charge_args(*args); !st) return located(e.offset, st.error());
  auto r = apply_filter(e.name, operand, *args);  // charges the operand and the result
  if (!r) return located(e.offset, r.error());
  return nested_ok(e.offset, std::move(*r));
}

Result<Value> Interpreter::nested_ok(size_t offset, Value v) const {
  if (v.nesting() > kMaxNesting) {
    return error_at(offset, ErrorCode::CapacityExceeded,
                    fmt::format("a value nested deeper than {} levels", kMaxNesting));
  }
  return v;
}

Result<Value> Interpreter::eval_test(const Expr& e, const ScopePtr& scope) {
  auto operand = eval(*e.items[0], scope);
  if (!operand) return operand;
  auto args = eval_args(e.args, scope);
  if (!args) return args.error();
  if (Status st = charge_size(*operand); !st) return located(e.offset, st.error());
  if (Status st = charge_args(*args); !st) return located(e.offset, st.error());
  auto r = apply_test(e.name, *operand, *args);
  if (!r) return located(e.offset, r.error());
  return Value(e.negated ? !*r : *r);
}

}  // namespace glass::tokenizer::chat
