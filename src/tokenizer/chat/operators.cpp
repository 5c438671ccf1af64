#include "tokenizer/chat/operators.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "tokenizer/chat/pystr.h"

namespace glass::tokenizer::chat {
namespace {

Error type_error(std::string m) { return make_error(ErrorCode::InvalidArgument, "TypeError: " + m); }
Error zero_division(std::string m) {
  return make_error(ErrorCode::InvalidArgument, "ZeroDivisionError: " + m);
}
Error overflow() {
  return make_error(ErrorCode::CapacityExceeded, "OverflowError: integer result does not fit in 64 bits");
}

bool is_intlike(const Value& v) { return v.is_int() || v.is_bool(); }

Error unsupported_operands(std::string_view op, const Value& a, const Value& b) {
  return type_error(
      fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name()));
}

Result<Value> repeat(Interpreter& in, const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const size_t len = seq.str().size();
    if (len && static_cast<uint64_t>(n) > in.limits().max_string_bytes / len) {
      return in.check_string(in.limits().max_string_bytes + 1).error();
    }
    std::string out;
    out.reserve(len * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value(std::move(out));
  }
  const auto& items = seq.list().items;
  if (!items.empty() && static_cast<uint64_t>(n) > in.limits().max_items / items.size()) {
    return in.check_items(in.limits().max_items + 1).error();
  }
  std::vector<Value> out;
  out.reserve(items.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.list().tuple);
}

Result<Value> add(Interpreter& in, const Value& a, const Value& b) {
  if (is_intlike(a) && is_intlike(b)) {
    int64_t r = 0;
    if (__builtin_add_overflow(*as_integer(a), *as_integer(b), &r)) return overflow();
    return Value(r);
  }
  if (a.is_number() && b.is_number()) return Value(a.to_double() + b.to_double());
  if (a.is_string()) {
    if (!b.is_string())
      return type_error(fmt::format("can only concatenate str (not \"{}\") to str", b.type_name()));
    if (Status s = in.check_string(a.str().size() + b.str().size()); !s) return s.error();
    return Value(a.str() + b.str());
  }
  if (a.is_list()) {
    if (!b.is_list() || b.list().tuple != a.list().tuple) {
      return type_error(fmt::format("can only concatenate {} (not \"{}\") to {}", a.type_name(),
                                    b.type_name(), a.type_name()));
    }
    if (Status s = in.check_items(a.list().items.size() + b.list().items.size()); !s) return s.error();
    std::vector<Value> items = a.list().items;
    items.insert(items.end(), b.list().items.begin(), b.list().items.end());
    return Value::list(std::move(items), a.list().tuple);
  }
  return unsupported_operands("+", a, b);
}

Result<Value> floor_div_mod(std::string_view op, const Value& a, const Value& b) {
  if (is_intlike(a) && is_intlike(b)) {
    const int64_t x = *as_integer(a), y = *as_integer(b);
    if (y == 0)
      return zero_division(op == "//" ? "integer division or modulo by zero" : "integer modulo by zero");
    if (x == std::numeric_limits<int64_t>::min() && y == -1) {
      if (op == "%") return Value(int64_t{0});
      return overflow();
    }
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) {
      --q;
      r += y;
    }
    return op == "//" ? Value(q) : Value(r);
  }
  // CPython's float_divmod.
  const double x = a.to_double(), y = b.to_double();
  if (y == 0) return zero_division(op == "//" ? "float floor division by zero" : "float modulo");
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  if (op == "%") return Value(mod);
  double floordiv = std::copysign(0.0, x / y);
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  }
  return Value(floordiv);
}

Result<Value> power(const Value& a, const Value& b) {
  if (is_intlike(a) && is_intlike(b) && *as_integer(b) >= 0) {
    int64_t base = *as_integer(a), e = *as_integer(b), r = 1;
    while (e > 0) {
      if (e & 1) {
        if (__builtin_mul_overflow(r, base, &r)) return overflow();
      }
      e >>= 1;
      if (e > 0 && __builtin_mul_overflow(base, base, &base)) return overflow();
    }
    return Value(r);
  }
  const double x = a.to_double(), y = b.to_double();
  if (x == 0 && y < 0) return zero_division("0.0 cannot be raised to a negative power");
  return Value(std::pow(x, y));
}

}  // namespace

std::optional<int64_t> as_integer(const Value& v) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  if (v.is_float()) {
    const double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return std::nullopt;
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

Result<Value> binary_op(Interpreter& in, std::string_view op, const Value& a, const Value& b) {
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (op == "+") return add(in, a, b);
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && is_intlike(b)) return repeat(in, a, *as_integer(b));
    if ((b.is_string() || b.is_list()) && is_intlike(a)) return repeat(in, b, *as_integer(a));
    if (a.is_string() || a.is_list() || b.is_string() || b.is_list()) {
      const Value& other = a.is_string() || a.is_list() ? b : a;
      return type_error(fmt::format("can't multiply sequence by non-int of type '{}'", other.type_name()));
    }
  }
  if (op == "%" && a.is_string()) return percent_format(in, a.str(), b);
  if (!a.is_number() || !b.is_number()) return unsupported_operands(op, a, b);
  const bool ints = is_intlike(a) && is_intlike(b);
  if (op == "-") {
    if (ints) {
      int64_t r = 0;
      if (__builtin_sub_overflow(*as_integer(a), *as_integer(b), &r)) return overflow();
      return Value(r);
    }
    return Value(a.to_double() - b.to_double());
  }
  if (op == "*") {
    if (ints) {
      int64_t r = 0;
      if (__builtin_mul_overflow(*as_integer(a), *as_integer(b), &r)) return overflow();
      return Value(r);
    }
    return Value(a.to_double() * b.to_double());
  }
  if (op == "/") {
    if (b.to_double() == 0) return zero_division("division by zero");
    return Value(a.to_double() / b.to_double());
  }
  if (op == "//" || op == "%") return floor_div_mod(op, a, b);
  if (op == "**") return power(a, b);
  return make_error(ErrorCode::Internal, fmt::format("unknown operator '{}'", op));
}

Result<Value> negate(const Value& v, bool minus) {
  if (v.is_undefined()) return undefined_error(v);
  if (is_intlike(v)) {
    const int64_t i = *as_integer(v);
    if (!minus) return Value(i);
    if (i == std::numeric_limits<int64_t>::min()) return overflow();
    return Value(-i);
  }
  if (v.is_float()) return Value(minus ? -v.as_float() : v.as_float());
  return type_error(fmt::format("bad operand type for unary {}: '{}'", minus ? '-' : '+', v.type_name()));
}

Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::Undefined:
      return false;
    case Kind::String:
      if (!item.is_string()) {
        return type_error(
            fmt::format("'in <string>' requires string as left operand, not {}", item.type_name()));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Kind::List:
      for (const Value& v : container.list().items) {
        if (values_equal(v, item)) return true;
      }
      return false;
    case Kind::Dict:
      return container.dict().find(item) != nullptr;
    default:
      return type_error(fmt::format("argument of type '{}' is not iterable", container.type_name()));
  }
}

Value index_value(const Value& obj, int64_t index) {
  if (obj.is_list()) {
    const auto n = static_cast<int64_t>(obj.list().items.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n)
      return Value::undefined(
          fmt::format("UndefinedError: '{} object' has no element {}", obj.type_name(), index));
    return obj.list().items[static_cast<size_t>(index)];
  }
  if (obj.is_string()) {
    const std::string& s = obj.str();
    if (is_ascii(s)) {
      const auto n = static_cast<int64_t>(s.size());
      if (index < 0) index += n;
      if (index < 0 || index >= n)
        return Value::undefined(fmt::format("UndefinedError: 'str object' has no element {}", index));
      return Value(std::string(1, s[static_cast<size_t>(index)]));
    }
    const std::u32string u = decode_utf8(s);
    const auto n = static_cast<int64_t>(u.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n)
      return Value::undefined(fmt::format("UndefinedError: 'str object' has no element {}", index));
    std::string out;
    append_utf8(out, u[static_cast<size_t>(index)]);
    return Value(std::move(out));
  }
  return Value::undefined(
      fmt::format("UndefinedError: '{} object' has no element {}", obj.type_name(), index));
}

Result<Value> slice_value(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  auto bound = [](const Value& v) -> std::optional<std::optional<int64_t>> {
    if (v.is_undefined() || v.is_none()) return std::optional<int64_t>();
    if (v.is_int() || v.is_bool()) return std::optional<int64_t>(*as_integer(v));
    return std::nullopt;  // not a valid slice index
  };
  const auto start = bound(start_v), stop = bound(stop_v), step_o = bound(step_v);
  const bool sliceable = obj.is_list() || obj.is_string();
  if (!sliceable || !start || !stop || !step_o) {
    return Value::undefined(fmt::format("UndefinedError: '{} object' has no element slice", obj.type_name()));
  }
  const int64_t step = step_o->value_or(1);
  if (step == 0) return make_error(ErrorCode::InvalidArgument, "ValueError: slice step cannot be zero");
  std::u32string u;
  int64_t n = 0;
  if (obj.is_list()) {
    n = static_cast<int64_t>(obj.list().items.size());
  } else {
    u = decode_utf8(obj.str());
    n = static_cast<int64_t>(u.size());
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](const std::optional<int64_t>& v, int64_t def) {
    if (!v) return def;
    int64_t i = *v;
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t b = adjust(*start, step < 0 ? n - 1 : 0);
  const int64_t e = adjust(*stop, step < 0 ? -1 : n);
  std::vector<size_t> idx;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) idx.push_back(static_cast<size_t>(i));
  if (obj.is_list()) {
    std::vector<Value> items;
    items.reserve(idx.size());
    for (size_t i : idx) items.push_back(obj.list().items[i]);
    return Value::list(std::move(items), obj.list().tuple);
  }
  std::u32string out;
  out.reserve(idx.size());
  for (size_t i : idx) out.push_back(u[i]);
  return Value(encode_utf8(out));
}

}  // namespace glass::tokenizer::chat
