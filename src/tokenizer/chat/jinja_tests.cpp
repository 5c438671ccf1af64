// Jinja2's builtin tests (jinja2/tests.py): `x is defined`, `x is string`, `x is divisibleby 3`...
// Python's type model decides them: bool is a number but not an integer, undefined is iterable,
// strings and dicts are sequences.
#include "tokenizer/chat/jinja_tests.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/chat/args.h"
#include "tokenizer/chat/filters.h"
#include "tokenizer/chat/interpreter.h"
#include "tokenizer/chat/operators.h"
#include "tokenizer/chat/pystr.h"

namespace glass::tokenizer::chat {
namespace {

using Pred = bool (*)(const Value&);

template <Pred P>
Result<bool> unary(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("test", args, {}); !a) return a.error();
  return P(v);
}

bool t_defined(const Value& v) { return !v.is_undefined(); }
bool t_undefined(const Value& v) { return v.is_undefined(); }
bool t_none(const Value& v) { return v.is_none(); }
bool t_boolean(const Value& v) { return v.is_bool(); }
bool t_true(const Value& v) { return v.is_bool() && v.as_bool(); }
bool t_false(const Value& v) { return v.is_bool() && !v.as_bool(); }
bool t_integer(const Value& v) { return v.is_int(); }
bool t_float(const Value& v) { return v.is_float(); }
bool t_number(const Value& v) { return v.is_number(); }
bool t_string(const Value& v) { return v.is_string(); }
bool t_mapping(const Value& v) { return v.is_dict(); }
bool t_iterable(const Value& v) { return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict(); }
bool t_sequence(const Value& v) { return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict(); }
bool t_callable(const Value& v) {
  if (v.is_callable()) return true;
  if (!v.is_object()) return false;
  const std::string t = v.object()->type_name();
  return t == "LoopContext" || t == "Joiner";
}
bool t_escaped(const Value&) { return false; }  // no Markup values: autoescape is off
bool t_lower(const Value& v) { return py_is_lower(to_py_str(v)); }
bool t_upper(const Value& v) { return py_is_upper(to_py_str(v)); }

Result<Value> one_arg(const char* fn, CallArgs& args) {
  auto a = bind_args(fn, args, {"other"}, 1);
  if (!a) return a.error();
  return (*a)[0];
}

Result<bool> t_divisibleby(Interpreter& in, const Value& v, CallArgs& args) {
  auto other = one_arg("divisibleby", args);
  if (!other) return other.error();
  auto r = binary_op(in, "%", v, *other);
  if (!r) return r.error();
  return values_equal(*r, Value(int64_t{0}));
}

Result<bool> parity(Interpreter& in, const Value& v, CallArgs& args, bool even) {
  if (auto a = bind_args(even ? "even" : "odd", args, {}); !a) return a.error();
  auto r = binary_op(in, "%", v, Value(int64_t{2}));
  if (!r) return r.error();
  return values_equal(*r, Value(int64_t{0})) == even;
}
Result<bool> t_even(Interpreter& in, const Value& v, CallArgs& args) { return parity(in, v, args, true); }
Result<bool> t_odd(Interpreter& in, const Value& v, CallArgs& args) { return parity(in, v, args, false); }

template <int Op>  // 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=
Result<bool> compare(Interpreter&, const Value& v, CallArgs& args) {
  auto other = one_arg("compare", args);
  if (!other) return other.error();
  const Value& b = *other;
  switch (Op) {
    case 0:
      return values_equal(v, b);
    case 1:
      return !values_equal(v, b);
    case 2:
      return value_less(v, b, "<");
    case 3:
      return values_equal(v, b) ? Result<bool>(true) : value_less(v, b, "<=");
    case 4:
      return value_less(b, v, ">");
    default:
      return values_equal(v, b) ? Result<bool>(true) : value_less(b, v, ">=");
  }
}

Result<bool> t_sameas(Interpreter&, const Value& v, CallArgs& args) {
  auto other = one_arg("sameas", args);
  if (!other) return other.error();
  return v.same_object(*other);
}

Result<bool> t_in(Interpreter&, const Value& v, CallArgs& args) {
  auto a = bind_args("in", args, {"seq"}, 1);
  if (!a) return a.error();
  return contains((*a)[0], v);
}

Result<bool> t_filter(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("filter", args, {}); !a) return a.error();
  return v.is_string() && find_filter(v.str()) != nullptr;
}

Result<bool> t_test(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("test", args, {}); !a) return a.error();
  return v.is_string() && find_test(v.str()) != nullptr;
}

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"!=", compare<1>},
    {"<", compare<2>},
    {"<=", compare<3>},
    {"==", compare<0>},
    {">", compare<4>},
    {">=", compare<5>},
    {"boolean", unary<t_boolean>},
    {"callable", unary<t_callable>},
    {"defined", unary<t_defined>},
    {"divisibleby", t_divisibleby},
    {"eq", compare<0>},
    {"equalto", compare<0>},
    {"escaped", unary<t_escaped>},
    {"even", t_even},
    {"false", unary<t_false>},
    {"filter", t_filter},
    {"float", unary<t_float>},
    {"ge", compare<5>},
    {"greaterthan", compare<4>},
    {"gt", compare<4>},
    {"in", t_in},
    {"integer", unary<t_integer>},
    {"iterable", unary<t_iterable>},
    {"le", compare<3>},
    {"lessthan", compare<2>},
    {"lower", unary<t_lower>},
    {"lt", compare<2>},
    {"mapping", unary<t_mapping>},
    {"ne", compare<1>},
    {"none", unary<t_none>},
    {"number", unary<t_number>},
    {"odd", t_odd},
    {"sameas", t_sameas},
    {"sequence", unary<t_sequence>},
    {"string", unary<t_string>},
    {"test", t_test},
    {"true", unary<t_true>},
    {"undefined", unary<t_undefined>},
    {"upper", unary<t_upper>},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const auto& t : kTests) {
    if (t.name == name) return t.fn;
  }
  return nullptr;
}

Result<bool> Interpreter::apply_test(std::string_view name, const Value& v, CallArgs& args) {
  if (Status s = charge(); !s) return s.error();
  const TestFn fn = find_test(name);
  if (!fn) {  // only reachable for names the parser let through in a soft frame, as Jinja does
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("TemplateRuntimeError: No test named '{}' found.", name));
  }
  return fn(*this, v, args);
}

}  // namespace glass::tokenizer::chat
