#include "tokenizer/chat/methods.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/chat/args.h"
#include "tokenizer/chat/formatting.h"
#include "tokenizer/chat/interpreter.h"
#include "tokenizer/chat/operators.h"
#include "tokenizer/chat/pystr.h"

namespace glass::tokenizer::chat {
namespace {

using Method = Result<Value> (*)(Interpreter&, const Value& self, CallArgs& args);

Value str_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.emplace_back(std::move(p));
  return Value::list(std::move(items));
}

// s[start:end] in code points, for startswith/endswith/find/count with bounds.
Result<std::string> bounded(const Value& self, const Value& start, const Value& end) {
  if (start.is_undefined() && end.is_undefined()) return self.str();
  auto r = slice_value(self, start, end, Value());
  if (!r) return r.error();
  return r->is_string() ? r->str() : std::string();
}

Result<Value> affix_test(const Value& self, CallArgs& args, bool prefix) {
  const char* fn = prefix ? "startswith" : "endswith";
  auto a = bind_args(fn, args, {"prefix", "start", "end"}, 1);
  if (!a) return a.error();
  auto s = bounded(self, (*a)[1], (*a)[2]);
  if (!s) return s.error();
  std::vector<Value> cands;
  if ((*a)[0].is_list() && (*a)[0].list().tuple) {
    cands = (*a)[0].list().items;
  } else {
    cands.push_back((*a)[0]);
  }
  for (const Value& c : cands) {
    if (!c.is_string()) {
      return type_error(fmt::format("{} first arg must be str or a tuple of str, not {}", fn, c.type_name()));
    }
    const std::string& x = c.str();
    if (x.size() > s->size()) continue;
    if (prefix ? s->compare(0, x.size(), x) == 0 : s->compare(s->size() - x.size(), x.size(), x) == 0) {
      return Value(true);
    }
  }
  return Value(false);
}

Result<Value> strip_like(const Value& self, CallArgs& args, const char* fn, bool left, bool right) {
  auto a = bind_args(fn, args, {"chars"});
  if (!a) return a.error();
  auto chars = optional_string_arg(fn, "chars", (*a)[0]);
  if (!chars) return chars.error();
  return Value(py_strip(self.str(), *chars, left, right));
}

Result<Value> split_like(Interpreter& in, const Value& self, CallArgs& args, bool reverse) {
  const char* fn = reverse ? "rsplit" : "split";
  auto a = bind_args(fn, args, {"sep", "maxsplit"});
  if (!a) return a.error();
  auto sep = optional_string_arg(fn, "sep", (*a)[0]);
  if (!sep) return sep.error();
  if (*sep && (*sep)->empty()) return value_error("empty separator");
  auto maxsplit = int_arg(fn, "maxsplit", (*a)[1], -1);
  if (!maxsplit) return maxsplit.error();
  const size_t max = in.limits().max_items;
  auto parts =
      reverse ? py_rsplit(self.str(), *sep, *maxsplit, max) : py_split(self.str(), *sep, *maxsplit, max);
  if (Status st = in.check_items(parts.size()); !st) return st.error();
  return str_list(std::move(parts));
}

Result<Value> find_like(const Value& self, CallArgs& args, const char* fn, bool reverse, bool raise) {
  auto a = bind_args(fn, args, {"sub", "start", "end"}, 1);
  if (!a) return a.error();
  auto sub = string_arg(fn, "sub", (*a)[0]);
  if (!sub) return sub.error();
  auto s = bounded(self, (*a)[1], Value());
  if (!s) return s.error();
  int64_t idx = py_find(*s, *sub, reverse);
  if (idx >= 0 && !(*a)[1].is_undefined()) {
    auto start = int_arg(fn, "start", (*a)[1], 0);
    if (!start) return start.error();
    int64_t b = *start;
    if (b < 0) b = std::max<int64_t>(0, b + static_cast<int64_t>(codepoint_count(self.str())));
    idx += b;
  }
  if (idx < 0 && raise) return value_error("substring not found");
  return Value(idx);
}

Result<Value> justify(Interpreter& in, const Value& self, CallArgs& args, const char* fn, char align) {
  auto a = bind_args(fn, args, {"width", "fillchar"}, 1);
  if (!a) return a.error();
  auto width = int_arg(fn, "width", (*a)[0], 0);
  if (!width) return width.error();
  auto fill =
      (*a)[1].is_undefined() ? Result<std::string>(std::string(" ")) : string_arg(fn, "fillchar", (*a)[1]);
  if (!fill) return fill.error();
  if (codepoint_count(*fill) != 1) return type_error("The fill character must be exactly one character long");
  if (Status s = in.check_string(static_cast<size_t>(std::max<int64_t>(*width, 0)) * fill->size()); !s) {
    return s.error();
  }
  const std::u32string u = decode_utf8(self.str());
  if (*width <= static_cast<int64_t>(u.size())) return self;
  const size_t total = static_cast<size_t>(*width) - u.size();
  size_t left = align == '<' ? 0 : align == '>' ? total : total / 2;
  if (align == '^' && (total % 2) && (u.size() % 2)) ++left;  // CPython's centering rule
  std::string out;
  for (size_t i = 0; i < left; ++i) out += *fill;
  out += self.str();
  for (size_t i = 0; i < total - left; ++i) out += *fill;
  return Value(std::move(out));
}

Result<Value> partition_like(const Value& self, CallArgs& args, bool reverse) {
  const char* fn = reverse ? "rpartition" : "partition";
  auto a = bind_args(fn, args, {"sep"}, 1);
  if (!a) return a.error();
  auto sep = string_arg(fn, "sep", (*a)[0]);
  if (!sep) return sep.error();
  if (sep->empty()) return value_error("empty separator");
  const std::string& s = self.str();
  const size_t p = reverse ? s.rfind(*sep) : s.find(*sep);
  std::vector<Value> parts;
  if (p == std::string::npos) {
    parts = reverse ? std::vector<Value>{Value(""), Value(""), self}
                    : std::vector<Value>{self, Value(""), Value("")};
  } else {
    parts = {Value(s.substr(0, p)), Value(*sep), Value(s.substr(p + sep->size()))};
  }
  return Value::list(std::move(parts), true);
}

Result<Value> no_args(const char* fn, CallArgs& args, Value result) {
  auto a = bind_args(fn, args, {});
  if (!a) return a.error();
  return result;
}

Result<Value> str_method(Interpreter& in, const std::string& name, const Value& self, CallArgs& args) {
  const std::string& s = self.str();
  if (name == "strip") return strip_like(self, args, "strip", true, true);
  if (name == "lstrip") return strip_like(self, args, "lstrip", true, false);
  if (name == "rstrip") return strip_like(self, args, "rstrip", false, true);
  if (name == "split") return split_like(in, self, args, false);
  if (name == "rsplit") return split_like(in, self, args, true);
  if (name == "startswith") return affix_test(self, args, true);
  if (name == "endswith") return affix_test(self, args, false);
  if (name == "upper") return no_args("upper", args, Value(py_upper(s)));
  if (name == "lower" || name == "casefold") return no_args(name.c_str(), args, Value(py_lower(s)));
  if (name == "title") return no_args("title", args, Value(py_title(s)));
  if (name == "capitalize") return no_args("capitalize", args, Value(py_capitalize(s)));
  if (name == "swapcase") return no_args("swapcase", args, Value(py_swapcase(s)));
  if (name == "isupper") return no_args("isupper", args, Value(py_is_upper(s)));
  if (name == "islower") return no_args("islower", args, Value(py_is_lower(s)));
  if (name == "isalpha") return no_args("isalpha", args, Value(py_is_alpha(s)));
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") {
    return no_args(name.c_str(), args, Value(py_is_digit(s)));
  }
  if (name == "isalnum") return no_args("isalnum", args, Value(py_is_alnum(s)));
  if (name == "isspace") return no_args("isspace", args, Value(py_is_space(s)));
  if (name == "find") return find_like(self, args, "find", false, false);
  if (name == "rfind") return find_like(self, args, "rfind", true, false);
  if (name == "index") return find_like(self, args, "index", false, true);
  if (name == "rindex") return find_like(self, args, "rindex", true, true);
  if (name == "center") return justify(in, self, args, "center", '^');
  if (name == "ljust") return justify(in, self, args, "ljust", '<');
  if (name == "rjust") return justify(in, self, args, "rjust", '>');
  if (name == "partition") return partition_like(self, args, false);
  if (name == "rpartition") return partition_like(self, args, true);
  if (name == "format") return str_format(in, s, args);
  if (name == "replace") {
    auto a = bind_args("replace", args, {"old", "new", "count"}, 2);
    if (!a) return a.error();
    auto old_s = string_arg("replace", "old", (*a)[0]);
    if (!old_s) return old_s.error();
    auto new_s = string_arg("replace", "new", (*a)[1]);
    if (!new_s) return new_s.error();
    auto count = int_arg("replace", "count", (*a)[2], -1);
    if (!count) return count.error();
    std::string out = py_replace(s, *old_s, *new_s, *count);
    if (Status st = in.check_string(out.size()); !st) return st.error();
    return Value(std::move(out));
  }
  if (name == "join") {
    auto a = bind_args("join", args, {"iterable"}, 1);
    if (!a) return a.error();
    auto items = iterate((*a)[0], in.limits().max_items);
    if (!items) return items.error();
    std::string out;
    for (size_t i = 0; i < items->size(); ++i) {
      const Value& item = (*items)[i];
      if (!item.is_string()) {
        return type_error(
            fmt::format("sequence item {}: expected str instance, {} found", i, item.type_name()));
      }
      if (i) out += s;
      out += item.str();
      if (Status st = in.check_string(out.size()); !st) return st.error();
    }
    return Value(std::move(out));
  }
  if (name == "count") {
    auto a = bind_args("count", args, {"sub"}, 1);
    if (!a) return a.error();
    auto sub = string_arg("count", "sub", (*a)[0]);
    if (!sub) return sub.error();
    return Value(py_count(s, *sub));
  }
  if (name == "splitlines") {
    auto a = bind_args("splitlines", args, {"keepends"});
    if (!a) return a.error();
    auto lines = py_splitlines(s, (*a)[0].truthy(), in.limits().max_items);
    if (Status st = in.check_items(lines.size()); !st) return st.error();
    return str_list(std::move(lines));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    auto a = bind_args(name, args, {"affix"}, 1);
    if (!a) return a.error();
    auto x = string_arg(name, "affix", (*a)[0]);
    if (!x) return x.error();
    if (x->size() > s.size()) return self;
    if (name == "removeprefix") return s.compare(0, x->size(), *x) == 0 ? Value(s.substr(x->size())) : self;
    return s.compare(s.size() - x->size(), x->size(), *x) == 0 ? Value(s.substr(0, s.size() - x->size()))
                                                               : self;
  }
  if (name == "zfill") {
    auto a = bind_args("zfill", args, {"width"}, 1);
    if (!a) return a.error();
    auto width = int_arg("zfill", "width", (*a)[0], 0);
    if (!width) return width.error();
    if (Status st = in.check_string(static_cast<size_t>(std::max<int64_t>(*width, 0))); !st)
      return st.error();
    const auto len = static_cast<int64_t>(codepoint_count(s));
    if (*width <= len) return self;
    const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
    return Value(s.substr(0, sign) + std::string(static_cast<size_t>(*width - len), '0') + s.substr(sign));
  }
  return make_error(ErrorCode::Internal, "str method table mismatch: " + name);
}

Result<Value> list_method(const std::string& name, const Value& self, CallArgs& args) {
  const auto& items = self.list().items;
  if (name == "count" || name == "index") {
    auto a = bind_args(name, args, {"value"}, 1);
    if (!a) return a.error();
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!values_equal(items[i], (*a)[0])) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") return value_error(fmt::format("{} is not in list", to_py_repr((*a)[0])));
    return Value(n);
  }
  if (name == "copy") return no_args("copy", args, Value::list(items, self.list().tuple));
  return make_error(ErrorCode::Internal, "list method table mismatch: " + name);
}

Result<Value> dict_method(const std::string& name, const Value& self, CallArgs& args) {
  const auto& d = self.dict();
  if (name == "get") {
    auto a = bind_args("get", args, {"key", "default"}, 1);
    if (!a) return a.error();
    if (const Value* v = d.find((*a)[0])) return *v;
    return (*a)[1].is_undefined() ? Value::none() : (*a)[1];
  }
  std::vector<Value> out;
  out.reserve(d.items.size());
  for (const auto& [k, v] : d.items) {
    if (name == "items") {
      out.push_back(Value::list({k, v}, true));
    } else {
      out.push_back(name == "keys" ? k : v);
    }
  }
  if (name == "items" || name == "keys" || name == "values")
    return no_args(name.c_str(), args, Value::list(std::move(out)));
  if (name == "copy") return no_args("copy", args, self);
  return make_error(ErrorCode::Internal, "dict method table mismatch: " + name);
}

constexpr std::string_view kStrMethods[] = {
    "strip",   "lstrip",    "rstrip",     "split",        "rsplit",       "startswith", "endswith", "upper",
    "lower",   "casefold",  "title",      "capitalize",   "swapcase",     "isupper",    "islower",  "isalpha",
    "isdigit", "isdecimal", "isnumeric",  "isalnum",      "isspace",      "find",       "rfind",    "index",
    "rindex",  "center",    "ljust",      "rjust",        "partition",    "rpartition", "format",   "replace",
    "join",    "count",     "splitlines", "removeprefix", "removesuffix", "zfill"};
constexpr std::string_view kListMethods[] = {"count", "index", "copy"};
constexpr std::string_view kDictMethods[] = {"get", "items", "keys", "values", "copy"};
constexpr std::string_view kListMutators[] = {"append", "extend",  "insert", "pop",
                                              "remove", "reverse", "sort",   "clear"};
constexpr std::string_view kDictMutators[] = {"pop", "popitem", "setdefault", "update", "clear"};

template <size_t N>
bool in_table(const std::string_view (&table)[N], const std::string& name) {
  return std::find(std::begin(table), std::end(table), name) != std::end(table);
}

Value bind_method(const Value& self, const std::string& name,
                  Result<Value> (*impl)(Interpreter&, const std::string&, const Value&, CallArgs&)) {
  return Value::function(
      name, [self, name, impl](Interpreter& in, CallArgs& args) { return impl(in, name, self, args); });
}

}  // namespace

std::optional<Value> find_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    if (in_table(kStrMethods, name)) return bind_method(obj, name, str_method);
    return std::nullopt;
  }
  if (obj.is_list()) {
    if (in_table(kListMethods, name)) {
      return bind_method(obj, name,
                         [](Interpreter&, const std::string& n, const Value& self, CallArgs& args) {
                           return list_method(n, self, args);
                         });
    }
    if (in_table(kListMutators, name)) {
      return Value::undefined(fmt::format("SecurityError: access to attribute '{}' of '{}' object is unsafe.",
                                          name, obj.type_name()));
    }
    return std::nullopt;
  }
  if (obj.is_dict()) {
    if (in_table(kDictMethods, name)) {
      return bind_method(obj, name,
                         [](Interpreter&, const std::string& n, const Value& self, CallArgs& args) {
                           return dict_method(n, self, args);
                         });
    }
    if (in_table(kDictMutators, name)) {
      return Value::undefined(
          fmt::format("SecurityError: access to attribute '{}' of 'dict' object is unsafe.", name));
    }
  }
  return std::nullopt;
}

}  // namespace glass::tokenizer::chat
